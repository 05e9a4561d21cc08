"""Senders find the courier where it says it listens, whatever their own environment.

One user's processes need not agree on XDG_RUNTIME_DIR — Claude Code's hooks, codex's
MCP servers, a login shell. A sender that computed another socket path than the running
courier's would start a second courier, which only waits on the first one's lock: its
deliveries were never handed over (the journeys caught it once the tests gave the
binaries a runtime dir of their own).
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.messages import courier_link


def _answering(path: str) -> socket.socket:
    """A stand-in courier on `path` that answers every line with ok."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(json.dumps({"ok": True}).encode() + b"\n")

    threading.Thread(target=serve, daemon=True).start()
    return server


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A temp dir short enough for the runtime dir's sockets (tmp_path under a pytest-xdist
    worker is not: the socket would fall back into the state home for both processes)."""
    with tempfile.TemporaryDirectory(prefix="rt") as directory:
        yield Path(directory)


def test_a_sender_with_another_runtime_dir_reaches_the_running_courier(
        short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started_with, sender_has = short_dir / "a", short_dir / "b"
    started_with.mkdir(mode=0o700)
    sender_has.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(started_with))
    path = courier_link.socket_path()
    Path(path).parent.mkdir(mode=0o700, exist_ok=True)
    server = _answering(path)
    assert path.startswith(str(started_with))  # in the runtime dir, not the fallback
    try:
        courier_link.advertise(path)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(sender_has))
        assert courier_link.socket_path() != path  # what this sender would compute
        assert courier_link.poke(["req_1"])
        courier_link.withdraw(path)
        assert not courier_link.poke(["req_1"])  # gone: a sender starts a courier
    finally:
        server.close()


def test_a_leaving_courier_leaves_a_newer_ones_address(tmp_path: Path) -> None:
    courier_link.advertise(str(tmp_path / "new.sock"))
    courier_link.withdraw(str(tmp_path / "old.sock"))
    assert courier_link._advertised() == str(tmp_path / "new.sock")


def test_without_xdg_runtime_dir_the_runtime_dir_is_under_tmpdir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """codex passes TMPDIR on to the MCP servers it starts, not XDG_RUNTIME_DIR: sockets
    go under TMPDIR then (before, always /tmp: a test run's codex-started servers left
    /tmp/codexbridge-<uid> behind), and /tmp only without it."""
    from codexbridge.host.runtime import runtime_dir

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert runtime_dir() == str(tmp_path / f"codexbridge-{os.getuid()}")
    monkeypatch.setenv("TMPDIR", "relative/dir")  # not a place: ignored
    assert runtime_dir() == f"/tmp/codexbridge-{os.getuid()}"
    monkeypatch.delenv("TMPDIR")
    assert runtime_dir() == f"/tmp/codexbridge-{os.getuid()}"

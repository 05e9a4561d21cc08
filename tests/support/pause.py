"""Stopping a codexbridge subprocess at one of the mailbox store's crash points, to
SIGKILL it there. The shipped store only calls `store.reached(point)` (a no-op); this
replaces it in the child (through `child_site/sitecustomize.py`).

A process Claude Code starts (its watcher, its Stop hook) cannot tell the test on
stderr, and Claude starts one after another: `pause_env(…, once=FILE, only=WORD)` stops
only a process whose command line holds WORD, and only the first one to get there — it
writes its pid into FILE, which the test reads (`paused_pid`)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

PAUSE_ENV = "CODEX_BRIDGE_TEST_PAUSE"
ONCE_ENV = "CODEX_BRIDGE_TEST_PAUSE_ONCE"
ONLY_ENV = "CODEX_BRIDGE_TEST_PAUSE_ONLY"
SITE_DIR = Path(__file__).resolve().parent / "child_site"
REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def child_pythonpath(env: Mapping[str, str]) -> str:
    """PYTHONPATH for a child: the child site and the repository first, then the rest."""
    path = [str(SITE_DIR), str(REPO_ROOT)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    return os.pathsep.join(path)


def pause_env(point: str, seconds: float, base: Mapping[str, str] | None = None, *,
              once: Path | None = None, only: str | None = None) -> dict[str, str]:
    """An environment whose codexbridge processes stop at `point` for `seconds`,
    announcing `codexbridge-test-pause: POINT pid=N` on stderr first (and in `once`)."""
    env = dict(os.environ if base is None else base)
    env[PAUSE_ENV] = f"{point}={seconds:g}"
    if once is not None:
        env[ONCE_ENV] = str(once)
    if only is not None:
        env[ONLY_ENV] = only
    env["PYTHONPATH"] = child_pythonpath(env)
    return env


def paused_pid(once: Path, timeout: float) -> int:
    """The pid of the process that stopped at its point (written into `once`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = once.read_text() if once.exists() else ""
        if text.strip().isdigit():
            return int(text)
        time.sleep(0.02)
    raise AssertionError(f"no process stopped at its pause point within {timeout}s")


def _first(once: str) -> bool:
    """Whether this process is the first to reach the point (it claims `once`)."""
    try:
        fd = os.open(once, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)
    return True


def install_in_child() -> None:
    from codexbridge.inbox import store

    point, _, seconds = os.environ.get(PAUSE_ENV, "").partition("=")
    once, only = os.environ.get(ONCE_ENV), os.environ.get(ONLY_ENV)
    if only and only not in sys.argv:
        return

    def reached(where: str) -> None:
        if where != point or (once and not _first(once)):
            return
        os.write(2, f"codexbridge-test-pause: {where} pid={os.getpid()}\n".encode())
        time.sleep(float(seconds))

    store.reached = reached

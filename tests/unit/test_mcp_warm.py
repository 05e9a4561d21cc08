"""The warm start's pure parts: the knob, the argv shapes it takes over, where its socket
lives and what separates one warm server from another (mcp/warm.py). The processes
themselves are in tests/real/test_mcp_warm.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge import errors as E
from codexbridge.mcp import settings, warm


@pytest.mark.parametrize(("raw", "idle"), [
    (None, 600.0), ("", 600.0), (" 30 ", 30.0), ("0", 0.0), ("2.5", 2.5),
    ("abc", None), ("-1", None), ("nan", None), ("inf", None),
])
def test_the_knob_is_seconds_and_zero_is_off(raw: str | None, idle: float | None) -> None:
    assert warm.parse_idle(raw) == idle


def test_a_bad_knob_is_a_start_up_error_naming_it() -> None:
    with pytest.raises(E.UsageError, match="CODEX_BRIDGE_MCP_WARM='soon' is not a number"):
        settings.load("claude", {"CODEX_BRIDGE_MCP_WARM": "soon"})
    assert settings.load("claude", {"CODEX_BRIDGE_MCP_WARM": "0"}).role == "claude"
    proc = subprocess.run([sys.executable, "-m", "codexbridge", "mcp", "--role", "claude"],
                          env={**os.environ, "CODEX_BRIDGE_MCP_WARM": "-3"}, input="",
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "CODEX_BRIDGE_MCP_WARM='-3' is not a number of seconds" in proc.stderr


@pytest.mark.parametrize(("argv", "shape"), [
    ([], (True, None)), (["--role", "codex"], (True, "codex")),
    (["--role=claude"], (True, "claude")), (["--role"], (False, None)),
    (["--help"], (False, None)), (["--role", "codex", "--http", "127.0.0.1:0"], (False, None)),
])
def test_only_the_plain_stdio_start_is_taken_over(argv: list[str],
                                                  shape: tuple[bool, str | None]) -> None:
    assert warm.role_flag(argv) == shape


def test_the_launcher_leaves_unknown_roles_and_http_to_click(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_BRIDGE_MCP_ROLE", raising=False)
    assert warm.launch([]) is None
    assert warm.launch(["--role", "both"]) is None
    assert warm.launch(["--http", "127.0.0.1:0"]) is None
    monkeypatch.setenv("CODEX_BRIDGE_MCP_WARM", "0")
    assert warm.launch(["--role", "claude"]) is None


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path (pytest's tmp_path may leave no room for a socket)."""
    path = tempfile.mkdtemp(prefix="cbw-", dir="/tmp")
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_the_socket_lives_in_a_directory_of_ours_alone(
        short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path = short_dir
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    path = warm.socket_path()
    assert path is not None and path.startswith(str(tmp_path / "codexbridge" / "mcp-"))
    assert os.stat(tmp_path / "codexbridge").st_mode & 0o777 == 0o700
    os.chmod(tmp_path / "codexbridge", 0o755)  # others may enter: no warm server here
    assert warm.socket_path() is None
    shutil.rmtree(tmp_path / "codexbridge")  # (with the socket names' key in it)
    os.symlink(tmp_path / "elsewhere", tmp_path / "codexbridge")
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    assert warm.socket_path() is None


def test_a_deep_runtime_dir_means_no_warm_server(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    assert warm.socket_path() is None  # a unix socket path has ~104 bytes


def test_what_import_reads_separates_servers_the_working_directory_does_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = warm.ident()
    monkeypatch.setenv("CODEX_BRIDGE_HOME", str(tmp_path))  # read per session, not at import
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "x")
    assert warm.ident() == base
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    assert warm.ident() != base
    monkeypatch.delenv("PYTHONWARNINGS")
    rest = [p for p in sys.path if p not in ("", os.getcwd())]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", *rest])  # `python -c`
    from_c = warm.ident()
    monkeypatch.setattr(sys, "path", [str(tmp_path), *rest])  # `python -m` in tmp_path
    assert warm.ident() == from_c
    monkeypatch.setattr(sys, "path", [str(tmp_path / "bin"), *rest])  # a console script
    assert warm.ident() != from_c
    key = os.urandom(32)
    assert warm.server_key(base, key) != warm.server_key(base + " ", key)


def test_socket_names_are_keyed_by_a_private_key(short_dir: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc/net/unix lists every socket's name to every user, and ident() holds
    environment values (OTEL_* may carry credentials): the name is a keyed hash under a
    random key of ours (0600, in the private runtime directory), not a checksum anyone
    could match against guesses."""
    import stat

    run = short_dir
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    first = warm.socket_path()
    assert first is not None and first == warm.socket_path()  # stable for one user
    key_file = run / "codexbridge" / warm.NAME_KEY
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(key_file.read_bytes()) == 32
    key_file.unlink()  # another key: another name for the same ident
    assert warm.socket_path() not in (None, first)

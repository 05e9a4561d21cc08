"""The quick start's pure parts: the knob, the argv shapes it takes, where its record lives
and what makes a record stale (mcp/startup_cache.py). The sessions themselves are in
tests/real/test_mcp_startup_cache.py."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge import errors as E
from codexbridge.mcp import settings, startup_cache


@pytest.mark.parametrize(("raw", "on"), [
    (None, True), ("", True), (" 30 ", True), ("0", False), ("2.5", True),
    ("abc", None), ("-1", None), ("nan", None), ("inf", None),
])
def test_the_knob_is_seconds_and_zero_is_off(raw: str | None, on: bool | None) -> None:
    assert startup_cache.parse_knob(raw) == on


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
def test_only_the_plain_stdio_start_is_taken(argv: list[str],
                                             shape: tuple[bool, str | None]) -> None:
    assert startup_cache.role_flag(argv) == shape


def test_unknown_roles_http_and_the_knob_off_are_left_to_click(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_BRIDGE_MCP_ROLE", raising=False)
    assert startup_cache.launch([]) is None
    assert startup_cache.launch(["--role", "both"]) is None
    assert startup_cache.launch(["--http", "127.0.0.1:0"]) is None
    monkeypatch.setenv("CODEX_BRIDGE_MCP_WARM", "0")
    assert startup_cache.launch(["--role", "claude"]) is None


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = tempfile.mkdtemp(prefix="cbq-", dir="/tmp")
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_the_record_lives_in_a_directory_of_ours_alone(
        short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_dir))
    path = startup_cache.record_path("claude")
    assert path is not None and path.startswith(str(short_dir / "codexbridge" / "mcp-start-"))
    assert os.stat(short_dir / "codexbridge").st_mode & 0o777 == 0o700
    os.chmod(short_dir / "codexbridge", 0o755)  # others may enter: no record here
    assert startup_cache.record_path("claude") is None
    shutil.rmtree(short_dir / "codexbridge")
    (short_dir / "elsewhere").mkdir(mode=0o700)
    os.symlink(short_dir / "elsewhere", short_dir / "codexbridge")
    assert startup_cache.record_path("claude") is None


def test_a_record_answers_only_for_the_key_it_was_made_for(short_dir: Path) -> None:
    env = {"CODEX_BRIDGE_TOKEN": "tok-8d1f2e"}
    key = startup_cache.record_key("claude", env)
    assert key == startup_cache.record_key("claude", {**env, "PATH": "/x"})
    assert key != startup_cache.record_key("codex", env)
    other = {**env, "CODEX_BRIDGE_TEXT_MAX": "9"}  # other settings
    assert key != startup_cache.record_key("claude", other)
    assert "tok-8d1f2e" not in key  # hashed: a CODEX_BRIDGE_* value may be a token
    path = str(short_dir / "record.json")
    ask = startup_cache.request_key("tools/list", {})
    startup_cache.save_record(path, key, {ask: {"result": {"tools": []}}})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert startup_cache.load_record(path, key) == {ask: {"result": {"tools": []}}}
    assert startup_cache.load_record(path, key + " ") == {}  # another install or settings
    Path(path).write_text("{not json", encoding="utf-8")
    assert startup_cache.load_record(path, key) == {}  # damaged: a cold start rewrites it
    assert startup_cache.load_record(None, key) == {}


def test_a_changed_source_file_changes_the_key(short_dir: Path) -> None:
    (short_dir / "a.py").write_text("x = 1\n", encoding="utf-8")
    before = startup_cache._stamps(str(short_dir))
    (short_dir / "a.py").write_text("x = 22\n", encoding="utf-8")
    assert startup_cache._stamps(str(short_dir)) != before

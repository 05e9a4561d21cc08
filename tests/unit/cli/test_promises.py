"""Promises the exit-code table makes: a bug is exit 70 with one line and the traceback in
the log; a bad URL or setting is a bad argument (exit 2) naming the value, never a
traceback."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codexbridge.cli import bug, main, talk_cmd
from codexbridge.cli.app import cli
from codexbridge.codex import endpoint
from codexbridge.errors import UsageError
from codexbridge.host import limits


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def broken_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """`talk list` with a bug in it: the endpoint lookup raises what nobody expects."""
    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(talk_cmd, "resolve_endpoint", boom)


def test_a_bug_is_exit_70_one_line_and_the_traceback_in_a_private_log(
        broken_list: None) -> None:
    code, out, err = run("talk", "list")
    assert code == 70
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    log = Path(bug.log_path())
    assert "a bug in codexbridge" in lines[0] and "RuntimeError: boom second line" in lines[0]
    assert str(log) in lines[0] and "Traceback" not in err and out == ""
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "RuntimeError: boom" in text
    assert "talk list: RuntimeError" in text


def test_a_bug_with_json_is_the_error_object(broken_list: None) -> None:
    code, out, err = run("talk", "list", "--json")
    assert code == 70 and len(err.strip().splitlines()) == 1
    error = json.loads(out)["error"]
    assert error["code"] == "INTERNAL_ERROR" and error["retryable"] is False
    assert error["details"]["type"] == "RuntimeError"
    assert error["details"]["log"] == bug.log_path()


def test_a_bug_outside_a_command_is_caught_by_main(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    import codexbridge.cli as entry  # `plugin` runs there, before click

    def boom(_: list[str]) -> int:
        raise KeyError("k")

    monkeypatch.setattr(entry, "plugin", boom)
    with pytest.raises(SystemExit) as exited:
        main(["plugin", "name"])
    assert exited.value.code == 70
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "KeyError" in err


def test_a_known_error_outside_a_command_keeps_its_code(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    import codexbridge.cli as entry  # `plugin` runs there, before click

    def refuse(_: list[str]) -> int:
        raise UsageError("no such thing")

    monkeypatch.setattr(entry, "plugin", refuse)
    with pytest.raises(SystemExit) as exited:
        main(["plugin", "name"])
    assert exited.value.code == 2 and "no such thing" in capsys.readouterr().err


def test_the_log_cannot_be_written_then_the_traceback_is_shown(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("CODEX_BRIDGE_HOME", str(tmp_path / "file" / "home"))
    try:
        raise ValueError("v")
    except ValueError as exc:
        assert bug.write_traceback(exc, "x") is None


def test_click_usage_errors_and_ctrl_c_keep_their_codes(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    assert run("talk", "list", "--no-such-option")[0] == 2

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(talk_cmd, "resolve_endpoint", interrupted)
    assert run("talk", "list")[0] == 130


@pytest.mark.parametrize(("url", "why"), [
    ("ws://[::1", "Invalid IPv6 URL"),
    ("ws://127.0.0.1:99999", "Port out of range"),
    ("ws://127.0.0.1:0", "port 0 is outside 1-65535"),
    ("ws://h:abc", "Port could not be cast"),
    ("http://127.0.0.1:1", "the scheme is 'http'"),
    ("ws://:80", "names no host"),
    ("unix://", "needs a socket path"),
])
def test_a_bad_url_is_a_bad_argument_naming_it(url: str, why: str) -> None:
    code, _, err = run("talk", "list", "--url", url)
    assert code == 2, err
    assert f"--url {url!r}" in err and why in err and "Traceback" not in err


def test_a_bad_url_in_the_environment_names_the_variable(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setenv("CODEX_BRIDGE_URL", "ws://[")
    code, _, err = run("talk", "list", "--json")
    assert code == 2 and "CODEX_BRIDGE_URL 'ws://['" in err
    code, out, _ = run("talk", "list", "--json")
    error = json.loads(out)["error"]
    assert error["code"] == "INVALID_ARGUMENT"
    assert error["details"] == {"url": "ws://[", "source": "CODEX_BRIDGE_URL"}


def test_handoff_refuses_a_bad_url_before_anything_else() -> None:
    code, _, err = run("handoff", "--to", "codex", "--url", "ws://[::1")
    assert code == 2 and "--url 'ws://[::1'" in err


@pytest.mark.parametrize("url", ["ws://127.0.0.1:4500", "wss://host.example/x",
                                 "ws://[::1]:1", "ws://localhost", "unix:///tmp/s.sock"])
def test_good_urls_pass(url: str) -> None:
    assert endpoint.checked_url(url, "--url") == url


def test_a_bad_cap_falls_back_and_says_so_once(caplog: pytest.LogCaptureFixture,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # said as a logged warning (a command shows it on stderr: the real push below)
    monkeypatch.setattr(limits, "_said", set())
    caplog.set_level(logging.WARNING, logger="codexbridge")
    env = {"CODEX_BRIDGE_MAIL_MAX": "zz"}
    assert limits.mail_max(env) == limits.DEFAULT_MAIL_MAX
    assert limits.mail_max(env) == limits.DEFAULT_MAIL_MAX
    assert limits.mail_max({"CODEX_BRIDGE_MAIL_MAX": "-3"}) == limits.DEFAULT_MAIL_MAX
    assert limits.text_max({"CODEX_BRIDGE_TEXT_MAX": "0"}) == limits.DEFAULT_TEXT_MAX
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert "CODEX_BRIDGE_MAIL_MAX='zz'" in lines[0] and "using the default" in lines[0]
    caplog.clear()
    assert limits.mail_max({"CODEX_BRIDGE_MAIL_MAX": " 9 "}) == 9
    assert limits.mail_max({}) == limits.DEFAULT_MAIL_MAX
    assert caplog.records == []


def test_a_bad_cap_is_said_by_a_real_push(tmp_path: Path) -> None:
    env = {**os.environ, "CODEX_BRIDGE_MAIL_MAX": "zz", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "push", "--to", "web",
                           "--new", "hi"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "codexbridge: CODEX_BRIDGE_MAIL_MAX='zz'" in done.stderr

"""The Stop hook as a process: stdin in, stdout out, always exit 0, light imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox.location import chain_path
from codexbridge.messages.listeners import session_path
from tests.support.helpers import push

STOP = {"session_id": "sess-1", "cwd": "/proj", "prompt_id": "p1",
        "hook_event_name": "Stop", "stop_hook_active": False}


def hook(name: str = "box", stdin: bytes | dict[str, Any] | None = None,
         *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    data = json.dumps(stdin).encode() if isinstance(stdin, dict) else (stdin or b"")
    argv = [sys.executable, "-m", "codexbridge", "inbox", "hook"]
    argv += list(args) if args else ["--as", name]
    return subprocess.run(argv, input=data, capture_output=True, timeout=30,
                          env={**os.environ, **(env or {})}, check=False)


def log_text() -> str:
    path = Path(os.environ["CODEX_BRIDGE_HOME"]) / "logs" / "inbox-hook.log"
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("stdin", [b"", b"garbage{", b"[1,2]", b"\xff\xfe", STOP])
def test_empty_mailbox_is_silent_whatever_stdin(stdin: bytes | dict[str, Any]) -> None:
    proc = hook("box", stdin)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""


def test_records_the_listener() -> None:
    hook("box", {**STOP, "transcript_path": "/t.jsonl"})
    record = json.loads(Path(session_path(inbox_dir(), "box")).read_text())
    assert record["name"] == "box" and record["cwd"] == "/proj"
    assert record["session_id"] == "sess-1" and record["transcript_path"] == "/t.jsonl"
    assert record["last_seen"].endswith("Z") and record["via"] == "hook"


def test_at_session_start_it_only_registers_the_session() -> None:
    mail_id = push("for the first stop")
    start = {"session_id": "sess-0", "cwd": "/proj", "hook_event_name": "SessionStart",
             "source": "startup"}
    proc = hook("box", start, env={"CLAUDE_CODE_MESSAGING_SOCKET": "/s/0.sock"})
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    record = json.loads(Path(session_path(inbox_dir(), "box")).read_text())
    assert record["session_id"] == "sess-0"
    assert [m.mail_id for m in reading.peek(inbox_dir(), "box").mails] == [mail_id]


def test_garbage_stdin_still_records_cwd() -> None:
    hook("box", b"not json")
    record = json.loads(Path(session_path(inbox_dir(), "box")).read_text())
    assert record["session_id"] is None and record["cwd"] == os.getcwd()


def test_all_pending_mail_in_one_block() -> None:
    ids = [push(f"message {i}") for i in range(3)]
    proc = hook("box", STOP)
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    assert out["decision"] == "block"
    for i, mail_id in enumerate(ids):
        assert f"message {i}" in out["reason"] and mail_id in out["reason"]
    assert "3 new messages" in out["reason"]
    assert hook("box", {**STOP, "stop_hook_active": True}).stdout == b""  # now empty
    assert not os.path.exists(chain_path(inbox_dir(), "box"))  # chain ended


def test_chain_limit_keeps_mail_for_the_next_stop() -> None:
    env = {"CODEX_BRIDGE_MAX_CHAIN": "2"}
    outputs = []
    for active in (False, True, True):
        push(f"stop-{len(outputs)}")
        outputs.append(hook("box", {**STOP, "stop_hook_active": active}, env=env).stdout)
    assert b"stop-0" in outputs[0] and b"stop-1" in outputs[1]
    assert outputs[2] == b""  # third consecutive block refused...
    assert [m.text for m in reading.peek(inbox_dir(), "box").mails] == ["stop-2"]  # ...kept
    assert "mail left for the next stop" in log_text()
    # The next turn (a new prompt) gets it.
    nxt = hook("box", {**STOP, "prompt_id": "p2"}, env=env)
    assert b"stop-2" in nxt.stdout


def test_chain_is_counted_per_session() -> None:
    env = {"CODEX_BRIDGE_MAX_CHAIN": "1"}
    push("mail-A")
    assert b"mail-A" in hook("box", STOP, env=env).stdout
    push("mail-B")
    assert hook("box", {**STOP, "stop_hook_active": True}, env=env).stdout == b""
    other = {**STOP, "session_id": "sess-2", "prompt_id": "q1", "stop_hook_active": True}
    assert b"mail-B" in hook("box", other, env=env).stdout  # a different session's chain


def test_leftover_chain_of_another_session_keeps_the_fast_path() -> None:
    from codexbridge.hooks import process as chain

    chain.save_chain(inbox_dir(), "box", "dead-session", 2, "p0")
    code = ("import json, sys\n"
            "from codexbridge.hooks.process import run_hook\n"
            "run_hook('box', {'session_id': 'live-session'})\n"
            "print(json.dumps('codexbridge.hooks.loop_guard' in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert json.loads(proc.stdout) is False
    assert chain.load_chain(inbox_dir(), "box", "dead-session") == (2, "p0")


def test_stale_chains_are_pruned() -> None:
    from codexbridge.hooks import process as chain

    path = chain_path(inbox_dir(), "box")
    os.makedirs(inbox_dir(), mode=0o700, exist_ok=True)
    with open(path, "w") as fh:
        json.dump({"sessions": {"old": {"blocks": 1, "at": "2000-01-01T00:00:00.000Z"}}}, fh)
    chain.save_chain(inbox_dir(), "box", "new", 1, None)
    assert chain.load_chain(inbox_dir(), "box", "old") is None
    assert chain.load_chain(inbox_dir(), "box", "new") == (1, None)
    # a file from before versions read as version 1, and written back with one
    assert json.loads(Path(path).read_text())["version"] == chain.CHAIN_VERSION


def test_claude_cap_is_respected_even_if_max_chain_is_higher() -> None:
    env = {"CODEX_BRIDGE_MAX_CHAIN": "50", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "2"}
    push("one")
    assert hook("box", STOP, env=env).stdout
    push("two")
    assert hook("box", {**STOP, "stop_hook_active": True}, env=env).stdout == b""
    assert "using 1" in log_text()


def test_rejected_lines_are_reported_once() -> None:
    os.makedirs(inbox_dir(), mode=0o700, exist_ok=True)
    with open(os.path.join(inbox_dir(), "box.jsonl"), "wb") as fh:
        fh.write(b"this is not json\n")
    out = json.loads(hook("box", STOP).stdout)
    assert "could not be read" in out["reason"] and "box.rejected.jsonl" in out["reason"]
    assert hook("box", {**STOP, "prompt_id": "p2"}).stdout == b""
    assert len(reading.read_rejected(inbox_dir(), "box")) == 1


def test_errors_are_logged_never_shown(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    proc = hook("box", STOP, env={"CODEX_BRIDGE_INBOX_DIR": str(blocker / "inbox")})
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    assert "hook failed" in log_text() or "could not record" in log_text()


@pytest.mark.parametrize("args", [("--as", "../x"), ("--as",), ("--bogus",)])
def test_bad_arguments_exit_0_and_log(args: tuple[str, ...]) -> None:
    proc = hook("box", STOP, *args)
    assert proc.returncode == 0 and proc.stdout == b""
    assert "hook not run" in log_text()


def test_help() -> None:
    proc = hook("box", None, "--help")
    assert proc.returncode == 0 and b"Stop hook" in proc.stdout


def test_default_mailbox_from_env() -> None:
    push("for web", to="web")
    proc = hook("x", STOP, "--as=web")
    assert b"for web" in proc.stdout
    push("env box", to="envbox")
    argv = [sys.executable, "-m", "codexbridge", "inbox", "hook"]
    proc2 = subprocess.run(argv, input=json.dumps(STOP).encode(), capture_output=True,
                           env={**os.environ, "CODEX_BRIDGE_MAILBOX": "envbox"}, check=False)
    assert b"env box" in proc2.stdout


def test_fast_path_imports_stay_light() -> None:
    """No click, pydantic, portalocker, typing or dataclasses on the empty path."""
    code = ("import json, sys\n"
            "from codexbridge.hooks.process import run_hook\n"
            "run_hook('box', {'session_id': 's'})\n"
            "heavy = {'click', 'pydantic', 'portalocker', 'typing', 'dataclasses', 'mcp',"
            " 'websockets', 'tempfile'}\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert json.loads(proc.stdout) == []


def test_big_mail_is_handed_over_as_a_preview_and_a_private_file() -> None:
    import stat

    from codexbridge.messages.render import INLINE_MAX, PREVIEW_CHARS

    big = "B" * (INLINE_MAX + 10)
    mail_id = push(big)
    small = push("small one")
    proc = hook("box", STOP)
    reason = json.loads(proc.stdout)["reason"]
    assert len(reason.encode()) < INLINE_MAX  # never the whole text in Claude's context
    assert "small one" in reason and "B" * PREVIEW_CHARS in reason
    path = reason.split("The whole text is in ", 1)[1].split(" — ", 1)[0]
    assert Path(path).read_text() == big and mail_id in path and small
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

"""`codexbridge inbox …` and `install-hook` through click: output, warnings, exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from codexbridge.cli.app import cli
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.messages.listeners import record_listener


def run(*args: str, stdin: str | bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def listen(name: str) -> None:
    record_listener(inbox_dir(), name, {"session_id": "s", "cwd": "/p"}, via="hook")


def test_push_prints_the_id_and_peek_shows_it() -> None:
    listen("web")
    code, out, err = run("inbox", "push", "--to", "web", "fix CORS")
    assert code == 0 and len(out.strip()) == 36
    # the listener has no live address: the receipt says the Stop hook will deliver
    assert err.startswith("codexbridge: queued: next stop — the session has no cross-")
    code, out, _ = run("inbox", "peek", "--as", "web")
    assert code == 0 and "fix CORS" in out and "from codex" in out


def test_push_json_receipt_and_stdin() -> None:
    listen("web")
    code, out, _ = run("inbox", "push", "--to", "web", "--from", "reviewer", "--json", "-",
                       stdin="from stdin\n")
    receipt = json.loads(out)
    assert code == 0 and receipt["ok"] and receipt["to"] == "web"
    assert receipt["from"] == "reviewer" and receipt["listener"]["session_id"] == "s"
    assert receipt["delivery"] == "next-stop" and receipt["delivery_reason"]
    _, peeked, _ = run("inbox", "peek", "--as", "web", "--json")
    assert json.loads(peeked)["messages"][0]["text"] == "from stdin"


def test_push_to_unknown_name_is_refused_with_closest_match_unless_new() -> None:
    # One push rule for the CLI and MCP (messages/to_claude.py): a typo must not lose mail.
    listen("bridge")
    listen("web")
    code, out, err = run("inbox", "push", "--to", "bridg", "typo")
    assert code == 8 and not out.strip()
    assert 'no Claude session listens on mailbox "bridg"' in err
    assert "listening: bridge (" in err and ", web (" in err
    assert 'did you mean "bridge"? Address one of those' in err
    assert "--new" not in err and "new=true" not in err  # never offered as the way out
    code, out, err = run("inbox", "push", "--to", "bridg", "--new", "on purpose")
    assert code == 0 and out.strip() and 'mailbox "bridg" yet' in err
    _, peeked, _ = run("inbox", "peek", "--as", "bridg", "--json")
    assert json.loads(peeked)["pending"] == 1


def test_push_with_no_listener_at_all_says_how_to_hook() -> None:
    code, _, err = run("inbox", "push", "--to", "web", "x")
    assert code == 0 and "install-hook" in err


def test_push_default_mailbox_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as env:
        env.setenv("CODEX_BRIDGE_MAILBOX", "envbox")
        run("inbox", "push", "hello")
        _, out, _ = run("inbox", "peek", "--json")
        assert json.loads(out)["mailbox"] == "envbox"
    run("inbox", "push", "plain")
    _, out, _ = run("inbox", "peek", "--json")
    assert json.loads(out)["mailbox"] == "default"


def test_bad_input_exits_2_and_stores_nothing() -> None:
    for args in (["--to", "../etc", "x"], ["--to", "a b", "x"], ["--from", "a/b", "x"],
                 ["--to", "web", "   "]):
        code, _, err = run("inbox", "push", *args)
        assert code == 2, args
        assert "codexbridge:" in err
    code, _, err = run("inbox", "push", "--to", "web", "-", stdin=b"\xff\xfe")
    assert code == 2 and "UTF-8" in err
    code, out, _ = run("inbox", "push", "--to", "x/y", "--json", "hi")
    assert code == 2 and json.loads(out)["error"]["code"] == "INVALID_ARGUMENT"
    _, listing, _ = run("inbox", "list", "--json")
    assert json.loads(listing)["mailboxes"] == []


def test_io_failure_is_a_mailbox_error(tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("CODEX_BRIDGE_INBOX_DIR", str(blocker / "inbox"))
    code, _, err = run("inbox", "push", "--to", "web", "x")
    assert code == 8 and "cannot read the mailboxes" in err and "Not a directory" in err


def test_list_shows_counts_and_listeners() -> None:
    listen("web")
    run("inbox", "push", "--to", "web", "one")
    run("inbox", "push", "--to", "api", "--new", "two")
    with open(os.path.join(inbox_dir(), "web.jsonl"), "ab") as fh:
        fh.write(b"broken\n")
    run("inbox", "drain", "--as", "web")
    code, out, _ = run("inbox", "list", "--json")
    rows = {m["name"]: m for m in json.loads(out)["mailboxes"]}
    assert code == 0
    assert rows["web"]["pending"] == 0 and rows["web"]["rejected"] == 1
    assert rows["web"]["listener"]["cwd"] == "/p" and rows["api"]["listener"] is None
    assert rows["api"]["pending"] == 1
    _, human, _ = run("inbox", "list")
    assert "never listened" in human and "MAILBOX" in human


def test_drain_json_then_empty() -> None:
    run("inbox", "push", "--to", "web", "one")
    code, out, _ = run("inbox", "drain", "--as", "web", "--json")
    data = json.loads(out)
    assert code == 0 and [m["text"] for m in data["messages"]] == ["one"]
    code, out, _ = run("inbox", "drain", "--as", "web", "--json")
    assert code == 0 and json.loads(out)["messages"] == []
    _, human, _ = run("inbox", "drain", "--as", "web")
    assert "no mail" in human


def test_peek_reports_rejected_and_unreadable() -> None:
    os.makedirs(inbox_dir(), mode=0o700, exist_ok=True)
    with open(os.path.join(inbox_dir(), "web.jsonl"), "wb") as fh:
        fh.write(b'{"text":"ok"}\nnope\n')
    _, out, _ = run("inbox", "peek", "--as", "web")
    assert "1 unreadable line(s)" in out
    run("inbox", "drain", "--as", "web")
    _, out, _ = run("inbox", "peek", "--as", "web", "--json")
    data = json.loads(out)
    assert data["rejected"] == 1 and data["rejected_lines"][0]["line"] == "nope"


def test_install_hook_cli(tmp_path: Path) -> None:
    code, out, _ = run("install-hook", "--project", str(tmp_path), "--as", "web",
                       "--dry-run")
    assert code == 0 and "dry run" in out
    assert not (tmp_path / ".claude").exists()
    code, out, _ = run("install-hook", "--project", str(tmp_path), "--as", "web",
                       "--rewake")
    assert code == 0 and "wrote" in out
    code, out, _ = run("install-hook", "--project", str(tmp_path), "--as", "web",
                       "--rewake")
    assert code == 0 and "nothing to change" in out
    code, out, _ = run("install-hook", "--project", str(tmp_path), "--as", "web", "--json")
    data = json.loads(out)
    assert data["ok"] and data["changes"] == [] and data["written"] is False


def test_install_hook_refusals(tmp_path: Path) -> None:
    code, _, err = run("install-hook", "--project", str(tmp_path), "--as", "../x")
    assert code == 2 and "invalid mailbox name" in err
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{oops")
    code, _, err = run("install-hook", "--project", str(tmp_path), "--as", "web")
    assert code == 2 and "not valid JSON" in err
    code, _, err = run("install-hook", "--project", str(tmp_path / "nope"), "--as", "web")
    assert code == 2


def test_hook_via_click_group_still_exits_0() -> None:
    result = CliRunner().invoke(cli, ["inbox", "hook", "--as", "web"], input="{}")
    assert result.exit_code == 0 and result.stdout == ""


def test_list_reads_claude_codex_bridge_session_files() -> None:
    os.makedirs(inbox_dir(), mode=0o700, exist_ok=True)
    with open(os.path.join(inbox_dir(), "bridge.session.json"), "w") as fh:
        json.dump({"name": "bridge", "cwd": "/w", "lastSeen": "2026-05-01T09:30:12.345Z"}, fh)
    _, out, _ = run("inbox", "list", "--json")
    row = json.loads(out)["mailboxes"][0]
    assert row["listener"]["last_seen"] == "2026-05-01T09:30:12.345Z"
    code, _, err = run("inbox", "push", "--to", "bridge", "hi")
    assert code == 0 and "warning" not in err  # a known listener: no warning


def test_a_push_over_the_hard_cap_is_refused_and_nothing_is_stored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    listen("web")
    monkeypatch.setenv("CODEX_BRIDGE_MAIL_MAX", "1024")
    code, _out, err = run("inbox", "push", "--to", "web", "-", stdin="x" * 2048)
    assert code == 2 and "the cap is 1024" in err and "CODEX_BRIDGE_MAIL_MAX" in err
    assert run("inbox", "peek", "--as", "web", "--json")[1].count('"id"') == 0


@pytest.mark.parametrize("where", ["~", "~/.claude/state", "~/.codex"])
def test_an_unsafe_state_home_is_refused_before_anything_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    # HOME is the test's own: the product is never pointed at a directory outside the
    # test's temp dirs (`/` is judged by the pure function: test_conversation.py).
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CODEX_BRIDGE_HOME", os.path.expanduser(where))
    before, mode = sorted(p.name for p in tmp_path.iterdir()), tmp_path.stat().st_mode
    code, _out, err = run("inbox", "list")
    assert code == 2 and "refusing to use it: CODEX_BRIDGE_HOME" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert tmp_path.stat().st_mode == mode


def test_no_name_means_the_session_listening_in_this_project(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Codex runs its commands (and its MCP servers) in the thread's directory: with no
    # mailbox named, the mail goes to the one Claude session listening in that project —
    # `setup codex` need not know a name, and nothing is parked where nobody reads.
    web, api = tmp_path / "web", tmp_path / "api"
    for d in (web, api, web / "src"):
        d.mkdir()
    record_listener(inbox_dir(), "web-1a2b3c", {"session_id": "s1", "cwd": str(web)}, "hook")
    record_listener(inbox_dir(), "api-4d5e6f", {"session_id": "s2", "cwd": str(api)}, "hook")
    monkeypatch.chdir(web / "src")  # a directory below the project counts too
    code, out, _ = run("inbox", "push", "--json", "from a subdirectory")
    assert code == 0 and json.loads(out)["to"] == "web-1a2b3c"
    # two sessions in one project: named, never a guess, never `--new` as the way out
    record_listener(inbox_dir(), "web-1a2b3c-9f8e7d6c", {"session_id": "s3", "cwd": str(web)},
                    "hook")
    monkeypatch.chdir(web)
    code, out, err = run("inbox", "push", "which one?")
    assert code == 4 and not out.strip()
    assert "web-1a2b3c, web-1a2b3c-9f8e7d6c" in err and "--new" not in err
    # outside any listening project: the old default, refused while others listen
    monkeypatch.chdir(tmp_path)
    code, _, err = run("inbox", "push", "nobody here")
    assert code == 8 and 'mailbox "default"' in err and f"web-1a2b3c ({web})" in err
    assert "--new" not in err and "new=true" not in err  # parking it is never the way out

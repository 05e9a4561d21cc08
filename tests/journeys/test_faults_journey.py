"""Faults on the user's path, at its defaults: something dies mid-conversation and the one
who asked is told — by itself, with no command run — and nothing arrives twice.

    the daemon killed mid-turn   the courier waits for it (CODEX_BRIDGE_SERVER_WAIT, 60 s);
                                 the user starts codex again: the courier rejoins, finds
                                 the turn codex ended, and Claude gets DELIVERY FAILED
    the Codex TUI killed         the daemon keeps the thread: the answer still arrives
    Claude killed answering      the courier watches the session it handed the request
                                 to: the asking Codex thread gets a turn saying so
    the courier killed           Claude's watcher (or its next stop) starts a new one,
                                 which finds the turn and routes the answer, RECOVERED

Stated bounds, each asserted: seconds after the event, not a fixed sleep — the asker's
next model request (Claude) or the thread's next turn (Codex) carries the news.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from codexbridge.host.procs import pid_alive
from tests.support.helpers import wait_until

from .conftest import Journey, fresh_text
from .steps import Gate, ask_claude, bash

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]

TOLD_WITHIN = 30.0  # s from the event to the asker's turn carrying the news


def claude_sends(j: Journey, text: str) -> dict[str, object]:
    """Claude's Bash tool runs `talk send TEXT` (the human allows it); its record."""
    before = {r["id"] for r in j.records()}
    j.claude["project"].send(bash(f'codexbridge talk send "{text}"'))
    j.claude_allows()
    made = wait_until(lambda: [r for r in j.records() if r["id"] not in before
                               and r.get("text_preview") == text], 60, "the delivery record",
                      lambda: j.explain("the delivery record"))
    return made[0]


def held(j: Journey, key: str) -> None:
    j.world.codex_mock.wait_held(key, 60)


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not pid_alive(pid), 10, f"pid {pid} to die")


def test_the_codex_tui_killed_mid_turn_the_answer_still_arrives(journey: Journey) -> None:
    j = journey
    since = j.claude_mark()
    rec = claude_sends(j, "HOLD:tui-dies Claude asks: summarise the diff")
    held(j, "tui-dies")
    tui = j.codex.pop("project")
    assert tui.pid is not None
    kill(tui.pid)
    j.world.codex_mock.release("tui-dies")
    got = j.claude_saw("MOCK REPLY: HOLD:tui-dies Claude asks: summarise the diff", since,
                       TOLD_WITHIN)
    assert "Reply from Codex" in fresh_text(got)
    assert j.final(str(rec["id"]))["state"] == "delivered"
    told = [r for r in j.claude_requests(since)
            if "MOCK REPLY: HOLD:tui-dies" in fresh_text(r)]
    assert len(told) == 1  # told once
    # the human opens it again, back on the same thread
    j.codex["project"] = j.world.codex_tui("project", resume=j.threads["project"])
    j.on_screen(j.codex["project"], "MOCK REPLY: HOLD:tui-dies Claude asks: summarise")


def test_the_courier_killed_mid_turn_is_replaced_and_the_answer_recovered(
        journey: Journey) -> None:
    j = journey
    since = j.claude_mark()
    rec = claude_sends(j, "HOLD:courier-dies Claude asks: list the flaky tests")
    held(j, "courier-dies")
    pid = wait_until(lambda: j.record(str(rec["id"])).get("courier_pid"), 30,
                     "the courier to take the delivery")
    kill(int(pid))
    # Claude sits idle: its watcher notices the delivery owed with no courier and starts
    # one; released, the turn's answer comes in, marked recovered — once.
    replaced = wait_until(lambda: (p := j.record(str(rec["id"])).get("courier_pid"))
                          and p != pid and pid_alive(int(p)) and p, TOLD_WITHIN,
                          "a new courier", lambda: j.explain("a new courier"))
    assert replaced != pid
    j.world.codex_mock.release("courier-dies")
    got = j.claude_saw("MOCK REPLY: HOLD:courier-dies Claude asks: list the flaky tests",
                       since, TOLD_WITHIN)
    assert "RECOVERED reply from Codex" in fresh_text(got)
    assert j.final(str(rec["id"]))["state"] == "delivered"
    j.on_screen(j.codex["project"], "MOCK REPLY: HOLD:courier-dies")
    j.on_screen(j.claude["project"], "RECOVERED reply from Codex")
    turns = [t for t in j.codex_user_texts() if "list the flaky tests" in t]
    assert len(turns) == 1  # never resent


def test_claude_killed_while_answering_the_asking_thread_is_told(journey: Journey) -> None:
    j = journey
    codex = j.codex["project"]
    with Gate(j, "Codex asks (Claude will die)") as gate:
        rid = ask_claude(j, "Codex asks (Claude will die): is the schema final?")
        gate.wait_held()  # Claude took it in and is answering
        pid = j.claude["project"].pid
        assert pid is not None
        kill(pid)
        j.claude.pop("project")
    j.on_screen(codex, f"your request {rid} to Claude Code got no answer", TOLD_WITHIN)
    # the whole notice from its record: the TUI may show an older turn cut to one line
    [notice] = [r for r in j.records() if r.get("in_reply_to") == rid]
    text = (j.world.bridge_home / "deliveries" / f"{notice['id']}.text").read_text()
    told = " ".join(text.split())
    # Killed mid-answer, Claude may not have written the mail's record yet: then the mail
    # counts as never taken in, goes back to the mailbox for the project's next session,
    # and the thread is told that instead — never silence, never a guess.
    rec = j.record(rid)
    if "ended before it answered" in told:
        assert rec["state"] == "failed" and "ended before it answered" in rec["reason"]
    else:
        assert "ended before it took it in" in told and "waits in mailbox" in told
        assert rec["state"] == "queued" and rec["claude_pid"] is None
        waiting = j.cb_json("inbox", "peek")["messages"]
        assert [m["text"] for m in waiting] == [
            "Codex asks (Claude will die): is the schema final?"]
    notices = [r for r in j.records() if r.get("in_reply_to") == rid]
    assert len(notices) == 1


def test_the_daemon_killed_mid_turn_claude_is_told_when_codex_is_back(
        journey: Journey) -> None:
    j = journey
    j.open_claude("project")
    since = j.claude_mark()
    rec = claude_sends(j, "HOLD:daemon-dies Claude asks: run the migration check")
    held(j, "daemon-dies")
    wait_until(lambda: j.record(str(rec["id"]))["state"] == "awaiting-reply", 30,
               "the courier to follow the turn", lambda: j.explain("courier following"))
    daemon = j.world.daemon_pid()
    assert daemon is not None
    kill(daemon)
    wait_until(lambda: j.record(str(rec["id"])).get("server_lost_at"), 30,
               "the courier to notice", lambda: j.explain("server lost"))
    # the user starts codex again (plain `codex` starts the daemon): the courier, still
    # waiting for it, rejoins; codex ended the cut turn, and Claude hears it at once
    j.world.codex_mock.release("daemon-dies")
    back = j.world.run(j.world.codex_bin, "app-server", "daemon", "start", timeout=120)
    assert back.returncode == 0, back.stderr
    got = j.claude_saw("DELIVERY FAILED", since, 60 + TOLD_WITHIN)
    text = fresh_text(got)
    assert str(rec["id"]) in text and "went away" in text
    final = j.final(str(rec["id"]))
    assert final["state"] == "failed" and final["reply_mail_id"]
    told = [r for r in j.claude_requests(since) if "DELIVERY FAILED" in fresh_text(r)]
    assert len(told) == 1  # told once
    j.on_screen(j.claude["project"], "DELIVERY FAILED")  # the human sees it too
    status = json.loads(j.cb("talk", "status", str(rec["id"]), "--json").stdout)
    assert status["delivery"]["state"] == "failed"

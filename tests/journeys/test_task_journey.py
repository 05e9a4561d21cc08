"""Long asks as MCP tasks (issue 26, part 1), with both real TUIs at their defaults.

    a task-backed ask   Claude's model calls codex_message_send (wait: true, the default):
                        the pinned Claude Code takes it as an MCP task — the call is
                        answered at once, Claude answers the human's next prompt while
                        Codex works, and Codex's reply arrives by itself as a
                        <task-notification> (never also as mail).
    its cancel          Claude's model stops the task (TaskStop): Claude Code sends
                        tasks/cancel and the Codex turn is interrupted.
    its session ends    the human quits Claude mid-task: the reply comes as mail, and
                        the next `claude` in the project gets it — never lost.

Codex's turn is held by the mock model (`HOLD:<key>`) as long as the test needs: the
test waits on signals (a held stream, a model request, a record), never on time.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest

from tests.support.helpers import wait_until

from .conftest import Journey, fresh_text
from .steps import CODEX_TOOL

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]

PLACEHOLDER = "started server-side task"  # Claude Code's tool result for a task (2.1.332)
TASK_ID_RE = re.compile(r'TaskStop with task_id "([^"]+)"')
LATENCY: dict[str, float] = {}  # what each step cost, measured (printed; the docs quote it)
HELD: set[str] = set()  # the HOLD keys asked so far in this module's world


@pytest.fixture(autouse=True)
def _no_turn_left_held(journey: Journey) -> Iterator[None]:
    """The world is shared by the module's tests: a test that fails while Codex's turn
    is held must not leave the thread busy under the next one (it would fail for the
    first one's reason)."""
    yield
    for key in HELD:
        journey.world.codex_mock.release(key)


def asked_as_task(j: Journey, ask: str, key: str) -> tuple[dict[str, object], str]:
    """Claude's model calls codex_message_send with `ask` (wait: true); the human allows
    it. Returns the delivery record and the text of the tool result Claude's model got —
    once Codex's turn is held on `key`."""
    since = j.claude_mark()
    HELD.add(key)
    j.claude["project"].send(f"CALL_TOOL {CODEX_TOOL} " + json.dumps({"text": ask}))
    j.claude_allows()  # sending to Codex asks (setup allows only the read-only tools)
    j.world.codex_mock.wait_held(key, 60)
    got = j.claude_saw(PLACEHOLDER, since)
    placeholder = fresh_text(got)
    # Codex is at it: the MCP server that follows the turn notes it on the record (the
    # mock's held stream can come before that write, on a loaded machine)
    [rec] = wait_until(lambda: [r for r in j.records() if r.get("text_preview") == ask
                                and r["state"] in ("delivering", "awaiting-reply")] or None,
                       30, "the record to say Codex is at it", lambda: j.explain("running"))
    assert rec["task"] is True and rec["id"] in placeholder, (rec, placeholder)
    return rec, placeholder


def test_a_long_ask_leaves_claude_free_and_its_answer_comes_by_itself(
        journey: Journey) -> None:
    j = journey
    claude = j.claude["project"]
    ask = "HOLD:task-one Claude asks as a task: is the build green?"
    rec, _ = asked_as_task(j, ask, "task-one")
    rid = str(rec["id"])
    # Claude is free at once: the human asks something else and Claude answers it
    # while Codex still works on the ask
    since = j.claude_mark()
    claude.send("while Codex works: what is 2+2?")
    j.claude_saw("while Codex works: what is 2+2?", since)
    j.on_screen(claude, ": while Codex works: what is 2+2?")  # the mock model's answer
    assert j.record(rid)["state"] in ("delivering", "awaiting-reply")
    status = j.cb("talk", "status", rid)
    assert "MCP task" in status.stdout, status.stdout
    # Codex finishes: the result comes into Claude by itself, as a task notification
    since = j.claude_mark()
    released = time.time()  # (the mock stamps requests with time.time())
    j.world.codex_mock.release("task-one")
    got = j.claude_saw("<task-notification>", since)
    LATENCY["reply → task-notification"] = got.at - released
    print(f"\nCodex's reply released → Claude's model request with the task "
          f"notification: {LATENCY['reply → task-notification']:.2f} s")
    text = fresh_text(got)
    assert f"MOCK REPLY: {ask}" in text and "<status>completed</status>" in text, text
    # Claude's TUI renders the notification, then the model's turn on it (measured:
    # "● MCP task <delivery id> (plugin:codexbridge:codex/codex_message_send) completed.")
    j.on_screen(claude, f"MCP task {rid} (plugin:codexbridge:codex/codex_message_send) "
                        "completed.")
    j.on_screen(claude, f"MOCK REPLY: {ask}")
    final = j.final(rid)
    assert final["state"] == "delivered" and final["reply_mail_id"] is None, final
    # ... and never also as mail: no mail carries it, now or later
    inbox = j.world.bridge_home / "inbox"
    assert not any(f"MOCK REPLY: {ask}" in p.read_text(errors="replace")
                   for p in inbox.glob("*.jsonl")), j.explain("no reply mail")
    assert sum(ask in t for t in j.codex_user_texts()) == 1  # one turn carried it
    shown = j.cb_json("talk", "status", rid)["delivery"]
    assert shown["task"] is True and shown["state"] == "delivered"


def test_stopping_the_task_interrupts_the_codex_turn(journey: Journey) -> None:
    j = journey
    ask = "HOLD:task-two Claude asks, then stops it: rewrite the parser"
    rec, placeholder = asked_as_task(j, ask, "task-two")
    rid = str(rec["id"])
    found = TASK_ID_RE.search(placeholder)
    assert found is not None, placeholder
    since = j.claude_mark()
    j.claude["project"].send("CALL_TOOL TaskStop " + json.dumps({"task_id": found.group(1)}))
    final = j.final(rid)
    assert final["state"] == "failed" and "TaskStop" in str(final["reason"]), final
    # the Codex turn was interrupted: the thread says so, and so does the Codex TUI
    def interrupted() -> bool:
        read = j.cb_json("talk", "read", "--thread", j.threads["project"])
        turns = read.get("turns") or []
        return any(ask in json.dumps(t) and t.get("status") == "interrupted"
                   for t in turns if isinstance(t, dict))
    wait_until(interrupted, 60, "the Codex turn interrupted",
               lambda: j.explain("the Codex turn interrupted"))
    j.on_screen(j.codex["project"], "Conversation interrupted")
    got = j.claude_saw("is stopped. Cancellations are fire and forget", since)
    assert '"task_type":"mcp_task"' in fresh_text(got).replace(" ", "")
    j.world.codex_mock.release("task-two")  # (a stream the interrupt left open ends)


def test_the_answer_of_a_task_whose_session_ended_comes_as_mail(journey: Journey) -> None:
    """The human quits Claude while Codex works on its task: the task dies with Claude's
    MCP server, so the courier (it watched that server) follows the turn and leaves the
    reply in the session's mailbox — and the next `claude` in the project gets it."""
    j = journey
    ask = "HOLD:task-three Claude asks, then quits: summarise the diff"
    rec, _ = asked_as_task(j, ask, "task-three")
    rid = str(rec["id"])
    assert rec["reply_to"] == j.listener("project"), rec
    j.claude.pop("project").stop()  # Claude ends, and its MCP server with it
    wait_until(lambda: not j.record(rid)["blocking"], 60, "the courier to take the task",
               lambda: j.explain("the courier to take the task"))
    j.world.codex_mock.release("task-three")
    final = j.final(rid)
    assert final["state"] == "delivered" and final["reply_mail_id"], final
    assert final["recovered"] and "mail to mailbox" in final["warnings"][-1], final
    since = j.claude_mark()
    j.open_claude("project")
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    assert f"RECOVERED reply from Codex (thread {j.threads['project']}) to your request " \
           f"{rid}" in fresh_text(got)


def test_an_approval_codex_waits_on_during_a_task_is_input_required(
        journey: Journey) -> None:
    """Codex's turn asks for an approval: the task says `input_required` (Claude Code
    keeps polling; the human answers in the Codex TUI) and then completes."""
    j = journey
    target = j.world.projects["project"] / "approved-during-task"
    ask = f"RUN: touch {target}"
    since = j.claude_mark()
    j.claude["project"].send(f"CALL_TOOL {CODEX_TOOL} " + json.dumps({"text": ask}))
    j.claude_allows()
    j.on_screen(j.codex["project"], "Would you like to run the following command?")
    [rec] = [r for r in j.records() if r.get("text_preview") == ask]
    rid = str(rec["id"])
    # Claude Code was told: its poll got input_required (the record notes what it said)
    wait_until(lambda: j.record(rid)["task_status"] == "input_required", 60,
               "the task to say input_required", lambda: j.explain("input_required"))
    assert "run a command" in str(j.record(rid)["approval_waiting"])
    status = j.cb("talk", "status", rid).stdout
    assert "approval waits for the human in the Codex TUI" in status, status
    j.codex["project"].answer("Would you like to run the following command?", "y")
    got = j.claude_saw("<task-notification>", since)
    assert "answered in the TUI" in fresh_text(got) and target.exists()
    assert j.final(rid)["state"] == "delivered"

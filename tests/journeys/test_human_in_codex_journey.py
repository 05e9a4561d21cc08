"""The human at the Codex TUI while the agents talk (issue 24, items 1, 3, 4), on README's
set-up at its defaults (see conftest):

    Enter-steer     Claude's `talk send` turn runs; the human types into the Codex TUI
                    and presses Enter (codex steers the running turn): Claude is told the
                    reply answers the steered turn, with the human's words
    Tab-queue       the same, but Tab: Claude gets the answer to its own question; the
                    human's message runs as the next turn
    Esc (ask)       the human interrupts Claude's turn: Claude is told the human stopped
                    it, not a generic failure (latency printed)
    Esc (answer)    the human interrupts the turn carrying Claude's answer to Codex:
                    Claude is told the answer reached the thread (latency printed)
    quit            the human quits the Codex TUI: Claude's send at once runs unseen and
                    `codex resume --last` shows it; once codex unloads the thread, the
                    refusal names `talk send --thread ID` and `codex resume --last`, that
                    send works, and an approval it waits on is told to Claude at once

Each key is the human's, pressed in the real TUI (codex 0.169.0 and 0.171.0 both steer on
Enter and queue on Tab: measured, docs/protocol-notes.md, "The human's keys").
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest

from tests.support.helpers import wait_until
from tests.support.tmux_tui import CodexTUI

from .conftest import FIRST, Journey, fresh_text, journey_world
from .steps import ask_claude

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]


def bash(command: str) -> str:
    return "CALL_TOOL Bash " + json.dumps({"command": command})


def claude_sends(j: Journey, ask: str, *options: str) -> dict[str, object]:
    """Claude's Bash tool runs `talk send`, the human allows it; the delivery record."""
    opts = "".join(f" {o}" for o in options)
    j.claude["project"].send(bash(f'codexbridge talk send{opts} "{ask}"'))
    j.claude_allows()
    return wait_until(lambda: [r for r in j.records() if r.get("text_preview") == ask],
                      60, f"the record of {ask!r}", lambda: j.explain(ask))[0]


def following(j: Journey, delivery_id: str) -> None:
    """Until the courier follows the turn live (it notes the turn on the record)."""
    wait_until(lambda: j.record(delivery_id).get("turn_id"), 60,
               f"the courier to follow {delivery_id}", lambda: j.explain(delivery_id))


def test_enter_in_the_codex_tui_steers_claudes_turn_and_claude_is_told(
        journey: Journey) -> None:
    j = journey
    codex = j.codex["project"]
    ask = "HOLD:steer1 Claude asks: which module owns sessions?"
    human = "STEERED by the human: never mind that, what is 2+2?"
    since = j.claude_mark()
    sent = claude_sends(j, ask)
    j.world.codex_mock.wait_held("steer1", 60)
    following(j, str(sent["id"]))
    codex.send(human)  # Enter while the turn runs: codex adds it to the running turn
    j.on_screen(codex, human)  # the TUI took it (sent as turn/steer)
    j.world.codex_mock.release("steer1")
    got = j.claude_saw(f"MOCK REPLY: {human}", since)
    told = fresh_text(got)
    assert "a turn the human steered" in told, j.explain("steered")
    assert f"| {human}" in told
    assert "may answer those words rather than your request" in told
    rec = j.final(str(sent["id"]))
    assert rec["state"] == "delivered" and "steered" in rec["reason"]
    # one turn carried Claude's message; the human's words were not a turn of their own
    assert sum(ask in t for t in j.codex_user_texts()) >= 1


def test_tab_in_the_codex_tui_queues_and_claude_gets_its_own_answer(
        journey: Journey) -> None:
    j = journey
    codex = j.codex["project"]
    ask = "HOLD:tab1 Claude asks: where is the changelog?"
    human = "QUEUED by the human: summarise the repo"
    since = j.claude_mark()
    sent = claude_sends(j, ask)
    j.world.codex_mock.wait_held("tab1", 60)
    codex.send(human, enter=False)
    j.on_screen(codex, human)  # typed into the composer
    codex.key("Tab")  # queue it as the next turn
    j.world.codex_mock.release("tab1")
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    told = fresh_text(got)
    assert "Reply from Codex" in told and "steered" not in told, told
    assert human not in told
    assert j.final(str(sent["id"]))["state"] == "delivered"
    j.on_screen(codex, f"MOCK REPLY: {human}")  # the human's message ran next


def test_esc_in_codex_during_claudes_turn_tells_claude_the_human_stopped_it(
        journey: Journey) -> None:
    j = journey
    codex = j.codex["project"]
    ask = "HOLD:esc1 Claude asks: run the whole test suite"
    since = j.claude_mark()
    sent = claude_sends(j, ask)
    j.world.codex_mock.wait_held("esc1", 60)
    j.on_screen(codex, "MOCK REP")  # the human sees Codex at work
    pressed = time.monotonic()
    codex.key("Escape")
    rec = j.final(str(sent["id"]))
    recorded = time.monotonic() - pressed
    got = j.claude_saw(f"INTERRUPTED: your request {sent['id']}", since)
    told_after = time.monotonic() - pressed
    j.world.codex_mock.release("esc1")
    text = fresh_text(got)
    assert "the human (Esc in the Codex TUI)" in text, text
    assert "do not resend on your own; ask the user" in text
    assert "DELIVERY FAILED" not in text
    assert rec["state"] == "failed" and "interrupted" in rec["reason"]
    print(f"\nLATENCY esc-in-codex-during-claude-turn: record {recorded:.3f} s, "
          f"Claude told {told_after:.3f} s")


def test_esc_in_codex_during_claudes_answer_tells_claude_it_reached_the_thread(
        journey: Journey) -> None:
    j = journey
    codex = j.codex["project"]
    question = "HOLD:esc2 Codex asks: is the migration reversible?"
    rid = ask_claude(j, question)
    j.world.codex_mock.wait_held("esc2", 90)  # the turn carrying Claude's answer
    [reply] = wait_until(lambda: [r for r in j.records() if r.get("in_reply_to") == rid],
                         60, "Claude's answer going back", lambda: j.explain(rid))
    since = j.claude_mark()
    pressed = time.monotonic()
    codex.key("Escape")
    rec = j.final(str(reply["id"]))
    recorded = time.monotonic() - pressed
    got = j.claude_saw(f"your answer to Codex's request {rid} reached thread", since)
    told_after = time.monotonic() - pressed
    j.world.codex_mock.release("esc2")
    text = fresh_text(got)
    assert "it is in the thread" in text and "did not reach" not in text, text
    assert "Do not send the answer again" in text
    assert rec["state"] == "delivered"
    assert j.final(rid)["state"] == "delivered"
    # the answer is in the thread once: one turn carried it
    assert sum(f"reply to {rid}" in t for t in j.codex_user_texts()) == 1
    print(f"\nLATENCY esc-in-codex-during-claude-answer: record {recorded:.3f} s, "
          f"Claude told {told_after:.3f} s")


def test_quit_the_codex_tui_then_claude_sends_at_once(journey: Journey) -> None:
    """Quit (Ctrl-C): codex keeps the thread loaded a while; Claude's send runs unseen,
    its answer comes back, and `codex resume --last` shows the turn to the human."""
    j = journey
    codex = j.codex["project"]
    codex.key("C-c")
    wait_until(lambda: not codex.alive, 30, "the Codex TUI to quit")
    ask = "Claude asks after the human quit: is CI green?"
    since = j.claude_mark()
    sent = claude_sends(j, ask)
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    assert "Reply from Codex" in fresh_text(got)
    assert j.final(str(sent["id"]))["state"] == "delivered"
    back = j.world.codex_tui("project", resume="--last")
    j.codex["project"] = back
    j.on_screen(back, f"MOCK REPLY: {ask}")


# -- after codex unloads the thread ------------------------------------------------------

UNLOAD_AFTER = 1  # s: codex's `thread_unload_delay_secs` (found in the 0.169/0.171 binary)


@pytest.fixture(scope="module")
def unloading() -> Iterator[Journey]:
    """README's world, but codex unloads a thread 1 s after its last client leaves
    instead of ~2 minutes: "after the thread unloads" without waiting on the clock."""
    with journey_world(("project",),
                       codex_config=f"thread_unload_delay_secs = {UNLOAD_AFTER}\n") as j:
        yield j


def loaded_threads(j: Journey) -> list[str]:
    return [t["id"] for t in j.cb_json("talk", "list", "--all")["threads"]]


def test_after_the_thread_unloads_claude_is_told_how_to_reach_it_and_that_works(
        unloading: Journey) -> None:
    j = unloading
    thread = j.threads["project"]
    codex: CodexTUI = j.codex["project"]
    codex.key("C-c")
    wait_until(lambda: not codex.alive, 30, "the Codex TUI to quit")
    wait_until(lambda: thread not in loaded_threads(j), 60, "codex to unload the thread")
    # Claude sends as usual: refused, with what reaches the thread
    since = j.claude_mark()
    j.claude["project"].send(bash('codexbridge talk send "Claude asks: still there?"'))
    j.claude_allows()
    got = j.claude_saw(f"talk send --thread {thread}", since)
    text = fresh_text(got)
    assert "codex resume --last" in text and "would start a new thread" in text, text
    # … and that send works: codex resumes the thread; the approval its turn waits on
    # is told to Claude at once (no TUI can answer it), then declined after the deadline
    ask = "Claude asks again: RUN: touch unattended.txt"
    since = j.claude_mark()
    sent = claude_sends(j, ask, f"--thread {thread}", "--approval-timeout 5")
    # The record appears before the send has looked at the thread: read it once codex has
    # taken the message (the send notes the submission, or the courier moves it on) — read
    # at once, it failed now and then on a loaded machine with the warning still to come.
    def taken() -> dict[str, object] | None:
        r = j.record(str(sent["id"]))
        return r if r["submission_id"] or r["state"] != "queued" else None

    rec = wait_until(taken, 60, "codex to take the message", lambda: j.explain(ask))
    assert any("no Codex TUI is attached" in w for w in rec["warnings"]), rec
    asked = j.claude_saw("No Codex TUI is attached", since)
    assert re.search(r"asks for approval: .*touch unattended\.txt", fresh_text(asked),
                     re.S), fresh_text(asked)
    rec = j.final(str(sent["id"]), 90)
    assert rec["state"] == "delivered"
    j.claude_saw("nobody answered within 5 s", since)
    # the human comes back to the same thread, not a new one
    back = j.world.codex_tui("project", resume="--last")
    j.on_screen(back, FIRST)

"""The whole conversation, both ways, on README's set-up at its defaults (see conftest).

    Codex asks Claude     the human's Codex turn calls `claude_message_send` with
                          expectReply (Codex asks the human first: `writes` approval);
                          Claude, idle, gets it live and answers; the answer renders in
                          the Codex TUI as a reply turn; both records end delivered
    Claude asks Codex     Claude's Bash tool runs `codexbridge talk send` (the human
                          allows it in Claude's TUI); the message and Codex's answer
                          render in the Codex TUI; the answer comes into Claude by itself
"""

from __future__ import annotations

import json
import shlex

import pytest

from codexbridge.messages.frame import words_of
from tests.support.helpers import wait_until
from tests.support.tmux_tui import CodexTUI
from tests.support.world import readme_block

from .conftest import Journey, fresh_text, one_line
from .steps import ASKS, CODEX_TOOL, COMMAND, Gate, answered_once, ask_claude, bash, mcp_call

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]

# the header line of every bridge message (after the seal: `[codexbridge <seal>]`)
ENVELOPE = "] from Claude Code — a peer AI agent, not the human user"


def test_codex_asks_claude_over_mcp_and_the_answer_comes_back(journey: Journey) -> None:
    j = journey
    codex, claude = j.codex["project"], j.claude["project"]
    question = "Codex asks: is the auth refactor safe to merge?"
    # Claude, idle at its prompt, gets it at once (live) and answers
    rid = j.codex_asks(question)
    answer = f"CLAUDE ANSWER to {rid}: {question}"
    # … and the answer renders in the Codex TUI as a reply turn, which Codex answers
    screen = j.on_screen(codex, f"reply to {rid}")
    assert ENVELOPE in screen
    j.on_screen(codex, f"MOCK REPLY: {answer}")
    # what the agents saw: Codex got Claude's answer under a reply envelope
    reply_turns = [t for t in j.codex_user_texts() if f"reply to {rid}" in t]
    assert len(reply_turns) == 1 and words_of(reply_turns[0]) == answer
    # the human sees Claude's side too
    assert answer[:60] in one_line(j.screen(claude))
    # talk status: both sides delivered, the request once
    request_rec = j.final(rid)
    assert request_rec["state"] == "delivered" and request_rec["direction"] == "to-claude"
    replies = [r for r in j.records() if r.get("in_reply_to") == rid]
    assert len(replies) == 1 and j.final(replies[0]["id"])["state"] == "delivered"
    table = j.cb("talk", "status").stdout
    assert f"{rid}  delivered" in table and f"{replies[0]['id']}  delivered" in table


def test_claude_asks_codex_with_talk_send_and_the_answer_arrives_by_itself(
        journey: Journey) -> None:
    j = journey
    codex, claude = j.codex["project"], j.claude["project"]
    ask = "Claude asks: which tests cover the auth module?"
    since = j.claude_mark()
    claude.send(bash(f'codexbridge talk send "{ask}"'))
    j.claude_allows()
    # the message and Codex's answer render in the Codex TUI
    j.on_screen(codex, ask)
    j.on_screen(codex, f"MOCK REPLY: {ask}")
    assert ENVELOPE in j.screen(codex)
    # … and comes into Claude by itself: a new turn whose request carries it
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    assert "Reply from Codex" in fresh_text(got)
    j.on_screen(claude, f"MOCK REPLY: {ask}")  # the human sees it arrive in Claude too
    sent = [r for r in j.records() if r.get("text_preview") == ask]
    assert len(sent) == 1
    rec = j.final(sent[0]["id"])
    assert rec["state"] == "delivered" and rec["reply_to"] == j.listener("project")
    assert rec["reply_to_how"] == "calling session"
    # exactly one turn in Codex carried it
    assert sum(ask in t for t in j.codex_user_texts()) == 1


def test_claude_asks_codex_with_its_mcp_tool(journey: Journey) -> None:
    """The plugin's MCP tool `codex_message_send` with wait=false: the same receipt as
    `talk send`, and the answer comes into Claude by itself."""
    j = journey
    ask = "Claude asks via MCP: what is left to do?"
    since = j.claude_mark()
    j.claude["project"].send(f"CALL_TOOL {CODEX_TOOL} "
                             + json.dumps({"text": ask, "wait": False}))
    j.claude_allows()  # sending to Codex asks (setup allows only the read-only tools)
    j.on_screen(j.codex["project"], f"MOCK REPLY: {ask}")
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    assert "Reply from Codex" in fresh_text(got)
    j.on_screen(j.claude["project"], f"MOCK REPLY: {ask}")
    sent = [r for r in j.records() if r.get("text_preview") == ask]
    assert len(sent) == 1 and j.final(sent[0]["id"])["state"] == "delivered"
    assert sent[0]["reply_to"] == j.listener("project")


@pytest.mark.claude_states
@pytest.mark.parametrize("via", ["talk-send", "mcp-tool"])
def test_codexs_answer_reaches_claude_while_it_is_mid_turn(journey: Journey, via: str) -> None:
    """Claude asked (through its Bash tool, or its MCP tool), then got busy with something
    else: Codex's answer lands as soon as that turn ends, as its own turn."""
    j = journey
    hold, busy = f"answer-later-{via}", f"BUSY-TWO-{via}"
    ask = f"HOLD:{hold} Claude asks ({via}): is the release branch cut?"
    asking = j.claude_mark()
    j.claude["project"].send(bash(f'codexbridge talk send "{ask}"') if via == "talk-send"
                             else f"CALL_TOOL {CODEX_TOOL} "
                             + json.dumps({"text": ask, "wait": False}))
    j.claude_allows()
    j.world.codex_mock.wait_held(hold, 60)
    [sent] = [r for r in j.records() if r.get("text_preview") == ask]
    j.claude_saw(sent["id"], asking)  # the receipt came back: the asking turn ends
    since = j.claude_mark()
    with Gate(j, busy) as gate:
        j.claude["project"].send(f"{busy}: tidy the changelog")
        gate.wait_held()
        j.world.codex_mock.release(hold)
        rec = wait_until(lambda: [r for r in j.records() if r.get("text_preview") == ask
                                  and r["state"] == "delivered"], 60, "Codex's answer",
                         lambda: j.explain(f"{hold} delivered"))[0]
        assert rec["reply_mail_id"]
        gate.release()
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    assert busy not in fresh_text(got)  # its own turn, after the busy one


def test_codex_asks_claude_by_running_inbox_push_itself(journey: Journey) -> None:
    """Codex, told only what codexbridge's MCP instructions say, runs `inbox push
    --expect-reply` as a command: its login shell resets PATH (/etc/profile), so the
    instructions carry codexbridge's absolute path; the command writes outside the
    workspace, so Codex asks to run it escalated and the human allows it in the TUI."""
    j = journey
    question = "Codex asks by command: where is the changelog kept?"
    rid = ask_claude(j, question, COMMAND)
    assert j.record(rid)["mailbox"] == j.listener("project")
    answered_once(j, rid, question)
    j.on_screen(j.codex["project"], f"CLAUDE ANSWER to {rid}")


@pytest.mark.claude_states
@pytest.mark.parametrize("how", ASKS)
def test_codex_asks_claude_while_claude_is_mid_turn(journey: Journey, how: str) -> None:
    """The mail reaches Claude as soon as its running turn ends — and that turn's final
    message is not taken for the answer: the next turn, the one that read it, answers."""
    j = journey
    with Gate(j, "BUSY-ONE") as gate:
        j.claude["project"].send("BUSY-ONE: think about the release notes")
        gate.wait_held()
        question = f"Codex asks (mid-turn, {how}): which file holds the release notes?"
        rid = ask_claude(j, question, how)
        reach = j.cb_json("inbox", "list")["mailboxes"]
        assert any(m.get("reach", {}).get("session") == "busy" for m in reach), reach
        gate.release()
    answered_once(j, rid, question)


@pytest.mark.claude_states
@pytest.mark.parametrize("how", ASKS)
def test_codex_asks_claude_while_claude_runs_a_tool(journey: Journey, how: str) -> None:
    """Mail that arrives during a tool call is taken in by the same turn (beside the
    tool's result); that turn's final message answers it."""
    j = journey
    flag = j.world.root / f"tool-may-finish-{how}"  # its own: the other variant made one
    since = j.claude_mark()
    j.claude["project"].send(bash(f"while [ ! -e {flag} ]; do sleep 0.05; done; echo tool done"))
    j.claude_allows(unless="Running while")
    j.on_screen(j.claude["project"], "Running while")
    question = f"Codex asks (mid-tool, {how}): is the cache warm?"
    rid = ask_claude(j, question, how)
    flag.touch()
    got = j.claude_saw(question, since)
    assert "tool done" in got.all_text()  # the same turn: the tool's result beside it
    answered_once(j, rid, question)


@pytest.mark.claude_states
@pytest.mark.parametrize("how", ASKS)
def test_codex_asks_a_stopped_claude_which_answers_when_it_starts(journey: Journey,
                                                                   how: str) -> None:
    """Claude is not running: the mail waits in its project's mailbox (the tool says so),
    and the next `claude` in the project gets it at once and answers."""
    j = journey
    name = j.listener("project")
    j.claude.pop("project").stop()
    question = f"Codex asks (while Claude is stopped, {how}): did the migration run?"
    rid = ask_claude(j, question, how)
    assert j.record(rid)["mailbox"] == name and j.record(rid)["state"] == "queued"
    since = j.claude_mark()
    j.open_claude("project")
    j.claude_saw(question, since)
    answered_once(j, rid, question)


def test_claudes_turn_asks_for_an_approval_the_human_gives_it_in_the_codex_tui(
        journey: Journey) -> None:
    j = journey
    codex = j.codex["project"]
    target = j.world.projects["project"] / "approved-by-human"
    since = j.claude_mark()
    j.claude["project"].send(bash(f'codexbridge talk send "RUN: touch {target}"'))
    j.claude_allows()
    codex.answer("Would you like to run the following command?", "y")  # the human decides
    got = j.claude_saw("MOCK DONE", since)
    text = fresh_text(got)
    assert "Reply from Codex" in text and "answered in the TUI" in text
    assert target.exists()


def test_nobody_answers_the_approval_it_fails_closed_and_claude_is_told_why(
        journey: Journey) -> None:
    j = journey
    codex = j.codex["project"]
    target = j.world.projects["project"] / "never-approved"
    since = j.claude_mark()
    j.claude["project"].send(bash(
        f'codexbridge talk send --approval-timeout 3 "RUN: touch {target}"'))
    j.claude_allows()
    j.on_screen(codex, "Would you like to run the following command?")
    got = j.claude_saw("declined after deadline (fail-closed)", since)  # nobody answered
    text = fresh_text(got)
    assert "nobody answered within 3 s" in text and "rejected" in text
    assert not target.exists()
    wait_until(lambda: "Would you like to run" not in codex.capture(), 30,
               "the TUI's prompt to close", lambda: j.screen(codex))


def _send_line(text: str) -> str:
    import shlex

    return "codexbridge talk send " + shlex.quote(text)


def test_a_conversation_of_four_hops_and_the_fifth_is_refused(journey: Journey) -> None:
    """A→B→A→B in one conversation: Claude asks Codex, whose turn asks Claude, whose turn
    asks Codex, whose turn asks Claude — and that Claude's attempt at a fifth hop is
    refused (exit 9) before anything is sent. Each agent just does what the message it
    handles says; the conversation (and its budget) travels by itself. The budget of 4
    is the human's `talk budget 4`, typed while both sessions run (the default, 40, is
    walked by test_long_review_journey): read at each request, it reaches them."""
    j = journey
    codex = j.codex["project"]
    assert j.cb("talk", "budget", "4").returncode == 0
    try:
        _four_hops_and_the_fifth_refused(j, codex)
    finally:
        assert j.cb("talk", "budget", "--reset").returncode == 0


def _four_hops_and_the_fifth_refused(j: Journey, codex: CodexTUI) -> None:
    fifth = bash(_send_line("HOP-FIVE: one more round"))
    hop4 = "MCP_CALL: claude_message_send " + json.dumps({"text": "HOP-FOUR " + fifth})
    hop3 = bash(_send_line("HOP-THREE " + hop4))
    hop2 = "MCP_CALL: claude_message_send " + json.dumps({"text": "HOP-TWO " + hop3})
    since = j.claude_mark()
    j.claude["project"].send(bash(_send_line("HOP-ONE " + hop2)))
    j.claude_allows()                                   # hop 1: Claude → Codex
    codex.answer('run tool "claude_message_send"', "Enter")  # hop 2: Codex → Claude
    j.claude_saw("hop 2/4 · request", since)  # (every hop's text rides inside the first)
    j.claude_allows()                                   # hop 3: Claude → Codex
    j.on_screen(codex, "hop 3/4")
    codex.answer('run tool "claude_message_send"', "Enter")  # hop 4: Codex → Claude
    j.claude_saw("hop 4/4 · request", since)
    j.claude_allows()                                   # the fifth: refused
    refused = j.claude_saw("has used its 4 hops", since)  # what Claude's tool result says
    assert "Exit code 9" in fresh_text(refused) and "nothing was sent" in fresh_text(refused)
    # … and names what goes on from this very turn
    assert "--new-conversation" in one_line(fresh_text(refused))
    convs = {r["conversation"] for r in j.records()
             if "HOP-" in r.get("text_preview", "") and not r.get("in_reply_to")}
    assert len(convs) == 1, convs
    trail = json.loads((j.world.bridge_home / "conversations" / f"{convs.pop()}.json")
                       .read_text())["hops"]
    assert [(h["n"], h["direction"]) for h in trail] == [
        (1, "claude→codex"), (2, "codex→claude"), (3, "claude→codex"), (4, "codex→claude")]
    assert not any(r.get("text_preview", "").startswith("HOP-FIVE") for r in j.records())
    assert not any(t.split("\n\n", 1)[-1].startswith("HOP-FIVE") for t in j.codex_user_texts())


def test_readmes_talk_commands_work_as_written(journey: Journey) -> None:
    """README's "Use it for real" block of talk commands, typed as written in a terminal
    in the project: each exits 0 and does what its comment says, in the human's TUI."""
    j = journey
    codex = j.codex["project"]
    lines = readme_block(2)
    assert [shlex.split(line)[2] for line in lines] == ["list", "say", "send", "status",
                                                        "read"], lines
    out = {}
    for line in lines:
        argv = shlex.split(line)[1:]
        done = j.cb(*argv, timeout=120)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        out[argv[1]] = done.stdout
        if argv[1] == "send":  # its reply comes later: wait for it before the next line
            j.on_screen(codex, f"MOCK REPLY: {argv[2]}")
            j.final(done.stdout.split()[0])
    assert j.threads["project"] in out["list"]
    assert out["say"].strip() == "MOCK REPLY: run the tests and summarise"
    j.on_screen(codex, "MOCK REPLY: run the tests and summarise")
    assert "delivered" in out["status"] and "review auth.py" in out["status"]
    assert "run the tests and summarise" in out["read"] and "review auth.py" in out["read"]


def test_two_projects_each_with_a_tui_and_a_claude_never_cross(journey: Journey) -> None:
    j = journey
    codex_other = j.open_codex("other")
    j.open_claude("other")
    ask = "Claude in other asks: what is the build command?"
    since = j.claude_mark()
    j.claude["other"].send(bash(_send_line(ask)))
    j.claude_allows("other")
    j.on_screen(codex_other, f"MOCK REPLY: {ask}")
    got = j.claude_saw(f"MOCK REPLY: {ask}", since)
    assert got.session_id == j.session("other") != j.session("project")
    assert ask not in j.screen(j.codex["project"])
    rec = [r for r in j.records() if r.get("text_preview") == ask]
    assert len(rec) == 1 and rec[0]["thread_id"] == j.threads["other"]
    assert rec[0]["chosen_by"] == "project" and rec[0]["reply_to"] == j.listener("other")
    # Codex in `other` asks without naming a mailbox: its own project's Claude gets it
    question = "Codex in other asks: is the cache cold?"
    codex_other.send(mcp_call("claude_message_send", {"text": question, "expectReply": True}))
    codex_other.answer('run tool "claude_message_send"', "Enter")
    asked = j.claude_saw(question, since)
    assert asked.session_id == j.session("other")
    j.on_screen(codex_other, "CLAUDE ANSWER to req_")
    assert question not in j.screen(j.claude["project"])
    assert question not in j.screen(j.codex["project"])


def test_doctor_stays_green_after_all_that(journey: Journey) -> None:
    """After a day of normal use: no WARN about codexbridge's own files (logs 0600),
    nothing stuck, nothing failed unseen, Codex's shell told where codexbridge is."""
    j = journey
    done = j.cb("doctor", "--json")
    report = json.loads(done.stdout)
    rows = {c["name"]: c for c in report["checks"]}
    loud = {n: (c["status"], c["finding"]) for n, c in rows.items()
            if c["status"] in ("WARN", "FAIL")}
    assert done.returncode == 0 and loud == {}, loud
    assert rows["deliveries"]["status"] == "OK"
    assert rows["codex-shell"]["status"] in ("OK", "INFO")
    logs = j.world.bridge_home / "logs"
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in logs.iterdir()), [
        (p.name, oct(p.stat().st_mode)) for p in logs.iterdir()]

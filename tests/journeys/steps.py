"""Steps the journeys share: how the mock models are told to call a tool, how the
human's Codex turn asks Claude, and how an answer is checked to have come back once."""

from __future__ import annotations

import json
import threading

from codexbridge.messages.frame import words_of
from tests.support.helpers import wait_until

from .conftest import Journey, fresh_text, one_line


def mcp_call(tool: str, args: dict[str, object]) -> str:
    return f"MCP_CALL: {tool} {json.dumps(args)}"


def bash(command: str) -> str:
    return "CALL_TOOL Bash " + json.dumps({"command": command})


CODEX_TOOL = "mcp__plugin_codexbridge_codex__codex_message_send"


class Gate:
    """Holds Claude's model request whose text carries `key` until released: Claude is
    mid-turn exactly as long as the test needs (no timing guesses)."""

    def __init__(self, j: Journey, key: str) -> None:
        self.j, self.key = j, key
        self.held = threading.Event()
        self.open = threading.Event()

    def __enter__(self) -> Gate:
        def hold(req: object) -> None:
            text = getattr(req, "tail_text", lambda: "")()
            if self.key in text and not self.open.is_set():
                self.held.set()
                self.open.wait(120)
        self.j.world.claude_mock.on_request = hold
        return self

    def wait_held(self) -> None:
        assert self.held.wait(60), self.j.screen(self.j.claude["project"])

    def release(self) -> None:
        self.open.set()

    def __exit__(self, *exc: object) -> None:
        self.open.set()
        self.j.world.claude_mock.on_request = None


# The two ways Codex asks Claude: its MCP tool, or `inbox push --expect-reply` run as a
# command (what codexbridge's MCP instructions tell it, with codexbridge's absolute path:
# Codex's login shell resets PATH). Each is walked with Claude idle, mid-turn, mid-tool
# and stopped.
MCP, COMMAND = "mcp", "command"
ASKS = (MCP, COMMAND)


def ask_claude(j: Journey, question: str, how: str = MCP) -> str:
    """The human's Codex turn asks Claude `how`, and the human allows it in the TUI: the
    MCP tool writes (`writes` approval), the command writes outside the workspace (run
    escalated). Returns the request token."""
    codex = j.codex["project"]
    before = {r["id"] for r in j.records()}
    if how == MCP:
        codex.send(mcp_call("claude_message_send", {"text": question, "expectReply": True}))
        codex.answer('Allow the codexbridge MCP server to run tool "claude_message_send"',
                     "Enter")
    else:
        codex.send(f"ASK_CLAUDE: {question}")
        screen = codex.answer("Would you like to run the following command?", "y")
        assert "inbox push --expect-reply" in one_line(screen)
    made = wait_until(lambda: [r for r in j.records() if r["id"] not in before
                               and r["direction"] == "to-claude"], 60, "the request record",
                      lambda: j.explain("the request record"))
    assert len(made) == 1
    assert made[0]["thread_id"] == j.threads["project"]  # the asking thread, never a guess
    return str(made[0]["id"])


def answered_once(j: Journey, rid: str, question: str) -> None:
    """Claude's answer to `rid` reached the asking thread as one reply turn, both records
    delivered, and it is the answer to *this* question — as both agents saw it (Claude's
    model got the question; Codex's got the answer once) and as the human sees it (the
    answer on both screens)."""
    j.final(rid)
    assert j.record(rid)["state"] == "delivered", j.record(rid)
    assert any(question in fresh_text(r) for r in j.claude_requests()), j.explain(question)
    answer = f"CLAUDE ANSWER to {rid}: {question}"
    turns = [t for t in j.codex_user_texts() if f"reply to {rid}" in t]
    assert len(turns) == 1, turns
    assert words_of(turns[0]) == answer, turns[0][-300:]
    replies = [r for r in j.records() if r.get("in_reply_to") == rid]
    assert len(replies) == 1 and j.final(replies[0]["id"])["state"] == "delivered"
    j.on_screen(j.codex["project"], f"reply to {rid}")
    j.on_screen(j.codex["project"], f"MOCK REPLY: {answer}"[:60])
    if "project" in j.claude:
        j.on_screen(j.claude["project"], answer[:60])

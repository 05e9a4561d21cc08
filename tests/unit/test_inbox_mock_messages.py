"""The mock Messages API used by the real-Claude tests: its rules and its wire format."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.support.mock_claude import (
    MockMessages,
    Text,
    ToolUse,
    default_reply,
    feedback_of,
    parse_call_tool,
)

ENV_SYSTEM = {"role": "system", "content": "environment block"}


def body(*messages: dict[str, Any], tools: tuple[str, ...] = ("Bash", "ToolSearch")
         ) -> dict[str, Any]:
    return {"model": "m", "stream": True, "messages": list(messages),
            "tools": [{"name": t} for t in tools]}


def user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def test_plain_text_gets_a_numbered_reply_from_the_last_text_block() -> None:
    reply = default_reply(body(user("<system-reminder>attribution</system-reminder>",
                                    "hello there"), ENV_SYSTEM), 4)
    assert reply == Text("MOCK_REPLY #4: hello there")


def test_two_mails_in_one_turn_the_one_asking_for_a_tool_is_acted_on() -> None:
    """Codex's request and, 0.2 s later, the reply that ended its turn reached an idle
    Claude as one turn's two texts: the model runs the tool the first one asks for."""
    reply = default_reply(body(user('mail 1: CALL_TOOL Bash {"command": "ls"}',
                                    "mail 2: a reply, nothing to do")), 1)
    assert reply == ToolUse("Bash", {"command": "ls"})


def test_call_tool_direct_or_through_toolsearch() -> None:
    assert default_reply(body(user('CALL_TOOL Bash {"command": "ls"}')), 1) == \
        ToolUse("Bash", {"command": "ls"})
    deferred = default_reply(body(user('CALL_TOOL mcp__s__send {"text": "hi"}')), 1)
    assert deferred == ToolUse("ToolSearch", {"query": "select:mcp__s__send",
                                              "max_results": 1})


def test_toolsearch_result_is_followed_by_the_real_call() -> None:
    msgs = (user('CALL_TOOL mcp__s__send {"text": "hi"}'), ENV_SYSTEM,
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                               "name": "ToolSearch",
                                               "input": {"query": "select:mcp__s__send"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": [{"type": "text", "text": "found"}]}]})
    assert default_reply(body(*msgs, tools=("ToolSearch", "mcp__s__send")), 2) == \
        ToolUse("mcp__s__send", {"text": "hi"})


def test_other_tool_results_are_echoed() -> None:
    msgs = (user("x"), {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2",
                                      "content": "out"}]})
    assert default_reply(body(*msgs), 3) == Text("TOOL_RESULT_SEEN: out")


def test_parsers() -> None:
    assert parse_call_tool('a CALL_TOOL x {"k": [1]} b') == ("x", {"k": [1]})
    assert parse_call_tool("CALL_TOOL x notjson") is None
    wrapped = "<system-reminder>\npreamble\nStop hook feedback:\nthe reason\n</system-reminder>"
    assert feedback_of(wrapped) == "the reason"
    assert feedback_of("no feedback") is None


def test_server_streams_sse_and_logs_requests() -> None:
    with MockMessages() as mock:
        req = urllib.request.Request(
            mock.url + "/v1/messages?beta=true",
            data=json.dumps(body(user("CALL_TOOL Bash {\"command\": \"pwd\"}"))).encode(),
            headers={"content-type": "application/json", "x-claude-code-session-id": "s9"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.headers["content-type"] == "text/event-stream"
            events = [json.loads(line[6:]) for line in resp.read().decode().splitlines()
                      if line.startswith("data: ")]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert events[1]["content_block"]["name"] == "Bash"
    delta = next(e for e in events if e["type"] == "content_block_delta")
    assert json.loads(delta["delta"]["partial_json"]) == {"command": "pwd"}
    assert mock.model_calls[0].session_id == "s9"
    assert next(e for e in events if e["type"] == "message_delta")["delta"]["stop_reason"] \
        == "tool_use"

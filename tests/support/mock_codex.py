"""The scripted mock Responses API that the real codex talks to in the tests, the demo,
the spikes and bench/: what it answers (the rules, pure), and the server on 127.0.0.1
that logs every request for tests to assert on.

It is doctor --deep's loopback model (`codexbridge/doctor/mock_model.py`: the server, the
SSE framing) with these rules as its planner, a request log, pacing and holds; and
`OfflineStack` is doctor's offline stack (`codexbridge/doctor/offline_stack.py`) on it.
What to answer is `planner(body, n)` — `plan_reply` by default; a test may pass its own
planner (wrapping the default) for a scenario the rules do not cover. Run it alone with
`python -m tests.support.mock_codex --port N` (from the checkout's root).

The rules — decided from the request body alone, first match wins:

    text.format.type == "json_schema"        -> the schema's object, e.g. {"title":"Mock title"}
    last input item is function_call_output  -> "MOCK DONE: <first 200 chars of the output>"
    user text contains FAIL_TURN             -> HTTP 500 (with retries 0 codex fails the turn)
    user text contains BIG:<n>               -> exactly n bytes of `big_text(n)`, 8 KiB deltas
    user text contains RUN_SANDBOXED: <cmd>  -> exec_command, no escalation (sandboxed, no approval)
    user text contains RUN: <cmd>, tools     -> exec_command with require_escalated (an approval)
    user text contains MCP_CALL: <tool> <json> and an MCP namespace offers <tool>
                                             -> a namespaced function_call of that tool
    user text contains ASK_CLAUDE: <text>    -> exec_command (escalated) of the `inbox push
                                                --expect-reply` line codexbridge's MCP
                                                instructions give, with <text> — what a
                                                model told only those instructions runs
    anything else                            -> "MOCK REPLY: <user text>" in 8-char deltas
                                                (a codexbridge frame is read, not echoed:
                                                the words inside it are)

`SLOW` anywhere in the user text puts 0.25 s between deltas, so a test can act mid-turn.
`HOLD:<key>` (with the plain reply) stops the stream after its first delta until the test
releases the key (`MockResponsesServer.release`): a turn that runs exactly as long as the
test needs, with no timing guesses.
How codex 0.169.0 offers MCP tools (one `namespace` tool per server) is measured in
docs/protocol-notes.md, "MCP tools in codex". Pure: a body in, a `Reply` out.

A tool call sends the same function_call item in output_item.added and done (measured
in docs/protocol-notes.md, "The mock model").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from codexbridge.doctor import mock_model, offline_stack
from codexbridge.doctor.mock_model import (
    REPLY_PREFIX,
    MockModel,
    extract_user_text,
    sse_frame,
    text_frames,
)
from codexbridge.jsontypes import objs
from codexbridge.messages import frame

if TYPE_CHECKING:
    from typing import TypeAlias

    from codexbridge.jsontypes import JsonObject, JsonValue

DONE_PREFIX = "MOCK DONE: "
BIG_DELTA_BYTES = 8 * 1024
BIG_MAX_BYTES = 128 * 1024 * 1024
SLOW_DELAY_S = 0.25
FAIL_STATUS = 500

_BIG_RE = re.compile(r"BIG:(\d+)")
_RUN_SANDBOXED_RE = re.compile(r"RUN_SANDBOXED:[ \t]*([^\r\n]+)")
_RUN_RE = re.compile(r"(?<![A-Z_])RUN:[ \t]*([^\r\n]+)")
_HOLD_RE = re.compile(r"HOLD:([A-Za-z0-9_-]+)")
_MCP_CALL_RE = re.compile(r"MCP_CALL:\s*(\S+)\s+(\{.*\})", re.S)
_ASK_CLAUDE_RE = re.compile(r"ASK_CLAUDE:[ \t]*([^\r\n]+)")
_PUSH_LINE_RE = re.compile(r"`([^`]*?) inbox push --expect-reply")

_BIG_LINE_WIDTH = 64
_BIG_FILL = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ" * 2


def big_text(n: int) -> str:
    """Exactly `n` ASCII bytes of numbered 64-byte lines; what `BIG:<n>` makes the mock reply."""
    if n <= 0:
        return ""
    lines = -(-n // _BIG_LINE_WIDTH)
    body = "".join(
        (f"BIG {i:08d} " + _BIG_FILL)[: _BIG_LINE_WIDTH - 1] + "\n" for i in range(lines))
    return body[:n]


def words_of(user: str) -> str:
    """The message without the frame codexbridge puts around a peer's words (its header
    and end line): what a model answers."""
    return frame.words_of(user)


@dataclass
class Reply(mock_model.Reply):
    """doctor's reply, paced: `delta_delay` before each text delta, and `hold`: wait for
    this gate after the first delta."""

    delta_delay: float = 0.0
    hold: str | None = None


def namespace_of(tools: JsonValue, tool: str) -> str | None:
    """The MCP namespace (`mcp__<server>`) among the offered tools that has `tool`."""
    for entry in objs(tools):
        if entry.get("type") == "namespace" and any(
                t.get("name") == tool for t in objs(entry.get("tools"))):
            return str(entry["name"])
    return None


def _schema_object(schema: JsonValue) -> JsonObject:
    props = schema.get("properties") if isinstance(schema, dict) else None
    out: JsonObject = {}
    for name, spec in (props if isinstance(props, dict) else {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        empty: JsonObject = {"integer": 0, "number": 0, "boolean": False, "array": [],
                             "object": {}}
        out[name] = empty.get(str(kind), f"Mock {name}")
    return out


def plan_reply(body: JsonValue, n: int) -> Reply:
    """Decide the whole answer to one model call from its body (`n` makes ids unique)."""
    if not isinstance(body, dict):
        return Reply("bad_request", status=400,
                     json_body={"error": {"message": "mock: body is not a JSON object"}})
    text_field = body.get("text")
    fmt = text_field.get("format") if isinstance(text_field, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        text = json.dumps(_schema_object(fmt.get("schema")), separators=(",", ":"))
        return Reply("json_schema", frames=text_frames(text, n))
    items = body.get("input")
    last = items[-1] if isinstance(items, list) and items else None
    if isinstance(last, dict) and last.get("type") == "function_call_output":
        output = last.get("output")
        if not isinstance(output, str):
            output = json.dumps(output)
        return Reply("tool_output", frames=text_frames(DONE_PREFIX + output[:200], n))
    user = extract_user_text(body) or ""
    delay = SLOW_DELAY_S if "SLOW" in user else 0.0
    if "FAIL_TURN" in user:
        return Reply("fail", status=FAIL_STATUS, json_body={"error": {
            "message": "mock model failure (FAIL_TURN)", "type": "server_error",
            "code": "server_error", "param": None}})
    big = _BIG_RE.search(user)
    if big:
        size = min(int(big.group(1)), BIG_MAX_BYTES)
        return Reply("big", frames=text_frames(big_text(size), n, BIG_DELTA_BYTES),
                     delta_delay=delay)
    mcp = _MCP_CALL_RE.search(user)
    if mcp:
        namespace = namespace_of(body.get("tools"), mcp.group(1))
        if namespace is not None:
            return Reply("mcp_call", frames=function_call_frames(
                mcp.group(1), mcp.group(2), n, namespace=namespace))
    ask = _ASK_CLAUDE_RE.search(user)
    if ask:
        return _ask_claude(body.get("tools"), ask.group(1).strip(), n)
    sandboxed = _RUN_SANDBOXED_RE.search(user)
    if sandboxed:
        return Reply("run_sandboxed",
                     frames=exec_command_frames(sandboxed.group(1).strip(), n, escalate=False))
    run = _RUN_RE.search(user)
    if run and body.get("tools"):
        return Reply("run", frames=exec_command_frames(run.group(1).strip(), n, escalate=True))
    hold = _HOLD_RE.search(user)
    return Reply("reply", frames=text_frames(REPLY_PREFIX + words_of(user), n),
                 delta_delay=delay,
                 hold=hold.group(1) if hold else None)


def _ask_claude(tools: JsonValue, text: str, n: int) -> Reply:
    """Run what codexbridge's instructions (the MCP namespace's description) say runs
    `inbox push` — nothing of our own: a wrong or missing line shows as a failed turn."""
    for entry in objs(tools):
        if entry.get("type") == "namespace":
            found = _PUSH_LINE_RE.search(str(entry.get("description") or ""))
            if found:
                cmd = f"{found.group(1)} inbox push --expect-reply {shlex.quote(text)}"
                return Reply("ask_claude", frames=exec_command_frames(cmd, n, escalate=True))
    return Reply("ask_claude", frames=text_frames(
        "MOCK: my instructions name no `inbox push` command", n))


# -- Server-Sent Events ------------------------------------------------------------

def exec_command_frames(cmd: str, n: int, *, escalate: bool) -> list[bytes]:
    args: JsonObject = {"cmd": cmd}
    if escalate:
        args["sandbox_permissions"] = "require_escalated"
        args["justification"] = f"Mock model wants to run: {cmd}"
    return function_call_frames("exec_command", json.dumps(args), n)


def function_call_frames(name: str, arguments: str, n: int, *,
                         namespace: str | None = None) -> list[bytes]:
    """A call of tool `name` (in an MCP `namespace`, as codex offers MCP tools)."""
    item: JsonObject = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                            "name": name, "arguments": arguments}
    if namespace is not None:
        item["namespace"] = namespace
    return [
        sse_frame({"type": "response.created", "response": {"id": f"resp_{n}"}}),
        sse_frame({"type": "response.output_item.added", "output_index": 0, "item": item}),
        sse_frame({"type": "response.output_item.done", "output_index": 0, "item": item}),
        sse_frame({"type": "response.completed",
                   "response": {"id": f"resp_{n}", "usage": mock_model.USAGE}}),
    ]


# -- the server -------------------------------------------------------------------

Planner: TypeAlias = "Callable[[JsonValue, int], Reply]"
HOLD_MAX_S = 300.0


@dataclass(frozen=True)
class MockRequest:
    """One request the mock received, as logged for tests."""

    method: str
    path: str
    headers: dict[str, str]
    body: JsonValue  # decoded JSON; the raw text when it is not JSON
    user_text: str | None
    rule: str
    status: int
    received_at: float = field(default_factory=time.monotonic)
    # When the last frame of the answer went out (time.time(); the bench's clock):
    # a one-item list so the frozen record can still be told when it is done.
    done: list[float] = field(default_factory=list, compare=False)

    @property
    def is_model_call(self) -> bool:
        return self.method == "POST" and urlsplit(self.path).path == "/v1/responses"

    @property
    def last_input_item(self) -> JsonObject | None:
        items = self.body.get("input") if isinstance(self.body, dict) else None
        if isinstance(items, list) and items and isinstance(items[-1], dict):
            return items[-1]
        return None


class MockResponsesServer(MockModel):
    """doctor's loopback model with the rules above, a log of every request, and pacing
    (`SLOW`) and holds (`HOLD:<key>`). Use as a context manager.

    `url` is the provider `base_url` (ends in `/v1`); every request is kept in `requests`.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 planner: Planner = plan_reply) -> None:
        super().__init__(host, port, planner=planner)
        self._log_list: list[MockRequest] = []
        self._cond = threading.Condition()
        self._gates: dict[str, threading.Event] = {}
        self._holding: dict[str, int] = {}

    def serve(self, method: str, path: str, headers: dict[str, str],
              body: JsonValue) -> mock_model.Reply:
        reply = super().serve(method, path, headers, body)
        model_call = method == "POST" and reply.rule != "not_found"
        logged = MockRequest(method, path, headers, body,
                             extract_user_text(body) if model_call else None,
                             reply.rule, reply.status)
        self._log(logged)
        if reply.json_body is not None or reply.status != 200:
            return reply
        return dataclasses.replace(reply, frames=self._paced(reply, logged))

    def _paced(self, reply: mock_model.Reply, logged: MockRequest) -> Iterator[bytes]:
        """The frames as the server writes them: `delta_delay` before each text delta,
        held on `hold` once the first delta is out (the turn is visibly under way)."""
        delay, hold = (reply.delta_delay, reply.hold) if isinstance(reply, Reply) \
            else (0.0, None)
        for frame_bytes in reply.frames:
            is_delta = frame_bytes.startswith(b"event: response.output_text.delta")
            if is_delta and delay:
                time.sleep(delay)
            yield frame_bytes  # the server writes and flushes it before asking for more
            if is_delta and hold is not None:
                self._hold(hold)
                hold = None
        logged.done.append(time.time())

    def stop(self) -> None:
        with self._cond:
            for gate in self._gates.values():
                gate.set()
            self._gates.clear()
        super().stop()

    @property
    def requests(self) -> list[MockRequest]:
        """Every request so far, oldest first (a copy)."""
        with self._cond:
            return list(self._log_list)

    @property
    def model_calls(self) -> list[MockRequest]:
        """Only the `POST /v1/responses` calls."""
        return [r for r in self.requests if r.is_model_call]

    def clear(self) -> None:
        with self._cond:
            self._log_list.clear()

    def wait_for_request(self, predicate: Callable[[MockRequest], bool],
                         timeout: float = 10.0) -> MockRequest:
        """The first logged request (old or new) matching `predicate`; TimeoutError if none."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for request in self._log_list:
                    if predicate(request):
                        return request
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no matching mock request within {timeout}s")
                self._cond.wait(left)

    def release(self, key: str) -> None:
        """Let every stream held on `HOLD:<key>` (now or later) run to its end."""
        with self._cond:
            self._gates.setdefault(key, threading.Event()).set()

    def wait_held(self, key: str, timeout: float = 30.0) -> None:
        """Until a stream is held on `key` (its first delta is out); TimeoutError if not."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._holding.get(key):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no stream held on HOLD:{key} within {timeout}s")
                self._cond.wait(left)

    def _hold(self, key: str) -> None:
        with self._cond:
            gate = self._gates.setdefault(key, threading.Event())
            self._holding[key] = self._holding.get(key, 0) + 1
            self._cond.notify_all()
        try:
            gate.wait(HOLD_MAX_S)  # bounded: a forgotten gate must not hang a test run
        finally:
            with self._cond:
                self._holding[key] -= 1

    def _log(self, request: MockRequest) -> None:
        with self._cond:
            self._log_list.append(request)
            self._cond.notify_all()


class OfflineStack(offline_stack.OfflineStack):
    """doctor's offline stack on the scripted mock: `stack.mock.model_calls`, SLOW, …"""

    mock: MockResponsesServer

    def __init__(self, codex_bin: str, base: Path | None = None, *,
                 planner: Planner = plan_reply) -> None:
        super().__init__(codex_bin, base, mock=MockResponsesServer(planner=planner))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.mock_codex",
                                     description="Serve the mock Responses API until stopped.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with MockResponsesServer(args.host, args.port) as mock:
        print(f"http://{args.host}:{mock.port}/v1", flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":  # python -m tests.support.mock_codex
    sys.exit(main())

"""The mock Responses API that the real codex talks to: what it answers (the rules, pure),
how the answer is framed (Server-Sent Events, pure) and the server on 127.0.0.1.

Codex only ever calls `POST <base_url>/responses` with `stream: true` and reads
Server-Sent Events back. What to answer is `planner(body, n)` — `plan_reply` by default;
a test may pass its own planner (wrapping the default) for a scenario the rules do not
cover. Every request is logged for tests to assert on. Stdlib only; starts in
milliseconds. Run it alone with `python -m codexbridge.mock.responses --port N`.

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

The events, as codex 0.169.0 reads them: a text reply is created → output_item.added →
output_text.delta… → output_item.done → completed; a tool call sends the same
function_call item in added and done. The shapes are the ones measured in
docs/protocol-notes.md, "The mock model".
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import shlex
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..conversation import frame
from ..jsontypes import objs
from .serving import JsonHandler, QuietServer

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..jsontypes import JsonObject, JsonValue

REPLY_PREFIX = "MOCK REPLY: "
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


def extract_user_text(body: JsonValue) -> str | None:
    """The text of the last user message in `input[]` (its `input_text` parts joined)."""
    if not isinstance(body, dict):
        return None
    items = body.get("input")
    if not isinstance(items, list):
        return None
    for item in reversed(objs(items)):
        if item.get("role") != "user":
            continue
        if item.get("type", "message") != "message":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(str(part.get("text", "")) for part in objs(content)
                           if part.get("type") == "input_text")
    return None


@dataclass
class Reply:
    """What the mock sends back for one model call: a status, then SSE frames."""

    rule: str
    status: int = 200
    frames: list[bytes] = field(default_factory=list)
    delta_delay: float = 0.0
    error_body: JsonObject | None = None
    hold: str | None = None  # wait for this gate after the first delta


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
                     error_body={"error": {"message": "mock: body is not a JSON object"}})
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
        return Reply("fail", status=FAIL_STATUS, error_body={"error": {
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

TEXT_DELTA_CHARS = 8
_USAGE: JsonObject = {
    "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def sse_frame(data: JsonObject) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start:start + size]


def text_frames(text: str, n: int, delta_size: int = TEXT_DELTA_CHARS) -> list[bytes]:
    resp_id, msg_id = f"resp_{n}", f"msg_{n}"
    message: JsonObject = {"type": "message", "role": "assistant", "id": msg_id}
    frames = [
        sse_frame({"type": "response.created", "response": {"id": resp_id}}),
        sse_frame({"type": "response.output_item.added", "output_index": 0,
                   "item": {**message, "content": []}}),
    ]
    frames += [
        sse_frame({"type": "response.output_text.delta", "item_id": msg_id, "output_index": 0,
                   "content_index": 0, "delta": delta})
        for delta in _chunks(text, delta_size)
    ]
    frames += [
        sse_frame({"type": "response.output_item.done", "output_index": 0,
                   "item": {**message, "content": [{"type": "output_text", "text": text}]}}),
        sse_frame({"type": "response.completed", "response": {"id": resp_id, "usage": _USAGE}}),
    ]
    return frames


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
                   "response": {"id": f"resp_{n}", "usage": _USAGE}}),
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


class _Ids:
    """Unique ids per server, so item and call ids never repeat within a thread."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            return next(self._counter)


class _Server(QuietServer):
    def __init__(self, address: tuple[str, int], mock: MockResponsesServer) -> None:
        super().__init__(address, _Handler)
        self.mock = mock
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()


class _Handler(JsonHandler):
    """Keep-alive and chunked SSE, as a real server would; `stop()` closes what is open."""

    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.sockets_lock:
            self.server.open_sockets.add(self.connection)

    def finish(self) -> None:
        with self.server.sockets_lock:
            self.server.open_sockets.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path.rstrip("/") == "/v1/models":
            self.server.mock._log(MockRequest("GET", self.path, self.lower_headers(), None, None,
                                              "models", 200))
            self.send_json(200, {"models": [], "data": [], "object": "list"})
        else:
            self._not_found("GET", None)

    def do_POST(self) -> None:
        raw = self.read_body()
        if urlsplit(self.path).path.rstrip("/") != "/v1/responses":
            self._not_found("POST", raw)
            return
        body: JsonValue
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        reply = self.server.mock.planner(body, self.server.mock._ids.next())
        logged = MockRequest("POST", self.path, self.lower_headers(), body,
                             extract_user_text(body), reply.rule, reply.status)
        self.server.mock._log(logged)
        if reply.status != 200:
            self.send_json(reply.status, reply.error_body)
            return
        self._stream(reply)
        logged.done.append(time.time())

    def _stream(self, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        mock = self.server.mock
        held = reply.hold is None
        try:
            for frame in reply.frames:
                is_delta = frame.startswith(b"event: response.output_text.delta")
                if is_delta and reply.delta_delay:
                    time.sleep(reply.delta_delay)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
                if is_delta and not held:  # the turn is visibly under way: hold it here
                    held = True
                    mock._hold(str(reply.hold))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # codex hung up mid-stream (interrupt, shutdown)

    def _not_found(self, method: str, raw: bytes | None) -> None:
        self.server.mock._log(MockRequest(method, self.path, self.lower_headers(),
                                          raw.decode("utf-8", "replace") if raw else None,
                                          None, "not_found", 404))
        self.send_json(404, {"error": {"message": f"mock: no route for {method} {self.path}"}})


class MockResponsesServer:
    """The mock on 127.0.0.1, served from a daemon thread. Use as a context manager.

    `url` is the provider `base_url` (ends in `/v1`); every request is kept in `requests`.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 planner: Planner = plan_reply) -> None:
        self._address = (host, port)
        self.planner = planner
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._ids = _Ids()
        self._log_list: list[MockRequest] = []
        self._cond = threading.Condition()
        self._gates: dict[str, threading.Event] = {}
        self._holding: dict[str, int] = {}

    def start(self) -> MockResponsesServer:
        if self._server is not None:
            return self
        self._server = _Server(self._address, self)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="mock-responses-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        with self._cond:
            for gate in self._gates.values():
                gate.set()
            self._gates.clear()
        server.shutdown()
        server.server_close()
        with server.sockets_lock:
            for sock in list(server.open_sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> MockResponsesServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("mock server is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codexbridge.mock.responses",
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


if __name__ == "__main__":  # python -m codexbridge.mock.responses
    sys.exit(main())

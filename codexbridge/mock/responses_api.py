"""A loopback mock of the OpenAI Responses API, enough to drive codex 0.169.0 offline.

Codex only ever calls `POST <base_url>/responses` with `stream: true` and reads Server-Sent
Events back (reference §3). The mock is stateless: every answer is decided from the request
body alone, by these rules, first match wins:

    text.format.type == "json_schema"        -> the schema's object, e.g. {"title":"Mock title"}
    last input item is function_call_output  -> "MOCK DONE: <first 200 chars of the output>"
    user text contains FAIL_TURN             -> HTTP 500 (with retries 0 codex fails the turn)
    user text contains BIG:<n>               -> exactly n bytes of `big_text(n)`, 8 KiB deltas
    user text contains RUN_SANDBOXED: <cmd>  -> exec_command, no escalation (sandboxed, no approval)
    user text contains RUN: <cmd>, tools     -> exec_command with require_escalated (an approval)
    anything else                            -> "MOCK REPLY: <user text>" in 8-char deltas

`SLOW` anywhere in the user text puts 0.25 s between deltas, so a test can act mid-turn.

Stdlib only, and it starts in milliseconds: `codexbridge demo` ships with it.
Run it alone with `python -m codexbridge.mock.responses_api --port N`.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

REPLY_PREFIX = "MOCK REPLY: "
DONE_PREFIX = "MOCK DONE: "
TEXT_DELTA_CHARS = 8
BIG_DELTA_BYTES = 8 * 1024
BIG_MAX_BYTES = 64 * 1024 * 1024
SLOW_DELAY_S = 0.25
FAIL_STATUS = 500

_BIG_RE = re.compile(r"BIG:(\d+)")
_RUN_SANDBOXED_RE = re.compile(r"RUN_SANDBOXED:[ \t]*([^\r\n]+)")
_RUN_RE = re.compile(r"(?<![A-Z_])RUN:[ \t]*([^\r\n]+)")
_USAGE = {
    "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}
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


def extract_user_text(body: Any) -> str | None:
    """The text of the last user message in `input[]` (its `input_text` parts joined)."""
    if not isinstance(body, dict):
        return None
    items = body.get("input")
    if not isinstance(items, list):
        return None
    for item in reversed(items):
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        if item.get("type", "message") != "message":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(
                str(part.get("text", "")) for part in content
                if isinstance(part, dict) and part.get("type") == "input_text")
    return None


@dataclass(frozen=True)
class MockRequest:
    """One request the mock received, as logged for tests."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    user_text: str | None
    rule: str
    status: int
    received_at: float = field(default_factory=time.monotonic)

    @property
    def is_model_call(self) -> bool:
        return self.method == "POST" and urlsplit(self.path).path == "/v1/responses"

    @property
    def last_input_item(self) -> dict[str, Any] | None:
        items = self.body.get("input") if isinstance(self.body, dict) else None
        if isinstance(items, list) and items and isinstance(items[-1], dict):
            return items[-1]
        return None


@dataclass
class Reply:
    """What the mock sends back for one model call: a status, then SSE frames."""

    rule: str
    status: int = 200
    frames: list[bytes] = field(default_factory=list)
    delta_delay: float = 0.0
    error_body: dict[str, Any] | None = None


def sse_frame(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class _Ids:
    """Unique ids per server, so item and call ids never repeat within a thread."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            return next(self._counter)


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start:start + size]


def text_frames(text: str, n: int, delta_size: int = TEXT_DELTA_CHARS) -> list[bytes]:
    resp_id, msg_id = f"resp_{n}", f"msg_{n}"
    message: dict[str, Any] = {"type": "message", "role": "assistant", "id": msg_id}
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
    args: dict[str, Any] = {"cmd": cmd}
    if escalate:
        args["sandbox_permissions"] = "require_escalated"
        args["justification"] = f"Mock model wants to run: {cmd}"
    item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
            "name": "exec_command", "arguments": json.dumps(args)}
    return [
        sse_frame({"type": "response.created", "response": {"id": f"resp_{n}"}}),
        sse_frame({"type": "response.output_item.added", "output_index": 0, "item": item}),
        sse_frame({"type": "response.output_item.done", "output_index": 0, "item": item}),
        sse_frame({"type": "response.completed",
                   "response": {"id": f"resp_{n}", "usage": _USAGE}}),
    ]


def _schema_object(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    out: dict[str, Any] = {}
    for name, spec in (props or {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        out[name] = {"integer": 0, "number": 0, "boolean": False, "array": [],
                     "object": {}}.get(str(kind), f"Mock {name}")
    return out


def plan_reply(body: Any, n: int) -> Reply:
    """Decide the whole answer to one model call from its body (`n` makes ids unique)."""
    if not isinstance(body, dict):
        return Reply("bad_request", status=400,
                     error_body={"error": {"message": "mock: body is not a JSON object"}})
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
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
    sandboxed = _RUN_SANDBOXED_RE.search(user)
    if sandboxed:
        return Reply("run_sandboxed",
                     frames=exec_command_frames(sandboxed.group(1).strip(), n, escalate=False))
    run = _RUN_RE.search(user)
    if run and body.get("tools"):
        return Reply("run", frames=exec_command_frames(run.group(1).strip(), n, escalate=True))
    return Reply("reply", frames=text_frames(REPLY_PREFIX + user, n), delta_delay=delay)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], mock: MockResponsesServer) -> None:
        super().__init__(address, _Handler)
        self.mock = mock
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive + chunked SSE, as a real server would
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

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read MockResponsesServer.requests instead

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path.rstrip("/") == "/v1/models":
            self.server.mock._log(MockRequest("GET", self.path, self._headers(), None, None,
                                              "models", 200))
            self._send_json(200, {"models": [], "data": [], "object": "list"})
        else:
            self._not_found("GET", None)

    def do_POST(self) -> None:
        raw = self._read_body()
        if urlsplit(self.path).path.rstrip("/") != "/v1/responses":
            self._not_found("POST", raw)
            return
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        reply = plan_reply(body, self.server.mock._ids.next())
        self.server.mock._log(MockRequest("POST", self.path, self._headers(), body,
                                          extract_user_text(body), reply.rule, reply.status))
        if reply.status != 200:
            self._send_json(reply.status, reply.error_body)
            return
        self._stream(reply)

    def _stream(self, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for frame in reply.frames:
                is_delta = frame.startswith(b"event: response.output_text.delta")
                if is_delta and reply.delta_delay:
                    time.sleep(reply.delta_delay)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # codex hung up mid-stream (interrupt, shutdown)

    def _not_found(self, method: str, raw: bytes | None) -> None:
        self.server.mock._log(MockRequest(method, self.path, self._headers(),
                                          raw.decode("utf-8", "replace") if raw else None,
                                          None, "not_found", 404))
        self._send_json(404, {"error": {"message": f"mock: no route for {method} {self.path}"}})


class MockResponsesServer:
    """The mock on 127.0.0.1, served from a daemon thread. Use as a context manager.

    `url` is the provider `base_url` (ends in `/v1`); every request is kept in `requests`.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._ids = _Ids()
        self._log_list: list[MockRequest] = []
        self._cond = threading.Condition()

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

    def _log(self, request: MockRequest) -> None:
        with self._cond:
            self._log_list.append(request)
            self._cond.notify_all()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codexbridge.mock.responses_api",
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


if __name__ == "__main__":
    sys.exit(main())

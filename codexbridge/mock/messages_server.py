"""The mock Anthropic Messages API on 127.0.0.1: SSE framing and the server (the rules are
in messages_rules.py). Drives the real Claude Code binary in tests, the demo and bench."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .messages_rules import RecordedRequest, Reply, Text, ToolUse, default_reply

# --- SSE ----------------------------------------------------------------------------

def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def sse_events(reply: Reply, model: str, n: int) -> list[bytes]:
    """The event stream for one reply (text or a single tool call)."""
    start = {"type": "message_start", "message": {
        "id": f"msg_mock_{n}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}}
    events = [_event("message_start", start)]
    if isinstance(reply, ToolUse):
        events += [
            _event("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "tool_use",
                                                             "id": f"toolu_mock_{n}",
                                                             "name": reply.name,
                                                             "input": {}}}),
            _event("ping", {"type": "ping"}),
            _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "input_json_delta",
                                                     "partial_json": json.dumps(reply.input)}}),
        ]
        stop_reason = "tool_use"
    else:
        events += [
            _event("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}),
            _event("ping", {"type": "ping"}),
        ]
        text = reply.text
        for i in range(0, max(len(text), 1), 400):
            events.append(_event("content_block_delta", {
                "type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text[i:i + 400]}}))
        stop_reason = "end_turn"
    events += [
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                 "usage": {"output_tokens": 5}}),
        _event("message_stop", {"type": "message_stop"}),
    ]
    return events


# --- the server ---------------------------------------------------------------------

Responder = Callable[[dict[str, Any], int], Reply | None]
OnRequest = Callable[[RecordedRequest], None]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Claude hanging up mid-stream (an interrupt, the process ending) is normal."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class MockMessages:
    """The mock server. `start()`/`stop()` or use it as a context manager."""

    def __init__(self, responder: Responder | None = None,
                 on_request: OnRequest | None = None) -> None:
        self.responder = responder
        self.on_request = on_request
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._model_calls = 0

    # lifecycle
    def start(self) -> MockMessages:
        mock = self

        class Handler(_Handler):
            owner = mock

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="mock-messages", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> MockMessages:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the mock first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # what was asked
    @property
    def model_calls(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.is_model_call]

    def stop_feedback(self) -> list[str]:
        """Every Stop-hook reason the model was shown, in request order."""
        return [fb for r in self.model_calls if (fb := r.stop_feedback()) is not None]

    def requests_containing(self, needle: str) -> list[RecordedRequest]:
        return [r for r in self.model_calls if needle in r.all_text()]

    def wait_for(self, predicate: Callable[[RecordedRequest], bool], timeout: float
                 ) -> RecordedRequest | None:
        """The first model call matching `predicate`, waiting up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for req in self.requests:
                    if req.is_model_call and predicate(req):
                        return req
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)

    # called by the handler
    def _record(self, req: RecordedRequest) -> int:
        with self._changed:
            req.index = len(self.requests)
            self.requests.append(req)
            if req.is_model_call:
                self._model_calls += 1
            n = self._model_calls
            self._changed.notify_all()
        return n

    def _reply_for(self, body: dict[str, Any], n: int) -> Reply:
        if self.responder is not None:
            custom = self.responder(body, n)
            if custom is not None:
                return custom
        return default_reply(body, n)


class _Handler(BaseHTTPRequestHandler):
    owner: MockMessages
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log is `owner.requests`

    def _read(self) -> RecordedRequest:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = None
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else None
            except ValueError:
                body = None
        return RecordedRequest(0, self.command, self.path,
                               {k.lower(): v for k, v in self.headers.items()}, raw, body)

    def _send_json(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        self.close_connection = True

    def do_HEAD(self) -> None:
        self.owner._record(self._read())
        self._send_json(200, {})

    def do_GET(self) -> None:
        self.owner._record(self._read())
        if self.path.split("?", 1)[0] == "/v1/models":
            self._send_json(200, {"data": [{"id": "claude-mock", "type": "model"}],
                                  "has_more": False})
        else:
            self._send_json(200, {})

    def do_POST(self) -> None:
        req = self._read()
        n = self.owner._record(req)
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": 10})
            return
        if path != "/v1/messages":
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                             "message": path}})
            return
        if req.body is None:
            self._send_json(400, {"type": "error", "error": {
                "type": "invalid_request_error", "message": "body is not JSON"}})
            return
        try:
            if self.owner.on_request is not None:
                self.owner.on_request(req)
            reply = self.owner._reply_for(req.body, n)
        except Exception as exc:  # a broken test callback must show up, not hang Claude
            self.owner.errors.append(repr(exc))
            reply = Text(f"MOCK_ERROR: {exc!r}")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        model = str(req.body.get("model") or "claude-mock")
        for event in sse_events(reply, model, n):
            self.wfile.write(event)
        self.wfile.flush()
        req.done_at = time.time()
        self.close_connection = True

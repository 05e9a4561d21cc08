"""`doctor --deep`'s model: a Responses API on 127.0.0.1 that answers every turn
"MOCK REPLY: <the user's words>", so one real turn runs with no account and no network.

Codex only ever calls `POST <base_url>/responses` with `stream: true` and reads
Server-Sent Events back (and may ask `GET <base_url>/models`). What to answer is
`planner(body, n)`; here it is `echo_reply`. The test-suite's scripted mock
(tests/support/mock_codex.py: RUN:, HOLD:, MCP_CALL: … rules, a request log) is this
server with its own planner and `serve`; the mock Messages API for Claude Code there
shares `QuietServer` and `JsonHandler`. Stdlib only; starts in milliseconds.

The events, as codex 0.169.0 reads them: a text reply is created → output_item.added →
output_text.delta… → output_item.done → completed. The shapes are the ones measured in
docs/protocol-notes.md, "The mock model".
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Self
from urllib.parse import urlsplit

from ..jsontypes import objs

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..jsontypes import JsonObject, JsonValue

REPLY_PREFIX = "MOCK REPLY: "
TEXT_DELTA_CHARS = 8
MODELS: JsonObject = {"models": [], "data": [], "object": "list"}


# -- what a loopback model server is made of -------------------------------------------

class QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket],
                     client_address: object) -> None:
        """A client that hangs up mid-stream (codex interrupting a turn, Claude Code's
        process ending) is normal here, not a traceback on stderr."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class JsonHandler(BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1, as a real API server speaks it; no access log on stderr (a
    mock keeps its own request log)."""

    protocol_version = "HTTP/1.1"
    close_after_json = False  # end the connection after each JSON answer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def lower_headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def read_body(self) -> bytes:
        """The request body, sent with a Content-Length or chunked."""
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

    def send_json(self, status: int, payload: object) -> None:
        """`payload` as the JSON answer (no body to a HEAD)."""
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_after_json:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        if self.close_after_json:
            self.close_connection = True


# -- the answer ----------------------------------------------------------------------------

@dataclass
class Reply:
    """What the mock sends back for one request: SSE frames (streamed, chunked), or a
    JSON body (`json_body`: the model list, an error) with `status`."""

    rule: str
    status: int = 200
    frames: Iterable[bytes] = field(default_factory=list)
    json_body: JsonValue = None


Planner: TypeAlias = "Callable[[JsonValue, int], Reply]"


def extract_user_text(body: JsonValue) -> str | None:
    """The text of the last user message in `input[]` (its `input_text` parts joined)."""
    items = body.get("input") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return None
    for item in reversed(objs(items)):
        if item.get("role") != "user" or item.get("type", "message") != "message":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(str(part.get("text", "")) for part in objs(content)
                           if part.get("type") == "input_text")
    return None


# Every number distinct (and unlike Claude's mock), so a test that finds them in a
# reply's tokens line knows they came from here (docs/tokens.md).
USAGE: JsonObject = {
    "input_tokens": 1234, "input_tokens_details": {"cached_tokens": 1000},
    "output_tokens": 56, "output_tokens_details": {"reasoning_tokens": 7},
    "total_tokens": 1290,
}


def sse_frame(data: JsonObject) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def text_frames(text: str, n: int, delta_size: int = TEXT_DELTA_CHARS) -> list[bytes]:
    """A whole assistant message `text`, in deltas of `delta_size` characters."""
    resp_id, msg_id = f"resp_{n}", f"msg_{n}"
    message: JsonObject = {"type": "message", "role": "assistant", "id": msg_id}
    deltas = [text[at:at + delta_size] for at in range(0, len(text), delta_size)]
    return [
        sse_frame({"type": "response.created", "response": {"id": resp_id}}),
        sse_frame({"type": "response.output_item.added", "output_index": 0,
                   "item": {**message, "content": []}}),
        *(sse_frame({"type": "response.output_text.delta", "item_id": msg_id,
                     "output_index": 0, "content_index": 0, "delta": delta})
          for delta in deltas),
        sse_frame({"type": "response.output_item.done", "output_index": 0,
                   "item": {**message, "content": [{"type": "output_text", "text": text}]}}),
        sse_frame({"type": "response.completed", "response": {"id": resp_id, "usage": USAGE}}),
    ]


def echo_reply(body: JsonValue, n: int) -> Reply:
    """doctor's one rule: the user's words back, after REPLY_PREFIX."""
    return Reply("reply", frames=text_frames(REPLY_PREFIX + (extract_user_text(body) or ""), n))


# -- the server ------------------------------------------------------------------------------

class _Server(QuietServer):
    def __init__(self, address: tuple[str, int], mock: MockModel) -> None:
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
        self._answer("GET", None)

    def do_POST(self) -> None:
        raw = self.read_body()
        body: JsonValue
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self._answer("POST", body)

    def _answer(self, method: str, body: JsonValue) -> None:
        reply = self.server.mock.serve(method, self.path, self.lower_headers(), body)
        if reply.json_body is not None or reply.status != 200:
            self.send_json(reply.status, reply.json_body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for frame in reply.frames:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # codex hung up mid-stream (interrupt, shutdown)


class MockModel:
    """The mock on 127.0.0.1, served from a daemon thread. Use as a context manager.

    `url` is the provider `base_url` (ends in `/v1`).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 planner: Planner = echo_reply) -> None:
        self._address = (host, port)
        self.planner = planner
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)
        self._ids_lock = threading.Lock()

    def serve(self, method: str, path: str, headers: dict[str, str],
              body: JsonValue) -> Reply:
        """The answer to one request (the headers are for a subclass that logs them)."""
        route = urlsplit(path).path.rstrip("/")
        if method == "GET" and route == "/v1/models":
            return Reply("models", json_body=MODELS)
        if method == "POST" and route == "/v1/responses":
            with self._ids_lock:  # item and call ids never repeat within a thread
                n = next(self._ids)
            return self.planner(body, n)
        return Reply("not_found", status=404,
                     json_body={"error": {"message": f"mock: no route for {method} {path}"}})

    def start(self) -> Self:
        if self._server is None:
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

    def __enter__(self) -> Self:
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


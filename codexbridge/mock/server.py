"""The mock Responses API served on 127.0.0.1 (stdlib only; starts in milliseconds).

Codex only ever calls `POST <base_url>/responses` with `stream: true` and reads
Server-Sent Events back. What to answer is `planner(body, n)` — `rules.plan_reply` by
default; a test may pass its own planner (wrapping the default) for a scenario the
rules do not cover. Every request is logged for tests to assert on.

Run it alone with `python -m codexbridge.mock.server --port N`.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .rules import Reply, extract_user_text, plan_reply

Planner = Callable[[Any, int], Reply]
HOLD_MAX_S = 300.0


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
    # When the last frame of the answer went out (time.time(); the bench's clock):
    # a one-item list so the frozen record can still be told when it is done.
    done: list[float] = field(default_factory=list, compare=False)

    @property
    def is_model_call(self) -> bool:
        return self.method == "POST" and urlsplit(self.path).path == "/v1/responses"

    @property
    def last_input_item(self) -> dict[str, Any] | None:
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], mock: MockResponsesServer) -> None:
        super().__init__(address, _Handler)
        self.mock = mock
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-stream (codex interrupting a turn) is normal here,
        not a traceback on stderr."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


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
        reply = self.server.mock.planner(body, self.server.mock._ids.next())
        logged = MockRequest("POST", self.path, self._headers(), body,
                             extract_user_text(body), reply.rule, reply.status)
        self.server.mock._log(logged)
        if reply.status != 200:
            self._send_json(reply.status, reply.error_body)
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
        self.server.mock._log(MockRequest(method, self.path, self._headers(),
                                          raw.decode("utf-8", "replace") if raw else None,
                                          None, "not_found", 404))
        self._send_json(404, {"error": {"message": f"mock: no route for {method} {self.path}"}})


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
    parser = argparse.ArgumentParser(prog="python -m codexbridge.mock.server",
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

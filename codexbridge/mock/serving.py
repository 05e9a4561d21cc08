"""What both mock models share to serve on 127.0.0.1: a threading HTTP server that takes
a client hanging up as normal, and a handler base that reads bodies and answers JSON.

The two APIs (`responses.py` for codex, tests/support/mock_claude.py for Claude Code)
build on these;
stdlib only, like the rest of `mock/`.
"""

from __future__ import annotations

import json
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
    """Keep-alive HTTP/1.1, as a real API server speaks it; no access log on stderr (each
    mock keeps its own request log for the tests)."""

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

"""What the attacker of tests/security/ runs against a listener: standard-library Python
source (the other user has no websockets, no codexbridge), given as `-c` source to
`OtherUser.run_python`. Each prints one JSON line saying how far it got.

    APP_SERVER_PROBE URL [TOKEN]   a WebSocket handshake by hand (ws://, wss:// without
        checking the certificate, unix://), then `initialize` and `thread/list` — what
        reading someone's threads (and then starting turns) begins with. Prints
        {"stage": "connect"|"handshake"|"rpc", …}: "rpc" with a `result` means it got in.
    MCP_PROBE URL [TOKEN]          the streamable-HTTP MCP `initialize`, then
        `tools/list`. {"stage": "http", "status": 401} or {"stage": "mcp", "tools": […]}.
"""

from __future__ import annotations

APP_SERVER_PROBE = r'''
import base64, json, os, socket, ssl, sys

url = sys.argv[1]
token = sys.argv[2] if len(sys.argv) > 2 else ""


def done(**kw):
    print(json.dumps(kw))
    sys.exit(0)


try:
    if url.startswith("unix://"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        sock.connect(url[len("unix://"):])
        host = "localhost"
    else:
        scheme, rest = url.split("://", 1)
        host, port = rest.split("/", 1)[0].rsplit(":", 1)
        host = host.strip("[]")
        sock = socket.create_connection((host, int(port)), timeout=10)
        if scheme == "wss":
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE  # an attacker does not care who answers
            sock = ctx.wrap_socket(sock, server_hostname=host)
except OSError as exc:
    done(stage="connect", error=type(exc).__name__, errno=exc.errno)

key = base64.b64encode(os.urandom(16)).decode()
request = (f"GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
           "Sec-WebSocket-Version: 13\r\n")
if token:
    request += f"Authorization: Bearer {token}\r\n"
sock.sendall((request + "\r\n").encode())
head = b""
try:
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
except OSError as exc:
    done(stage="handshake", error=type(exc).__name__)
status = head.split(b"\r\n", 1)[0].decode(errors="replace")
if not status.startswith("HTTP/1.1 101"):
    done(stage="handshake", status=status)
buf = head.split(b"\r\n\r\n", 1)[1]


def send(obj):
    data = json.dumps(obj).encode()
    mask = os.urandom(4)
    n = len(data)
    if n < 126:
        header = bytes([0x81, 0x80 | n])
    elif n < 65536:
        header = bytes([0x81, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        header = bytes([0x81, 0x80 | 127]) + n.to_bytes(8, "big")
    sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


def take(n):
    global buf
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("closed")
        buf += chunk
    out, buf = buf[:n], buf[n:]
    return out


def answer(want):
    while True:
        b0, b1 = take(2)
        n = b1 & 0x7F
        if n == 126:
            n = int.from_bytes(take(2), "big")
        elif n == 127:
            n = int.from_bytes(take(8), "big")
        payload = take(n)
        if b0 & 0x0F == 8:
            raise EOFError("closed by the server")
        if b0 & 0x0F == 1:
            msg = json.loads(payload)
            if msg.get("id") == want:
                return msg


try:
    send({"id": 1, "method": "initialize", "params": {
        "clientInfo": {"name": "attacker", "title": "attacker", "version": "0"},
        "capabilities": {"experimentalApi": False}}})
    answer(1)
    send({"method": "initialized"})
    send({"id": 2, "method": "thread/list", "params": {}})
    done(stage="rpc", **answer(2))
except (OSError, EOFError, ValueError) as exc:
    done(stage="rpc", error=repr(exc))
'''

MCP_PROBE = r'''
import http.client, json, sys
from urllib.parse import urlsplit

url = urlsplit(sys.argv[1])
token = sys.argv[2] if len(sys.argv) > 2 else ""


def done(**kw):
    print(json.dumps(kw))
    sys.exit(0)


def post(body, session=None):
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    if session:
        headers["mcp-session-id"] = session
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        conn.request("POST", url.path, json.dumps(body), headers)
        resp = conn.getresponse()
        return resp.status, resp.getheader("mcp-session-id"), resp.read().decode()
    finally:
        conn.close()


def payload(text):
    for line in text.splitlines():
        if line.startswith("data:"):
            return json.loads(line[5:])
    return json.loads(text) if text.strip() else {}


try:
    status, session, text = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": {"protocolVersion": "2025-06-18",
                                             "capabilities": {},
                                             "clientInfo": {"name": "attacker",
                                                            "version": "0"}}})
except OSError as exc:
    done(stage="connect", error=type(exc).__name__)
if status != 200:
    done(stage="http", status=status)
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
status, _, text = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
                       session)
tools = [t["name"] for t in payload(text).get("result", {}).get("tools", [])]
done(stage="mcp", status=status, tools=tools)
'''

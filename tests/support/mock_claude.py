"""The mock Anthropic Messages API that the real Claude Code talks to: the rules (pure: a
request body in, a reply out), the SSE framing, and the server on 127.0.0.1. Drives
Claude Code in the tests, the demo and bench/.

Stateless rules (../shared/reference/claude-code.md §3), applied to the tail of the
conversation after dropping `role:"system"` entries:

    tail is a user tool_result answering a ToolSearch  → the tool_use that was asked for
    any other user tool_result                         → text "TOOL_RESULT_SEEN: <result>"
    a text of the last user message holds             → tool_use <name> <json>, or first
      `CALL_TOOL <name> <json>` (the last one wins)
                                                         ToolSearch "select:<name>" when
                                                         <name> is not in `tools` yet
                                                         (deferred MCP tools)
    anything else                                      → text "MOCK_REPLY #<n>: <tail>"

Every request is logged (`.requests`) with its parsed body and headers. Tests can add an
`on_request` callback (runs before the reply, e.g. to drop mail into a mailbox while the
model "thinks") and a `responder` that overrides the rules for some requests.

    with MockMessages() as mock:
        env["ANTHROPIC_BASE_URL"] = mock.url
        ...
        assert "MAIL" in mock.stop_feedback()[0]
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codexbridge.doctor.mock_model import JsonHandler, QuietServer
from codexbridge.jsontypes import obj, objs
from codexbridge.messages.frame import MARK

if TYPE_CHECKING:
    from typing import TypeAlias

    from codexbridge.jsontypes import JsonObject

FEEDBACK_MARK = "Stop hook feedback:"
CALL_TOOL_RE = re.compile(r"CALL_TOOL\s+(\S+)\s+(?=\{)")
TOOL_SEARCH = "ToolSearch"


# --- replies ------------------------------------------------------------------------

@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: JsonObject


Reply = Text | ToolUse


# --- reading a request --------------------------------------------------------------

def _blocks(message: JsonObject) -> list[JsonObject]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return objs(content)


def _block_text(block: JsonObject) -> str:
    if block.get("type") == "text":
        return str(block.get("text", ""))
    if block.get("type") == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(str(b.get("text", "")) for b in objs(content))
    return ""


def conversation(body: JsonObject) -> list[JsonObject]:
    """`messages` without the `role:"system"` entries Claude Code mixes in."""
    return [m for m in objs(body.get("messages")) if m.get("role") != "system"]


def parse_call_tool(text: str) -> tuple[str, JsonObject] | None:
    """`CALL_TOOL <name> <json object>` anywhere in `text` (the last one wins)."""
    found = None
    for match in CALL_TOOL_RE.finditer(text):
        try:
            args, _ = json.JSONDecoder().raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(args, dict):
            found = (match.group(1), args)
    return found


def feedback_of(text: str) -> str | None:
    """The reason in a `Stop hook feedback:` block, without the reminder wrapper."""
    if FEEDBACK_MARK not in text:
        return None
    reason = text.split(FEEDBACK_MARK, 1)[1]
    reason = reason.split("</system-reminder>", 1)[0]
    return reason.strip("\n")


@dataclass
class RecordedRequest:
    index: int
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: JsonObject | None
    at: float = field(default_factory=time.time)
    done_at: float | None = None  # when the last event of the answer went out

    @property
    def session_id(self) -> str | None:
        return self.headers.get("x-claude-code-session-id")

    @property
    def is_model_call(self) -> bool:
        return self.method == "POST" and self.path.split("?", 1)[0] == "/v1/messages"

    @property
    def messages(self) -> list[JsonObject]:
        return conversation(self.body or {})

    @property
    def tool_names(self) -> set[str]:
        return tool_names(self.body or {})

    def last_user_texts(self) -> list[str]:
        msgs = self.messages
        if not msgs or msgs[-1].get("role") != "user":
            return []
        return [_block_text(b) for b in _blocks(msgs[-1]) if b.get("type") == "text"]

    def stop_feedback(self) -> str | None:
        """The Stop-hook reason this request carries in its last user message, if any."""
        for text in reversed(self.last_user_texts()):
            reason = feedback_of(text)
            if reason is not None:
                return reason
        return None

    def all_text(self) -> str:
        """Every text in the request (system entries and tool results included)."""
        parts: list[str] = []
        for msg in objs((self.body or {}).get("messages")):
            parts.extend(_block_text(b) for b in _blocks(msg))
        return "\n".join(parts)

    def tail_text(self) -> str:
        """Text of the last (non-system) message, all blocks."""
        msgs = self.messages
        return "\n".join(_block_text(b) for b in _blocks(msgs[-1])) if msgs else ""


# --- the rules ----------------------------------------------------------------------

def _find_tool_use(msgs: list[JsonObject], tool_use_id: str) -> JsonObject | None:
    for msg in reversed(msgs):
        if msg.get("role") != "assistant":
            continue
        for block in _blocks(msg):
            if block.get("type") == "tool_use" and block.get("id") == tool_use_id:
                return block
    return None


def _call_tool_for(msgs: list[JsonObject], name: str) -> JsonObject:
    """Arguments of the latest CALL_TOOL instruction for `name` in a user text."""
    for msg in reversed(msgs):
        if msg.get("role") != "user":
            continue
        for block in reversed(_blocks(msg)):
            if block.get("type") != "text":
                continue
            found = parse_call_tool(_block_text(block))
            if found and found[0] == name:
                return found[1]
    return {}


def tool_names(body: JsonObject) -> set[str]:
    """The names of the tools the request offers the model."""
    return {str(t.get("name")) for t in objs(body.get("tools"))}


def _use(body: JsonObject, name: str, args: JsonObject) -> ToolUse:
    """Call tool `name`; one Claude Code defers (an MCP tool not offered yet) is first
    looked up with ToolSearch, as the real model does."""
    if name in tool_names(body):
        return ToolUse(name, args)
    return ToolUse(TOOL_SEARCH, {"query": f"select:{name}", "max_results": 1})


def default_reply(body: JsonObject, n: int) -> Reply:
    """The rule set from the module docstring."""
    msgs = conversation(body)
    if not msgs:
        return Text(f"MOCK_REPLY #{n}: (no messages)")
    last = msgs[-1]
    blocks = _blocks(last)
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if last.get("role") == "user" and results:
        result = results[-1]
        asked = _find_tool_use(msgs, str(result.get("tool_use_id")))
        if asked is not None and asked.get("name") == TOOL_SEARCH:
            query = str(obj(asked.get("input")).get("query", ""))
            name = query.split("select:", 1)[1].split(",")[0].strip() \
                if "select:" in query else query.strip()
            return ToolUse(name, _call_tool_for(msgs, name))
        return Text(f"TOOL_RESULT_SEEN: {_block_text(result)}")
    texts = [_block_text(b) for b in blocks if b.get("type") == "text"]
    last_text = texts[-1] if texts else ""
    # Every text of the user's turn, not only its last: two mails that arrive together
    # (Codex's request, then 0.2 s later the reply that ended its turn) are one turn's
    # two texts, and a model acts on the one that asks for a tool — answering only the
    # last left a journey waiting for a permission prompt that never came.
    call = parse_call_tool("\n".join(texts)) if last.get("role") == "user" else None
    if call is not None:
        return _use(body, *call)
    tail = " ".join(last_text.split())[-200:]
    return Text(f"MOCK_REPLY #{n}: {tail}")


# --- a Claude that answers its peer ---------------------------------------------------

REQUEST_RE = re.compile(r"request (req_\d+_[a-z0-9]+)")
WAITS_MARK = "Codex waits for your answer"
ANSWER_PREFIX = "CLAUDE ANSWER to "


def peer_answer(body: JsonObject, n: int) -> Reply | None:
    """A `responder` for the offline world: a Codex request that waits for an answer
    (codexbridge's mail, however it arrived) is answered `CLAUDE ANSWER to <request>:
    <the question>` — unless it asks for a tool (`CALL_TOOL`), which the default rules
    do. Anything else: None (the default rules)."""
    msgs = objs(body.get("messages"))
    if not msgs or msgs[-1].get("role") == "assistant":
        return None
    # Everything since the model last spoke — mail delivered during a tool call comes as
    # a `role:"system"` entry beside the tool result (measured, 2.1.332).
    tail: list[JsonObject] = []
    for msg in reversed(msgs):
        if msg.get("role") == "assistant":
            break
        tail.insert(0, msg)
    text = "\n".join(_block_text(b) for m in tail for b in _blocks(m))
    # Mail that came during a tool call (a `system` entry beside the tool result) asks for
    # a tool: a model acts on it, where the plain rules would only note the tool result.
    mail = "\n".join(_block_text(b) for m in tail if m.get("role") == "system"
                     for b in _blocks(m))
    call = parse_call_tool(mail) if mail else None
    if call is not None:
        return _use(body, *call)
    if WAITS_MARK not in text or parse_call_tool(text) is not None:
        return None
    found = REQUEST_RE.findall(text)
    if not found:
        return None
    question = _question(text)
    return Text(f"{ANSWER_PREFIX}{found[-1]}: {question}")


def _question(text: str) -> str:
    """The mail's own words: the line after codexbridge's tagged line saying Codex waits."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(MARK) and WAITS_MARK in line:
            rest = [x for x in lines[i + 1:] if x.strip()]
            return " ".join(rest[0].split())[:200] if rest else ""
    return ""


# --- SSE ----------------------------------------------------------------------------

def _event(name: str, data: JsonObject) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


# What every call reports (message_start, then message_delta's output): each number
# distinct, and unlike Codex's mock (doctor/mock_model.USAGE), so a tokens line that
# shows them is known to come from here (docs/tokens.md).
USAGE_START: JsonObject = {"input_tokens": 321, "cache_read_input_tokens": 200,
                           "cache_creation_input_tokens": 40, "output_tokens": 1}
OUTPUT_TOKENS = 17


def sse_events(reply: Reply, model: str, n: int) -> list[bytes]:
    """The event stream for one reply (text or a single tool call)."""
    start: JsonObject = {"type": "message_start", "message": {
        "id": f"msg_mock_{n}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": USAGE_START}}
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
                                 "usage": {"output_tokens": OUTPUT_TOKENS}}),
        _event("message_stop", {"type": "message_stop"}),
    ]
    return events


# --- the server ---------------------------------------------------------------------

Responder: TypeAlias = "Callable[[JsonObject, int], Reply | None]"
OnRequest = Callable[[RecordedRequest], None]


class MockMessages:
    """The mock server. `start()`/`stop()` or use it as a context manager."""

    def __init__(self, responder: Responder | None = None,
                 on_request: OnRequest | None = None) -> None:
        self.responder = responder
        self.on_request = on_request
        # called once the reply's words are out (its block closed; no message_stop yet):
        # a test holds Claude mid-answer, its words on screen, for as long as it needs
        self.mid_stream: OnRequest | None = None
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._server: QuietServer | None = None
        self._thread: threading.Thread | None = None
        self._model_calls = 0

    # lifecycle
    def start(self) -> MockMessages:
        mock = self

        class Handler(_Handler):
            owner = mock

        self._server = QuietServer(("127.0.0.1", 0), Handler)
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

    def _reply_for(self, body: JsonObject, n: int) -> Reply:
        if self.responder is not None:
            custom = self.responder(body, n)
            if custom is not None:
                return custom
        return default_reply(body, n)


class _Handler(JsonHandler):
    """Each answer closes its connection, as the real API's streaming answers do."""

    owner: MockMessages
    close_after_json = True

    def _read(self) -> RecordedRequest:
        raw = self.read_body()
        body = None
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else None
            except ValueError:
                body = None
        return RecordedRequest(0, self.command, self.path, self.lower_headers(), raw, body)

    def do_HEAD(self) -> None:
        self.owner._record(self._read())
        self.send_json(200, {})

    def do_GET(self) -> None:
        self.owner._record(self._read())
        if self.path.split("?", 1)[0] == "/v1/models":
            self.send_json(200, {"data": [{"id": "claude-mock", "type": "model"}],
                                  "has_more": False})
        else:
            self.send_json(200, {})

    def do_POST(self) -> None:
        req = self._read()
        n = self.owner._record(req)
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":
            self.send_json(200, {"input_tokens": 10})
            return
        if path != "/v1/messages":
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                             "message": path}})
            return
        if req.body is None:
            self.send_json(400, {"type": "error", "error": {
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
        paused = False
        for event in sse_events(reply, model, n):
            self.wfile.write(event)
            if (not paused and self.owner.mid_stream is not None
                    and event.startswith(b"event: content_block_stop")):
                paused = True
                self.wfile.flush()
                self.owner.mid_stream(req)
        self.wfile.flush()
        req.done_at = time.time()
        self.close_connection = True

"""What Claude Code writes that codexbridge reads, as typed records: a transcript's lines
and a running session's registry entry.

A transcript is `$CLAUDE_CONFIG_DIR/projects/<slug>/<session>.jsonl`, one JSON record a
line (measured on Claude Code 2.1.332: docs/protocol-notes.md, "Transcripts";
docs/handoff.md, "What crosses"). Live delivery, the handling markers and the handoff
all read it; `Record.parse` is the one place its fields are picked out, so a field
Claude Code renames is renamed here once.

A session's registry entry is `<config dir>/sessions/<pid>.json`: its id, status, the
cross-session inbox socket and the protocol it speaks there (what live delivery checks
before it pushes, and what the Stop hook notes for doctor).

Tolerant by design: these are another program's internal formats. A field of the wrong type
reads as absent, fields we do not use are ignored, and a line that is not a JSON object
parses to None (the callers count or skip it). Nothing here raises on a line.

Standard library only, plain slotted classes (no `dataclasses`, no `typing` at run
time): the Stop hook reads transcripts through this module.
"""

from __future__ import annotations

from ..host.jsonfile import loads_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from ..jsontypes import JsonObject, JsonValue

# What Claude Code writes, as a `user` record, when the human presses Esc in a turn
# (measured on 2.1.332: "[Request interrupted by user]", "… for tool use]")
INTERRUPT_MARK = "[Request interrupted by user"


def _s(value: object) -> str | None:
    return value if isinstance(value, str) else None


class Origin:
    """Who made a `user` record (or an attachment): `kind` is "human", "peer" (mail
    pushed live, with our `msg_id`), "task-notification" (a watcher's wake) …"""

    __slots__ = ("kind", "msg_id")

    def __init__(self, kind: str | None, msg_id: str | None) -> None:
        self.kind, self.msg_id = kind, msg_id

    @classmethod
    def parse(cls, value: object) -> Origin | None:
        if not isinstance(value, dict):
            return None
        return cls(_s(value.get("kind")), _s(value.get("msg_id")))


class Block:
    """One block of a message's content: text, tool_use (name, input), tool_result,
    image … A string content is one text block."""

    __slots__ = ("input", "kind", "name", "text")

    def __init__(self, kind: str | None, text: str | None = None, name: str | None = None,
                 input: JsonObject | None = None) -> None:
        self.kind, self.text, self.name = kind, text, name
        self.input: JsonObject = input or {}

    @classmethod
    def parse(cls, value: JsonObject) -> Block:
        args = value.get("input")
        return cls(_s(value.get("type")), _s(value.get("text")), _s(value.get("name")),
                   args if isinstance(args, dict) else None)


class Message:
    """A `user` / `assistant` record's `message`: its content blocks and model."""

    __slots__ = ("blocks", "model")

    def __init__(self, blocks: list[Block], model: str | None = None) -> None:
        self.blocks, self.model = blocks, model

    @classmethod
    def parse(cls, value: object) -> Message | None:
        """None when there is no message with a `content` to read."""
        if not isinstance(value, dict) or "content" not in value:
            return None
        content = value["content"]
        if isinstance(content, str):
            blocks = [Block("text", content)]
        elif isinstance(content, list):
            blocks = [Block.parse(b) for b in content if isinstance(b, dict)]
        else:
            blocks = []
        return cls(blocks, _s(value.get("model")))


class Record:
    """One transcript line: `kind` is its `type` (user, assistant, attachment,
    queue-operation, system …; None when it has none)."""

    __slots__ = ("attachment_origin", "kind", "message", "meta", "operation", "origin",
                 "parent", "prompt_source", "sidechain", "timestamp", "tool_result",
                 "turn_origin", "uuid")

    def __init__(self, kind: str | None, *, uuid: str | None = None,
                 parent: str | None = None, timestamp: str | None = None,
                 sidechain: bool = False, meta: bool = False, tool_result: bool = False,
                 origin: Origin | None = None, attachment_origin: Origin | None = None,
                 turn_origin: object = None, prompt_source: object = None,
                 operation: str | None = None, message: Message | None = None) -> None:
        self.kind, self.uuid, self.parent, self.timestamp = kind, uuid, parent, timestamp
        self.sidechain, self.meta, self.tool_result = sidechain, meta, tool_result
        self.origin, self.attachment_origin = origin, attachment_origin
        # any JSON value: compared, never assumed to be a string
        self.turn_origin, self.prompt_source = turn_origin, prompt_source
        self.operation, self.message = operation, message

    @classmethod
    def parse(cls, line: bytes | str) -> Record | None:
        """The record on one line; None for a line that is not a JSON object."""
        try:
            # (decoded leniently: one bad byte in a long tool output spoils no record)
            data: JsonValue = loads_json(line.decode("utf-8", "replace")
                                         if isinstance(line, bytes) else line)
        except ValueError:
            return None
        return cls.from_json(data) if isinstance(data, dict) else None

    @classmethod
    def from_json(cls, rec: JsonObject) -> Record:
        attachment = rec.get("attachment")
        return cls(
            _s(rec.get("type")), uuid=_s(rec.get("uuid")),
            # across a compaction the link is `logicalParentUuid`
            parent=_s(rec.get("parentUuid") or rec.get("logicalParentUuid")),
            timestamp=_s(rec.get("timestamp")),
            sidechain=rec.get("isSidechain") is True, meta=rec.get("isMeta") is True,
            tool_result="toolUseResult" in rec, origin=Origin.parse(rec.get("origin")),
            attachment_origin=Origin.parse(attachment.get("origin"))
            if isinstance(attachment, dict) else None,
            turn_origin=rec.get("turnOrigin"), prompt_source=rec.get("promptSource"),
            operation=_s(rec.get("operation")), message=Message.parse(rec.get("message")))

    @property
    def enqueued(self) -> bool:
        """A `queue-operation` enqueue: the session has it in its own queue."""
        return self.kind == "queue-operation" and self.operation == "enqueue"

    @property
    def interrupt(self) -> bool:
        """Claude Code's own record of an Esc: a `user` record with no origin whose text
        opens with `[Request interrupted by user` (not a tool result or mail quoting it)."""
        if self.kind != "user" or self.origin is not None or self.message is None:
            return False
        return any(b.kind == "text" and b.text is not None
                   and b.text.startswith(INTERRUPT_MARK) for b in self.message.blocks)


def records_with(lines: Iterable[bytes], needle: str) -> Iterator[Record]:
    """The records whose line carries `needle` (found before any parse: a transcript is
    long, our ids are rare)."""
    raw_needle = needle.encode("utf-8")
    for raw in lines:
        if raw_needle in raw:
            record = Record.parse(raw)
            if record is not None:
                yield record


class SessionEntry:
    """A running session's registry entry. `peer_protocol` is kept as found (any JSON
    value): a number we do not speak is drift to report, not a field to drop."""

    __slots__ = ("fields", "peer_protocol", "session_id", "socket", "status", "version")

    def __init__(self, session_id: str | None, *, peer_protocol: object = None,
                 socket: str | None = None, status: str | None = None,
                 version: str | None = None, fields: tuple[str, ...] = ()) -> None:
        self.session_id, self.peer_protocol, self.socket = session_id, peer_protocol, socket
        self.status, self.version, self.fields = status, version, fields

    @classmethod
    def from_json(cls, data: JsonObject) -> SessionEntry:
        return cls(_s(data.get("sessionId")), peer_protocol=data.get("peerProtocol"),
                   socket=_s(data.get("messagingSocketPath")), status=_s(data.get("status")),
                   version=_s(data.get("version")), fields=tuple(sorted(data)))


class Receipt:
    """What a session answers on our reply socket about a frame we wrote to its inbox
    (Claude Code only ever sends bad news: `peer_message_status` held, refused …)."""

    __slots__ = ("action", "detail", "dropped_msg_ids", "orig_msg_id", "status")

    def __init__(self, action: str | None, *, orig_msg_id: str | None = None,
                 dropped_msg_ids: tuple[str, ...] = (), status: str | None = None,
                 detail: str | None = None) -> None:
        self.action, self.orig_msg_id, self.dropped_msg_ids = action, orig_msg_id, dropped_msg_ids
        self.status, self.detail = status, detail

    @classmethod
    def from_json(cls, data: JsonObject) -> Receipt:
        dropped = data.get("dropped_msg_ids")
        return cls(_s(data.get("action")), orig_msg_id=_s(data.get("orig_msg_id")),
                   dropped_msg_ids=tuple(d for d in dropped if isinstance(d, str))
                   if isinstance(dropped, list) else (),
                   status=_s(data.get("status")),
                   detail=_s(data.get("drop_reason")) or _s(data.get("status_detail")))

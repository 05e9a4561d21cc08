"""What Claude Code writes that codexbridge reads, as typed records: a transcript's lines
and a running session's registry entry.

A transcript is `$CLAUDE_CONFIG_DIR/projects/<slug>/<session>.jsonl`, one JSON record a
line (measured on Claude Code 2.1.332: docs/protocol-notes.md, "Transcripts";
docs/handoff.md, "What crosses"). Live delivery, the handling markers and the handoff
all read it; `Record` is the one place its fields are picked out, so a field
Claude Code renames is renamed here once.

A session's registry entry is `<config dir>/sessions/<pid>.json`: its id, status, the
cross-session inbox socket and the protocol it speaks there (what live delivery checks
before it pushes, and what the Stop hook notes for doctor).

What a transcript says of a mail we handed (`turn_of`, by the mail's id): not in front
of Claude yet, taken in by a turn, or taken in by a turn the human then ended with Esc
— what the Stop hook and the courier decide an answer by (`messages/answers.py`).

Tolerant by design: these are another program's internal formats. A field of the wrong type
reads as absent, fields we do not use are ignored, and a line that is not a JSON object
parses to None (the callers count or skip it). Nothing here raises on a line.

Each shape is a `JsonRecord` (jsontypes.py): its fields name the keys once, read by
the one shared reader. No `dataclasses`, no `typing` at run time: the Stop hook reads
transcripts through this module.
"""

from __future__ import annotations

import os

from ..host.jsonfile import loads_json
from ..jsontypes import JsonRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from ..jsontypes import JsonObject, JsonValue

# What Claude Code writes, as a `user` record, when the human presses Esc in a turn
# (measured on 2.1.332: "[Request interrupted by user]", "… for tool use]")
INTERRUPT_MARK = "[Request interrupted by user"


class Origin(JsonRecord):
    """Who made a `user` record (or an attachment): `kind` is "human", "peer" (mail
    pushed live, with our `msg_id`), "task-notification" (a watcher's wake) …"""

    kind: str | None = None
    msg_id: str | None = None


class Attachment(JsonRecord):
    """An `attachment` record's attachment: only its origin is read."""

    origin: Origin | None = None


class Block(JsonRecord, wire={"kind": "type"}):
    """One block of a message's content: text, tool_use (name, input), tool_result,
    image … A string content is one text block."""

    kind: str | None
    text: str | None = None
    name: str | None = None
    input: JsonObject = {}  # noqa: RUF012 (a record is read-only: never changed in place)


class Usage(JsonRecord):
    """An assistant message's `usage`, as the Messages API reports it and Claude Code
    writes it: `input_tokens` counts neither the input read from the prompt cache nor
    the input written to it (docs/tokens.md)."""

    input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    output_tokens: int = 0


class Message(JsonRecord, wire={"blocks": "content"}):
    """A `user` / `assistant` record's `message`: its content blocks and model; an
    assistant's also its id (one model call: Claude Code writes a line per content
    block, each with the call's id and usage), why it stopped, and its usage."""

    blocks: tuple[Block, ...]  # a list of blocks, or a string: one text block
    model: str | None = None
    id: str | None = None
    stop_reason: str | None = None
    usage: Usage | None = None

    @classmethod
    def parse(cls, value: object) -> Message | None:
        """None when there is no message with a `content` to read."""
        if not isinstance(value, dict) or "content" not in value:
            return None
        content = value["content"]
        if isinstance(content, str):
            return cls.read(value, blocks=(Block("text", content),))
        return cls.read(value)


class Record(JsonRecord, wire={
        "kind": "type", "parent_uuid": "parentUuid", "logical_parent": "logicalParentUuid",
        "sidechain": "isSidechain", "meta": "isMeta", "turn_origin": "turnOrigin",
        "prompt_source": "promptSource"}):
    """One transcript line: `kind` is its `type` (user, assistant, attachment,
    queue-operation, system …; None when it has none)."""

    kind: str | None
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent: str | None = None  # the link across a compaction
    timestamp: str | None = None
    sidechain: bool = False
    meta: bool = False
    tool_result: bool = False  # whether the record carries one
    origin: Origin | None = None
    attachment: Attachment | None = None
    # any JSON value: compared, never assumed to be a string
    turn_origin: JsonValue = None
    prompt_source: JsonValue = None
    operation: str | None = None
    message: Message | None = None

    @classmethod
    def parse_line(cls, line: bytes | str) -> Record | None:
        """The record on one line; None for a line that is not a JSON object."""
        try:
            # (decoded leniently: one bad byte in a long tool output spoils no record)
            data: JsonValue = loads_json(line.decode("utf-8", "replace")
                                         if isinstance(line, bytes) else line)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        return cls.read(data, tool_result="toolUseResult" in data)

    @property
    def parent(self) -> str | None:
        return self.parent_uuid or self.logical_parent

    @property
    def attachment_origin(self) -> Origin | None:
        return self.attachment.origin if self.attachment is not None else None

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
            record = Record.parse_line(raw)
            if record is not None:
                yield record


class SessionEntry(JsonRecord, wire={
        "session_id": "sessionId", "peer_protocol": "peerProtocol",
        "socket": "messagingSocketPath"}):
    """A running session's registry entry. `peer_protocol` is kept as found (any JSON
    value): a number we do not speak is drift to report, not a field to drop; `fields`:
    the names of every field it has."""

    session_id: str | None
    peer_protocol: JsonValue = None
    socket: str | None = None
    status: str | None = None
    version: str | None = None
    fields: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: JsonObject) -> SessionEntry:
        return cls.read(data, fields=tuple(sorted(data)))


class Receipt(JsonRecord):
    """What a session answers on our reply socket about a frame we wrote to its inbox
    (Claude Code only ever sends bad news: `peer_message_status` held, refused …)."""

    action: str | None
    orig_msg_id: str | None = None
    dropped_msg_ids: tuple[str, ...] = ()
    status: str | None = None
    drop_reason: str | None = None
    status_detail: str | None = None

    @classmethod
    def from_json(cls, data: JsonObject) -> Receipt:
        return cls.read(data)

    @property
    def detail(self) -> str | None:
        return self.drop_reason or self.status_detail


# --- what a transcript says about a mail ----------------------------------------------------

# Records that carry what Claude was shown; `queue-operation` only says it waits, and
# `api-request-*` / `assistant` / a `system` hook summary echo it back.
_SHOWN = ("user", "attachment")
_INTERRUPT_BYTES = INTERRUPT_MARK.encode()  # looked for before a line is parsed


def transcript_end(path: object) -> int:
    """Where a transcript ends now: mail handed from here on shows up after this offset
    (0 when there is no transcript to look at)."""
    try:
        return os.stat(path).st_size if isinstance(path, str) and path else 0
    except (OSError, ValueError):  # (a path from the hook's input may hold a NUL)
        return 0


class Turn:
    """Where the transcript says a request's mail is (constants: no `enum` on the Stop
    hook's path)."""

    NOT_YET = "not-yet"  # not in front of Claude yet (queued behind the running turn)
    TAKEN_IN = "taken-in"  # a turn took it in, and was not interrupted (so far)
    INTERRUPTED = "interrupted"  # the turn that took it in was ended by the human (Esc)


def turn_of(transcript: str, offset: int, marker: str) -> str:
    """Whether a record of `transcript` (from byte `offset`) showed Claude `marker` — a
    mail id, which every rendering of the mail carries — as part of a turn: a `user`
    record (its own turn; a Stop-hook block) or an `attachment` (beside a tool result);
    and whether the human then interrupted that turn: a later `user` record that is
    Claude Code's `[Request interrupted by user]` (Esc mid-answer) or `[Request
    interrupted by user for tool use]` (Esc at a permission prompt, or while a tool ran).
    Measured on 2.1.332: neither runs a Stop hook.

    At a stop TAKEN_IN means the turn now ending took it in: Claude dequeues mail that
    waits (a `queue-operation`) only after the stop. The answer itself need not be in the
    file yet: the stop's `last_assistant_message` is it (measured: an interactive
    session's transcript can lag the Stop hook). An unreadable transcript counts as taken
    in (the old rule), so a request is never held forever by a file."""
    needle = marker.encode("utf-8")
    seen = False
    try:
        with open(transcript, "rb") as fh:
            fh.seek(max(0, offset))
            for line in fh:
                if not seen:
                    record = Record.parse_line(line) if needle in line else None
                    seen = record is not None and record.kind in _SHOWN
                elif _INTERRUPT_BYTES in line and (record := Record.parse_line(line)) is not None \
                        and record.interrupt:
                    return Turn.INTERRUPTED
    except (OSError, ValueError):  # (ValueError: a NUL in a path from a hook's input)
        return Turn.TAKEN_IN
    return Turn.TAKEN_IN if seen else Turn.NOT_YET


def answer_usage(transcript: str, marker: str) -> tuple[Usage, ...] | None:
    """What each model call spent on the request whose id is `marker` reported (one
    usage per call): the calls of the turn that took its mail in, from that mail through
    the message that ended the turn — or until the turn was shown a later request, which
    the calls from then on are spent on (one turn can take several in: each call counts
    for one request only). None when the transcript does not show that end (not yet
    written, interrupted, unreadable). A subagent's calls in the same file count too."""
    needle = marker.encode("utf-8")
    calls: dict[str, Usage] = {}
    seen = False
    try:
        with open(transcript, "rb") as fh:
            for line in fh:
                if _REQUEST in line and (record := Record.parse_line(line)) is not None \
                        and record.kind in _SHOWN:
                    # (ours last in the text: shown again, or shown for the first time)
                    last = needle in line and line.find(
                        _REQUEST, line.find(_REQUEST, line.rfind(needle)) + 1) < 0
                    if seen and not last:
                        return tuple(calls.values())  # a later request takes over
                    if not seen and needle in line:
                        if not last:
                            return ()  # handed with a later one, in one text: its calls
                        seen = True
                    continue
                if not seen or b'"assistant"' not in line \
                        or (record := Record.parse_line(line)) is None:
                    continue
                message = record.message
                if record.kind != "assistant" or message is None or message.usage is None:
                    continue
                calls[message.id or record.uuid or str(len(calls))] = message.usage
                if not record.sidechain and message.stop_reason not in (None, "tool_use"):
                    return tuple(calls.values())
    except (OSError, ValueError):
        return None
    return None


# How a request's line ends in every rendering of it (messages/envelope.request_line).
_REQUEST = b"(echo it)"

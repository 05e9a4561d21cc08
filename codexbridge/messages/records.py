"""Delivery records: one JSON file per message sent between the agents.

    <state home>/deliveries/<id>.json    0600, written by temp file + rename
                           <id>.text    the message as sent (the courier reads it)
                           <id>.reply   a reply too long for mail, kept whole
                           <id>.token   the sender's CODEX_BRIDGE_TOKEN, when reaching
                                        its app-server took one (`Reach`)

Two roads, one record type each, over what every message has (`Core`: its id, state,
times, conversation and hop, the Codex thread, previews, why, history):

    ToCodex    a message into a Codex thread, which the courier carries: a request (from
               Claude, the human or another Codex), Claude's answer to a Codex request
               (`in_reply_to`), or a notice of codexbridge's own about one (`notice`) —
               with codex's queue entry and turn, the app-server and what reaching it
               takes, the approval policy, where the answer went
    ToClaude   a Codex request to a Claude Code session that expects an answer: the
               mailbox, the session handed it, when it was answered

`Delivery` is either; `DeliveryStore.get(id, ToCodex)` reads one road's only.

A record walks `queued → delivering → awaiting-reply → delivered`, or ends `failed`
(with the reason) or `orphaned` (its carrier died and the message is nowhere: never
resent). Each change is one of `Core`'s transitions, kept in `history` with its time;
`talk status` shows them. Records expire after a TTL (default 7 days,
`CODEX_BRIDGE_DELIVERY_TTL` seconds), swept whenever one is written. Updates are
read-modify-write under a per-record lock, so a courier and a `talk status` recovery
never overwrite each other's change.

On disk a record is flat: `version` (2), `direction`, then its own fields only. A file
with no `version` (written before 2) holds every field of both roads: it reads as its
direction's type, the other road's fields ignored. Flat, so that a courier of the
previous version, still running through an upgrade, reads the new files. `talk status
--json` and MCP show a record with every key either road has (`Core.as_dict`; the other
road's at their defaults), as they did before the split: scripts read those keys.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeAlias, TypedDict, TypeVar, overload

from ..codex.endpoint import Reach
from ..codex.protocol.enums import WireEnum
from ..host.jsonfile import loads_json, nofollow
from ..host.limits import clip, max_hops, text_max
from ..host.locking import FileLock
from ..host.paths import state_dir
from ..host.private import ensure_private_dir, open_state, write_private
from . import envelope

if TYPE_CHECKING:
    from ..claude.files import Usage
    from ..codex.protocol.generated.results import TokenUsageBreakdown
    from ..jsontypes import JsonObject

TTL_ENV = "CODEX_BRIDGE_DELIVERY_TTL"
DEFAULT_TTL = 7 * 24 * 3600.0
PREVIEW_CHARS = 2000
APPROVAL_CHARS = 500  # of what an approval waiting in the TUI asks
VERSION = 2  # of the file: 1 (no `version`) held every field of both roads


class DeliveryState(WireEnum):
    QUEUED = "queued"  # accepted; waiting for the recipient (codex's queue, a mailbox)
    DELIVERING = "delivering"  # being handed over (the turn started / the mail was taken)
    AWAITING_REPLY = "awaiting-reply"  # the recipient has it and is answering
    DELIVERED = "delivered"  # done: the reply came back (or none was asked for)
    FAILED = "failed"  # the turn failed, was interrupted, or codex refused it
    ORPHANED = "orphaned"  # the carrier died and the message is nowhere; never resent

    @property
    def final(self) -> bool:
        return self in (DeliveryState.DELIVERED, DeliveryState.FAILED, DeliveryState.ORPHANED)


class Step(TypedDict, total=False):
    """One change of a record's state, kept in its `history`."""

    state: str  # a DeliveryState value
    at: float
    reason: str | None


@dataclass(frozen=True, slots=True)
class Tokens:
    """What a bridged turn cost, as the model's side reported it (docs/tokens.md): every
    input token (`cached`: the part of them served from the prompt cache) and every output
    token (reasoning included). On disk `{"input": n, "cached": n, "output": n}`."""

    input: int
    cached: int
    output: int

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.input + other.input, self.cached + other.cached,
                      self.output + other.output)

    @property
    def spent(self) -> tuple[int, int, int]:
        return self.input, self.cached, self.output

    @staticmethod
    def of_codex(calls: Sequence[TokenUsageBreakdown]) -> Tokens | None:
        """A Codex turn's tokens: the sum of what codex reported for each of its model
        calls (`thread/tokenUsage/updated`'s `last`); None when it reported none.
        `inputTokens` includes the cached ones (the Responses API's usage)."""
        if not calls:
            return None
        return Tokens(sum(c.input_tokens or 0 for c in calls),
                      sum(c.cached_input_tokens or 0 for c in calls),
                      sum(c.output_tokens or 0 for c in calls))

    @staticmethod
    def of_claude(calls: Sequence[Usage]) -> Tokens | None:
        """Claude's tokens: the sum over its model calls (`answer_usage`), the input
        being what the API counts apart — uncached, read from cache, written to it."""
        if not calls:
            return None
        return Tokens(sum(c.input_tokens + c.cache_read_input_tokens
                          + c.cache_creation_input_tokens for c in calls),
                      sum(c.cache_read_input_tokens for c in calls),
                      sum(c.output_tokens for c in calls))

    @staticmethod
    def parse(value: object) -> Tokens | None:
        """The usage in a file's value (None: none recorded); TypeError when it is not
        three whole numbers >= 0 — a damaged file, as any other field's wrong type."""
        if value is None:
            return None
        # (a key a later version adds is ignored, as a record's unknown keys are)
        if not isinstance(value, dict) or not {"input", "cached", "output"} <= value.keys():
            raise TypeError("tokens is an object of input, cached and output")
        counts = [value[k] for k in ("input", "cached", "output")]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                   for n in counts):
            raise TypeError("tokens are whole numbers >= 0")
        return Tokens(*counts)


def add_tokens(total: Tokens | None, more: Tokens | None) -> Tokens | None:
    """A running total with `more` in it (either may be None: nothing counted yet)."""
    return more if total is None else total if more is None else total + more


class Cost(NamedTuple):
    """What one bridged turn cost, and its conversation's total after it (the reply's
    footer, `talk say`'s line, MCP's `tokens`)."""

    tokens: Tokens
    conversation: str | None = None
    total: Tokens | None = None

    def line(self) -> str:
        return envelope.cost_line(self.tokens.spent, self.conversation,
                                  self.total.input + self.total.output
                                  if self.total is not None else None)

    def as_dict(self) -> JsonObject:
        return {**asdict(self.tokens), "conversation": self.conversation,
                "conversationTotal": asdict(self.total) if self.total is not None else None}


class Direction(WireEnum):
    TO_CODEX = "to-codex"
    TO_CLAUDE = "to-claude"


@dataclass(kw_only=True, slots=True)
class Core:
    """What every delivery has, whichever road it takes — and every change of its state
    (`queue` … `settle`). A road's own fields are set by whoever learns them, before the
    transition that follows."""

    direction: ClassVar[Direction]
    id: str  # the request token, `req_<epoch ms>_<6 chars>`; also codex's clientUserMessageId
    # The Codex thread: where the message goes (to Codex), the one that asked (to Claude).
    thread_id: str
    state: DeliveryState = DeliveryState.QUEUED
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    conversation: str | None = None
    hop: int = 0  # 0 for a reply (a reply never spends a hop)
    max_hops: int = 0
    text_preview: str = ""
    # The answer's start and size: Codex's (to Codex), Claude's (to Claude).
    reply_preview: str = ""
    reply_bytes: int = 0
    reason: str | None = None  # why it failed, was orphaned, or cannot be routed
    # Who sent it (`envelope.who_sends`: an `envelope.Speaker` value) and the Codex thread
    # it came from; None on older records, which only Claude Code made.
    sender: str | None = None
    sender_thread: str | None = None
    warnings: list[str] = field(default_factory=list)
    history: list[Step] = field(default_factory=list)
    # What answering it cost: Codex's turn that took it (to Codex), the tokens Claude
    # spent on its answer (to Claude). None until known, and in older files.
    tokens: Tokens | None = None

    def to_json(self) -> JsonObject:
        """The record as its file holds it (`VERSION`)."""
        data: JsonObject = {"version": VERSION, "direction": self.direction.value}
        data.update(asdict(self))
        data["state"] = self.state.value
        return data

    def as_dict(self) -> JsonObject:
        """The record as `talk status --json` and MCP show it: every key a delivery had
        before the roads were split — the other road's at their defaults."""
        data = self.to_json()
        del data["version"]
        return {**data, **{k: v for k, v in _SHOWN.items() if k not in data}}

    # -- a delivery's life: every change of its state is one of these ----------------

    def queue(self) -> None:
        """Accepted: waiting for the recipient (codex's queue, a mailbox)."""
        self._move(DeliveryState.QUEUED)

    def take(self) -> None:
        """The recipient took it: the turn started, the mail was handed. Never
        backwards: on an idle thread the turn can be seen before codex's queue answer."""
        if self.state is DeliveryState.QUEUED:
            self._move(DeliveryState.DELIVERING)

    def await_reply(self) -> None:
        """The recipient has it and is answering (Codex's first words; Claude handed the
        request)."""
        self._move(DeliveryState.AWAITING_REPLY)

    def deliver(self) -> None:
        """Done: the reply came back, or none was asked for."""
        self._move(DeliveryState.DELIVERED)

    def fail(self, reason: str) -> None:
        """Ended without an answer, and why (the turn failed or was stopped, codex
        refused it, the session ended first, the mail was not stored)."""
        self._move(DeliveryState.FAILED, reason)

    def settle(self, state: DeliveryState, reason: str | None = None) -> None:
        """The courier's end of a delivery in `state` — delivered, failed, orphaned,
        or still awaiting the reply when it stopped following the turn (with why, if
        `reason`; else the record's reason stays)."""
        if state is DeliveryState.QUEUED or state is DeliveryState.DELIVERING:
            raise ValueError(f"a delivery is not settled {state.value}")
        self._move(state, reason)

    def _move(self, state: DeliveryState, reason: str | None = None) -> None:
        """Change state (and the reason, when one is given), noting it in the history."""
        now = time.time()
        if reason is not None:
            self.reason = reason
        if state is not self.state or not self.history:
            self.history.append({"state": state.value, "at": now,
                                 **({"reason": reason} if reason is not None else {})})
        self.state = state
        self.updated_at = now


@dataclass(kw_only=True, slots=True)
class ToCodex(Core):
    """A message into a Codex thread: a request, Claude's answer to one (`in_reply_to`),
    or codexbridge's notice about one (`notice`). The courier carries it to its end."""

    direction: ClassVar[Direction] = Direction.TO_CODEX
    in_reply_to: str | None = None  # the Codex request this answers (or is a notice of)
    # A turn of codexbridge's own telling the asking thread about its request (not an
    # answer: it does not close the request).
    notice: bool = False
    chosen_by: str | None = None  # how the thread was chosen: caller, only-thread, …
    reply_to: str | None = None  # the mailbox Codex's answer goes to
    reply_to_how: str | None = None  # how it was chosen: --reply-to, calling session, …
    submission_id: str | None = None  # codex's queue entry
    turn_id: str | None = None
    courier_pid: int | None = None  # who follows the turn (the caller's, when blocking)
    app_server: str | None = None  # the url the sender used; its courier uses it too
    # ... and what reaching it took, as the sender had it (`Reach`): the courier carries
    # every sender's deliveries in the environment of whoever started it, so it uses
    # these, never its own. The token as a file (serve's 0600 ws-token, or `<id>.token`),
    # the CA a wss:// server is checked against (SSL_CERT_FILE / SSL_CERT_DIR).
    app_server_token_file: str | None = None
    app_server_ca_file: str | None = None
    app_server_ca_dir: str | None = None
    # How the courier answers codex's approvals during the turn, and how long it follows.
    approvals: str = "tui"
    approval_timeout: float = 300.0
    turn_timeout: float = 4 * 3600.0
    reply_mail_id: str | None = None  # the mail that took the answer (or the failure) back
    recovered: bool = False  # the answer was found in the thread after its courier died
    # When the courier lost its app-server, while it waits for it to come back.
    server_lost_at: float | None = None
    # Its sender follows the turn and takes the answer itself (`talk say`, MCP
    # `codex_message_send` wait=true): no courier carries it, nothing is routed as mail.
    blocking: bool = False
    # ... as an MCP task (`mcp/tasks.py`): the answer is the task's result, taken by the
    # asking session (then delivered) — never also mail. The courier watches the task's
    # MCP server (`courier_pid`) meanwhile: should it end first, the courier follows the
    # turn and the answer goes as mail to `reply_to`.
    task: bool = False
    task_status: str | None = None  # what its session was last told (`working`, …)
    # An approval of the turn waits for the human in the Codex TUI (what it asks).
    approval_waiting: str | None = None
    # The thread was not loaded when the message was sent: no Codex TUI is attached, so
    # an approval the turn asks for has nobody to answer it (the asker is told at once).
    unattended: bool = False

    @property
    def needs_courier(self) -> bool:
        """Not yet at its end, and its sender does not follow it itself (a task's
        courier watches its sender)."""
        return not self.state.final and (not self.blocking or self.task)

    def progress(self, what: str, submission_id: str | None, turn_id: str | None,
                 approval: str | None = None) -> None:
        """What codex said of the message (`SayProgress`): its queue entry, our turn's
        start, an approval that waits in the TUI (`approval`) or no longer does. Never
        backwards: on an idle thread the turn (even its first delta) can come before
        the answer to thread/queue/add."""
        self.submission_id = submission_id or self.submission_id
        if what == "started" and turn_id:
            self.turn_id = turn_id
            self.take()
        elif what == "approval":  # (codex's words, shown to people and clients: bounded)
            self.approval_waiting = preview(approval, APPROVAL_CHARS) if approval else None

    def reply_ready(self, reply: str, size: int) -> None:
        """A task's answer came: it waits for the asking session to take it (`deliver`
        then), or for the courier, should that session end first."""
        self.reply_preview, self.reply_bytes = preview(reply), size
        self.approval_waiting = None
        self.take()
        self.await_reply()


@dataclass(kw_only=True, slots=True)
class ToClaude(Core):
    """A Codex request to a Claude Code session that expects an answer (`inbox push
    --expect-reply`, MCP `claude_message_send` expectReply). `answers.py` sends the
    answer back as a `ToCodex` reply; the courier watches the session meanwhile."""

    direction: ClassVar[Direction] = Direction.TO_CLAUDE
    mailbox: str  # the mailbox the mail went to
    # The session handed the request, and when its answer was taken (once).
    session_id: str | None = None
    claude_pid: int | None = None
    answered_at: float | None = None
    transcript: str | None = None  # the answering session's: what its answer cost

    @property
    def needs_courier(self) -> bool:
        """A running session was handed it and has not answered (that session is
        watched). Mail that waits for a Claude session to start needs nobody."""
        return (not self.state.final and self.claude_pid is not None
                and self.answered_at is None)


Delivery: TypeAlias = ToCodex | ToClaude
R = TypeVar("R", bound=Core)
KINDS: dict[Direction, type[ToCodex] | type[ToClaude]] = {
    Direction.TO_CODEX: ToCodex, Direction.TO_CLAUDE: ToClaude}


def _shown() -> JsonObject:
    """Every road's own field at its default (a required one: None), for `as_dict`."""
    core = {f.name for f in fields(Core)}
    out: JsonObject = {}
    for kind in KINDS.values():
        for f in fields(kind):
            if f.name not in core:
                out[f.name] = (f.default if f.default is not MISSING else
                               f.default_factory() if f.default_factory is not MISSING
                               else None)
    return out


_SHOWN = _shown()


def from_json(data: object) -> Delivery:
    """The record in `data` (a file of either version, or `as_dict`'s view); KeyError /
    TypeError / ValueError when it is not one (DeliveryStore.read then calls the file
    damaged)."""
    if not isinstance(data, dict):  # a damaged file: was AttributeError on .items()
        raise TypeError(f"a delivery record is an object, not {type(data).__name__}")
    values = dict(data)
    # (A file of version 1 has none; a later version's is read for the fields known here,
    # as unknown keys always were.)
    version = values.pop("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise TypeError(f"version {version!r} is not a record version")
    kind = KINDS[Direction(values.pop("direction"))]
    known = {f.name: f for f in fields(kind)}
    values = {k: v for k, v in values.items() if k in known}
    values["state"] = DeliveryState.parse(values.pop("state", None)) or DeliveryState.QUEUED
    values["tokens"] = Tokens.parse(values.pop("tokens", None))
    # A field of the wrong type broke its users later, far from the file: a str
    # created_at crashed the sort in recent(), a non-list history move(), a NaN time
    # `talk status`.
    for name, value in values.items():
        if not _fits(value, str(known[name].type)):
            raise TypeError(f"{name} is not a {known[name].type}")
        if name.endswith("_pid") and value is not None and not 0 < value < 2**31:
            raise ValueError(f"{name} {value} is not a process id")  # os.kill: OverflowError
    return kind(**values)


def envelope_of(record: ToCodex) -> envelope.Envelope:
    """The header the peer and the human see above the message: who sent it, as recorded
    (`envelope.who_sends`), its conversation's true hop n/N, where the answer goes."""
    asker = envelope.Sender(envelope.Speaker.parse(record.sender)
                            or envelope.Speaker.CLAUDE_CODE).asker
    where = (f"this call ({asker} waits for it)" if record.blocking else
             f'mailbox "{record.reply_to}" ({asker})'
             if record.reply_to and not record.in_reply_to else None)
    label = envelope.NOTICE if record.notice and record.in_reply_to else \
        envelope.label_of(record.sender)
    return envelope.Envelope(label, record.id,
                             record.conversation or "", record.hop, record.max_hops, where,
                             record.in_reply_to)


def _fits(value: object, annotation: str) -> bool:
    """Whether a JSON value fits a record field's (string) annotation."""
    if value is None:
        return annotation.endswith(" | None")
    base = annotation.removesuffix(" | None")
    if base == "float":
        try:
            return isinstance(value, (int, float)) and math.isfinite(value)
        except OverflowError:  # an int too large for a float
            return False
    if base == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if base == "list[Step]":
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    if base == "int" and isinstance(value, bool):
        return False
    kinds: dict[str, type] = {"str": str, "int": int, "bool": bool}
    return isinstance(value, kinds.get(base, object))  # (state, tokens: parsed above)


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class Damaged(NamedTuple):
    """A record file that is there but cannot be used, and why."""

    id: str
    path: str
    reason: str

    @property
    def fix(self) -> str:
        return f"move it aside (mv {self.path} {self.path}.damaged) or delete it"


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return f"{type(exc).__name__}: {exc}"


class DeliveryStore:
    def __init__(self, root: Path | None = None, *, ttl: float | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root) if root is not None else state_dir(create=False) / "deliveries"
        self.ttl = ttl if ttl is not None else _ttl_from_env()
        self.clock = clock

    def path(self, delivery_id: str) -> Path:
        if (not delivery_id or "/" in delivery_id or delivery_id.startswith(".")
                or "\x00" in delivery_id):  # (NUL: open() raised ValueError on the lock)
            raise ValueError(f"not a delivery id: {delivery_id!r}")
        return self.root / f"{delivery_id}.json"

    def text_path(self, delivery_id: str) -> Path:
        """Where the whole message of a delivery is kept (its record holds a preview)."""
        return self.root / f"{delivery_id}.text"

    def note_reach(self, record: ToCodex, reach: Reach) -> None:
        """Put `reach` into `record` (not saved here). A token from the sender's
        environment is kept in `<id>.token` (0600): the record itself, shown by `talk
        status` and to the agents, holds only its path."""
        record.app_server = reach.url
        record.app_server_token_file = reach.token_file
        if reach.token is not None and reach.token_file is None:
            path = self.root / f"{record.id}.token"
            write_private(path, reach.token.encode("utf-8"), durable=True)
            record.app_server_token_file = str(path)
        record.app_server_ca_file, record.app_server_ca_dir = reach.ca_file, reach.ca_dir

    def _lock(self, delivery_id: str) -> FileLock:
        ensure_private_dir(self.root)
        return FileLock(str(self.root / f".{delivery_id}.lock"))

    def save(self, record: Delivery) -> None:
        ensure_private_dir(self.root)
        text = json.dumps(record.to_json(), ensure_ascii=False, indent=2)
        try:
            data = text.encode()
        except UnicodeEncodeError:  # a reply holding a lone surrogate (a frame's `\\ud800`
            # escape) was a traceback in the courier: it is kept as that escape
            data = json.dumps(record.to_json(), indent=2).encode("ascii")
        write_private(self.path(record.id), data, durable=True)
        self._mark(record)
        self.sweep()

    def queue(self, record: ToCodex, text: str) -> None:
        """Save a new message to Codex, queued, with its whole text beside it. The text
        before the record: a record is what the courier acts on (a blocking one's too,
        should its caller die), and one whose text a kill left unwritten could never be
        carried (a text alone is swept)."""
        record.queue()
        write_private(self.text_path(record.id), text.encode("utf-8"), durable=True)
        self.save(record)

    @property
    def pending_dir(self) -> Path:
        """One empty file per unfinished delivery: what the courier still owes someone.
        The watcher and the Stop hook look here (a listdir, no record parsing) to restart
        a courier that died with work left."""
        return self.root / ".pending"

    def _mark(self, record: Delivery) -> None:
        marker = self.pending_dir / record.id
        if not record.needs_courier:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(marker)
            return
        if not marker.exists():
            ensure_private_dir(self.pending_dir)
            os.close(open_state(str(marker), os.O_WRONLY | os.O_CREAT))

    def pending(self) -> list[str]:
        """Ids of the deliveries a courier still has to carry or watch (their markers)."""
        try:
            return sorted(n for n in os.listdir(self.pending_dir) if not n.startswith("."))
        except FileNotFoundError:
            return []

    def unfinished(self) -> list[Delivery]:
        """Every unfinished record, oldest first; a marker whose record is final or gone
        is cleared on the way."""
        out = []
        for delivery_id in self.pending():
            record = self.get(delivery_id)
            if record is None or not record.needs_courier:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.pending_dir / delivery_id)
                continue
            out.append(record)
        out.sort(key=lambda r: r.created_at)
        return out

    @overload
    def get(self, delivery_id: str) -> Delivery | None: ...
    @overload
    def get(self, delivery_id: str, kind: type[R]) -> R | None: ...

    def get(self, delivery_id: str, kind: type[Core] = Core) -> Core | None:
        """The record (of road `kind`: another road's is None, as a missing one is)."""
        found = self.read(delivery_id)
        return found if isinstance(found, kind) else None

    def read(self, delivery_id: str) -> Delivery | Damaged | None:
        """The record; Damaged (with why) when its file is there but cannot be used;
        None when there is none (or `delivery_id` is not an id at all)."""
        try:
            path = self.path(delivery_id)
        except ValueError:
            return None
        try:
            with open(path, encoding="utf-8", opener=nofollow) as fh:
                data = loads_json(fh.read())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            return Damaged(delivery_id, str(path), _why(exc))
        try:
            record = from_json(data)
        except (KeyError, TypeError, ValueError) as exc:
            return Damaged(delivery_id, str(path), f"not a delivery record ({_why(exc)})")
        # A record under another id's name (a copied file) would be listed twice and
        # saved under its own name by update(): it is not this id's record.
        if record.id != delivery_id:
            return Damaged(delivery_id, str(path), f"it holds record {record.id}")
        return record

    @overload
    def update(self, delivery_id: str, change: Callable[[Delivery], None]
               ) -> Delivery | None: ...
    @overload
    def update(self, delivery_id: str, change: Callable[[R], None], kind: type[R]
               ) -> R | None: ...

    def update(self, delivery_id: str, change: Callable[[Any], None],
               kind: type[Core] = Core) -> Core | None:
        """Read, `change(record)`, write — under the record's lock. None if it is gone or
        of another road than `kind` (or `delivery_id` is not an id: like get(), without
        making a lock file for it)."""
        try:
            self.path(delivery_id)
        except ValueError:  # "/../x" made its lock file outside root; "a/b" FileNotFoundError
            return None
        with self._lock(delivery_id):
            record = self.read(delivery_id)
            if not isinstance(record, kind):
                return None
            change(record)
            self.save(record)
            return record

    def recent(self, limit: int = 20) -> list[Delivery]:
        """The newest records first."""
        records = [r for r in self._all() if isinstance(r, Core)]
        records.sort(key=lambda r: r.created_at, reverse=True)
        return records[:limit]

    def damaged(self) -> list[Damaged]:
        """Record files that cannot be read: shown by `talk status` and doctor, never
        skipped in silence (a damaged record once read as "no deliveries yet")."""
        return [r for r in self._all() if isinstance(r, Damaged)]

    def _all(self) -> Iterator[Delivery | Damaged | None]:
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return
        for name in names:
            if name.endswith(".json") and not name.startswith("."):
                yield self.read(name[: -len(".json")])

    def sweep(self) -> int:
        """Delete records older than the TTL; returns how many went."""
        cutoff = self.clock() - self.ttl
        gone = 0
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return 0
        for entry in entries:
            # the record, the text it carried, a long reply kept whole, the token that
            # reached its app-server, their locks
            if not entry.name.endswith((".json", ".text", ".reply", ".token", ".lock")):
                continue
            try:
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    gone += 1
            except FileNotFoundError:
                continue
        return gone


def _ttl_from_env() -> float:
    raw = os.environ.get(TTL_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_TTL
    except ValueError:
        return DEFAULT_TTL
    return value if value > 0 else DEFAULT_TTL


# --- Claude's answer to a Codex request -------------------------------------------------

def new_reply(store: DeliveryStore, thread_id: str, request: str, conversation: str | None,
              text: str, *, reach: Reach, reply_to: str | None,
              notice: bool = False) -> ToCodex:
    """Record Claude's answer to Codex's `request` as a delivery into the asking thread
    (no hop spent; nothing routed back), for the courier to queue and follow, through the
    app-server `reach` names. `reply_to`: the answering session's mailbox, told if the
    answer cannot be delivered."""
    text = clip(text, text_max(os.environ), "in the Claude Code session's transcript")
    record = ToCodex(id=envelope.request_token(), conversation=conversation
                     or envelope.conversation_id(), hop=0,
                     max_hops=max_hops(dict(os.environ)), in_reply_to=request,
                     thread_id=thread_id, chosen_by="asking-thread",
                     text_preview=preview(text), reply_to=reply_to,
                     reply_to_how="the answering session" if reply_to else None,
                     notice=notice, sender=envelope.Speaker.CLAUDE_CODE.value)
    store.note_reach(record, reach)
    store.queue(record, text)
    return record


def close_request(store: DeliveryStore, request: str, reply: ToCodex | None,
                  failure: str | None = None) -> None:
    """Claude's answer to `request` reached the asking thread (a turn ran with it), or
    did not — then the request says so, and where the answer is kept."""
    # The answer reached the asking thread once a turn started with it: it is in the
    # thread's history, whatever became of that turn (a daemon killed mid-turn leaves it
    # `interrupted`; the answering session is told that on its own record).
    ran = reply is not None and reply.turn_id is not None and failure is None
    why = failure or (reply.reason if reply is not None else None) or "unknown"

    def change(r: Delivery) -> None:
        if r.state.final:
            return
        if ran:
            r.deliver()
        else:
            kept = store.text_path(reply.id) if reply is not None else None
            r.fail(f"the answer did not reach thread "
                   f"{r.thread_id}: {why}" + (f" (the answer is kept in {kept})" if kept
                                               else ""))

    store.update(request, change)

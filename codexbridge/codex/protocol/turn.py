"""Following one turn of one thread through the notification stream.

Events for the thread can arrive before `turn/start` returns the turn id (the server
starts streaming at once). They are buffered — bounded at 64 KiB of delta text, with the
dropped bytes counted — and replayed once the id is known. Structural events
(`item/completed`, `turn/completed`, server requests) are never dropped: losing one would
hang the turn, while a dropped delta is recovered from its `item/completed` text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .envelopes import Notification, RequestId, ServerRequest
from .generated import methods as m
from .generated.enums import ThreadItemType
from .generated.results import (
    AgentMessageDeltaNotification,
    ErrorNotification,
    ItemStartedNotification,
    ServerRequestResolvedNotification,
    ThreadItem,
    ThreadTokenUsageUpdatedNotification,
    TokenUsageBreakdown,
    Turn,
    TurnCompletedNotification,
)
from .wire import Made

if TYPE_CHECKING:
    from ...jsontypes import JsonObject, JsonValue

BUFFER_LIMIT = 64 * 1024
# What one turn may keep of its reply (streamed text and final messages): an unbounded
# reply must not grow the caller's memory without limit.
CAPTURE_LIMIT = 10 * 1024 * 1024


# The events are read-only records (codex/protocol/wire.py Made), not NamedTuples: `talk say`
# imports this module, and six NamedTuples cost it ~1.8 ms to define (measured).
_set = object.__setattr__


class Delta(Made):
    """Reply text of our turn as it streams."""

    __slots__ = ("item_id", "text")
    item_id: str
    text: str

    def __init__(self, item_id: str, text: str) -> None:
        # Written out: one is made per streamed delta, and Made's loop costs 3× as much.
        _set(self, "item_id", item_id)
        _set(self, "text", text)


class AgentMessage(Made):
    """A completed agent message of our turn (its final text)."""

    __slots__ = ("item_id", "text")
    item_id: str
    text: str


class Approval(Made):
    """A server request about our turn, to answer by policy."""

    __slots__ = ("request",)
    request: ServerRequest


class Resolved(Made):
    """A server request was answered (by the TUI, or by us)."""

    __slots__ = ("request_id",)
    request_id: RequestId


class Warning(Made):
    """An error codex reports without ending the turn."""

    __slots__ = ("message",)
    message: str


class Added(Made):
    """A user message added to our turn by someone else — the human pressing Enter in the
    Codex TUI while our turn runs (codex steers the running turn: a second userMessage
    item inside it, with the TUI's own clientId; measured on codex 0.169.0 and 0.171.0),
    or another client's `turn/steer`. The turn's final message answers the turn as
    steered, not our message alone."""

    __slots__ = ("client_id", "item_id", "text")
    item_id: str
    text: str
    client_id: str | None


class Completed(Made):
    """Our turn ended: its status, error (as sent) and the turn object."""

    __slots__ = ("error", "status", "turn")
    status: str
    error: JsonObject | None
    turn: JsonObject


TurnEvent = Delta | AgentMessage | Approval | Resolved | Warning | Added | Completed


# Every notification and server request is routed by two fields, whatever its method:
# the thread (`threadId`; legacy v1 approvals name it `conversationId`) and the turn
# (`turnId`, or the `turn` object's id). Read by shape (a mapping pattern ignores the
# fields it does not name); a field of another type reads as absent.


def thread_of(params: JsonObject) -> JsonValue:
    match params:
        case {"threadId": thread}:
            return thread
        case {"conversationId": thread}:
            return thread
    return None


def _turn_id_of(params: JsonObject) -> str | None:
    match params:
        case {"turnId": str(turn_id)}:
            return turn_id
        case {"turn": {"id": str(turn_id)}}:
            return turn_id
    return None


def _item(env: Notification) -> ThreadItem | None:
    """The item of an `item/started` or `item/completed` (both carry it alike)."""
    return ItemStartedNotification.from_wire(env.params).item


def _delta_size(env: Notification | ServerRequest) -> int:
    """The bytes of streamed text a buffered envelope holds (0: not a delta)."""
    if isinstance(env, Notification) and env.method == m.ITEM_AGENT_MESSAGE_DELTA:
        return utf8_len(AgentMessageDeltaNotification.from_wire(env.params).delta)
    return 0


def user_message_text(item: ThreadItem) -> str:
    """The words of a userMessage item (`content`: text parts; anything else — an image,
    a mention — named by its type)."""
    return "\n".join(part.text or "" if part.type == "text" else f"[{part.type or 'input'}]"
                     for part in item.content)


class TurnTracker:
    """Feed it every notification and server request; it returns this turn's events.

    The turn is known by its id (`bind`, once `turn/start` answers) or — for a message
    sent through codex's queue — by the `clientUserMessageId` it was sent with, which
    codex echoes as `clientId` on the turn's userMessage item (docs/protocol-notes.md,
    "Turns"): `client_id` makes the tracker bind itself when that item starts. Until
    then events are buffered; a turn whose userMessage carries another clientId, or that
    completes first, is someone else's, and its buffered events are dropped.
    """

    def __init__(self, thread_id: str, buffer_limit: int = BUFFER_LIMIT,
                 capture_limit: int = CAPTURE_LIMIT, client_id: str | None = None) -> None:
        self.thread_id = thread_id
        self.buffer_limit = buffer_limit
        self.capture_limit = capture_limit
        self.client_id = client_id
        # Our own message's clientId, when the turn is bound otherwise than by it (a
        # steered message, a `turn/start`): how our user message is told from others.
        self.own_client_id = client_id
        self.turn_id: str | None = None
        self.dropped_bytes = 0
        self.truncated = False
        self.reply_bytes = 0  # full size of the final message, even when cut
        self._kept_bytes = 0
        self.reply_parts: dict[str, list[str]] = {}
        self.messages: list[AgentMessage] = []
        self.completed: Completed | None = None
        # User messages of our turn that are not our own (the human steering it).
        self.added: list[Added] = []
        # What each model call of our turn cost (`thread/tokenUsage/updated`'s `last`;
        # codex sends one after each call, before turn/completed — docs/tokens.md).
        self.usage: list[TokenUsageBreakdown] = []
        # Our own message's `item/started` came here: this connection was subscribed
        # before the turn's first model call, so `usage` is all of them.
        self.saw_start = False
        self._user_items: set[str] = set()  # userMessage items of our turn seen
        self._pending: list[Notification | ServerRequest] = []
        self._pending_bytes = 0

    def feed(self, env: Notification | ServerRequest) -> list[TurnEvent]:
        if thread_of(env.params) != self.thread_id:
            return []
        if self.turn_id is None:
            if self.client_id is not None:
                return self._find_ours(env)
            self._buffer(env)
            return []
        return self._interpret(env)

    def _find_ours(self, env: Notification | ServerRequest) -> list[TurnEvent]:
        # A userMessage `item/started`, and its clientId: how a queued turn is found.
        item = (_item(env) if isinstance(env, Notification) and env.method == m.ITEM_STARTED
                else None)
        turn_id = _turn_id_of(env.params)
        if item is not None and item.type == ThreadItemType.USER_MESSAGE and turn_id is not None:
            if item.client_id == self.client_id:
                self._buffer(env)
                return self.bind(turn_id)
            self._forget(turn_id)  # another client's (or the human's) turn
            return []
        if (isinstance(env, Notification) and env.method == m.TURN_COMPLETED
                and turn_id is not None):
            self._forget(turn_id)  # ended before any userMessage of ours: not ours
            return []
        self._buffer(env)
        return []

    def _forget(self, turn_id: str) -> None:
        kept = [e for e in self._pending if _turn_id_of(e.params) != turn_id]
        if len(kept) != len(self._pending):
            self._pending = kept
            self._pending_bytes = sum(_delta_size(e) for e in kept)

    def bind(self, turn_id: str) -> list[TurnEvent]:
        """The turn id is known: replay what was buffered for it."""
        self.turn_id = turn_id
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        events: list[TurnEvent] = []
        for env in pending:
            events.extend(self._interpret(env))
        return events

    @property
    def reply(self) -> str:
        """The final agent message (streamed text if it never completed)."""
        if self.messages:
            return self.messages[-1].text
        if self.reply_parts:
            return "".join(list(self.reply_parts.values())[-1])
        return ""

    def _user_message(self, item: ThreadItem) -> list[TurnEvent]:
        """A userMessage of our turn (each item is seen twice, started and completed).
        Ours is the one with our clientId — or, when we follow a turn by its id alone,
        the first; any other was added to the turn while it ran (docs/conversations.md,
        "The human steers, interrupts, quits")."""
        item_id, client_id = item.id or "", item.client_id
        text = user_message_text(item)
        if item_id in self._user_items or any(
                a.client_id == client_id and a.text == text for a in self.added):
            return []  # (listed by the thread, then notified: the same message)
        self._user_items.add(item_id)
        ours = (client_id == self.own_client_id if self.own_client_id is not None
                else len(self._user_items) == 1)
        if ours:
            return []
        added = Added(item_id, text, client_id)
        self.added.append(added)
        return [added]

    def note_user_items(self, items: list[JsonObject]) -> list[TurnEvent]:
        """The turn's userMessage items as the thread lists them — for a follower that
        joined after they were sent (a courier that started late, or took over): the
        words added to the turn are known all the same."""
        return [e for item in items for e in self._user_message(ThreadItem.from_wire(item))]

    def _buffer(self, env: Notification | ServerRequest) -> None:
        size = _delta_size(env)
        if size:
            if self._pending_bytes + size > self.buffer_limit:
                self.dropped_bytes += size
                return
            self._pending_bytes += size
        self._pending.append(env)

    def _interpret(self, env: Notification | ServerRequest) -> list[TurnEvent]:
        params = env.params
        if isinstance(env, ServerRequest):
            tid = _turn_id_of(params)
            return [Approval(env)] if tid in (None, self.turn_id) else []
        method = env.method
        if method == m.SERVER_REQUEST_RESOLVED:
            rid = ServerRequestResolvedNotification.from_wire(params).request_id
            return [Resolved(rid)] if isinstance(rid, (int, str)) else []
        if _turn_id_of(params) != self.turn_id:
            return []
        if method == m.ITEM_AGENT_MESSAGE_DELTA:
            delta = AgentMessageDeltaNotification.from_wire(params)
            item_id, text = delta.item_id, delta.delta
            size = utf8_len(text)
            if self._kept_bytes + size <= self.capture_limit:
                self._kept_bytes += size
                self.reply_parts.setdefault(item_id, []).append(text)
            else:
                self.truncated = True  # still streamed to the caller, just not kept
            return [Delta(item_id, text)]
        if method in (m.ITEM_STARTED, m.ITEM_COMPLETED):
            item = _item(env)
            if item is not None and item.type == ThreadItemType.USER_MESSAGE:
                if (method == m.ITEM_STARTED and self.own_client_id is not None
                        and item.client_id == self.own_client_id):
                    self.saw_start = True
                return self._user_message(item)
            if (item is not None and method == m.ITEM_COMPLETED
                    and item.type == ThreadItemType.AGENT_MESSAGE):
                return [self._agent_message(item)]
            return []
        if method == m.THREAD_TOKEN_USAGE_UPDATED:
            usage = ThreadTokenUsageUpdatedNotification.from_wire(params).token_usage
            if usage is not None and usage.last is not None:
                self.usage.append(usage.last)
            return []
        if method == m.ERROR:
            error = ErrorNotification.from_wire(params)
            if error.will_retry:
                return []
            return [Warning(error.error.message or "error" if error.error is not None else "error")]
        if method == m.TURN_COMPLETED:
            # A garbled turn still ends it.
            turn = TurnCompletedNotification.from_wire(params).turn or Turn()
            done = Completed(turn.status or "completed",
                             turn.error.raw if turn.error is not None else None, turn.raw)
            self.completed = done
            return [done]
        return []

    def _agent_message(self, item: ThreadItem) -> AgentMessage:
        item_id = item.id or ""
        # The completed text supersedes the item's streamed parts.
        for part in self.reply_parts.pop(item_id, []):
            self._kept_bytes -= utf8_len(part)
        text = item.text or ""
        self.reply_bytes = utf8_len(text)
        if self.reply_bytes > self.capture_limit:
            text = utf8_head(text, self.capture_limit)
            self.truncated = True
        msg = AgentMessage(item_id, text)
        self.messages.append(msg)
        return msg


_CHUNK = 1 << 20


def utf8_len(text: str) -> int:
    """`len(text.encode())` without a second copy of a 100 MB message (chunk by chunk).

    A lone surrogate (a `\\ud800` escape in a frame's JSON) counts as its three bytes
    rather than failing the encode."""
    if text.isascii():
        return len(text)
    return sum(len(text[i:i + _CHUNK].encode("utf-8", "surrogatepass"))
               for i in range(0, len(text), _CHUNK))


def utf8_head(text: str, limit: int) -> str:
    """The longest prefix of `text` whose UTF-8 form fits in `limit` bytes."""
    head = text[:limit]  # never more characters than bytes allowed
    return head.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", errors="ignore")


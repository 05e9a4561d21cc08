"""Conversations: which one a request belongs to, and its hop budget — a loop guard that
two agents share.

    <state home>/conversations/<id>.json        {id, created_at, updated_at, max_hops, hops,
                                                 tokens: its bridged turns' running total}
    <state home>/conversations/settings.json    {max_hops}: `codexbridge talk budget N`

Every *request* from one agent to the other spends one hop of its conversation, counted
here on disk, under a lock, so A→B→A→B across processes shares one budget. A reply
spends nothing: it closes a hop a request already paid for. Over budget, a send is
refused before anything is delivered.

The guard is there to stop runaway loops, not conversations, so it has two parts:

* **the budget** — a ceiling, high enough for a real review to go back and forth
  (`DEFAULT_MAX_HOPS`, 40: a twelve-exchange review uses under a third of it);
* **no progress** — a request whose words, normalised (`digest`: case, spacing,
  punctuation and request/conversation/thread ids ignored), were already sent
  `REPEATS` times in the conversation is refused (LoopDetectedError): two agents
  bouncing the same message back and forth are caught by what they do, long before
  the ceiling.

Where the budget comes from, read at each request under the conversation's lock — so a
change reaches the sessions already running, which never re-read their environment:

    1. `<state>/conversations/settings.json` (`codexbridge talk budget N`): every
       conversation, running ones included, from its next request;
    2. else, for a conversation a request starts: the sender's `CODEX_BRIDGE_MAX_HOPS`
       (default 40) — recorded in the conversation, and from then on its budget;
    3. else the budget the conversation recorded when it started.

The `hop n/N` an envelope shows is what was recorded here (`Hop`), never the sender's
own setting.

Which conversation a request belongs to: the one named (`--conversation`, or
`CODEX_BRIDGE_CONVERSATION` in the environment of what codexbridge starts), else the
one the sending agent is handling right now — the peer message that started the
running Codex turn, or the mail the Claude session was last handed (`handling.py`) —
else a new one. So an agent answering a peer by asking back stays in the same budget,
while a person starting a fresh exchange gets a fresh one (`current_conversation`):

    1. the one named: `--conversation` / the tool argument
    2. `CODEX_BRIDGE_CONVERSATION` — set in the environment of what codexbridge starts
    3. the one the sending agent is handling right now:
       * a command codex runs (it has `CODEX_THREAD_ID`) inside a turn that a bridge
         message started: that delivery's conversation;
       * a command Claude runs (it has `CLAUDE_CODE_SESSION_ID`) while its session
         handles peer mail: that mail's conversation (`handling.py`);
    4. none: the request starts a new conversation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..errors import HopLimitError, LoopDetectedError, UsageError
from ..host.jsonfile import loads_json
from ..host.limits import DEFAULT_MAX_HOPS, MAX_HOPS_ENV, max_hops
from ..host.locking import FileLock
from ..host.paths import state_dir
from ..host.private import ensure_private_dir, write_private
from . import handling
from .envelope import conversation_id
from .records import (
    Core,
    Cost,
    DeliveryState,
    DeliveryStore,
    ToClaude,
    ToCodex,
    Tokens,
    add_tokens,
)
from .routing import SESSION_ENV, THREAD_ENV

if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue

CONVERSATION_ENV = "CODEX_BRIDGE_CONVERSATION"
TTL = 7 * 24 * 3600.0
SETTINGS = "settings.json"
# A request whose words were already sent this many times in the conversation is a loop:
# twice may be a fair "still failing — look again"; a third identical one is no progress.
REPEATS = 2
# What every refusal says about going on: it can be done from the very turn that was
# refused (no restart, no environment to change).
NEW_CONVERSATION = ("send it again as a new conversation (`talk send --new-conversation`, "
                    "`inbox push --new-conversation`; MCP tools: newConversation: true)")
RAISE_BUDGET = ("`codexbridge talk budget N` raises the budget of every conversation, "
                "running ones included, from their next request")


class Hop(NamedTuple):
    """One hop spent: the conversation, this hop's number, and the budget the
    conversation has (what `hop n/N` shows)."""

    conversation: str
    n: int
    max_hops: int


class Setting(NamedTuple):
    value: int
    source: str  # where it was read: the settings file, $CODEX_BRIDGE_MAX_HOPS, default


CONVERSATION_VERSION = 1  # <id>.json's format (files without one are version 1 too)
_HOP_FIELDS = ("direction", "delivery", "thread", "mailbox", "reply_to", "digest")


@dataclass
class HopEntry:
    """One request a conversation carried: who asked whom, which delivery, where the
    reply goes, and its words' digest (what the loop guard compares)."""

    n: int
    at: float
    direction: str | None = None  # `claude→codex`, `codex→claude`, `human→codex`, …
    delivery: str | None = None
    thread: str | None = None
    mailbox: str | None = None
    reply_to: str | None = None
    digest: str | None = None

    def as_dict(self) -> JsonObject:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @staticmethod
    def parse(data: JsonValue, n: int) -> HopEntry:
        """One hop of a file; ValueError when it is not one. `n` numbers an old entry
        written without its number."""
        if not isinstance(data, dict):
            raise ValueError("a hop is an object")
        number, at = data.get("n", n), data.get("at", 0.0)
        if not isinstance(number, int) or isinstance(number, bool):
            raise ValueError("a hop's n is a whole number")
        if not isinstance(at, (int, float)) or isinstance(at, bool):
            raise ValueError("a hop's time is a number")
        texts = {k: data.get(k) for k in _HOP_FIELDS}
        if not all(v is None or isinstance(v, str) for v in texts.values()):
            raise ValueError("a hop's fields are strings")
        return HopEntry(number, float(at), **{k: v for k, v in texts.items()
                                              if isinstance(v, str)})


@dataclass
class Conversation:
    """`<state>/conversations/<id>.json`: the hops a conversation spent and its budget
    (recorded when it started; None in a file from before budgets were kept), and what
    its bridged turns cost so far (None: nothing counted yet, or an older file)."""

    id: str
    created_at: float
    updated_at: float
    max_hops: int | None
    hops: list[HopEntry] = field(default_factory=list)
    tokens: Tokens | None = None

    def as_dict(self) -> JsonObject:
        return {"version": CONVERSATION_VERSION, "id": self.id,
                "created_at": self.created_at, "updated_at": self.updated_at,
                "max_hops": self.max_hops, "hops": [h.as_dict() for h in self.hops],
                "tokens": asdict(self.tokens) if self.tokens is not None else None}

    @staticmethod
    def parse(conv: str, data: JsonValue) -> Conversation:
        """The record (ValueError when it is not one). Tolerant of older files: no
        version, no times, no budget, a hop without its number; the id is the file's
        own name (one a hand edit made unwritable was a crash writing it back)."""
        if not isinstance(data, dict):
            raise ValueError("a conversation is an object")
        version = data.get("version", CONVERSATION_VERSION)
        if not isinstance(version, int) or version > CONVERSATION_VERSION:
            raise ValueError(f"format version {version!r} is newer than this codexbridge")
        hops, limit = data.get("hops", []), data.get("max_hops")
        if not isinstance(hops, list):
            raise ValueError("hops is a list")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise ValueError("max_hops is a whole number")
        times = [data.get(k) for k in ("created_at", "updated_at")]
        created, updated = (float(t) if isinstance(t, (int, float))
                            and not isinstance(t, bool) else 0.0 for t in times)
        try:
            tokens = Tokens.parse(data["tokens"]) if "tokens" in data else None
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        return Conversation(conv, created, updated, limit,
                            [HopEntry.parse(h, i + 1) for i, h in enumerate(hops)], tokens)


# the ids codexbridge and codex put in messages (a request token echoed back, a
# conversation, a thread or turn uuid): they differ on every round of a loop
_IDS = re.compile(r"\b(?:req|conv|cb)_[0-9a-z_]+\b|\b[0-9a-f]{8}-[0-9a-f-]{27,}\b")
_NOT_WORDS = re.compile(r"[\W_]+")


def digest(words: str) -> str:
    """The normalised text's hash: two messages that differ only in case, spacing,
    punctuation or the ids codexbridge puts in them are the same message. Numbers
    stay: "test 1 fails" and "test 2 fails" are progress."""
    norm = _NOT_WORDS.sub(" ", _IDS.sub(" ", words.casefold())).strip()
    return hashlib.sha256(norm.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def valid_id(conv: str) -> str:
    # ASCII only: str.isalnum() takes any script's letters and digits, and 59 four-byte
    # ones made file names past NAME_MAX (an OSError out of spend, not this UsageError).
    tail = conv[5:]
    if (not conv.startswith("conv_") or not tail.isascii() or not tail.isalnum()
            or len(conv) > 64):
        raise UsageError(f"{conv!r} is not a conversation id (conv_ and letters/digits)")
    return conv


class Conversations:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else state_dir(create=False) / "conversations"

    def path(self, conv: str) -> Path:
        return self.root / f"{valid_id(conv)}.json"

    def ids(self) -> list[str]:
        """Every conversation that has a file here (readable or not)."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted(n[:-len(".json")] for n in names
                      if n.startswith("conv_") and n.endswith(".json"))

    def get(self, conv: str) -> Conversation | None:
        """The conversation's record; None when there is none or it cannot be read."""
        try:
            with open(self.path(conv), encoding="utf-8") as fh:
                return Conversation.parse(conv, loads_json(fh.read()))
        except (OSError, ValueError, RecursionError):
            return None

    def _readable(self, conv: str) -> Conversation | None:
        """The conversation's file; a damaged one is kept aside and the request refused
        — a budget we cannot read must not silently start again from zero."""
        path = self.path(conv)
        if not path.exists():
            return None
        found = self.get(conv)
        if found is not None:
            return found
        stamp = int(time.time())
        aside = path.with_name(f"{path.name}.damaged-{stamp}")
        n = 1
        while aside.exists():  # a second damaged file in the same second replaced the first
            n += 1
            aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
        os.replace(path, aside)
        # _sweep goes by mtime, which the rename keeps: a file last written over a TTL ago
        # was deleted by the very next send, right after we said it was kept.
        os.utime(aside)
        raise HopLimitError(
            f"conversation {conv}'s hop record was unreadable (kept as {aside}); nothing "
            "was sent — start a new conversation (leave out --conversation)",
            details={"conversation": conv, "kept": str(aside)})

    @property
    def settings_path(self) -> Path:
        return self.root / SETTINGS

    def setting(self) -> int | None:
        """The budget `codexbridge talk budget N` set for every conversation, or None.
        A file that does not hold a whole number >= 1 (only a hand edit makes one) is
        ignored: the guard then works as if it had never been written."""
        try:
            data = loads_json(self.settings_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        value = data.get("max_hops") if isinstance(data, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) \
            and value >= 1 else None

    def set_setting(self, value: int | None) -> None:
        """Write (None: remove) the budget every conversation uses from its next request."""
        ensure_private_dir(self.root)
        if value is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.settings_path)
            return
        write_private(self.settings_path, json.dumps(
            {"max_hops": value, "updated_at": time.time()}).encode("utf-8"))

    def budget_for_new(self, env: Mapping[str, str]) -> Setting:
        """The budget a conversation started now gets, and where it comes from."""
        value = self.setting()
        if value is not None:
            return Setting(value, str(self.settings_path))
        if env.get(MAX_HOPS_ENV, "").strip():
            return Setting(max_hops(dict(env)), f"${MAX_HOPS_ENV}")
        return Setting(DEFAULT_MAX_HOPS, "the default")

    def spend_hop(self, conv: str | None, hop: Mapping[str, str | None], limit: int,
                  words: str | None = None) -> Hop:
        """Spend one hop of `conv` (a new conversation when None) for the request `hop`
        describes, whose text is `words`; `limit` is the sender's own setting (used only
        when this starts the conversation). Nothing is spent when it is refused:
        HopLimitError when the budget is used up, LoopDetectedError when `words` repeat
        a request already sent `REPEATS` times in it."""
        conv = valid_id(conv) if conv else conversation_id()
        ensure_private_dir(self.root)
        with FileLock(str(self.root / f".{conv}.lock")):
            now = time.time()
            record = self._readable(conv) or Conversation(conv, now, now, None)
            hops = record.hops
            budget = self.setting() or record.max_hops or limit
            if len(hops) >= budget:
                trail = " → ".join(f"{h.direction}" for h in hops)
                raise HopLimitError(
                    f"conversation {conv} has used its {budget} hops ({trail}); nothing was "
                    f"sent. Answer in your own session, or {NEW_CONVERSATION}. "
                    f"{RAISE_BUDGET}",
                    details={"conversation": conv, "hops": [h.as_dict() for h in hops],
                             "maxHops": budget})
            fields = {k: v for k, v in hop.items() if k in _HOP_FIELDS}
            entry = HopEntry(len(hops) + 1, now, **fields)
            if words is not None:
                entry.digest = digest(words)
                _refuse_repeat(conv, hops, entry)
            record.hops.append(entry)
            record.max_hops, record.updated_at = budget, now
            self._write(record)
        self._sweep()
        return Hop(conv, len(record.hops), budget)

    def _write(self, record: Conversation) -> None:
        write_private(self.path(record.id), json.dumps(record.as_dict(), ensure_ascii=False,
                                                       indent=2).encode("utf-8"))

    def add_tokens(self, conv: str, tokens: Tokens) -> Tokens | None:
        """Count a bridged turn's `tokens` into `conv`'s running total, under its lock;
        the new total (None when the conversation has no readable record — its
        requests were never counted here, and a total of one turn would mislead)."""
        if not self.path(conv).exists():
            return None
        with FileLock(str(self.root / f".{conv}.lock")):
            record = self.get(conv)
            if record is None:
                return None
            record.tokens = add_tokens(record.tokens, tokens)
            self._write(record)
            return record.tokens

    def _sweep(self) -> None:
        cutoff = time.time() - TTL
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return
        for entry in entries:
            if entry.name == SETTINGS:  # the human's setting, not a conversation
                continue
            try:
                if entry.is_file() and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
            except FileNotFoundError:
                continue


def count_tokens(store: DeliveryStore, delivery_id: str, tokens: Tokens | None,
                 conversations: Conversations | None = None) -> Cost | None:
    """Note what answering a delivery cost on its record and in its conversation's
    running total — once: a second count of the same delivery (a courier that took over,
    a recovery) changes nothing. The cost with the total after it; None without tokens."""
    if tokens is None:
        return None
    fresh: list[Core] = []

    def note(r: Core) -> None:
        if r.tokens is None:
            r.tokens = tokens
            fresh.append(r)

    record = store.update(delivery_id, note)
    conv = record.conversation if record is not None else None
    if conv is None:
        return Cost(tokens)
    convs = conversations or Conversations()
    if fresh:
        total = convs.add_tokens(conv, tokens)
    else:
        found = convs.get(conv)
        total = found.tokens if found is not None else None
    return Cost(tokens, conv, total)


def cost_of(record: Core, conversations: Conversations | None = None) -> Cost | None:
    """What a delivery cost, with its conversation's total now (`talk status`)."""
    if record.tokens is None:
        return None
    conv, found = record.conversation, None
    if conv:
        with contextlib.suppress(UsageError):  # (an id a hand edit made: no total)
            found = (conversations or Conversations()).get(conv)
    return Cost(record.tokens, conv, found.tokens if found is not None else None)


def _refuse_repeat(conv: str, hops: list[HopEntry], entry: HopEntry) -> None:
    """A request the conversation already carried `REPEATS` times is a loop, not an
    exchange: refused before it is recorded, whichever side sends it."""
    same = [h for h in hops if h.digest == entry.digest]
    if len(same) < REPEATS:
        return
    seen = ", ".join(str(h.n) for h in same)
    raise LoopDetectedError(
        f"conversation {conv}: this request repeats, word for word (case, spacing, "
        f"punctuation and ids aside), what hops {seen} already asked; the exchange is "
        "going round in a loop, so nothing was sent. Answer in your own session instead — or, if "
        "something has changed, say what in the message",
        details={"conversation": conv, "repeats": [h.n for h in same],
                 "digest": entry.digest})


# --- which conversation a request belongs to --------------------------------------------

IN_FLIGHT = (DeliveryState.QUEUED, DeliveryState.DELIVERING, DeliveryState.AWAITING_REPLY)


def current_conversation(explicit: str | None, env: Mapping[str, str],
                         store: DeliveryStore | None = None, *,
                         new: bool = False) -> str | None:
    """`new`: the sender asks for a new conversation (`--new-conversation`, MCP
    `newConversation`) — how a turn refused over budget goes on by itself."""
    if new:
        if explicit:
            raise UsageError("--new-conversation and --conversation contradict each "
                             "other: pass one")
        return None
    if explicit:
        return valid_id(explicit)
    if env.get(CONVERSATION_ENV):
        return valid_id(env[CONVERSATION_ENV])
    thread = env.get(THREAD_ENV)
    if thread:
        ours = [r for r in (store or DeliveryStore()).recent(200)
                if isinstance(r, ToCodex) and r.thread_id == thread
                and r.state in IN_FLIGHT and r.conversation]
        running = [r for r in ours if r.state is not DeliveryState.QUEUED]
        # The courier may not have seen its turn start yet (the sender queued it a moment
        # ago): then the message codex runs first — the oldest in its queue. Its sender
        # may not even have noted codex's submission id yet: codex can start the turn and
        # call this tool before a loaded machine schedules the sender again (a twelve-hop
        # review under load began a second conversation that way). At worst an unrelated
        # turn shares that budget: stricter, never looser.
        waiting = sorted(ours, key=lambda r: r.created_at)
        if running or waiting:
            return (running or waiting)[0].conversation
    session = env.get(SESSION_ENV)
    if session:
        marker = handling.current_marker(session)
        if marker is not None and marker.conversation is not None:
            return marker.conversation
        # Mail sent live to this session that nobody has confirmed taken in yet (a frame
        # queued behind the running turn is taken in at its next tool result, and the
        # pusher has stopped watching by then; the marker waits for the next look): the
        # turn asking now may be the one that took it in. A twelve-hop review on a loaded
        # machine began a new conversation here. Stricter, never looser, as above.
        given = sorted((r for r in (store or DeliveryStore()).recent(200)
                        if isinstance(r, ToClaude) and r.session_id == session
                        and not r.state.final and r.answered_at is None and r.conversation),
                       key=lambda r: r.created_at)
        if given:
            return given[0].conversation
    return None

"""Conversations: which one a request belongs to, and its hop budget — a loop guard that
two agents share.

    <state home>/conversations/<id>.json    {id, created_at, updated_at, max_hops, hops}

Every *request* from one agent to the other spends one hop of its conversation — at
most `CODEX_BRIDGE_MAX_HOPS` (default 4) — counted here on disk, under a lock, so
A→B→A→B across processes shares one budget. A reply spends nothing: it closes a hop a
request already paid for. Over budget, a send is refused before anything is delivered.

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

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HopLimitError, UsageError
from ..host.jsonfile import loads_json
from ..host.locking import FileLock
from ..host.paths import state_dir
from ..host.private import ensure_private_dir, write_private
from ..jsontypes import objs
from . import handling
from .envelope import conversation_id
from .limits import MAX_HOPS_ENV
from .records import DeliveryState, DeliveryStore, Direction
from .routing import SESSION_ENV, THREAD_ENV

if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue

CONVERSATION_ENV = "CODEX_BRIDGE_CONVERSATION"
TTL = 7 * 24 * 3600.0


def valid_id(conv: str) -> str:
    # ASCII only: str.isalnum() takes any script's letters and digits, and 59 four-byte
    # ones made file names past NAME_MAX (an OSError out of spend, not this UsageError).
    tail = conv[5:]
    if (not conv.startswith("conv_") or not tail.isascii() or not tail.isalnum()
            or len(conv) > 64):
        raise UsageError(f"{conv!r} is not a conversation id (conv_ and letters/digits)")
    return conv


def _usable(data: JsonObject) -> bool:
    """Whether spend() can use (and write back) this record: hops a list of objects,
    max_hops a whole number, every string writable — else one was a crash in spend
    (AttributeError in the trail, ValueError in int(), UnicodeEncodeError on save)."""
    hops, limit = data.get("hops", []), data.get("max_hops")
    if not isinstance(hops, list) or not all(isinstance(h, dict) for h in hops):
        return False
    if limit is not None and not isinstance(limit, int):
        return False
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):
        return False
    return True


class Conversations:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else state_dir(create=False) / "conversations"

    def path(self, conv: str) -> Path:
        return self.root / f"{valid_id(conv)}.json"

    def get(self, conv: str) -> JsonObject | None:
        try:
            with open(self.path(conv), encoding="utf-8") as fh:
                data: JsonValue = loads_json(fh.read())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _readable(self, conv: str) -> JsonObject | None:
        """The conversation's file; a damaged one is kept aside and the request refused
        — a budget we cannot read must not silently start again from zero."""
        path = self.path(conv)
        if not path.exists():
            return None
        data = self.get(conv)
        if data is not None and _usable(data):
            return data
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

    def spend(self, conv: str | None, hop: JsonObject, limit: int) -> tuple[str, int]:
        """Spend one hop of `conv` (a new conversation when None) for the request `hop`
        describes; returns (conversation id, this hop's number). HopLimitError — and
        nothing spent — when the budget is used up."""
        conv = valid_id(conv) if conv else conversation_id()
        ensure_private_dir(self.root)
        with FileLock(str(self.root / f".{conv}.lock")):
            data = self._readable(conv) or {"id": conv, "created_at": time.time(),
                                            "hops": []}
            hops = objs(data.get("hops"))  # (all objects: _usable)
            recorded = data.get("max_hops")
            budget = int(recorded) if isinstance(recorded, int) and recorded else limit
            if len(hops) >= budget:
                trail = " → ".join(f"{h.get('direction')}" for h in hops)
                raise HopLimitError(
                    f"conversation {conv} has used its {budget} hops ({trail}); nothing was "
                    f"sent. Answer in your own session, or start a new conversation "
                    f"(raise {MAX_HOPS_ENV} for longer exchanges)",
                    details={"conversation": conv, "hops": hops, "maxHops": budget})
            number = len(hops) + 1
            data.update({"hops": [*hops, {**hop, "n": number, "at": time.time()}],
                         "max_hops": budget, "updated_at": time.time()})
            write_private(self.path(conv), json.dumps(data, ensure_ascii=False,
                                                      indent=2).encode("utf-8"))
        self._sweep()
        return conv, number

    def _sweep(self) -> None:
        cutoff = time.time() - TTL
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return
        for entry in entries:
            try:
                if entry.is_file() and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
            except FileNotFoundError:
                continue


# --- which conversation a request belongs to --------------------------------------------

IN_FLIGHT = (DeliveryState.QUEUED, DeliveryState.DELIVERING, DeliveryState.AWAITING_REPLY)


def current_conversation(explicit: str | None, env: Mapping[str, str],
                         store: DeliveryStore | None = None) -> str | None:
    if explicit:
        return valid_id(explicit)
    if env.get(CONVERSATION_ENV):
        return valid_id(env[CONVERSATION_ENV])
    thread = env.get(THREAD_ENV)
    if thread:
        ours = [r for r in (store or DeliveryStore()).recent(200)
                if r.direction is Direction.TO_CODEX and r.thread_id == thread
                and r.state in IN_FLIGHT and r.conversation]
        running = [r for r in ours if r.state is not DeliveryState.QUEUED]
        # The courier may not have seen its turn start yet (the sender queued it a moment
        # ago): then the message codex runs first — the oldest in its queue. At worst an
        # unrelated turn shares that budget: stricter, never looser.
        waiting = sorted((r for r in ours if r.submission_id), key=lambda r: r.created_at)
        if running or waiting:
            return (running or waiting)[0].conversation
    session = env.get(SESSION_ENV)
    if session:
        marker = handling.read(session)
        conv = marker.get("conversation") if marker else None
        if isinstance(conv, str):
            return conv
    return None

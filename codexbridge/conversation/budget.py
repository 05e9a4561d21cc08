"""Conversations and their hop budget: a loop guard that two agents share.

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
while a person starting a fresh exchange gets a fresh one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..errors import HopLimitError, UsageError
from ..host.jsonfile import loads_json
from ..host.locking import FileLock
from ..host.paths import state_dir
from ..host.private import ensure_private_dir, write_private
from .envelope import conversation_id

MAX_HOPS_ENV = "CODEX_BRIDGE_MAX_HOPS"
CONVERSATION_ENV = "CODEX_BRIDGE_CONVERSATION"
DEFAULT_MAX_HOPS = 4
TTL = 7 * 24 * 3600.0


def max_hops(env: dict[str, str] | None = None) -> int:
    raw = (os.environ if env is None else env).get(MAX_HOPS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_HOPS
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{MAX_HOPS_ENV}={raw!r} is not a whole number") from None
    if value < 1:
        raise UsageError(f"{MAX_HOPS_ENV} must be at least 1, got {raw!r}")
    return value


def valid_id(conv: str) -> str:
    # ASCII only: str.isalnum() takes any script's letters and digits, and 59 four-byte
    # ones made file names past NAME_MAX (an OSError out of spend, not this UsageError).
    tail = conv[5:]
    if (not conv.startswith("conv_") or not tail.isascii() or not tail.isalnum()
            or len(conv) > 64):
        raise UsageError(f"{conv!r} is not a conversation id (conv_ and letters/digits)")
    return conv


def _usable(data: dict[str, Any]) -> bool:
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
        self.root = Path(root) if root is not None else state_dir() / "conversations"

    def path(self, conv: str) -> Path:
        return self.root / f"{valid_id(conv)}.json"

    def get(self, conv: str) -> dict[str, Any] | None:
        try:
            with open(self.path(conv), encoding="utf-8") as fh:
                data = loads_json(fh.read())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _readable(self, conv: str) -> dict[str, Any] | None:
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

    def spend(self, conv: str | None, hop: dict[str, Any], limit: int) -> tuple[str, int]:
        """Spend one hop of `conv` (a new conversation when None) for the request `hop`
        describes; returns (conversation id, this hop's number). HopLimitError — and
        nothing spent — when the budget is used up."""
        conv = valid_id(conv) if conv else conversation_id()
        ensure_private_dir(self.root)
        with FileLock(str(self.root / f".{conv}.lock")):
            data = self._readable(conv) or {"id": conv, "created_at": time.time(),
                                            "hops": []}
            hops: list[dict[str, Any]] = list(data.get("hops") or [])
            budget = int(data.get("max_hops") or limit)
            if len(hops) >= budget:
                trail = " → ".join(f"{h.get('direction')}" for h in hops)
                raise HopLimitError(
                    f"conversation {conv} has used its {budget} hops ({trail}); nothing was "
                    f"sent. Answer in your own session, or start a new conversation "
                    f"(raise {MAX_HOPS_ENV} for longer exchanges)",
                    details={"conversation": conv, "hops": hops, "maxHops": budget})
            number = len(hops) + 1
            hops.append({**hop, "n": number, "at": time.time()})
            data.update({"hops": hops, "max_hops": budget, "updated_at": time.time()})
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

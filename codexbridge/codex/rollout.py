"""What one turn cost, read back from codex's own record of the thread.

codex tells a turn's usage (`thread/tokenUsage/updated`) only to clients subscribed while
it runs, and no request says it afterwards (measured on 0.169.0 and 0.171.0). A courier
that joins a thread after its turn began — a `talk send` whose short turn ended before
the courier was up, a courier that took a delivery over — would count part of the turn,
or none of it. codex writes every model call into the thread's rollout file (the
`path` `thread/resume` gives), as a `token_usage_record` line with the turn's id, and
ends the turn with a `task_complete` or `turn_aborted` line (measured on both versions:
docs/tokens.md). This module sums those lines for one turn — nothing else of the file
is read, and it is never written.

The file is another program's internal format and its path comes from the app-server:
it is read only when it is a regular file of ours that no one else can write (a path
of a remote app-server names nothing here, and a file another user put there is not
believed), without following a symlink; a line it cannot read counts for nothing.
"""

from __future__ import annotations

import asyncio
import os
import stat

from ..host.jsonfile import loads_json
from ..host.private import NOFOLLOW
from ..jsontypes import JsonRecord
from .protocol.generated.results import TokenUsageBreakdown

__all__ = ["END_WAIT", "turn_usage"]

# codex writes the rollout through a background writer: the turn's end line can follow
# turn/completed by a moment. Waited for, bounded; a turn whose end never shows is not
# counted rather than counted in part.
END_WAIT = 3.0
LOOK_EVERY = 0.05
END_EVENTS = frozenset({"task_complete", "turn_aborted"})


class _Usage(JsonRecord):
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0


class _Payload(JsonRecord, wire={"kind": "type"}):
    kind: str | None = None
    turn_id: str | None = None
    response_id: str | None = None
    usage: _Usage | None = None


class _Line(JsonRecord, wire={"kind": "type"}):
    kind: str | None = None
    payload: _Payload | None = None


def _open_ours(path: str) -> int | None:
    """A read descriptor on `path` if it is a regular file we own that only we may
    write; None otherwise (a FIFO cannot hold the open: O_NONBLOCK)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW)
    except OSError:
        return None
    st = os.fstat(fd)
    if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid()
            or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        os.close(fd)
        return None
    return fd


class _Turn:
    """One turn's lines, read from one open file; each look reads only what codex
    appended since the last (a long session's rollout is tens of MB)."""

    def __init__(self, fd: int, turn_id: str) -> None:
        self._fh = os.fdopen(fd, "rb")
        self.turn_id = turn_id
        self._needle = turn_id.encode()
        self._partial = b""  # a line codex has not finished writing
        self.calls: dict[str, TokenUsageBreakdown] = {}
        self.started = False  # a line of the turn is written (its `task_started` first)
        self.ended = False

    def look(self) -> None:
        for raw in self._fh:
            if not raw.endswith(b"\n"):  # (the rest comes at the next look)
                self._partial += raw
                continue
            raw, self._partial = self._partial + raw, b""
            if self._needle in raw:
                self._line(raw)

    def _line(self, raw: bytes) -> None:
        try:
            data = loads_json(raw.decode("utf-8", "replace"))
        except ValueError:
            return
        line = _Line.read(data) if isinstance(data, dict) else None
        payload = line.payload if line is not None else None
        if line is None or payload is None or payload.turn_id != self.turn_id:
            return
        self.started = True
        if line.kind == "token_usage_record" and payload.usage is not None:
            u = payload.usage
            # one line a model call; its response id keeps a repeated line once
            self.calls[payload.response_id or str(len(self.calls))] = TokenUsageBreakdown(
                input_tokens=u.input_tokens, cached_input_tokens=u.cached_input_tokens,
                output_tokens=u.output_tokens)
        elif payload.kind in END_EVENTS:
            self.ended = True

    def close(self) -> None:
        self._fh.close()


async def turn_usage(path: str | None, turn_id: str, *,
                     wait: float = END_WAIT) -> tuple[TokenUsageBreakdown, ...] | None:
    """Every model call of an ended turn, from the rollout at `path`; None when there is
    no file of ours to read, it has no line of the turn (a codex that writes another
    format: no reply waits on it), or the turn's end is not in it within `wait` s."""
    fd = _open_ours(path) if path else None
    if fd is None:
        return None
    turn = _Turn(fd, turn_id)
    loop = asyncio.get_running_loop()
    end = loop.time() + wait
    try:
        while True:
            await asyncio.to_thread(turn.look)
            if not turn.started:
                return None
            if turn.ended:
                return tuple(turn.calls.values())
            if loop.time() >= end:
                return None
            await asyncio.sleep(LOOK_EVERY)
    finally:
        turn.close()

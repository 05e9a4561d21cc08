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
from typing import NamedTuple

from ..host.jsonfile import loads_json
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
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid()
            or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        os.close(fd)
        return None
    return fd


class _Found(NamedTuple):
    calls: tuple[TokenUsageBreakdown, ...]
    started: bool  # a line of the turn is written (its `task_started` first)
    ended: bool


def _read(path: str, turn_id: str) -> _Found | None:
    """The turn's model calls as the file has them now, and whether its start and its
    end are written; None when the file is not one to read."""
    fd = _open_ours(path)
    if fd is None:
        return None
    needle = turn_id.encode()
    calls: dict[str, TokenUsageBreakdown] = {}
    started = ended = False
    with os.fdopen(fd, "rb") as fh:
        for raw in fh:
            if needle not in raw:
                continue
            try:
                data = loads_json(raw.decode("utf-8", "replace"))
            except ValueError:
                continue
            line = _Line.read(data) if isinstance(data, dict) else None
            payload = line.payload if line is not None else None
            if payload is None or payload.turn_id != turn_id:
                continue
            started = True
            if line is not None and line.kind == "token_usage_record" and payload.usage:
                u = payload.usage
                # one line a model call; its response id keeps a repeated line once
                calls[payload.response_id or str(len(calls))] = TokenUsageBreakdown(
                    input_tokens=u.input_tokens, cached_input_tokens=u.cached_input_tokens,
                    output_tokens=u.output_tokens)
            elif payload.kind in END_EVENTS:
                ended = True
    return _Found(tuple(calls.values()), started, ended)


async def turn_usage(path: str | None, turn_id: str, *,
                     wait: float = END_WAIT) -> tuple[TokenUsageBreakdown, ...] | None:
    """Every model call of an ended turn, from the rollout at `path`; None when there is
    no file of ours to read, it has no line of the turn (a codex that writes another
    format: no reply waits on it), or the turn's end is not in it within `wait` s."""
    if not path:
        return None
    loop = asyncio.get_running_loop()
    end = loop.time() + wait
    while True:
        found = await asyncio.to_thread(_read, path, turn_id)
        if found is None or not found.started:
            return None
        if found.ended:
            return found.calls
        if loop.time() >= end:
            return None
        await asyncio.sleep(LOOK_EVERY)

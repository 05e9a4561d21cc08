"""Which thread does the person mean? Pure selection over thread records.

The TUI's own thread has `threadSource:"user"` and `ephemeral:false`; after each user
message the TUI also opens an ephemeral `thread_title` thread, which is never a target.
`source` and `originator` cannot tell who made a thread (docs/protocol-notes.md, "Which
thread"), so they are not used. Names match exactly — never partially, never guessed.
"""

from __future__ import annotations

import re

from ...errors import AmbiguousThreadError, NoThreadError
from .generated.enums import ThreadStatusType
from .generated.results import Thread, ThreadStatus
from .wire import one, status_label, status_object

__all__ = ["OPEN_TUI", "ThreadInfo", "in_project", "is_busy", "looks_like_thread_id",
           "resolve", "status_label", "status_of", "visible"]

# A thread as the code reads it: the generated `Thread` (`thread/read`, `thread/resume`),
# whose views (`codex/protocol/wire.py` ThreadViews) say who it is for and how it stands.
ThreadInfo = Thread

_THREAD_ID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                        r"[0-9a-fA-F]{12}$")


# A thread's status as sent (`{"type": "active", "activeFlags": [...]}`, or a bare type
# string), read as a Thread's is (generated/results.py); None when it is not one.
status_of = one(ThreadStatus, status_object)


def is_busy(status: object) -> bool:
    """A turn is running (or waiting on an approval): the status as sent (a
    `thread/status/changed`) is `active`. A read thread says it as `Thread.busy`."""
    read = status_of(status)
    return read is not None and read.state is ThreadStatusType.ACTIVE


def looks_like_thread_id(selector: str) -> bool:
    """Thread ids are UUIDs; a name shaped like one is vanishingly unlikely."""
    return bool(_THREAD_ID.match(selector))


def visible(threads: list[ThreadInfo], include_all: bool) -> list[ThreadInfo]:
    return list(threads) if include_all else [t for t in threads if t.is_user_thread]


OPEN_TUI = ("open the Codex TUI with `codex -C DIR` (it attaches to codex's own daemon; on a "
            "`codexbridge serve`: `codex --remote <url> -C DIR`)")


def resolve(threads: list[ThreadInfo], selector: str | None,
            cwd: str | None = None, *, open_tui: str = OPEN_TUI,
            here: str | None = None) -> ThreadInfo:
    """The one thread `selector` (an id or an exact name) means, among user threads.

    With no selector: the only user thread (narrowed by `cwd` when given). With several,
    the one of the project the caller works in — `here`, its directory (a Claude session
    in ~/web talks to the TUI of ~/web, never to ~/api's). Raises NoThreadError or
    AmbiguousThreadError carrying the candidates. `open_tui` says how to open the TUI on
    this server (host/daemon.py `open_tui`).
    """
    users = [t for t in threads if t.is_user_thread]
    if selector:
        by_id = [t for t in threads if t.id == selector]
        if by_id:
            return by_id[0]
        named = [t for t in users if t.name == selector]
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            raise AmbiguousThreadError(
                f"{len(named)} threads are named {selector!r}; pass --thread with an id",
                [t.as_dict() for t in named])
        raise NoThreadError(
            f"no loaded thread has the id or the exact name {selector!r}"
            + _candidates_hint(users),
            details={"candidates": [t.as_dict() for t in users]})
    pool = [t for t in users if t.cwd == cwd] if cwd else users
    if len(pool) > 1 and here and not cwd:
        mine = in_project(pool, here)
        if len(mine) == 1:
            return mine[0]
    if len(pool) == 1:
        return pool[0]
    if not pool:
        where = f" with cwd {cwd}" if cwd else ""
        raise NoThreadError(
            f"no user thread{where} is loaded in the app-server: {open_tui} and send it "
            "one message first"
            + (_candidates_hint(users) if cwd else ""),
            details={"candidates": [t.as_dict() for t in users]})
    raise AmbiguousThreadError(
        f"{len(pool)} user threads are loaded; choose one with --thread ID|NAME:\n"
        + _listed(pool),
        [t.as_dict() for t in pool])


def in_project(threads: list[ThreadInfo], here: str) -> list[ThreadInfo]:
    """The threads whose directory is `here` or holds it (the deepest such project)."""
    def holds(t: ThreadInfo) -> int:
        if not t.cwd:
            return -1
        top = t.cwd.rstrip("/")
        return len(top) if here == t.cwd or here.startswith(top + "/") else -1

    best = max((holds(t) for t in threads), default=-1)
    return [t for t in threads if best >= 0 and holds(t) == best]


def _candidates_hint(users: list[ThreadInfo]) -> str:
    return "; candidates:\n" + _listed(users) if users else ""


def _listed(threads: list[ThreadInfo]) -> str:
    return "\n".join(f"  {t.id}  name={t.name or '-'}  cwd={t.cwd or '-'}" for t in threads)

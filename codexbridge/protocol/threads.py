"""Which thread does the person mean? Pure selection over thread records.

The TUI's own thread has `threadSource:"user"` and `ephemeral:false`; after each user
message the TUI also opens an ephemeral `thread_title` thread, which is never a target.
`source` and `originator` cannot tell who made a thread (docs/protocol-notes.md, "Which
thread"), so they are not used. Names match exactly — never partially, never guessed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import AmbiguousThreadError, NoThreadError
from .generated.enums import ThreadStatusType

if TYPE_CHECKING:  # pydantic stays off `talk say`'s start-up path
    from .generated.models import Thread

_THREAD_ID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                        r"[0-9a-fA-F]{12}$")


def status_of(status: Any) -> tuple[ThreadStatusType | None, tuple[str, ...]]:
    """`{"type": "active", "activeFlags": [...]}` → (ACTIVE, flags); a bare string is
    taken as the type; anything unknown (a newer codex's status) → None."""
    if isinstance(status, str):
        return ThreadStatusType.parse(status), ()
    if not isinstance(status, dict):
        return None, ()
    flags = status.get("activeFlags")
    return (ThreadStatusType.parse(status.get("type")),
            tuple(str(f) for f in flags) if isinstance(flags, list) else ())


def is_busy(status: Any) -> bool:
    """A turn is running (or waiting on an approval): the thread is `active`."""
    return status_of(status)[0] is ThreadStatusType.ACTIVE


def status_label(kind: str | None, flags: tuple[str, ...] = ()) -> str:
    """`idle`, `active(waitingOnApproval)`, `unknown`…"""
    label = kind or "unknown"
    return label + ("(" + ",".join(flags) + ")" if flags else "")


def looks_like_thread_id(selector: str) -> bool:
    """Thread ids are UUIDs; a name shaped like one is vanishingly unlikely."""
    return bool(_THREAD_ID.match(selector))


class ThreadInfo(NamedTuple):
    id: str
    name: str | None
    cwd: str | None
    # The status type as sent — kept even when this codexbridge does not know it, so a
    # newer codex's status still prints as what it is — and the active flags.
    status_type: str | None
    flags: tuple[str, ...]
    ephemeral: bool
    thread_source: str | None
    preview: str
    updated_at: int | None

    @staticmethod
    def from_thread(thread: dict[str, Any]) -> ThreadInfo:
        """From a raw Thread dict — the lean path `talk say` takes (no pydantic).

        Gives the same record as `from_model(Thread.model_validate(thread))`.
        """
        raw = thread.get("status")
        kind = raw.get("type") if isinstance(raw, dict) else raw
        flags = raw.get("activeFlags") if isinstance(raw, dict) else None
        updated = thread.get("updatedAt")
        tid = thread.get("id")
        return ThreadInfo(
            id="" if tid is None else str(tid),
            name=thread.get("name") if isinstance(thread.get("name"), str) else None,
            cwd=thread.get("cwd") if isinstance(thread.get("cwd"), str) else None,
            status_type=kind if isinstance(kind, str) and kind else None,
            # Like the model: a flag that is not a string is dropped, not stringified.
            flags=(tuple(f for f in flags if isinstance(f, str)) if isinstance(flags, list)
                   else ()),
            ephemeral=bool(thread.get("ephemeral", False)),
            thread_source=(thread.get("threadSource")
                           if isinstance(thread.get("threadSource"), str) else None),
            preview=str(thread.get("preview") or ""),
            updated_at=(updated if isinstance(updated, int) and not isinstance(updated, bool)
                        else None),
        )

    @staticmethod
    def from_model(thread: Thread) -> ThreadInfo:
        """From a parsed `protocol.generated.models.Thread` (what `talk list` uses)."""
        status = thread.status
        return ThreadInfo(id=thread.id, name=thread.name, cwd=thread.cwd,
                          status_type=status.type if status is not None else None,
                          flags=tuple(status.active_flags) if status is not None else (),
                          ephemeral=thread.ephemeral, thread_source=thread.thread_source,
                          preview=thread.preview, updated_at=thread.updated_at)

    @property
    def state(self) -> ThreadStatusType | None:
        return ThreadStatusType.parse(self.status_type)

    @property
    def status(self) -> str:
        """As `talk list` prints it: `idle`, `active(waitingOnApproval)`, `unknown`…"""
        return status_label(self.status_type, self.flags)

    @property
    def busy(self) -> bool:
        return self.state is ThreadStatusType.ACTIVE

    @property
    def is_user_thread(self) -> bool:
        """A thread a person talks in: not ephemeral, not a title/sub-agent helper."""
        return not self.ephemeral and self.thread_source in (None, "user")

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "cwd": self.cwd, "status": self.status,
                "ephemeral": self.ephemeral, "threadSource": self.thread_source,
                "preview": self.preview}


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
        + "\n".join(f"  {t.id}  name={t.name or '-'}  cwd={t.cwd or '-'}" for t in pool),
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
    if not users:
        return ""
    return "; candidates:\n" + "\n".join(
        f"  {t.id}  name={t.name or '-'}  cwd={t.cwd or '-'}" for t in users)

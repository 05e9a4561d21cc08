"""The project's handoff ledger: `<state home>/handoff/<project key>.json`.

References and watermarks only — transcripts stay where the vendors keep them:

    {"version": 1, "project": "/abs/dir",
     "agents":  {"claude:<sid>": {kind, id, label, where, mailbox?, seen}, "codex:<tid>": …},
     "knownBy": {"<target>": {"<source>": "<opaque mark>"}},
     "git":     {"<target>": {"sha", "at"}},
     "pending": {"<target>": {id, via, stage, marks, git, delta, full, created, …}},
     "history": [{id, target, sources, via, state, at, chars, messages, cut, delta, full}]}

`knownBy[target][source]` is how far into the source's own stream material has been
packed for that target. Marks are committed only once the delta is delivered
(`commit`); until then the handoff is a `pending` record, so one that never arrived is
built again from the old marks next time, and one that did is never sent twice.
Written atomically (temp + rename, 0600) under an exclusive lock; a file from a newer
codexbridge, or one that is not JSON, is refused and left as it is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from ..errors import HandoffStateError
from ..host.jsonfile import loads_json
from ..host.locking import FileLock
from ..host.private import ensure_private_dir, write_private
from ..inbox.clock import iso_utc
from .paths import handoff_root, lock_path, state_path

VERSION = 1
HISTORY_MAX = 50

State = dict[str, Any]


def empty(project: str) -> State:
    return {"version": VERSION, "project": project, "agents": {}, "knownBy": {}, "git": {},
            "pending": {}, "history": []}


def parse(raw: bytes, path: str, project: str) -> State:
    """The state in `raw`; HandoffStateError for anything this build must not use."""
    try:
        data = loads_json(raw.decode("utf-8"))
    except ValueError as exc:  # (UnicodeDecodeError is one)
        raise HandoffStateError(f"{path} is not readable JSON ({exc}); it holds the handoff "
                                "watermarks, so it is left as it is: move it aside to start "
                                "over", details={"path": path}) from None
    if not isinstance(data, dict):
        raise HandoffStateError(f"{path} does not hold a JSON object; move it aside to start "
                                "over", details={"path": path})
    version = data.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise HandoffStateError(
            f"{path} is version {version!r}, newer than this codexbridge understands "
            f"({VERSION}); upgrade codexbridge (nothing was changed)",
            details={"path": path, "version": version, "supported": VERSION})
    state = empty(project)
    for key in state:
        if key in data and isinstance(data[key], type(state[key])):
            state[key] = data[key]
    state["version"] = VERSION
    return state


def load(key: str, project: str) -> State:
    path = state_path(key)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return empty(project)
    except OSError as exc:
        raise HandoffStateError(f"cannot read {path}: {exc.strerror or exc}",
                                details={"path": path}) from exc
    return parse(raw, path, project)


def save(key: str, state: State) -> None:
    data = json.dumps(state, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    try:
        raw = data.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (read from a `\\ud800` escape) was a
        # traceback on every save: it is written back as the escape it was read as
        raw = (json.dumps(state, indent=2, sort_keys=True) + "\n").encode("ascii")
    write_private(state_path(key), raw, durable=True)


@contextmanager
def locked(key: str, project: str) -> Iterator[State]:
    """Read-modify-write the state under the project's lock; written when the block
    ends without an exception."""
    ensure_private_dir(handoff_root())
    with FileLock(lock_path(key)):
        state = load(key, project)
        before = json.dumps(state, sort_keys=True)
        yield state
        if json.dumps(state, sort_keys=True) != before:
            save(key, state)


# --- reading and changing a state (pure) ---------------------------------------------

def known_by(state: State, target: str) -> dict[str, str]:
    marks = state["knownBy"].get(target)
    return dict(marks) if isinstance(marks, dict) else {}


def checkpoint(state: State, target: str) -> str | None:
    git = state["git"].get(target)
    sha = git.get("sha") if isinstance(git, dict) else None
    return sha if isinstance(sha, str) else None


def link(state: State, key: str, record: dict[str, Any]) -> None:
    """Remember an agent of this project (a source later handoffs read)."""
    agents = state["agents"]
    old = agents.get(key) if isinstance(agents.get(key), dict) else {}
    agents[key] = {**old, **{k: v for k, v in record.items() if v is not None},
                   "seen": iso_utc()}


def remember(state: State, entry: dict[str, Any]) -> None:
    history = state["history"]
    history.append(entry)
    del history[:-HISTORY_MAX]


def commit(state: State, target: str, pending: dict[str, Any], by: str = "handoff") -> bool:
    """Move `target`'s watermarks to `pending`'s and record it delivered. Idempotent:
    a handoff already in the history is not applied twice. False if it was."""
    hid = pending.get("id")
    if any(h.get("id") == hid and h.get("state") == "delivered" for h in state["history"]
           if isinstance(h, dict)):
        if _is(state, target, hid):
            state["pending"].pop(target, None)
        return False
    marks = state["knownBy"].get(target)
    if not isinstance(marks, dict):  # a damaged entry (known_by reads it as none): was a
        marks = state["knownBy"][target] = {}  # TypeError on item assignment
    for source, mark in (pending.get("marks") or {}).items():
        if isinstance(mark, str):
            marks[source] = mark
    sha = pending.get("git")
    if isinstance(sha, str):
        state["git"][target] = {"sha": sha, "at": iso_utc()}
    if _is(state, target, hid):
        state["pending"].pop(target, None)
    remember(state, {**_summary(pending), "target": target, "state": "delivered",
                     "by": by, "delivered_at": iso_utc()})
    return True


def drop(state: State, target: str, pending: dict[str, Any], how: str) -> None:
    """The pending handoff did not arrive (superseded, failed): its marks stay unused."""
    if _is(state, target, pending.get("id")):
        state["pending"].pop(target, None)
    remember(state, {**_summary(pending), "target": target, "state": how, "at": iso_utc()})


def _is(state: State, target: str, hid: Any) -> bool:
    current = state["pending"].get(target)
    return isinstance(current, dict) and current.get("id") == hid


def _summary(pending: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "via", "created", "sources", "chars", "messages", "cut_messages",
            "delta", "full", "mailbox", "mail_id", "turn_id", "thread_id", "session_id")
    return {k: pending[k] for k in keys if k in pending}


def files_in_use(state: State) -> set[str]:
    """Delta files a pending handoff still needs (never pruned)."""
    out: set[str] = set()
    for rec in state["pending"].values():
        if isinstance(rec, dict):
            out.update(str(rec[k]) for k in ("delta", "full") if rec.get(k))
    return out


def prune_files(directory: str, keep: int, in_use: set[str]) -> None:
    """Keep the newest `keep` handoffs' files (and every file a pending one needs)."""
    try:
        names = sorted((e for e in os.scandir(directory) if e.name.endswith(".delta.txt")),
                       key=lambda e: e.stat().st_mtime, reverse=True)
    except FileNotFoundError:
        return
    for entry in names[keep:]:
        for path in (entry.path, entry.path[: -len(".delta.txt")] + ".full.txt"):
            if path not in in_use:
                with suppress(FileNotFoundError):
                    os.unlink(path)

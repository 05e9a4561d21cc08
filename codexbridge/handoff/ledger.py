"""The project's handoff ledger, where it lives, and the pending record's life in it.

    <state home>/handoff/<project key>.json         the project's ledger (0600)
    <state home>/handoff/<project key>.lock         its writers' lock; never renamed
    <state home>/handoff/<project key>/<id>.delta.txt   each bounded delta (0600)
    <state home>/handoff/<project key>/<id>.full.txt    its un-truncated companion (0600)
    <state home>/handoff/pending/<session id>.json  a delta waiting for that Claude
                                                    session's SessionStart hook (resume.py)

References and watermarks only — transcripts stay where the vendors keep them:

    {"version": 1, "project": "/abs/dir",
     "agents":  {"claude:<sid>": {kind, id, label, where, mailbox?, seen}, "codex:<tid>": …},
     "knownBy": {"<target>": {"<source>": "<opaque mark>"}},
     "git":     {"<target>": {"sha", "at"}},
     "pending": {"<target>": {id, via, stage, marks, git, delta, full, created, …}},
     "history": [{id, target, sources, via, state, at, chars, messages, cut, delta, full}]}

`knownBy[target][source]` is how far into the source's own stream material has been
packed for that target. Marks are committed only once the delta is delivered
(`commit`); until then the handoff is a `pending` record — the journal a crash leaves
behind — so one that never arrived is built again from the old marks next time, and one
that did is never sent twice. Its `stage` and `via` are `Stage` and `Via` (written as
their strings). Written atomically (temp + rename, 0600) under an exclusive lock; a
file from a newer codexbridge, or one that is not JSON, is refused and left as it is.

`status` is `handoff status`: reading only — except that a delta a SessionStart hook
consumed but could not record (it died between printing and writing the ledger) is
recorded there: its `.consumed` file proves it arrived.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from ..errors import HandoffStateError, UsageError
from ..host.jsonfile import loads_json
from ..host.locking import FileLock
from ..host.private import ensure_private_dir, write_private
from ..host.procs import pid_alive
from ..inbox.clock import iso_utc
from ..jsontypes import arr, obj, objs, opt_str
from ..messages.records import DeliveryState
from ..protocol.enums import WireEnum
from . import resume
from .resume import handoff_root, pending_path

if TYPE_CHECKING:
    from ..jsontypes import JsonArray, JsonObject, JsonValue

VERSION = 1
HISTORY_MAX = 50
HISTORY_SHOWN = 10


class State(TypedDict):
    version: int
    project: str
    agents: JsonObject
    knownBy: JsonObject
    git: JsonObject
    pending: JsonObject
    history: JsonArray


class Stage(WireEnum):
    """How far a pending handoff got (its record's `stage`)."""

    PREPARING = "preparing"  # nothing sent yet
    SENDING = "sending"  # the road is being used (maybe half-way: see each direction)
    INJECTED = "injected"  # codex has the delta in its history
    WAITING = "waiting"  # the SessionStart pending file is written; nothing consumed yet


class Via(WireEnum):
    """The road a delta takes (its record's `via`), chosen before anything is sent."""

    INJECT = "inject"  # into the Codex thread (deliver.into_thread)
    MAIL = "mail"  # one mail in the Claude session's mailbox
    RESUME = "resume"  # a pending file the session's SessionStart hook consumes
    NONE = "none"  # nothing sent (a dry run, nothing new)


# --- where it lives ---------------------------------------------------------------------

def project_dir(project: str) -> str:
    """The project as one canonical absolute path (symlinks resolved)."""
    return os.path.realpath(os.path.abspath(os.path.expanduser(project)))


def project_key(project: str) -> str:
    """16 hex characters of the project's canonical path: its state file's name."""
    return hashlib.sha256(project_dir(project).encode("utf-8")).hexdigest()[:16]


def state_path(key: str) -> str:
    return os.path.join(handoff_root(), key + ".json")


def lock_path(key: str) -> str:
    return os.path.join(handoff_root(), key + ".lock")


def files_dir(key: str) -> str:
    return os.path.join(handoff_root(), key)


# --- reading and writing it -------------------------------------------------------------

def empty(project: str) -> State:
    return {"version": VERSION, "project": project, "agents": {}, "knownBy": {}, "git": {},
            "pending": {}, "history": []}


def parse(raw: bytes, path: str, project: str) -> State:
    """The state in `raw`; HandoffStateError for anything this build must not use."""
    try:
        data: JsonValue = loads_json(raw.decode("utf-8"))
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
    # A section of the wrong type reads as empty (and is written back so).
    named = data.get("project")
    return {"version": VERSION, "project": named if isinstance(named, str) else project,
            "agents": obj(data.get("agents")), "knownBy": obj(data.get("knownBy")),
            "git": obj(data.get("git")), "pending": obj(data.get("pending")),
            "history": arr(data.get("history"))}


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


# --- reading and changing a state (pure) ------------------------------------------------

def known_by(state: State, target: str) -> dict[str, str]:
    return {k: v for k, v in obj(state["knownBy"].get(target)).items() if isinstance(v, str)}


def checkpoint(state: State, target: str) -> str | None:
    return opt_str(obj(state["git"].get(target)).get("sha"))


def pending(state: State, target: str, hid: object = None) -> JsonObject | None:
    """`target`'s pending record (only if it is handoff `hid`'s, when given)."""
    current = state["pending"].get(target)
    if not isinstance(current, dict) or (hid is not None and current.get("id") != hid):
        return None
    return current


def stage_of(record: JsonObject) -> Stage | None:
    return Stage.parse(record.get("stage"))


def link(state: State, key: str, record: JsonObject) -> None:
    """Remember an agent of this project (a source later handoffs read)."""
    agents = state["agents"]
    agents[key] = {**obj(agents.get(key)), **{k: v for k, v in record.items() if v is not None},
                   "seen": iso_utc()}


@dataclass(frozen=True)
class Agent:
    """One `agents` entry of the ledger, as its readers see it: a Claude session
    (`where`: its transcript) or a Codex thread, with the label a delta gives it. The
    entry stays a JSON object in the file (`link` merges into it); a field of the wrong
    type reads as absent."""

    kind: str | None
    id: str  # "" when the entry names none
    label: str | None = None
    where: str | None = None
    mailbox: str | None = None
    seen: str | None = None

    @classmethod
    def from_json(cls, data: object) -> Agent:
        entry = obj(data)
        ident = entry.get("id")
        return cls(opt_str(entry.get("kind")), str(ident) if ident else "",
                   opt_str(entry.get("label")), opt_str(entry.get("where")),
                   opt_str(entry.get("mailbox")), opt_str(entry.get("seen")))


def agents(state: State) -> dict[str, Agent]:
    """Every agent the ledger links to the project (entries that are not objects: none)."""
    return {key: Agent.from_json(a) for key, a in state["agents"].items()
            if isinstance(a, dict)}


def agents_of(state: State, kind: str) -> list[tuple[str, Agent]]:
    """The linked agents of `kind` (CLAUDE / CODEX) that name their id: (key, agent)."""
    return [(key, a) for key, a in agents(state).items() if a.kind == kind and a.id]


def remember(state: State, entry: JsonObject) -> None:
    history = state["history"]
    history.append(entry)
    del history[:-HISTORY_MAX]


def commit(state: State, target: str, record: JsonObject, by: str = "handoff") -> bool:
    """Move `target`'s watermarks to `record`'s and record it delivered. Idempotent:
    a handoff already in the history is not applied twice. False if it was."""
    hid = record.get("id")
    if any(h.get("id") == hid and DeliveryState.parse(h.get("state"))
           is DeliveryState.DELIVERED for h in objs(state["history"])):
        if pending(state, target, hid) is not None:
            state["pending"].pop(target, None)
        return False
    marks = state["knownBy"].get(target)
    if not isinstance(marks, dict):  # a damaged entry (known_by reads it as none): was a
        marks = state["knownBy"][target] = {}  # TypeError on item assignment
    for source, mark in obj(record.get("marks")).items():
        if isinstance(mark, str):
            marks[source] = mark
    sha = record.get("git")
    if isinstance(sha, str):
        state["git"][target] = {"sha": sha, "at": iso_utc()}
    if pending(state, target, hid) is not None:
        state["pending"].pop(target, None)
    remember(state, {**_summary(record), "target": target,
                     "state": DeliveryState.DELIVERED.value, "by": by,
                     "delivered_at": iso_utc()})
    return True


def drop(state: State, target: str, record: JsonObject, how: str) -> None:
    """The pending handoff did not arrive (superseded, failed): its marks stay unused."""
    if pending(state, target, record.get("id")) is not None:
        state["pending"].pop(target, None)
    remember(state, {**_summary(record), "target": target, "state": how, "at": iso_utc()})


def _summary(record: JsonObject) -> JsonObject:
    keys = ("id", "via", "created", "sources", "chars", "messages", "cut_messages",
            "delta", "full", "mailbox", "mail_id", "turn_id", "thread_id", "session_id")
    return {k: record[k] for k in keys if k in record}


def files_in_use(state: State) -> set[str]:
    """Delta files a pending handoff still needs (never pruned)."""
    return {str(rec[k]) for rec in objs(list(state["pending"].values()))
            for k in ("delta", "full") if rec.get(k)}


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


# --- the pending record's life: claim, stage, settle ------------------------------------

def busy_elsewhere(record: JsonObject) -> bool:
    """Another live process is carrying this pending handoff right now."""
    pid = record.get("pid")
    return (stage_of(record) in (Stage.PREPARING, Stage.SENDING, Stage.INJECTED)
            and isinstance(pid, int) and pid != os.getpid() and pid_alive(pid))


def refuse_busy(target: str, record: JsonObject) -> UsageError:
    return UsageError(f"another handoff to {target} ({record.get('id')}) is being delivered "
                      f"by process {record.get('pid')}; wait for it, then hand off again",
                      details={"pending": record}, retryable=True)


def apply_verdict(state: State, target: str, old: JsonObject, why_not: str | None,
                  settled: list[str]) -> None:
    """An earlier run's pending handoff arrived (`why_not` None: commit its marks) or
    did not (drop it: its material is built again)."""
    current = pending(state, target, old.get("id"))
    if current is None:
        return  # someone else settled it meanwhile
    if why_not is None:
        commit(state, target, current, "a later handoff's check")
        settled.append(f"{old.get('id')}: had arrived; its watermarks are now recorded")
    else:
        drop(state, target, current, why_not)
        settled.append(f"{old.get('id')}: {why_not}; its material is in this handoff")


def claim(state: State, target: str, hid: str, links: dict[str, JsonObject]
          ) -> dict[str, str]:
    """Link the agents, journal our handoff as preparing; the target's current marks."""
    current = pending(state, target)
    if current is not None and busy_elsewhere(current):
        raise refuse_busy(target, current)
    for key, record in links.items():
        link(state, key, record)
    state["pending"][target] = {"id": hid, "stage": Stage.PREPARING.value,
                                "pid": os.getpid(), "created": iso_utc()}
    return known_by(state, target)


def unclaim(state: State, target: str, hid: str) -> None:
    if pending(state, target, hid) is not None:
        state["pending"].pop(target, None)


def stage(state: State, target: str, hid: str, value: Stage) -> None:
    current = pending(state, target, hid)
    if current is not None:
        current["stage"] = value.value


# --- `handoff status` -------------------------------------------------------------------

def _pending_view(rec: JsonObject) -> JsonObject:
    view = {k: rec.get(k) for k in ("id", "via", "stage", "created", "chars", "messages",
                                    "cut_messages", "delta", "full", "mailbox",
                                    "session_id", "thread_id", "pid")}
    sid = rec.get("session_id")
    if Via.parse(rec.get("via")) is Via.RESUME and isinstance(sid, str):
        view["waiting_file"] = (pending_path(sid)
                                if os.path.exists(pending_path(sid)) else None)
        view["consumed"] = os.path.exists(resume.consumed_path(sid, str(rec.get("id"))))
    return view


def status(project: str) -> JsonObject:
    """The project's ledger, and where each pending handoff stands."""
    project = project_dir(project)
    key = project_key(project)
    state = load(key, project)
    views = {t: _pending_view(rec) for t in state["pending"]
             if (rec := pending(state, t)) is not None}
    consumed = [t for t, view in views.items() if view.get("consumed") is True]
    if consumed:
        with locked(key, project) as state:
            for target in consumed:
                if (rec := pending(state, target)) is not None:
                    commit(state, target, rec, "handoff status (consumed)")
            views = {t: _pending_view(rec) for t in state["pending"]
                     if (rec := pending(state, t)) is not None}
    targets: JsonArray = [
        {"target": t, "knownBy": {**known_by(state, t)}, "checkpoint": checkpoint(state, t),
         "pending": views.get(t)}
        for t in sorted(set(state["knownBy"]) | set(state["pending"]) | set(state["git"]))]
    return {"ok": True, "project": project, "stateFile": state_path(key),
            "agents": state["agents"], "targets": targets,
            "history": state["history"][-HISTORY_SHOWN:]}


def render_status(data: JsonObject) -> str:
    """`handoff status` for a person."""
    lines = [f"project {data['project']}  (ledger {data['stateFile']})"]
    linked = obj(data.get("agents"))
    if not linked:
        lines.append("no handoff yet in this project")
    for key, agent in sorted(linked.items()):
        a = Agent.from_json(agent)
        lines.append(f"  agent {key}: {a.label or ''} (seen {a.seen})")
    for t in objs(data["targets"]):
        lines.append(f"to {t['target']}:")
        for source, mark in sorted(obj(t["knownBy"]).items()):
            lines.append(f"  knows {source} up to {mark}")
        sha = opt_str(t["checkpoint"])
        if sha:
            lines.append(f"  git checkpoint {sha[:12]}")
        p = obj(t["pending"])
        if p:
            where = (f", waiting in {p['waiting_file']}" if p.get("waiting_file") else "")
            lines.append(f"  PENDING {p['id']} via {p['via']} ({p['stage']}{where})")
    for h in objs(arr(data["history"])[-5:]):
        lines.append(f"  {h.get('id')} → {h.get('target')}: {h.get('state')} via "
                     f"{h.get('via')} ({h.get('messages')} messages, {h.get('chars')} chars)")
    return "\n".join(lines)

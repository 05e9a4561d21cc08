"""The project's handoff ledger, where it lives, and the pending record's life in it.

    <state home>/handoff/<project key>.json         the project's ledger (0600)
    <state home>/handoff/<project key>.lock         its writers' lock; never renamed
    <state home>/handoff/<project key>/<id>.delta.txt   each bounded delta (0600)
    <state home>/handoff/<project key>/<id>.full.txt    its un-truncated companion (0600)
    <state home>/handoff/pending/<session id>.json  a delta waiting for that Claude
                                                    session's SessionStart hook (resume.py)

References and watermarks only — transcripts stay where the vendors keep them:

    {"version": 1, "project": "/abs/dir",
     "agents":  {"claude:<sid>": Agent, "codex:<tid>": Agent},
     "knownBy": {"<target>": {"<source>": "<opaque mark>"}},
     "git":     {"<target>": Checkpoint},
     "pending": {"<target>": Pending},
     "history": [Past, …]}

Each entry is a typed record (`Agent`, `Checkpoint`, `Pending`, `Past`) read and written
by one pair of functions (`_read` / `_json`), the whole file by `load` / `save`. A
field of the wrong type reads as absent, an entry that is not an object as none, so a
hand-edited ledger still hands off; a file without a `version` is version 1 (written
before the field existed, same layout). A file that is not a JSON object raises
DamagedStateError naming it; one from a newer codexbridge is refused (HandoffStateError):
every write here is a read-modify-write, and writing it back would drop what this build
does not know. Both are left as they are.

`knownBy[target][source]` is how far into the source's own stream material has been
packed for that target. Marks are committed only once the delta is delivered
(`commit`); until then the handoff is a `pending` record — the journal a crash leaves
behind — so one that never arrived is built again from the old marks next time, and one
that did is never sent twice. Its `stage` and `via` are `Stage` and `Via`. Written
atomically (temp + rename, 0600) under an exclusive lock.

`status` is `handoff status`: reading only — except that a delta a SessionStart hook
consumed but could not record (it died between printing and writing the ledger) is
recorded there: its `.consumed` file proves it arrived.
"""

from __future__ import annotations

import hashlib
import json
import os
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, fields, is_dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar, Union, get_args, get_origin, get_type_hints

from ..codex.protocol.enums import WireEnum
from ..errors import DamagedStateError, HandoffStateError, UsageError
from ..host.clock import iso_utc
from ..host.jsonfile import read_record, record_version
from ..host.locking import FileLock
from ..host.private import ensure_private_dir, write_private
from ..host.procs import pid_alive
from ..jsontypes import arr, obj, opt_int
from ..messages.records import DeliveryState
from . import resume
from .resume import handoff_root, pending_path

if TYPE_CHECKING:
    from ..jsontypes import JsonArray, JsonObject, JsonValue

VERSION = 1
WHAT = "handoff ledger"  # how a DamagedStateError names the file
HISTORY_MAX = 50
HISTORY_SHOWN = 10


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


# --- the records it holds ---------------------------------------------------------------

@dataclass
class Agent:
    """An agent of this project (a source later handoffs read): a Claude session
    (`where`: its transcript) or a Codex thread, with the label a delta gives it."""

    kind: str | None = None
    id: str = ""  # "" when the entry names none
    label: str | None = None
    where: str | None = None
    mailbox: str | None = None
    name: str | None = None  # a Codex thread's name
    seen: str | None = None


@dataclass
class Checkpoint:
    """The HEAD recorded when a target last received a delta."""

    sha: str | None = None
    at: str | None = None


@dataclass
class Summary:
    """What a handoff was: the fields its pending record and its history entry share."""

    id: str = ""
    via: Via | None = None
    created: str | None = None
    sources: list[str] = field(default_factory=list)
    chars: int | None = None
    messages: int | None = None
    cut_messages: int | None = None
    delta: str | None = None  # the delta's file
    full: str | None = None  # its companion's
    mailbox: str | None = None
    mail_id: str | None = None
    turn_id: str | None = None
    thread_id: str | None = None
    session_id: str | None = None


@dataclass
class Pending(Summary):
    """A handoff in flight to one target: the marks and checkpoint it commits once
    delivered, and who carries it (`pid`) how far (`stage`)."""

    stage: Stage | None = None
    pid: int | None = None
    marks: dict[str, str] = field(default_factory=dict)
    git: str | None = None


@dataclass
class Past(Summary):
    """One history entry: a handoff to `target` and how it ended (`state`: delivered,
    or why not — superseded, interrupted, not delivered: …)."""

    target: str | None = None
    state: str | None = None
    by: str | None = None  # who committed it
    delivered_at: str | None = None
    at: str | None = None  # when it was dropped


@dataclass
class State:
    """A project's ledger."""

    project: str
    agents: dict[str, Agent] = field(default_factory=dict)
    known_by: dict[str, dict[str, str]] = field(default_factory=dict)
    git: dict[str, Checkpoint] = field(default_factory=dict)
    pending: dict[str, Pending] = field(default_factory=dict)
    history: list[Past] = field(default_factory=list)


# --- one reader and one writer for all of them ------------------------------------------

R = TypeVar("R")
_WIRE = {"known_by": "knownBy"}  # attribute → key in the file, where they differ
_SKIP = object()  # a value of the wrong type: the field keeps its default


# a record's field types (its annotations are strings: `from __future__`)
_hints: Callable[[type], dict[str, Any]] = cache(get_type_hints)


def _narrow(hint: Any, value: object) -> object:
    """`value` as `hint` (str, int, a WireEnum, a record, a list or a str-keyed dict of
    those, or `X | None`); _SKIP when it is not one. A list or dict keeps the elements
    that read. An id (a `str` that is not optional) may be written as a number."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):  # X | None
        inner = next(a for a in args if a is not type(None))
        if inner is str:  # (only an id takes a number)
            return value if isinstance(value, str) else _SKIP
        return _narrow(inner, value)
    if origin is list:
        return [n for v in arr(value) if (n := _narrow(args[0], v)) is not _SKIP]
    if origin is dict:
        return {k: n for k, v in obj(value).items() if (n := _narrow(args[1], v)) is not _SKIP}
    if hint is str:
        return value if isinstance(value, str) else (
            str(value) if opt_int(value) is not None else _SKIP)
    if hint is int:
        return _SKIP if opt_int(value) is None else value
    if isinstance(hint, type) and issubclass(hint, WireEnum):
        return _SKIP if (member := hint.parse(value)) is None else member
    if isinstance(value, dict) and isinstance(hint, type) and is_dataclass(hint):
        return _read(hint, value)
    return _SKIP


def _read(cls: type[R], data: JsonObject, **fallback: object) -> R:
    """A record of `cls` from its JSON object: each field narrowed to its type, absent
    or of the wrong type → `fallback`'s value, else the field's default; keys this build
    does not know are ignored."""
    values = dict(fallback)
    for f in fields(cls):  # type: ignore[arg-type]
        value = _narrow(_hints(cls)[f.name], data.get(_WIRE.get(f.name, f.name)))
        if value is not _SKIP:
            values[f.name] = value
    return cls(**values)


def _json(value: object) -> JsonValue:
    """A record (or a list / dict of them) as JSON: a None field is left out."""
    if is_dataclass(value) and not isinstance(value, type):
        return {_WIRE.get(f.name, f.name): _json(v) for f in fields(value)
                if (v := getattr(value, f.name)) is not None}
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, WireEnum):
        return value.value
    assert value is None or isinstance(value, str | int | float | bool)
    return value


def as_json(record: object) -> JsonObject:
    """A record as its JSON object (what the file, `--json` and MCP show)."""
    return obj(_json(record))


def pending_record(data: JsonObject) -> Pending:
    """A pending record as another file carries it (resume.py's pending file)."""
    return _read(Pending, data)


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
    return State(project)


def load(key: str, project: str) -> State:
    """The project's ledger (empty when there is none yet)."""
    path = state_path(key)
    try:
        data = read_record(path, WHAT)
        version = 1 if data is None else record_version(data, path, WHAT)
    except DamagedStateError as exc:
        raise DamagedStateError(f"{exc.message}: it holds the handoff watermarks, so it is "
                                "left as it is — move it aside to start over",
                                details=exc.details) from None
    if data is None:
        return empty(project)
    if version > VERSION:
        raise HandoffStateError(
            f"{path} is version {version}, newer than this codexbridge understands "
            f"({VERSION}); upgrade codexbridge (nothing was changed)",
            details={"path": path, "version": version, "supported": VERSION})
    return _read(State, data, project=project)


def to_json(state: State) -> JsonObject:
    return {"version": VERSION, **as_json(state)}


def save(key: str, state: State) -> None:
    data = to_json(state)
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (read from a `\\ud800` escape) was a
        # traceback on every save: it is written back as the escape it was read as
        raw = (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("ascii")
    write_private(state_path(key), raw, durable=True)


@contextmanager
def locked(key: str, project: str) -> Iterator[State]:
    """Read-modify-write the state under the project's lock; written when the block
    ends without an exception (and changed something)."""
    ensure_private_dir(handoff_root())
    with FileLock(lock_path(key)):
        state = load(key, project)
        before = json.dumps(to_json(state), sort_keys=True)
        yield state
        if json.dumps(to_json(state), sort_keys=True) != before:
            save(key, state)


# --- reading and changing a state (pure) ------------------------------------------------

def known_by(state: State, target: str) -> dict[str, str]:
    return {**state.known_by.get(target, {})}


def checkpoint(state: State, target: str) -> str | None:
    mark = state.git.get(target)
    return mark.sha if mark is not None else None


def pending(state: State, target: str, hid: str | None = None) -> Pending | None:
    """`target`'s pending record (only if it is handoff `hid`'s, when given)."""
    current = state.pending.get(target)
    if current is None or (hid is not None and current.id != hid):
        return None
    return current


def link(state: State, key: str, agent: Agent) -> None:
    """Remember an agent of this project (a source later handoffs read): what `agent`
    says is merged into what the ledger had."""
    said = {f.name: v for f in fields(agent) if (v := getattr(agent, f.name)) not in (None, "")}
    state.agents[key] = replace(state.agents.get(key, Agent()), **said, seen=iso_utc())


def agents_of(state: State, kind: str) -> list[tuple[str, Agent]]:
    """The linked agents of `kind` (CLAUDE / CODEX) that name their id: (key, agent)."""
    return [(key, a) for key, a in state.agents.items() if a.kind == kind and a.id]


def remember(state: State, entry: Past) -> None:
    state.history.append(entry)
    del state.history[:-HISTORY_MAX]


def _past(record: Pending, target: str, state: str, *, by: str | None = None,
          delivered_at: str | None = None, at: str | None = None) -> Past:
    shared = {f.name: getattr(record, f.name) for f in fields(Summary)}
    return Past(**shared, target=target, state=state, by=by, delivered_at=delivered_at,
                at=at)


def commit(state: State, target: str, record: Pending, by: str = "handoff") -> bool:
    """Move `target`'s watermarks to `record`'s and record it delivered. Idempotent:
    a handoff already in the history is not applied twice. False if it was."""
    hid = record.id
    if any(h.id == hid and DeliveryState.parse(h.state) is DeliveryState.DELIVERED
           for h in state.history):
        unclaim(state, target, hid)
        return False
    state.known_by.setdefault(target, {}).update(record.marks)
    if record.git is not None:
        state.git[target] = Checkpoint(record.git, iso_utc())
    unclaim(state, target, hid)
    remember(state, _past(record, target, DeliveryState.DELIVERED.value, by=by,
                          delivered_at=iso_utc()))
    return True


def drop(state: State, target: str, record: Pending, how: str) -> None:
    """The pending handoff did not arrive (superseded, failed): its marks stay unused."""
    unclaim(state, target, record.id)
    remember(state, _past(record, target, how, at=iso_utc()))


def files_in_use(state: State) -> set[str]:
    """Delta files a pending handoff still needs (never pruned)."""
    return {path for rec in state.pending.values() for path in (rec.delta, rec.full) if path}


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

def busy_elsewhere(record: Pending) -> bool:
    """Another live process is carrying this pending handoff right now."""
    pid = record.pid
    return (record.stage in (Stage.PREPARING, Stage.SENDING, Stage.INJECTED)
            and pid is not None and pid != os.getpid() and pid_alive(pid))


def apply_verdict(state: State, target: str, old: Pending, why_not: str | None,
                  settled: list[str]) -> None:
    """An earlier run's pending handoff arrived (`why_not` None: commit its marks) or
    did not (drop it: its material is built again)."""
    current = pending(state, target, old.id)
    if current is None:
        return  # someone else settled it meanwhile
    if why_not is None:
        commit(state, target, current, "a later handoff's check")
        settled.append(f"{old.id}: had arrived; its watermarks are now recorded")
    else:
        drop(state, target, current, why_not)
        settled.append(f"{old.id}: {why_not}; its material is in this handoff")


def claim(state: State, target: str, hid: str, links: dict[str, Agent]) -> dict[str, str]:
    """Link the agents, journal our handoff as preparing; the target's current marks."""
    current = pending(state, target)
    if current is not None and busy_elsewhere(current):
        raise UsageError(f"another handoff to {target} ({current.id}) is being delivered "
                         f"by process {current.pid}; wait for it, then hand off again",
                         details={"pending": as_json(current)}, retryable=True)
    for key, agent in links.items():
        link(state, key, agent)
    state.pending[target] = Pending(id=hid, stage=Stage.PREPARING, pid=os.getpid(),
                                    created=iso_utc())
    return known_by(state, target)


def unclaim(state: State, target: str, hid: str) -> None:
    if pending(state, target, hid) is not None:
        del state.pending[target]


def stage(state: State, target: str, hid: str, value: Stage) -> None:
    current = pending(state, target, hid)
    if current is not None:
        current.stage = value


# --- `handoff status` -------------------------------------------------------------------

SHOWN = ("id", "via", "stage", "created", "chars", "messages", "cut_messages", "delta",
         "full", "mailbox", "session_id", "thread_id", "pid")


@dataclass
class Shown:
    """A pending record as `handoff status` shows it — for a resume delta, with the
    file it waits in (None: none) and whether a SessionStart hook consumed it."""

    record: Pending
    waiting_file: str | None = None
    consumed: bool | None = None  # None: not a resume delta

    @classmethod
    def of(cls, rec: Pending) -> Shown:
        sid = rec.session_id
        if rec.via is not Via.RESUME or sid is None:
            return cls(rec)
        waiting = pending_path(sid)
        return cls(rec, waiting if os.path.exists(waiting) else None,
                   os.path.exists(resume.consumed_path(sid, rec.id)))

    def as_dict(self) -> JsonObject:
        data = as_json(self.record)
        view = {k: data.get(k) for k in SHOWN}
        if self.consumed is not None:
            view.update(waiting_file=self.waiting_file, consumed=self.consumed)
        return view


@dataclass
class Status:
    """`handoff status`: the project's ledger, and where each pending handoff stands."""

    project: str
    state_file: str
    state: State
    views: dict[str, Shown]  # target → its pending record, as shown

    def as_dict(self) -> JsonObject:
        s = self.state
        targets: JsonArray = [
            {"target": t, "knownBy": {**known_by(s, t)}, "checkpoint": checkpoint(s, t),
             "pending": v.as_dict() if (v := self.views.get(t)) is not None else None}
            for t in sorted(set(s.known_by) | set(s.pending) | set(s.git))]
        return {"ok": True, "project": self.project, "stateFile": self.state_file,
                "agents": as_json(s.agents), "targets": targets,
                "history": _json(s.history[-HISTORY_SHOWN:])}

    def render(self) -> str:
        """For a person."""
        s = self.state
        lines = [f"project {self.project}  (ledger {self.state_file})"]
        if not s.agents:
            lines.append("no handoff yet in this project")
        for key, agent in sorted(s.agents.items()):
            lines.append(f"  agent {key}: {agent.label or ''} (seen {agent.seen})")
        for t in sorted(set(s.known_by) | set(s.pending) | set(s.git)):
            lines.append(f"to {t}:")
            for source, mark in sorted(known_by(s, t).items()):
                lines.append(f"  knows {source} up to {mark}")
            sha = checkpoint(s, t)
            if sha:
                lines.append(f"  git checkpoint {sha[:12]}")
            if (p := s.pending.get(t)) is not None:
                waiting = self.views[t].waiting_file
                where = f", waiting in {waiting}" if waiting else ""
                lines.append(f"  PENDING {p.id} via {p.via} ({p.stage}{where})")
        for h in s.history[-5:]:
            lines.append(f"  {h.id} → {h.target}: {h.state} via {h.via} ({h.messages} "
                         f"messages, {h.chars} chars)")
        return "\n".join(lines)


def status(project: str) -> Status:
    """The project's ledger, and where each pending handoff stands."""
    project = project_dir(project)
    key = project_key(project)
    state = load(key, project)
    views = {t: Shown.of(rec) for t, rec in state.pending.items()}
    consumed = [t for t, view in views.items() if view.consumed]
    if consumed:
        with locked(key, project) as state:
            for target in consumed:
                if (rec := pending(state, target)) is not None:
                    commit(state, target, rec, "handoff status (consumed)")
            views = {t: Shown.of(rec) for t, rec in state.pending.items()}
    return Status(project, state_path(key), state, views)

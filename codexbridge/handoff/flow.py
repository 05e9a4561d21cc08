"""The steps every handoff takes, whichever side it goes to, and what it reports.

    settle    a pending handoff left by an earlier run to the same target is decided
              first: delivered (commit its marks), or not (drop it: its material is
              built again), or still being carried by a live process (refuse)
    claim     under the ledger lock: link the agents, take the target's marks, and
              write our own pending record — the journal a crash leaves behind
    gather    every source behind the target, read since its mark, and what git shows
              since the checkpoint, built into one delta and its companion (0600)
    deliver   without the lock (a SessionStart hook must never wait on a slow handoff):
              `to_codex.py`, `to_claude.py`
    commit    under the lock, only once the road says it arrived

A handoff gathers from the departing agent *and* every other agent linked to the
project whose stream has moved past the target's watermark for it, each block labelled
by who produced it — so a chain (Claude → Codex → another Claude session) loses
nothing the target never saw. The departing agent's block comes last: its latest
exchange is the tail the cap keeps.

The Work section is deterministic, no summarising: `git status --porcelain`, the
commits since the checkpoint and `git diff --stat <checkpoint>` (the working tree
against it, so what is not committed yet shows too). The first handoff to a target has
no checkpoint: it shows the uncommitted changes and the latest commits. `git_work` runs
git (read-only, no optional locks, a timeout each); `render_work` is pure and bounded.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..codex.client import Rpc
from ..codex.protocol.enums import WireEnum
from ..codex.protocol.threads import ThreadInfo
from ..host.clock import iso_utc
from ..host.limits import env_int, text_max
from ..host.private import ensure_private_dir, write_private
from ..messages.records import DeliveryState
from . import claude_source, codex_source, delta, ledger
from .claude_source import ClaudeSession
from .delta import CLAUDE, CODEX, Received, SourceRead, short, source_key
from .ledger import Agent, Pending, Via
from .note import Note

if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue
    from .deliver import IntoThread

CAP_ENV = "CODEX_BRIDGE_HANDOFF_MAX"
KEEP_ENV = "CODEX_BRIDGE_HANDOFF_KEEP"
DEFAULT_KEEP = 20
NAMES = {CLAUDE: "Claude Code", CODEX: "Codex"}
GIT_TIMEOUT = 5.0
MAX_LINES = 40  # per list: a rename storm must not crowd out the conversation
RECENT = 5

Reader = Callable[[str | None], Awaitable[SourceRead]]


class Waiting(WireEnum):
    """Where a delta waits when the target does not have it yet (`Outcome.state`)."""

    PARKED = "parked"  # in the mailbox of a session that is not running
    FOR_RESUME = "waiting-for-resume"  # its SessionStart hook hands it over on resume


# Where the delta is once a handoff returns: delivered only when the target has it
# (in the Codex thread, or pushed live into the running session); else queued in the
# running session's mailbox (its watcher or next stop takes it), or Waiting — and, in
# `Outcome.action`, what brings it in.
STATE_TEXT: dict[DeliveryState | Waiting, str] = {
    DeliveryState.DELIVERED: "delivered",
    DeliveryState.QUEUED: "queued in the running session's mailbox: its watcher or its "
                          "next stop brings it in",
    Waiting.PARKED: "parked in the mailbox: the session is not running, and it arrives at "
                    "its first stop once resumed",
    Waiting.FOR_RESUME: "waiting for the session to resume: its SessionStart hook hands "
                        "it over",
}


# --- the Work section: git since the checkpoint ------------------------------------------

@dataclass
class Work:
    repo: bool = False
    head: str | None = None
    branch: str | None = None
    checkpoint: str | None = None  # the recorded one
    checkpoint_known: bool = False  # still in this repository's history
    commits: list[str] = field(default_factory=list)
    diffstat: list[str] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    error: str | None = None


def _git(project: str, *args: str, timeout: float) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "LC_ALL": "C",
                "GIT_TERMINAL_PROMPT": "0"})
    try:
        done = subprocess.run(["git", "-C", project, *args], capture_output=True,
                              text=True, errors="replace", timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, str(exc)
    return done.returncode, done.stdout if done.returncode == 0 else done.stderr


def git_work(project: str, checkpoint: str | None, timeout: float = GIT_TIMEOUT) -> Work:
    def lines(*args: str) -> list[str] | None:  # None: git said no
        code, out = _git(project, *args, timeout=timeout)
        return [line.rstrip() for line in out.splitlines() if line.strip()] \
            if code == 0 else None

    work = Work(checkpoint=checkpoint)
    code, out = _git(project, "rev-parse", "--is-inside-work-tree", timeout=timeout)
    if code != 0 or out.strip() != "true":
        work.error = None if code > 0 else (out.strip() or None)
        return work
    work.repo = True
    work.head = next(iter(lines("rev-parse", "HEAD") or []), None)
    work.branch = next(iter(lines("rev-parse", "--abbrev-ref", "HEAD") or []), None)
    work.status = lines("status", "--porcelain=v1") or []
    work.checkpoint_known = bool(checkpoint) and lines(
        "cat-file", "-e", f"{checkpoint}^{{commit}}") is not None
    if work.checkpoint_known:
        work.commits = lines("log", "--oneline", "--no-decorate", "-n", "200",
                             f"{checkpoint}..HEAD") or []
        work.diffstat = lines("diff", "--stat=100", str(checkpoint)) or []
    elif work.head:
        work.commits = lines("log", "--oneline", "--no-decorate", "-n", str(RECENT)) or []
        work.diffstat = lines("diff", "--stat=100", "HEAD") or []
    return work


def _bounded(lines: list[str], limit: int = MAX_LINES) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit - 1], f"… and {len(lines) - limit + 1} more"]


def render_work(work: Work, files: list[str]) -> str:
    """The Work section's text. `files`: what the agents' tools changed (names only)."""
    out: list[str] = []
    if not work.repo:
        out.append("not a git repository" + (f" ({work.error})" if work.error else ""))
    else:
        head = (work.head or "no commit yet")[:12]
        at = f"branch {work.branch} at {head}" if work.branch else f"at {head}"
        if work.checkpoint and work.checkpoint_known:
            out.append(f"git: {at}; checkpoint {work.checkpoint[:12]} (the previous handoff)")
            out.append(f"commits since the checkpoint: {len(work.commits) or 'none'}")
        elif work.checkpoint:
            out.append(f"git: {at}; the checkpoint {work.checkpoint[:12]} is no longer in "
                       "the history (rebased?): showing the latest commits")
            out.append("latest commits:")
        else:
            out.append(f"git: {at}; no checkpoint yet (first handoff): the latest commits")
        out += [f"  {c}" for c in _bounded(work.commits)]
        against = work.checkpoint[:12] if work.checkpoint_known and work.checkpoint else "HEAD"
        if work.diffstat:
            out.append(f"changed (git diff --stat {against}):")
            out += [f"  {d.strip()}" for d in _bounded(work.diffstat)]
        out.append("uncommitted (git status --porcelain):" if work.status
                   else "nothing uncommitted")
        out += [f"  {s}" for s in _bounded(work.status)]
    if files:
        out.append("files the agents' tools edited: " + ", ".join(_bounded(files, 30)))
    return "\n".join(out)


# --- gather: every source behind the target, built into the delta ----------------------

def new_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"h_{stamp}_{secrets.token_hex(3)}"


def cap_for(via_cap: int | None = None) -> int:
    """The delta's cap: $CODEX_BRIDGE_HANDOFF_MAX (24,000), within the text limit every
    message to a model obeys, and within what the delivery road carries whole."""
    cap = min(env_int(os.environ, CAP_ENV, delta.DEFAULT_CAP), text_max(os.environ) - 2_000)
    return min(cap, via_cap) if via_cap else cap


@dataclass
class Prepared:
    handoff_id: str
    target: str
    reads: list[SourceRead]
    built: delta.Built
    marks: dict[str, str]
    head: str | None
    delta_path: str
    full_path: str
    warnings: list[str] = field(default_factory=list)

    @property
    def new_messages(self) -> int:
        return sum(len(r.messages) for r in self.reads)

    def pending(self, via: Via, *, mailbox: str | None = None, session_id: str | None = None,
                thread_id: str | None = None) -> Pending:
        """The ledger's pending record (what `commit` applies once delivered)."""
        return Pending(id=self.handoff_id, via=via, stage=ledger.Stage.SENDING,
                       pid=os.getpid(), created=iso_utc(), marks={**self.marks},
                       git=self.head, sources=[r.key for r in self.reads if r.messages],
                       chars=len(self.built.delta), messages=self.built.messages,
                       cut_messages=self.built.cut_messages, delta=self.delta_path,
                       full=self.full_path, mailbox=mailbox, session_id=session_id,
                       thread_id=thread_id)

    def as_dict(self) -> JsonObject:
        warnings: JsonValue = [*self.warnings]
        return {"handoffId": self.handoff_id, "target": self.target,
                "messages": self.built.messages, "cutMessages": self.built.cut_messages,
                "chars": len(self.built.delta), "delta": self.delta_path,
                "full": self.full_path, "warnings": warnings,
                "sources": [{"source": r.key, "label": r.label, "new": len(r.messages),
                             "since": r.since, "mark": r.mark, "found": r.found,
                             "problem": r.problem} for r in self.reads]}


def linked_readers(state: ledger.State, skip: set[str], rpc: Rpc | None,
                   received: dict[str, Received] | None = None,
                   answered: frozenset[str] = frozenset()) -> dict[str, Reader]:
    """Readers for the other agents the ledger links to this project (`received`:
    thread id → what a Claude target already has from that thread; `answered`: Claude's
    answers a Codex target already has as reply turns)."""
    out: dict[str, Reader] = {}
    for key, agent in state.agents.items():
        if key in skip:
            continue
        ident, label = agent.id, agent.label
        if agent.kind == CLAUDE and agent.where is not None and ident:
            out[key] = _claude_reader(agent.where, ident, label, answered)
        elif agent.kind == CODEX and ident and rpc is not None:
            out[key] = _codex_reader(rpc, ident, label, (received or {}).get(ident))
    return out


def _claude_reader(path: str, ident: str, label: str | None,
                   answered: frozenset[str] = frozenset()) -> Reader:
    async def read(since: str | None) -> SourceRead:
        return claude_source.read_transcript(path, ident, since, label, answered)
    return read


def _codex_reader(rpc: Rpc, ident: str, label: str | None,
                  received: Received | None = None) -> Reader:
    async def read(since: str | None) -> SourceRead:
        return await codex_source.read_thread(rpc, ident, since, label, received=received)
    return read


# --- one handoff under way, and what it did ---------------------------------------------

@dataclass
class Outcome:
    """What a handoff did, for the CLI and MCP."""

    handoff_id: str
    target: str  # the ledger key
    to: str  # "codex" / "claude"
    via: Via
    prepared: Prepared
    thread: ThreadInfo  # the Codex side (the target, or the departing thread)
    session: ClaudeSession  # the Claude side
    delivered: bool = False  # the target has it (inject, live mail) — see `state` when not
    nothing_new: bool = False
    dry_run: bool = False
    turn: IntoThread | None = None  # the visible turn a handoff to Codex started
    mail_id: str | None = None  # the mail a handoff to Claude left in its mailbox
    pending_file: str | None = None  # where a resume delta waits
    settled: list[str] = field(default_factory=list)  # what became of an older pending
    warnings: list[str] = field(default_factory=list)
    state: DeliveryState | Waiting | None = None  # None: nothing sent
    action: str | None = None  # what the human runs so that it arrives, if anything

    def arrived(self) -> None:
        self.delivered, self.state = True, DeliveryState.DELIVERED

    @property
    def all_warnings(self) -> list[str]:
        return [*self.warnings, *self.prepared.warnings]

    def state_text(self) -> str:
        """The state for a person, with what to run."""
        text = STATE_TEXT[self.state] if self.state is not None else "nothing sent"
        return text + (f" — run `{self.action}`" if self.action else "")

    def as_dict(self) -> JsonObject:
        where: JsonObject = {"threadId": self.thread.id, "thread": self.thread.as_dict(),
                             "session": self.session.as_dict()}
        if self.to == "claude":
            where["mailbox"] = self.session.mailbox
        if self.mail_id is not None:
            where["mailId"] = self.mail_id
        if self.pending_file is not None:
            where["pendingFile"] = self.pending_file
        turn = self.turn
        data: JsonObject = {
            "ok": True, "handoffId": self.handoff_id, "to": self.to, "target": self.target,
            "via": self.via.value, "delivered": self.delivered,
            "state": None if self.state is None else self.state.value,
            "action": self.action, "nothingNew": self.nothing_new,
            "dryRun": self.dry_run, **where,
            "turn": None if turn is None else {"turnId": turn.turn_id,
                                               "status": turn.status.value,
                                               "reply": turn.reply},
            "settled": [*self.settled], "warnings": [*self.all_warnings]}
        data.update({k: v for k, v in self.prepared.as_dict().items()
                     if k not in ("handoffId", "target", "warnings")})
        return data


@dataclass
class Handoff:
    """One handoff from claim to outcome: the ledger's side of it, for both directions."""

    key: str  # the project's ledger
    project: str
    hid: str
    target: str  # the receiving agent's ledger key
    source: str  # the departing agent's
    links: dict[str, Agent]  # both agents, as the ledger records them
    dry_run: bool = False
    settled: list[str] = field(default_factory=list)

    @classmethod
    def between(cls, key: str, project: str, hid: str | None, target: Agent, source: Agent,
                dry_run: bool) -> Handoff:
        """A handoff (`hid`, else a new id) from the agent `source` to `target`."""
        t, s = (source_key(str(a.kind), a.id) for a in (target, source))
        return cls(key, project, hid or new_id(), t, s, {s: source, t: target}, dry_run)

    def to_settle(self, state: ledger.State) -> Pending | None:
        """An earlier run's pending handoff to the target that this one decides first
        (not in a dry run, nor while a live process carries it: `claim` refuses)."""
        old = ledger.pending(state, self.target)
        return None if old is None or self.dry_run or ledger.busy_elsewhere(old) else old

    def claim(self, earlier: tuple[Pending, str | None] | None
              ) -> tuple[dict[str, str], ledger.State]:
        """Under the lock: settle an earlier handoff ((its record, why it did not
        arrive or None)), claim the target (a dry run only reads its marks). The marks,
        and the state as it reads with our links."""
        with ledger.locked(self.key, self.project) as state:
            if earlier is not None:
                ledger.apply_verdict(state, self.target, *earlier, self.settled)
            marks = (ledger.known_by(state, self.target) if self.dry_run
                     else ledger.claim(state, self.target, self.hid, self.links))
            snapshot = replace(state, agents={**state.agents, **self.links})
        return marks, snapshot

    def unclaim(self) -> None:
        if not self.dry_run:
            with ledger.locked(self.key, self.project) as state:
                ledger.unclaim(state, self.target, self.hid)

    async def gather(self, earlier: tuple[Pending, str | None] | None, departing: Reader,
                     rpc: Rpc, *, names: tuple[str, str], note: Note, cap: int,
                     received: dict[str, Received] | None = None,
                     answered: frozenset[str] = frozenset()) -> Prepared:
        """Claim, read every source behind the target, and build the delta (`names`: the
        target as the text names it, and the departing agent's kind; `received`,
        `answered`: what the target already has, see `linked_readers`). Nothing stays
        claimed when this fails."""
        marks, snapshot = self.claim(earlier)
        try:
            others = linked_readers(snapshot, {self.source, self.target}, rpc, received,
                                    answered)
            reads = [await read(marks.get(key)) for key, read in others.items()]
            reads.append(await departing(marks.get(self.source)))  # last: the tail kept
            return self.build(snapshot, reads, names, note, cap)
        except BaseException:
            self.unclaim()
            raise

    def build(self, state: ledger.State, reads: list[SourceRead], names: tuple[str, str],
              note: Note, cap: int) -> Prepared:
        """Build the delta and its companion, and write both (0600)."""
        directory = ledger.files_dir(self.key)
        delta_path = os.path.join(directory, f"{self.hid}.delta.txt")
        full_path = os.path.join(directory, f"{self.hid}.full.txt")
        git = git_work(self.project, ledger.checkpoint(state, self.target))
        blocks, warnings = [], []
        for r in reads:
            if r.problem:
                warnings.append(r.problem)
            remark = None if r.found else ("the previous handoff's watermark is no longer "
                                           "in this stream: everything from its start")
            if r.messages or (remark and r.since):
                blocks.append(delta.Block(r.label, r.messages, remark))
        work = render_work(git, [f for r in reads for f in r.files])
        built = delta.build(delta.DeltaInput(self.hid, NAMES.get(names[1], names[1]),
                                             names[0], iso_utc(), full_path, blocks, note,
                                             work), cap)
        ensure_private_dir(directory)
        write_private(delta_path, built.delta.encode("utf-8"))
        write_private(full_path, built.full.encode("utf-8"))
        ledger.prune_files(directory, env_int(os.environ, KEEP_ENV, DEFAULT_KEEP),
                           ledger.files_in_use(state) | {delta_path, full_path})
        marks = {r.key: r.mark for r in reads if r.mark}
        return Prepared(self.hid, self.target, reads, built, marks, git.head, delta_path,
                        full_path, warnings)

    def set_pending(self, record: Pending) -> None:
        with ledger.locked(self.key, self.project) as state:
            state.pending[self.target] = record

    def nothing_to_send(self, outcome: Outcome, note: Note) -> bool:
        """A dry run, or nothing new and no note: the claim goes, and nothing is sent."""
        if not self.dry_run and (outcome.prepared.new_messages or not note.empty):
            return False
        outcome.dry_run, outcome.nothing_new, outcome.via = (self.dry_run, not self.dry_run,
                                                             Via.NONE)
        self.unclaim()
        return True


def claude_link(session: ClaudeSession) -> Agent:
    """A Claude session as the ledger links it (`label`: who said it, in the delta)."""
    return Agent(kind=CLAUDE, id=session.session_id, where=session.transcript,
                 mailbox=session.mailbox,
                 label=f"Claude Code session {short(session.session_id)}")


def codex_link(info: ThreadInfo) -> Agent:
    """A Codex thread as the ledger links it."""
    return Agent(kind=CODEX, id=info.id, name=info.name,
                 label=f"Codex thread {info.name or short(info.id)}")


def start(project: str, env: Mapping[str, str] | None) -> tuple[str, str, Mapping[str, str]]:
    """The project's canonical path, its ledger key, and the environment to read."""
    project = ledger.project_dir(project)
    return project, ledger.project_key(project), os.environ if env is None else env

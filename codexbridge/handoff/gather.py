"""Every source behind the target, read since its watermark and built into one delta.

A handoff gathers from the departing agent *and* every other agent linked to the
project whose stream has moved past the target's watermark for it, each block labelled
by who produced it — so a chain (Claude → Codex → another Claude session) loses
nothing the target never saw. The departing agent's block comes last: its latest
exchange is the tail the cap keeps.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..host.private import ensure_private_dir, write_private
from ..inbox.clock import iso_utc
from ..talk.client import Rpc
from . import claude_source, codex_source, delta, ledger, work
from .messages import CLAUDE, CODEX, SourceRead
from .note import Note
from .paths import files_dir
from .received import Received

CAP_ENV = "CODEX_BRIDGE_HANDOFF_MAX"
KEEP_ENV = "CODEX_BRIDGE_HANDOFF_KEEP"
DEFAULT_KEEP = 20
NAMES = {CLAUDE: "Claude Code", CODEX: "Codex"}

Reader = Callable[[str | None], Awaitable[SourceRead]]


def new_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"h_{stamp}_{secrets.token_hex(3)}"


def env_int(name: str, default: int, env: dict[str, str] | None = None) -> int:
    raw = (os.environ if env is None else env).get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        return default
    return value if value > 0 else default


def cap_for(via_cap: int | None = None) -> int:
    """The delta's cap: $CODEX_BRIDGE_HANDOFF_MAX (24,000), within the text limit every
    message to a model obeys, and within what the delivery road carries whole."""
    from ..conversation.limits import text_max

    cap = min(env_int(CAP_ENV, delta.DEFAULT_CAP), text_max(os.environ) - 2_000)
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

    def pending(self, via: str, **extra: Any) -> dict[str, Any]:
        """The ledger's pending record (what `commit` applies once delivered)."""
        return {"id": self.handoff_id, "via": via, "stage": "sending", "pid": os.getpid(),
                "created": iso_utc(), "marks": self.marks, "git": self.head,
                "sources": [r.key for r in self.reads if r.messages],
                "chars": len(self.built.delta), "messages": self.built.messages,
                "cut_messages": self.built.cut_messages, "delta": self.delta_path,
                "full": self.full_path, **extra}

    def as_dict(self) -> dict[str, Any]:
        return {"handoffId": self.handoff_id, "target": self.target,
                "messages": self.built.messages, "cutMessages": self.built.cut_messages,
                "chars": len(self.built.delta), "delta": self.delta_path,
                "full": self.full_path, "warnings": self.warnings,
                "sources": [{"source": r.key, "label": r.label, "new": len(r.messages),
                             "since": r.since, "mark": r.mark, "found": r.found,
                             "problem": r.problem} for r in self.reads]}


def linked_readers(state: ledger.State, skip: set[str], rpc: Rpc | None,
                   received: dict[str, Received] | None = None) -> dict[str, Reader]:
    """Readers for the other agents the ledger links to this project (`received`:
    thread id → what the target already has from that thread)."""
    out: dict[str, Reader] = {}
    for key, agent in state["agents"].items():
        if key in skip or not isinstance(agent, dict):
            continue
        ident, where = str(agent.get("id") or ""), agent.get("where")
        label = agent.get("label") if isinstance(agent.get("label"), str) else None
        if agent.get("kind") == CLAUDE and isinstance(where, str) and ident:
            out[key] = _claude_reader(where, ident, label)
        elif agent.get("kind") == CODEX and ident and rpc is not None:
            out[key] = _codex_reader(rpc, ident, label, (received or {}).get(ident))
    return out


def _claude_reader(path: str, ident: str, label: str | None) -> Reader:
    async def read(since: str | None) -> SourceRead:
        return claude_source.read_transcript(path, ident, since, label)
    return read


def _codex_reader(rpc: Rpc, ident: str, label: str | None,
                  received: Received | None = None) -> Reader:
    async def read(since: str | None) -> SourceRead:
        return await codex_source.read_thread(rpc, ident, since, label, received=received)
    return read


async def read_all(marks: dict[str, str], departing: tuple[str, Reader],
                   others: dict[str, Reader]) -> list[SourceRead]:
    """Each source since the target's mark for it; the departing one last."""
    reads = []
    for key, reader in others.items():
        reads.append(await reader(marks.get(key)))
    reads.append(await departing[1](marks.get(departing[0])))
    return reads


def prepare(key: str, project: str, state: ledger.State, target: str, target_name: str,
            departing: str, reads: list[SourceRead], note: Note, cap: int,
            handoff_id: str | None = None) -> Prepared:
    """Build the delta and its companion, and write both (0600)."""
    hid = handoff_id or new_id()
    directory = files_dir(key)
    delta_path = os.path.join(directory, f"{hid}.delta.txt")
    full_path = os.path.join(directory, f"{hid}.full.txt")
    git = work.git_work(project, ledger.checkpoint(state, target))
    files = [f for r in reads for f in r.files]
    blocks, warnings = [], []
    for r in reads:
        if r.problem:
            warnings.append(r.problem)
        remark = None if r.found else ("the previous handoff's watermark is no longer in "
                                       "this stream: everything from its start")
        if r.messages or (remark and r.since):
            blocks.append(delta.Block(r.label, r.messages, remark))
    inp = delta.DeltaInput(hid, NAMES.get(departing, departing), target_name, iso_utc(),
                           full_path, blocks, note, work.render(git, files))
    built = delta.build(inp, cap)
    ensure_private_dir(directory)
    write_private(delta_path, built.delta.encode("utf-8"))
    write_private(full_path, built.full.encode("utf-8"))
    ledger.prune_files(directory, env_int(KEEP_ENV, DEFAULT_KEEP),
                       ledger.files_in_use(state) | {delta_path, full_path})
    marks = {r.key: r.mark for r in reads if r.mark}
    return Prepared(hid, target, reads, built, marks, git.head, delta_path, full_path,
                    warnings)

"""The steps every handoff takes around its delivery, in one place.

    settle    a pending handoff left by an earlier run to the same target is decided
              first: delivered (commit its marks), or not (drop it: its material is
              built again), or still being carried by a live process (refuse)
    claim     under the ledger lock: link the agents, take the target's marks, and
              write our own pending record — the journal a crash leaves behind
    deliver   without the lock (a SessionStart hook must never wait on a slow handoff)
    commit    under the lock, only once the road says it arrived
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..host.procs import pid_alive
from ..inbox.clock import iso_utc
from . import ledger
from .gather import Prepared

PREPARING = "preparing"  # nothing sent yet
SENDING = "sending"  # the road is being used (maybe half-way: see each direction)
INJECTED = "injected"  # codex has the delta in its history
WAITING = "waiting"  # the SessionStart pending file is written; nothing consumed yet

# Where the delta is once a handoff returns (`Outcome.state`): delivered only when the
# target has it; otherwise where it waits and, in `action`, what brings it in.
DELIVERED = "delivered"  # in the Codex thread, or pushed live into the running session
QUEUED = "queued"  # in the running session's mailbox: its watcher or next stop takes it
PARKED = "parked"  # in the mailbox of a session that is not running
WAITING_FOR_RESUME = "waiting-for-resume"  # its SessionStart hook hands it over on resume
STATE_TEXT = {
    DELIVERED: "delivered",
    QUEUED: "queued in the running session's mailbox: its watcher or its next stop "
            "brings it in",
    PARKED: "parked in the mailbox: the session is not running, and it arrives at its "
            "first stop once resumed",
    WAITING_FOR_RESUME: "waiting for the session to resume: its SessionStart hook hands "
                        "it over",
}


@dataclass
class Outcome:
    """What a handoff did, for the CLI and MCP."""

    handoff_id: str
    target: str  # the ledger key
    to: str  # "codex" / "claude"
    via: str  # inject | mail | resume | none
    delivered: bool  # the target has it (inject, live mail) — see `state` when not
    prepared: Prepared | None = None
    nothing_new: bool = False
    dry_run: bool = False
    where: dict[str, Any] = field(default_factory=dict)  # thread / session / mailbox
    turn: dict[str, Any] | None = None
    settled: list[str] = field(default_factory=list)  # what became of an older pending
    warnings: list[str] = field(default_factory=list)
    state: str | None = None  # DELIVERED, QUEUED, PARKED, WAITING_FOR_RESUME (None: nothing sent)
    action: str | None = None  # what the human runs so that it arrives, if anything

    def arrived(self) -> None:
        self.delivered, self.state = True, DELIVERED

    def state_text(self) -> str:
        """The state for a person, with what to run."""
        text = STATE_TEXT.get(self.state or "", self.state or "nothing sent")
        return text + (f" — run `{self.action}`" if self.action else "")

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "ok": True, "handoffId": self.handoff_id, "to": self.to, "target": self.target,
            "via": self.via, "delivered": self.delivered, "state": self.state,
            "action": self.action, "nothingNew": self.nothing_new,
            "dryRun": self.dry_run, **self.where, "turn": self.turn,
            "settled": self.settled, "warnings": self.warnings}
        if self.prepared is not None:
            data.update({k: v for k, v in self.prepared.as_dict().items()
                         if k not in ("handoffId", "target", "warnings")})
            data["warnings"] = [*self.warnings, *self.prepared.warnings]
        return data


def busy_elsewhere(pending: dict[str, Any]) -> bool:
    """Another live process is carrying this pending handoff right now."""
    pid = pending.get("pid")
    return (pending.get("stage") in (PREPARING, SENDING, INJECTED) and isinstance(pid, int)
            and pid != os.getpid() and pid_alive(pid))


def refuse_busy(target: str, pending: dict[str, Any]) -> UsageError:
    return UsageError(f"another handoff to {target} ({pending.get('id')}) is being delivered "
                      f"by process {pending.get('pid')}; wait for it, then hand off again",
                      details={"pending": pending}, retryable=True)


def apply_verdict(state: ledger.State, target: str, old: dict[str, Any], verdict: str,
                  settled: list[str]) -> None:
    """`verdict`: "delivered" or any reason it did not arrive."""
    current = state["pending"].get(target)
    if not isinstance(current, dict) or current.get("id") != old.get("id"):
        return  # someone else settled it meanwhile
    if verdict == "delivered":
        ledger.commit(state, target, current, "a later handoff's check")
        settled.append(f"{old.get('id')}: had arrived; its watermarks are now recorded")
    else:
        ledger.drop(state, target, current, verdict)
        settled.append(f"{old.get('id')}: {verdict}; its material is in this handoff")


def claim(state: ledger.State, target: str, hid: str, links: dict[str, dict[str, Any]]
          ) -> dict[str, str]:
    """Link the agents, journal our handoff as preparing; the target's current marks."""
    current = state["pending"].get(target)
    if isinstance(current, dict) and busy_elsewhere(current):
        raise refuse_busy(target, current)
    for key, record in links.items():
        ledger.link(state, key, record)
    state["pending"][target] = {"id": hid, "stage": PREPARING, "pid": os.getpid(),
                                "created": iso_utc()}
    return ledger.known_by(state, target)


def unclaim(state: ledger.State, target: str, hid: str) -> None:
    current = state["pending"].get(target)
    if isinstance(current, dict) and current.get("id") == hid:
        state["pending"].pop(target, None)


def set_pending(state: ledger.State, target: str, record: dict[str, Any]) -> None:
    state["pending"][target] = record


def stage(state: ledger.State, target: str, hid: str, value: str) -> None:
    current = state["pending"].get(target)
    if isinstance(current, dict) and current.get("id") == hid:
        current["stage"] = value

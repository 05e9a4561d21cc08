"""The enums codexbridge decides with. States are never strings parsed back.

The schema's own enums (turn status, thread status type, …) are generated into
`codex/protocol/generated/enums.py`; the ones here are ours: how approvals are answered, what
became of one approval, and how following a turn ended.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

E = TypeVar("E", bound="WireEnum")


class WireEnum(StrEnum):
    """A string enum that prints and serialises as its value."""

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def parse(cls: type[E], value: object) -> E | None:
        """The member for `value`, or None for anything unknown (a newer codex's value)."""
        if not isinstance(value, str):
            return None
        try:
            return cls(value)
        except ValueError:
            return None


class ApprovalPolicy(WireEnum):
    """Who answers codex's approval requests during a bridge turn."""

    TUI = "tui"  # stay silent: the human decides in the TUI; fail-closed after a deadline
    DECLINE = "decline"  # refuse at once
    ACCEPT = "accept"  # approve at once (trusted environments; never over MCP)


class ApprovalOutcome(WireEnum):
    """What became of one server request during a turn (shown to the caller)."""

    PENDING = "pending"
    WAITING = "waiting for the TUI"
    ANSWERED_IN_TUI = "answered in the TUI"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    DECLINED_AFTER_DEADLINE = "declined after deadline (fail-closed)"
    REFUSED = "refused (error)"


class TurnOutcome(WireEnum):
    """How following one turn ended. The first four are codex's; the others are ours."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    TIMED_OUT = "timedOut"  # still running when we stopped following it
    BUSY = "busy"  # another turn held the thread until the deadline; nothing was sent

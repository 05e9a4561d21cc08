"""One turn at a time per thread, first come first served.

Each thread id has a line of tickets. The ticket at the head holds the thread; the
others wait in arrival order. Different threads never wait for each other.

* A waiter that gives up (timeout or cancellation) leaves the line where it stood; the
  tickets behind it keep their order and nobody moves past the head.
* The head is released explicitly. A send whose turn timed out (or whose caller went
  away) does not release at once: it hands its ticket to a watcher that releases only
  when the thread is idle again, so a later send never lands on a turn still running.

Single event loop, no locks: every state change happens between awaits.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from dataclasses import dataclass, field


class QueueTimeout(Exception):
    def __init__(self, key: str, waited: float, ahead: int) -> None:
        super().__init__(f"waited {waited:g} s for thread {key}; {ahead} turn(s) still ahead")
        self.key = key
        self.waited = waited
        self.ahead = ahead


_serial = itertools.count(1)


@dataclass(eq=False)
class Ticket:
    key: str
    label: str = ""
    serial: int = field(default_factory=lambda: next(_serial))
    granted: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())
    released: bool = False


class TurnQueue:
    def __init__(self) -> None:
        self._lines: dict[str, deque[Ticket]] = {}

    async def acquire(self, key: str, timeout: float | None, label: str = "") -> Ticket:
        """Wait for `key` (a thread id); QueueTimeout after `timeout` seconds in line."""
        line = self._lines.setdefault(key, deque())
        ticket = Ticket(key, label)
        line.append(ticket)
        if line[0] is ticket:
            ticket.granted.set_result(None)
            return ticket
        try:
            await asyncio.wait_for(asyncio.shield(ticket.granted), timeout)
        except asyncio.TimeoutError:
            if ticket.granted.done():  # granted in the same loop iteration: keep it
                return ticket
            ahead = self._leave(ticket)
            raise QueueTimeout(key, timeout or 0.0, ahead) from None
        except asyncio.CancelledError:
            if ticket.granted.done():
                self.release(ticket)
            else:
                self._leave(ticket)
            raise
        return ticket

    def release(self, ticket: Ticket) -> None:
        """Give the thread to the next ticket in line. Idempotent."""
        if ticket.released:
            return
        ticket.released = True
        line = self._lines.get(ticket.key)
        if not line or line[0] is not ticket:
            if line and ticket in line:
                line.remove(ticket)
            return
        line.popleft()
        self._grant_head(ticket.key)

    def _leave(self, ticket: Ticket) -> int:
        """Take a waiting ticket out of its line; returns how many were ahead of it."""
        ticket.released = True
        line = self._lines.get(ticket.key)
        if not line or ticket not in line:
            return 0
        ahead = list(line).index(ticket)
        line.remove(ticket)
        if not ticket.granted.done():
            ticket.granted.cancel()
        if not line:
            del self._lines[ticket.key]
        return ahead

    def _grant_head(self, key: str) -> None:
        line = self._lines.get(key)
        if not line:
            self._lines.pop(key, None)
            return
        head = line[0]
        if not head.granted.done():
            head.granted.set_result(None)

    def snapshot(self) -> dict[str, list[str]]:
        """thread id → labels in line, the holder first (for bridge_status)."""
        return {k: [t.label or f"#{t.serial}" for t in line]
                for k, line in self._lines.items() if line}

    def depth(self, key: str) -> int:
        return len(self._lines.get(key) or ())

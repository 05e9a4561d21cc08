"""The scoreboard every spike prints, and the few helpers the spikes share.

A spike prints `PASS <check>` or `FAIL <check>: <why>` per check, then
`N passed, N failed`; its exit status is 0 only when nothing failed. `run_spike` owns
the offline stack's life, so the app-server and the mock are stopped whatever the body
does, and bounds the body's time, so a spike can never hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.protocol.envelopes import Notification, ServerRequest
from codexbridge.host.binaries import pinned_codex
from tests.support.mock_codex import OfflineStack

Event = Notification | ServerRequest
SpikeBody = Callable[["Scoreboard", OfflineStack], Awaitable[None]]

SPIKE_BUDGET = 60.0
WAIT = 15.0  # one event; a SLOW mock turn of 200 characters takes about 7 s
_WHY_LIMIT = 400


class Scoreboard:
    def __init__(self, name: str) -> None:
        self.name = name
        self.passed = 0
        self.failed = 0

    def check(self, name: str, condition: object, why: str = "") -> bool:
        if condition:
            self.passed += 1
            print(f"PASS {name}", flush=True)
            return True
        self.failed += 1
        # One line per check, so the test (and a human) can read the board line by line.
        reason = " | ".join((why or "condition was false").splitlines())[:_WHY_LIMIT]
        print(f"FAIL {name}: {reason}", flush=True)
        return False

    def fail(self, name: str, why: str) -> None:
        self.check(name, False, why)

    @contextlib.contextmanager
    def section(self, name: str) -> Iterator[None]:
        """An exception becomes `FAIL <name>`: the rest of the section is skipped, the
        other sections still run."""
        try:
            yield
        except Exception as exc:
            self.fail(name, f"{type(exc).__name__}: {exc}")

    def report(self) -> int:
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1


def run_spike(name: str, body: SpikeBody, *,
              stack_type: Callable[[str], OfflineStack] = OfflineStack) -> int:
    """Start a private stack, run `body` within SPIKE_BUDGET, stop the stack; the exit code."""
    board = Scoreboard(name)
    codex = pinned_codex()
    if codex is None:
        board.fail("setup", "pinned codex not installed; run scripts/install-binaries")
        return board.report()
    # SIGTERM (a test runner's timeout) unwinds like Ctrl-C, so the finally below still
    # stops an app-server that lives in its own session and would otherwise be orphaned.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    stack = stack_type(str(codex))
    try:
        with board.section("setup"):
            stack.start()
        if board.failed == 0:
            with board.section(name):
                asyncio.run(_bounded(board, body(board, stack)))
    except KeyboardInterrupt:
        board.fail("interrupted", "stopped by SIGINT or SIGTERM")
    finally:
        stack.stop()
    return board.report()


async def _bounded(board: Scoreboard, body: Awaitable[None]) -> None:
    task = asyncio.ensure_future(body)
    done, _ = await asyncio.wait({task}, timeout=SPIKE_BUDGET)
    if not done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        board.fail("budget", f"the spike ran over {SPIKE_BUDGET:g} s")
        return
    task.result()


def text_input(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "text_elements": []}]


def turn_id_of(event: Event) -> str | None:
    """The turn an event belongs to: `turnId` on items and requests, `turn.id` on turns."""
    turn_id = event.params.get("turnId")
    if isinstance(turn_id, str):
        return turn_id
    turn = event.params.get("turn")
    return str(turn["id"]) if isinstance(turn, dict) and "id" in turn else None


class Recorder:
    """Everything one connection receives, in order. Checks look back over it, because an
    event can arrive before the answer to the request that caused it."""

    def __init__(self, client: AppServerClient) -> None:
        self.events: list[Event] = []
        self.closed = False
        self._sub = client.subscribe()
        self._changed = asyncio.Condition()
        self._task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        while True:
            event = await self._sub.get()
            async with self._changed:
                if event is None:
                    self.closed = True
                else:
                    self.events.append(event)
                self._changed.notify_all()
            if event is None:
                return

    def mark(self) -> int:
        return len(self.events)

    def select(self, method: str, *, since: int = 0,
               where: Callable[[Event], bool] | None = None) -> list[Event]:
        return [e for e in self.events[since:]
                if e.method == method and (where is None or where(e))]

    async def wait(self, method: str, *, since: int = 0, timeout: float = WAIT,
                   where: Callable[[Event], bool] | None = None) -> Event:
        """The first `method` event at or after `since` that `where` accepts."""

        async def find() -> Event:
            seen = since
            async with self._changed:
                while True:
                    for event in self.events[seen:]:
                        if event.method == method and (where is None or where(event)):
                            return event
                    seen = len(self.events)
                    if self.closed:
                        raise ConnectionError(f"connection closed before {method}")
                    await self._changed.wait()

        try:
            return await asyncio.wait_for(find(), timeout)
        except TimeoutError:
            raise TimeoutError(f"no {method} within {timeout:g} s") from None

    def close(self) -> None:
        self._sub.close()
        self._task.cancel()

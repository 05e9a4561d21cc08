"""`inbox watch --as NAME`: the asyncRewake watcher that wakes an idle Claude session.

Registered as an `asyncRewake` command hook on SessionStart and Stop, it runs in the
background and polls the mailbox. When mail arrives it first takes the live road (the
session's cross-session inbox, `messages/live.py`), as a push does: the human sees the
mail in full in Claude's TUI, where a wake shows only a collapsed "Stop hook feedback"
(measured on 2.1.332 — it also ignores a wake's `systemMessage`). Once the session's
transcript shows the frame, the watcher leaves quietly. When the live road is off or
not reachable, or a frame comes back, it exits 2 with the mail on stderr — Claude then
starts a new turn with that text (docs/protocol-notes.md, "asyncRewake"; 0.18 s
measured from file write to model request). A frame only handed over keeps it
watching: it settles the frame (`live.reconcile`) every OWED_EVERY, and mail that comes
back wakes the session the old way. Exit 0 does nothing, so timing out or being
replaced is silent.

A wake counts as delivered only once the session has it. Claude Code takes a wake only
from an exit 2 — a watcher killed first, even after writing its stderr, wakes nothing
(measured) — so the mail it takes waits in an in-flight record (`live.wake`) until the
session's transcript shows the wake; a watcher killed before its exit leaves that record
to the next watcher or stop, which puts the mail back after `live.WAKE_GRACE_S` and
delivers it. Every watcher settles such records every OWED_EVERY.

Claude starts another watcher at every Stop, including blocked ones, so they would pile
up. One watcher per mailbox at a time, the newest winning: each watcher writes its pid
into `NAME.watcher` (its claim) and then waits for the flock on that file; an older
watcher re-reads the claim every poll and leaves as soon as it names someone else,
which releases the lock to the newcomer. Only the lock holder pops mail, and popping is
the store's atomic take-by-rename, so even an overlap could not deliver a mail twice.

Under `claude -p` an asyncRewake hook cannot start a turn, yet Claude waits for it
before exiting (measured: a one-turn `-p` run took 40 s with two 20 s watchers). So a
watcher started by a headless Claude (`CLAUDE_CODE_ENTRYPOINT=sdk-…`) leaves at once.
"""

from __future__ import annotations

import os
import sys
import time
from enum import Enum

from ..host.locking import lock
from ..host.private import ensure_private_dir, open_state
from ..host.procs import pid_alive
from ..inbox.location import has_live, has_pending, watcher_path
from ..messages import live
from ..messages.listeners import record_listener
from .process import HookInput, claude_pid, courier_owed, log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..jsontypes import JsonObject

OWED_EVERY = 2.0  # s: how often an idle session's watcher looks after the courier
EXIT_WAKE = 2  # asyncRewake: exit 2 + stderr starts a new turn
EXIT_QUIET = 0


def parse_claim(data: bytes) -> int | None:
    """The pid in a NAME.watcher file (None for empty or half-written content)."""
    text = data.decode("ascii", errors="replace").strip()
    return int(text) if text.isdigit() else None


def headless(environ: Mapping[str, str] | None = None) -> bool:
    """True when the Claude that started us is `claude -p` / an SDK run."""
    env = os.environ if environ is None else environ
    return env.get("CLAUDE_CODE_ENTRYPOINT", "").startswith("sdk-")


class Claim:
    """This process's claim on NAME.watcher."""

    def __init__(self, path: str) -> None:
        self.fd = open_state(path, os.O_RDWR | os.O_CREAT)
        self.pid = os.getpid()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{self.pid}\n".encode(), 0)

    def still_mine(self) -> bool:
        return parse_claim(os.pread(self.fd, 64, 0)) == self.pid

    def close(self) -> None:
        os.close(self.fd)  # drops the flock for the next watcher


def run_watch(name: str, *, inbox: str, payload: JsonObject, timeout: float,
              interval: float) -> int:
    """Wait for mail; EXIT_WAKE after writing it to stderr, EXIT_QUIET otherwise."""
    ensure_private_dir(inbox)
    record_listener(inbox, name, payload, via="watch")
    if headless():
        return EXIT_QUIET  # nothing to wake, and Claude would wait for us
    deadline = time.monotonic() + max(0.0, timeout)
    claude = claude_pid()
    claim = Claim(watcher_path(inbox, name))
    owed_check = 0.0
    road = Road.LIVE
    try:
        holding = False
        while time.monotonic() < deadline:
            if holding and time.monotonic() >= owed_check:
                owed_check = time.monotonic() + OWED_EVERY
                courier_owed()
                if has_live(inbox, name):
                    # A frame never taken, or the wake of a watcher killed before it
                    # exited, comes back as mail (and this watcher delivers it).
                    _settle_live(inbox, name)
            if not claim.still_mine():
                return EXIT_QUIET  # a newer watcher took over
            if claude is not None and not pid_alive(claude):
                return EXIT_QUIET  # the session we serve is gone
            if not holding:
                holding = lock(claim.fd, blocking=False)
            if holding and has_pending(inbox, name):
                via = _live(inbox, name) if road is Road.LIVE else Road.WAKE
                if via is Road.DONE:
                    return EXIT_QUIET  # the session has it, shown in full
                if via is Road.WAKE and _wake(inbox, name, payload, claude):
                    return EXIT_WAKE
                if via is Road.HANDED:
                    road = via
            time.sleep(interval)
        return EXIT_QUIET
    finally:
        claim.close()


class Road(Enum):
    """Where this watcher's next mail goes."""

    LIVE = "live"  # try the session's cross-session inbox first
    HANDED = "handed"  # a frame is in the session's hands, unconfirmed: wake for the rest
    WAKE = "wake"  # exit 2 with the mail on stderr
    DONE = "done"  # the session's transcript shows the frame: nothing left to do


def _live(inbox: str, name: str) -> Road:
    """The live road for the waiting mail; where the next mail goes after it."""
    try:
        outcome = live.deliver_now(inbox, name)
    except Exception as exc:  # a bug here must not strand the mail: the wake carries it
        log(f"mailbox {name!r}: live delivery failed ({exc!r}): waking the session", True)
        return Road.WAKE
    if outcome.delivery is live.Route.LIVE:
        return Road.DONE if outcome.confirmed else Road.HANDED
    if outcome.delivery is live.Route.NONE:
        return Road.LIVE  # another taker was first: nothing here now
    return Road.WAKE  # not reachable, or refused and put back: the wake delivers it


def _settle_live(inbox: str, name: str) -> None:
    try:
        live.reconcile(inbox, name)
    except Exception as exc:  # the next stop or push settles it too
        log(f"mailbox {name!r}: settling a live frame failed ({exc!r})", True)


def _wake(inbox: str, name: str, payload: JsonObject, claude: int | None) -> bool:
    """Hand the waiting mail to Claude on stderr (True), or find only duplicates. The
    mail counts as delivered only once the session's transcript shows the wake
    (`live.wake`): a watcher killed before its exit 2 wakes nothing, and what it took
    goes back to the mailbox for the next watcher or stop."""
    inp = HookInput.read(payload)
    with live.wake(inbox, name, session_id=inp.session_id, transcript=inp.transcript_path,
                   claude_pid=claude) as text:
        if text is None:
            return False
        sys.stderr.buffer.write(text.encode("utf-8") + b"\n")
        sys.stderr.buffer.flush()
    return True

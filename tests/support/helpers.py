"""The small helpers every kind of test reaches for, written once.

    push          a mail into a mailbox, in this process (the store's own push)
    push_cli      the same through `codexbridge inbox push`, as a peer process does it
    wait_until    poll a readiness signal (a file, a record, a screen) until it gives
                  something — a test waits on what it needs, never on a fixed sleep
    eventually    the same inside an event loop, for state another task changes
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import store
from codexbridge.inbox.lines import new_mail

from .cli import CliResult, run_cli

T = TypeVar("T")

POLL = 0.05  # s between looks: short beside any timeout a test gives, cheap on 2 cores


def push(text: str, to: str = "box", *, inbox: str | None = None,
         sender: str = "codex") -> str:
    """Append a mail from `sender` to mailbox `to` of `inbox` (default: the state home's
    inbox); its id."""
    mail = new_mail(text, to=to, sender=sender)
    store.push(inbox or inbox_dir(), mail)
    assert mail.mail_id is not None
    return mail.mail_id


def push_cli(to: str, text: str, *options: str,
             env: Mapping[str, str] | None = None) -> CliResult:
    """`codexbridge inbox push --to TO [OPTIONS] TEXT` in its own process (`env` on top
    of this one's)."""
    return run_cli("inbox", "push", "--to", to, *options, text, env=env)


def wait_until(probe: Callable[[], T | None], timeout: float, what: str,
               detail: Callable[[], object] | None = None) -> T:
    """`probe()` once it gives something (anything true); after `timeout` seconds an
    AssertionError naming `what`, with `detail()` when given."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            extra = f"\n{detail()}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{extra}")
        time.sleep(POLL)


async def eventually(condition: Callable[[], object], timeout: float = 10.0,
                     what: str = "the condition") -> None:
    """`wait_until` for a test that runs an event loop: the loop goes on meanwhile."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)

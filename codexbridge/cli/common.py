"""Options and helpers shared by the commands that talk to the app-server."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import click

from ..errors import UsageError
from ..protocol.approvals import POLICIES

T = TypeVar("T")

url_option = click.option(
    "--url", metavar="URL",
    help="App-server URL (ws://HOST:PORT or unix://PATH). Default: $CODEX_BRIDGE_URL, "
         "else a running `codexbridge serve`, else codex's own daemon (what plain `codex` "
         "starts).")
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON object on stdout for scripts.")
# Who answers codex's approvals during the turn (protocol/approvals.py holds the rules).
approvals_option = click.option(
    "--approvals", type=click.Choice([p.value for p in POLICIES]), default=None,
    help="tui (default, $CODEX_BRIDGE_APPROVALS): stay silent, the human decides in the "
         "TUI, decline after --approval-timeout. decline: refuse at once. accept: approve "
         "at once (trusted environments only).")
approval_timeout_option = click.option(
    "--approval-timeout", type=float, default=None, metavar="S",
    help="Seconds to wait for the TUI before declining (default 300, "
         "$CODEX_BRIDGE_APPROVAL_TIMEOUT).")
wait_thread_option = click.option(
    "--wait", "wait_thread", type=click.FloatRange(min=0), default=0.0, metavar="S",
    help="Wait up to S seconds for the thread (the TUI makes it at the human's first "
         "message) instead of failing at once.")


def run_async(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(factory())


def read_text_arg(text: str) -> str:
    """TEXT, or standard input for `-`; empty text is refused (it would start an empty
    turn), and so is text over $CODEX_BRIDGE_TEXT_MAX characters (it goes to a model)."""
    from ..conversation.limits import over_limit, text_max

    if text == "-":
        raw = sys.stdin.buffer.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"stdin is not UTF-8 text ({exc.reason} at byte {exc.start})"
                             ) from exc
    if not text.strip():
        raise UsageError("the message is empty; pass TEXT or pipe it with `-`")
    why = over_limit(text, text_max(os.environ))
    if why:
        raise UsageError(why)
    return text


def ensure_dir(path: str, what: str) -> str:
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(full):
        raise UsageError(f"{what} {path!r} is not a directory")
    return full


__all__: list[Any] = ["ensure_dir", "json_option", "read_text_arg", "run_async", "url_option"]

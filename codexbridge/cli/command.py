"""What every command shares: the options, how it reports results and errors, how it
runs async code, and the one place it exits.

A command returns None (exit 0) or an exit status, or raises a BridgeError; `command()`
turns that into output and `sys.exit` — no command exits anywhere else, and no failure
prints a traceback: any other exception is a bug, exit 70 (`bug.py`). `command()` also
shows the library's log (warnings from `codexbridge.*` loggers) on stderr as
`codexbridge: …`: library code logs, only the front end decides where it goes.

Not imported for `codexbridge --help` (app.py lists the commands without loading them).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import select
import sys
from collections.abc import Callable, Coroutine
from typing import ParamSpec, TypeVar

import click

from ..codex.protocol.approvals import POLICIES
from ..errors import INTERRUPTED_EXIT, BridgeError, OutputClosedError, UsageError
from ..host.limits import over_limit, text_max
from ..host.private import check_state_dirs
from ..host.text import for_terminal
from .bug import error_payload, report_bug

T = TypeVar("T")
P = ParamSpec("P")

# -- the options the commands share ---------------------------------------------------

url_option = click.option(
    "--url", metavar="URL",
    help="App-server URL (ws://HOST:PORT or unix://PATH). Default: $CODEX_BRIDGE_URL, "
         "else a running `codexbridge serve`, else codex's own daemon (what plain `codex` "
         "starts).")
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON object on stdout for scripts.")
# Who answers codex's approvals during the turn (codex/protocol/approvals.py holds the rules).
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


# -- arguments --------------------------------------------------------------------------

def read_stdin(cap: int) -> bytes | None:
    """Standard input, or None when it holds more than `cap` bytes — found out by reading
    one byte more, never the rest: a flood on stdin must not fill the memory."""
    raw = sys.stdin.buffer.read(cap + 1)
    return None if len(raw) > cap else raw


def read_text_arg(text: str) -> str:
    """TEXT, or standard input for `-`; empty text is refused (it would start an empty
    turn), and so is text over $CODEX_BRIDGE_TEXT_MAX characters (it goes to a model)."""
    if text == "-":
        limit = text_max(os.environ)
        raw = read_stdin(4 * limit)  # a character is at most 4 bytes of UTF-8
        if raw is None:
            raise UsageError(f"stdin holds more than {limit} characters, the limit "
                             "($CODEX_BRIDGE_TEXT_MAX) — shorten it, or send a file path "
                             "instead")
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


def run_async(factory: Callable[[], Coroutine[object, None, T]]) -> T:
    return asyncio.run(factory())


# -- output -----------------------------------------------------------------------------

def echo(text: object = "", *, err: bool = False, nl: bool = True) -> None:
    """Print `text` for a person: what every command prints goes through here, so that
    nothing a model or a peer wrote (a reply, a mail, a thread's name, an error codex
    passed on) acts on the terminal — its control characters are shown as escapes
    (`host/text.for_terminal`), whether stdout is a terminal or a pipe (into `less -R`,
    say: a terminal too)."""
    click.echo(for_terminal("" if text is None else str(text)), err=err, nl=nl)


def echo_painted(line: str, *, colour: bool) -> None:
    """Print a line whose every piece of outside text was made harmless by
    `for_terminal` already, with codexbridge's own colour around the pieces (`log`):
    `echo` would show that colour's escapes as text. Without `colour`, click strips any."""
    click.echo(line, color=colour)


def emit_json(data: object) -> None:
    """One JSON object for scripts — through `echo` too: JSON escapes C0 controls, but
    leaves C1 controls and bidi overrides raw; their escapes keep it the same JSON."""
    echo(json.dumps(data, ensure_ascii=False, indent=2))


def report(exc: BridgeError, as_json: bool) -> int:
    """Print `exc` for a person (stderr) and, with --json, for a script (stdout)."""
    if as_json and not exc.reported:
        emit_json(error_payload(exc))
    echo(f"codexbridge: {exc.message}", err=True)
    return exc.exit_code


class _Stderr(logging.Handler):
    """The library's log lines, as the person sees every codexbridge line on stderr.
    Through `echo` at each line, so it writes to whatever stderr is now (a test's
    CliRunner swaps it per run)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            echo(self.format(record), err=True)
        except Exception:
            self.handleError(record)


def show_log() -> None:
    """Show warnings logged under `codexbridge.*` on stderr, `codexbridge: ` first (once
    per process, however many commands run in it)."""
    logger = logging.getLogger("codexbridge")
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr(logging.WARNING)
        handler.setFormatter(logging.Formatter("codexbridge: %(message)s"))
        logger.addHandler(handler)


# -- running a command ------------------------------------------------------------------

def command(fn: Callable[P, int | None], *, check_state: bool = True) -> Callable[P, None]:
    """Run the command and exit: 0 / its returned status, or the error's exit code.

    The wrapped command's `as_json` keyword (from `--json`) decides the error format.
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        show_log()
        try:
            if check_state:
                check_state_dirs()
            status = fn(*args, **kwargs)
        except BridgeError as exc:
            status = report(exc, bool(kwargs.get("as_json")))
        except KeyboardInterrupt:
            echo("codexbridge: interrupted", err=True)
            status = INTERRUPTED_EXIT
        except BrokenPipeError:
            status = reader_gone()
        except Exception as exc:  # a bug: exit 70, the traceback in the log (cli/bug.py)
            status = report_bug(exc, as_json=bool(kwargs.get("as_json")), where=_where())
        try:
            sys.stdout.flush()  # (what is still buffered: `… | head` may have gone)
        except BrokenPipeError:
            status = reader_gone()
        sys.exit(status if isinstance(status, int) else 0)

    return wrapper


def reader_gone() -> int:
    """Whoever read our stdout went away (`codexbridge … | head`): not a bug, exit 74 as
    documented. stdout is pointed at /dev/null so the interpreter's last flush cannot
    fail again (it would make the exit status 120)."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return OutputClosedError.exit_code


def stdout_gone() -> bool:
    """Nobody reads our stdout any more (a pipe whose reader closed it)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _where() -> str:
    ctx = click.get_current_context(silent=True)
    return ctx.command_path if ctx else "codexbridge"


def diagnosing(fn: Callable[P, int | None]) -> Callable[P, None]:
    """`command` for `doctor`: it reports an unsafe state dir as a FAIL row instead."""
    return command(fn, check_state=False)

"""How every command reports results and errors, and the one place commands exit.

A command returns None (exit 0) or an exit status, or raises a BridgeError; `command()`
turns that into output and `sys.exit` — no command exits anywhere else, and no failure
we know about prints a traceback.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..errors import INTERRUPTED_EXIT, BridgeError

F = TypeVar("F", bound=Callable[..., Any])


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def error_payload(exc: BridgeError) -> dict[str, Any]:
    return {"ok": False, "error": {"code": exc.code, "message": exc.message,
                                   "retryable": exc.retryable, "details": exc.details}}


def report(exc: BridgeError, as_json: bool) -> int:
    """Print `exc` for a person (stderr) and, with --json, for a script (stdout)."""
    if as_json and not exc.reported:
        emit_json(error_payload(exc))
    click.echo(f"codexbridge: {exc.message}", err=True)
    return exc.exit_code


def check_state_dirs() -> None:
    """Refuse a state home or inbox dir that would lock the user out or mix our files
    into another agent's state (`host/private.unsafe_state_dir`) — before anything is
    written there. `doctor` reports the same as a FAIL row instead."""
    import contextlib
    import os

    from ..errors import UsageError
    from ..host.private import HOME_ENV, state_home, unsafe_state_dir

    problem = unsafe_state_dir(state_home(), HOME_ENV)
    if problem is None and os.environ.get("CODEX_BRIDGE_INBOX_DIR"):
        problem = unsafe_state_dir(os.environ["CODEX_BRIDGE_INBOX_DIR"],
                                   "CODEX_BRIDGE_INBOX_DIR")
    if problem:
        raise UsageError(f"refusing to use it: {problem}", details={"problem": problem})
    home = state_home()
    # repaired on start: the state home is the user's alone (doctor shows the rest)
    with contextlib.suppress(OSError):
        if os.stat(home).st_mode & 0o077:
            os.chmod(home, 0o700)


def command(fn: F, *, check_state: bool = True) -> F:
    """Run the command and exit: 0 / its returned status, or the error's exit code.

    The wrapped command's `as_json` keyword (from `--json`) decides the error format.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            if check_state:
                check_state_dirs()
            status = fn(*args, **kwargs)
        except BridgeError as exc:
            status = report(exc, bool(kwargs.get("as_json")))
        except KeyboardInterrupt:
            click.echo("codexbridge: interrupted", err=True)
            status = INTERRUPTED_EXIT
        sys.exit(status if isinstance(status, int) else 0)

    return wrapper  # type: ignore[return-value]


def diagnosing(fn: F) -> F:
    """`command` for `doctor`: it reports an unsafe state dir as a FAIL row instead."""
    return command(fn, check_state=False)

"""How every command reports results and errors, and the one place commands exit.

A command returns None (exit 0) or an exit status, or raises a BridgeError; `command()`
turns that into output and `sys.exit` — no command exits anywhere else, and no failure
prints a traceback: any other exception is a bug, exit 70 (`bug.py`).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..errors import INTERRUPTED_EXIT, BridgeError
from ..host.private import check_state_dirs

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
        except Exception as exc:  # a bug: exit 70, the traceback in the log (cli/bug.py)
            from .bug import report_bug

            status = report_bug(exc, as_json=bool(kwargs.get("as_json")), where=_where())
        sys.exit(status if isinstance(status, int) else 0)

    return wrapper  # type: ignore[return-value]


def _where() -> str:
    ctx = click.get_current_context(silent=True)
    return ctx.command_path if ctx else "codexbridge"


def diagnosing(fn: F) -> F:
    """`command` for `doctor`: it reports an unsafe state dir as a FAIL row instead."""
    return command(fn, check_state=False)

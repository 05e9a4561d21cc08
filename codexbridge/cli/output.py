"""How every command reports results and errors.

One place maps the error tree to a message and an exit code, so no command prints a
traceback for a failure we know about.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..errors import BridgeError

F = TypeVar("F", bound=Callable[..., Any])


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def error_payload(exc: BridgeError) -> dict[str, Any]:
    return {"ok": False, "error": {"code": exc.code, "message": exc.message,
                                   "details": exc.details}}


def fail(exc: BridgeError, as_json: bool) -> None:
    """Print `exc` for a person (stderr) or a script (stdout JSON) and exit."""
    if as_json:
        emit_json(error_payload(exc))
    click.echo(f"codexbridge: {exc.message}", err=True)
    sys.exit(exc.exit_code)


def handles_errors(fn: F) -> F:
    """Turn BridgeError into a clear message and its documented exit code.

    The wrapped command's `as_json` keyword (from `--json`) decides the format.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BridgeError as exc:
            fail(exc, bool(kwargs.get("as_json")))
        except KeyboardInterrupt:
            click.echo("codexbridge: interrupted", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]

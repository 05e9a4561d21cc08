"""An unexpected exception is a bug in codexbridge: exit 70 (EX_SOFTWARE), as the
exit-code table promises — not a traceback with exit 1, which means "turn failed".

The person gets one line on stderr (what broke, and where the traceback is); the
traceback goes to `<state home>/logs/bugs.log` (0600, like every log: it can hold message
text). With `--json` a script also gets the usual error object (code INTERNAL_ERROR).
`cli/__init__.py` wraps its fast paths too: it imports this module only when something
fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from typing import TextIO

from .. import __version__
from ..errors import BridgeError, internal
from ..host.private import open_private_log
from ..host.text import for_terminal

LOG_NAME = "bugs.log"


def log_path() -> str:
    from ..inbox.location import log_dir  # lazy: every command imports this module, few fail

    return os.path.join(log_dir(), LOG_NAME)


def write_traceback(exc: BaseException, where: str) -> str | None:
    """Append `exc`'s traceback to the bug log; its path, or None when it could not be
    written (then the caller shows the traceback instead: nothing is lost)."""
    path = log_path()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    text = (f"{stamp}Z pid={os.getpid()} codexbridge {__version__} {where}: "
            f"{type(exc).__name__}\n" + "".join(traceback.format_exception(exc)) + "\n")
    try:
        fd = open_private_log(path)
        try:
            os.write(fd, text.encode("utf-8", errors="replace"))
        finally:
            os.close(fd)
    except OSError:
        return None
    return path


def report_bug(exc: BaseException, *, as_json: bool, where: str = "codexbridge") -> int:
    """Report `exc` as a bug (one stderr line, the traceback in the log; with `as_json`
    the error object on stdout) and return the exit code, 70."""
    path = write_traceback(exc, where)
    error = internal(exc, where)
    error.details["log"] = path
    said = " ".join(str(exc).split())  # one line, whatever the message holds
    what = f"{type(exc).__name__}: {said}" if said else type(exc).__name__
    where_tb = f"the traceback is in {path}" if path else "the traceback follows"
    line = f"codexbridge: a bug in codexbridge: {what} ({where_tb}; please report it)"
    if as_json:
        _write(sys.stdout, json.dumps(error_payload(error), ensure_ascii=False, indent=2,
                                      default=str))
    _write(sys.stderr, line)
    if path is None:
        _write(sys.stderr, "".join(traceback.format_exception(exc)).rstrip())
    return error.exit_code


def _write(stream: TextIO, text: str) -> None:
    # The stream itself may be what broke (a closed pipe): the exit code still says it.
    # An exception's message can quote anything (a reply, a name): shown, not acted on.
    with contextlib.suppress(OSError, ValueError):
        print(for_terminal(text), file=stream, flush=True)


def error_payload(exc: BridgeError) -> dict[str, object]:
    """The error object a script reads with `--json`: for a bug as for any error."""
    return {"ok": False, "error": {"code": exc.code, "message": exc.message,
                                   "retryable": exc.retryable, "details": exc.details}}

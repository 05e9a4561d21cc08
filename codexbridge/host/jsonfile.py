"""Reading a JSON object someone else may be writing (or may have damaged)."""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # (no `typing` at run time: the Stop hook imports this module)
if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue


def loads_json(text: str | bytes) -> JsonValue:
    """`json.loads`, but JSON nested past the interpreter's recursion limit raises the
    ValueError every caller already handles: json raises RecursionError on it, which a
    file someone edited (or damaged) must not turn into a traceback."""
    try:
        value: JsonValue = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    return value


def nofollow(path: str, flags: int) -> int:
    """`open(…, opener=nofollow)`: a symlink is refused (ELOOP), never followed."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)


def read_object(path: str) -> JsonObject | None:
    """The JSON object in `path`; None when it is missing, unreadable, not JSON, or not
    an object — the callers treat all of those as "not there (yet)"."""
    try:
        # never through a symlink: state files are ours, written by rename
        with open(path, encoding="utf-8", opener=nofollow) as fh:
            data = loads_json(fh.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None

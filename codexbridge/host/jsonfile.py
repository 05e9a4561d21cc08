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


def damaged(path: str, what: str, why: str) -> Exception:
    """The error for a state file of ours that no longer reads (naming the file)."""
    from ..errors import DamagedStateError  # lazy: the Stop hook imports no typing (~3 ms)

    return DamagedStateError(f"{what} {path} is damaged ({why}); it was not used",
                             details={"path": path})


def read_record(path: str, what: str) -> JsonObject | None:
    """The JSON object in `path`, a state file of ours (a `what`, for the message); None
    when there is no such file. A file that is there but cannot be read, is not JSON or
    not an object raises DamagedStateError naming it."""
    try:
        with open(path, encoding="utf-8", opener=nofollow) as fh:
            data = loads_json(fh.read())
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise damaged(path, what, exc.strerror or str(exc)) from None
    except ValueError as exc:  # not JSON, not UTF-8, nested past reading
        raise damaged(path, what, f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise damaged(path, what, "not a JSON object")
    return data


def record_version(data: JsonObject, path: str, what: str) -> int:
    """A record's format version: 1 for a file written before records had one; a value
    that is not a positive whole number raises DamagedStateError. A newer version is
    read for the fields this codexbridge knows (each format is only ever added to)."""
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise damaged(path, what, f"version {version!r}")
    return version


def read_keyed(path: str, what: str, key: str) -> tuple[JsonObject, int, str] | None:
    """A versioned record of ours that cannot do without the string field `key`: (its
    object, its version, that field); None when there is no file. Anything else wrong
    raises DamagedStateError naming the file (`read_record`, `record_version`)."""
    data = read_record(path, what)
    if data is None:
        return None
    version = record_version(data, path, what)
    value = data.get(key)
    if not isinstance(value, str):
        raise damaged(path, what, f"no {key}")
    return data, version, value

"""JSON as the type checker sees it, and the few narrowings every reader needs.

`JsonValue` is what `json.loads` returns; `JsonObject` is one decoded object. Code that
reads the wire, a record or a settings file takes a `JsonObject` and narrows each value
it uses with the functions below (a wrong type reads as absent, never as a crash) —
instead of `Any`, which lets a misspelt key or a wrong type through unchecked.

No `typing` at run time: the Stop hook imports this module, so the aliases exist for the
type checker only (import them under `TYPE_CHECKING`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias

    JsonValue: TypeAlias = (
        "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None")
    JsonObject: TypeAlias = "dict[str, JsonValue]"
    JsonArray: TypeAlias = "list[JsonValue]"


def obj(value: object) -> JsonObject:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def arr(value: object) -> JsonArray:
    """`value` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def objs(value: object) -> list[JsonObject]:
    """The objects in a JSON array (anything else in it is skipped)."""
    return [v for v in arr(value) if isinstance(v, dict)]


def opt_str(value: object) -> str | None:
    """A string, or None for anything else (including the empty string's absence)."""
    return value if isinstance(value, str) else None


def text(value: object) -> str:
    """A string for printing: None → "", anything else → its str()."""
    return "" if value is None else value if isinstance(value, str) else str(value)


def opt_int(value: object) -> int | None:
    """An integer (bool is not one), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def opt_float(value: object) -> float | None:
    """A number (bool is not one) as a float, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)

"""Text that can be written: outside JSON may carry a lone UTF-16 surrogate."""

from __future__ import annotations


def writable(value: str) -> str:
    """`value` with every lone surrogate as U+FFFD.

    A `\\ud800` escape with no partner (a JS writer cutting an emoji in half) is valid
    JSON, and json.loads turns it into a str that cannot be encoded to UTF-8: every later
    write of it (a record, a delta file, a ledger) would fail, far from where it came in.
    """
    if value.isascii():
        return value
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")

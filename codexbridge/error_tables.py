"""The exit-code and MCP-code tables, rendered from the error tree in `errors.py`.

A class that introduces an exit code (or an MCP code) says what it means
(`exit_meaning`, `mcp_meaning`); subclasses inherit the code without re-describing it.
Every `--help` epilog, the README's exit-code table and docs/mcp.md's error codes come
from here (`scripts/render-docs` writes the docs; a unit test checks they are current).
"""

from __future__ import annotations

from .errors import INTERRUPTED_EXIT, BridgeError


def _tree() -> list[type[BridgeError]]:
    out: list[type[BridgeError]] = []

    def walk(cls: type[BridgeError]) -> None:
        out.append(cls)
        for sub in cls.__subclasses__():
            walk(sub)

    walk(BridgeError)
    return out


def _meaning(cls: type[BridgeError]) -> str | None:
    """The exit meaning of `cls`: its own, else the nearest base's with the same exit
    code, else the tree's for that code."""
    for base in cls.__mro__:
        if "exit_meaning" in vars(base) and getattr(base, "exit_code", None) == cls.exit_code:
            text = vars(base)["exit_meaning"]
            return str(text) if text else None
    return exit_meanings().get(cls.exit_code)


def exit_meanings() -> dict[int, str]:
    """Exit code → meaning over the whole tree (plus 0 and 130); a code two classes
    introduce lists both meanings."""
    table: dict[int, list[str]] = {0: ["success"]}
    for cls in _tree():
        if "exit_meaning" in vars(cls) and cls.exit_meaning:
            table.setdefault(cls.exit_code, [])
            if cls.exit_meaning not in table[cls.exit_code]:
                table[cls.exit_code].append(cls.exit_meaning)
    table[INTERRUPTED_EXIT] = ["interrupted (Ctrl-C)"]
    return {code: " / ".join(texts) for code, texts in sorted(table.items())}


def exit_help(*classes: type[BridgeError], success: str = "success",
              extra: dict[int, str] | None = None) -> str:
    """The `Exit codes:` epilog of one command: 0, the codes `classes` can exit with
    (each with that class's meaning; every code when none are given), and `extra` rows
    the command adds."""
    rows: dict[int, str] = {}
    if classes:
        for cls in classes:
            text = _meaning(cls)
            if text and cls.exit_code not in rows:
                rows[cls.exit_code] = text
    else:
        rows = exit_meanings()
    rows[0] = success
    rows.update(extra or {})
    lines = [f"  {code:<3} {text}" for code, text in sorted(rows.items())]
    return "\b\nExit codes:\n" + "\n".join(lines) + "\n"


def mcp_codes() -> dict[str, tuple[bool, str]]:
    """MCP code → (retryable, meaning), for every code a tool result can carry."""
    table: dict[str, tuple[bool, str]] = {}
    for cls in _tree():
        # Only the class that introduces a code describes it (subclasses inherit it).
        if "mcp_meaning" in vars(cls) and cls.mcp_meaning and cls.mcp_code not in table:
            table[cls.mcp_code] = (cls.retryable, cls.mcp_meaning)
    return table

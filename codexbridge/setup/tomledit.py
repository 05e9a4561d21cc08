"""Putting codexbridge's table into codex's config.toml as one marked block. Pure: text in,
text out.

config.toml is the user's hand-written file (comments, order, spacing), so it is edited
as text, never re-serialised: our tables go in one block between two marker comments,
appended at the end (a TOML table header may follow anything), one block per server
name. Running again replaces
the block in place (same text: no change); `--remove` cuts the block and the one blank
line we put before it, which gives back the original bytes.

`codex mcp add NAME …` writes the same `[mcp_servers.NAME]` table but cannot set
`tool_timeout_sec` or `default_tools_approval_mode`, and a second `mcp add` replaces the
whole table silently (docs/fitting-in.md, "The Codex side") — hence our own block.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from ..errors import UsageError


def begin_marker(name: str) -> str:
    return f"# >>> codexbridge setup: {name} >>> (`codexbridge setup codex --remove` takes it out)"


def end_marker(name: str) -> str:
    return f"# <<< codexbridge setup: {name} <<<"


Loader = Callable[[str], Mapping[str, object]]


def toml_value(value: object) -> str:
    """A TOML literal for str / bool / int / float / list of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return basic_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML literal for {type(value).__name__}")


# TOML basic strings allow no control character but tab (U+0000-U+001F, U+007F), nor a
# bare `"` or `\`; JSON's escaping differs (it writes U+007F as is: invalid TOML).
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n",
            "\f": "\\f", "\r": "\\r"}


def basic_string(text: str) -> str:
    """`text` as a TOML basic string ("…"), valid for every str of Unicode scalars."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:
            raise UsageError(f"{text!r} cannot go into config.toml: it holds a lone "
                             "surrogate, not text (a name that is not UTF-8?); nothing was "
                             "changed")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _key(name: str) -> str:
    # TOML bare keys are ASCII letters, digits, `-` and `_` only (str.isalnum is wider).
    bare = name and all(ch.isascii() and (ch.isalnum() or ch in "-_") for ch in name)
    return name if bare else basic_string(name)


def server_block(name: str, table: Mapping[str, object], env: Mapping[str, str],
                 comment: str | None = None) -> str:
    """The marked block: `[mcp_servers.NAME]` with `table`, then `.env` when given; a
    `comment` (its lines starting with `#`) goes right under the header."""
    lines = [begin_marker(name), f"[mcp_servers.{_key(name)}]"]
    if comment:
        lines += comment.splitlines()
    lines += [f"{_key(k)} = {toml_value(v)}" for k, v in table.items()]
    if env:
        lines += ["", f"[mcp_servers.{_key(name)}.env]"]
        lines += [f"{_key(k)} = {toml_value(v)}" for k, v in env.items()]
    lines.append(end_marker(name))
    return "\n".join(lines) + "\n"


class Span(NamedTuple):
    start: int  # index of the block's first character (the BEGIN line)
    end: int  # index just after the END line's newline


def find_block(text: str, name: str) -> Span | None:
    begin, finish = begin_marker(name), end_marker(name)
    start = text.find(begin)
    if start < 0 or (start > 0 and text[start - 1] != "\n"):
        return None
    stop = text.find(finish, start)
    if stop < 0:
        raise UsageError("config.toml has codexbridge's begin marker but no end marker "
                         f"({finish!r}); fix the block by hand (nothing was changed)")
    end = stop + len(finish)
    if text[end:end + 1] == "\n":
        end += 1
    return Span(start, end)


def merge(text: str, name: str, block: str, load: Loader, where: str) -> tuple[str, bool]:
    """(new text, whether we added the separating blank line). UsageError when the
    server is already configured outside our block, or the result is not valid TOML."""
    current = check(text, load, where)
    servers = current.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise UsageError(f"{where} sets mcp_servers to a {type(servers).__name__}, not a "
                         "table; fix it by hand first (nothing was changed)",
                         details={"file": where})
    span = find_block(text, name)
    if span is not None:
        new = text[:span.start] + block + text[span.end:]
        separator = False  # kept as it was
    else:
        if name in (servers or {}):
            raise UsageError(
                f"{where} already has [mcp_servers.{name}] (not written by `codexbridge "
                f"setup`): remove it first (`codex mcp remove {name}`), or pass --name "
                "to register under another name (nothing was changed)",
                details={"file": where, "server": name})
        base = text if not text or text.endswith("\n") else text + "\n"
        separator = bool(base.strip())
        new = base + ("\n" if separator else "") + block
    after = _load(new, load, where, merged=True)
    placed = after.get("mcp_servers")
    if not isinstance(placed, dict) or not isinstance(placed.get(name), dict):
        raise UsageError(f"adding [mcp_servers.{name}] to {where} would not register it "
                         "(another table there takes the name); fix the file by hand "
                         "(nothing was changed)")
    return new, separator


def cut(text: str, name: str, separator: bool) -> str:
    """`text` without our block (and without the blank line before it when we added
    it); unchanged when there is no block."""
    span = find_block(text, name)
    if span is None:
        return text
    start = span.start
    if separator and text[:start].endswith("\n\n"):
        start -= 1
    return text[:start] + text[span.end:]


def check(text: str, load: Loader, where: str) -> Mapping[str, object]:
    """The parsed file; UsageError naming it when it is not valid TOML."""
    return _load(text, load, where) if text.strip() else {}


def _load(text: str, load: Loader, where: str, merged: bool = False
          ) -> Mapping[str, object]:
    try:
        return load(text)
    except ValueError as exc:
        if merged:
            raise UsageError(f"{where} would not be valid TOML with codexbridge's table "
                             f"({exc}); is [mcp_servers] an inline table there? Fix it by "
                             "hand (nothing was changed)", details={"file": where}) from exc
        raise UsageError(f"{where} is not valid TOML ({exc}); fix it first (nothing was "
                         "changed)", details={"file": where}) from exc

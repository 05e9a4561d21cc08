"""Strategies shared by the bad-input suite: junk of every shape a parser may be handed."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from .schemagen import json_scalars, json_values

__all__ = ["deep_json", "json_scalars", "json_values", "junk_bytes", "junk_text",
           "lone_surrogate_json", "nasty_text"]

# Text with what breaks naive code: NUL, controls, line separators, BOM, RTL marks,
# astral characters; never lone surrogates (a str from UTF-8 cannot hold them).
nasty_text = st.text(
    st.characters(codec="utf-8") | st.sampled_from(
        ["\x00", "\n", "\r", "\t", "\x1b", "\u2028", "\u2029", "\ufeff", "\u202e",
         "\U0001f600", "\\", '"', "{", "}", "[", "]"]),
    max_size=60)


@st.composite
def deep_json(draw: st.DrawFn) -> str:
    """JSON nested past the interpreter's recursion limit (json.loads raises
    RecursionError, not ValueError, on it), sometimes inside a plausible message."""
    depth = draw(st.integers(1_100, 60_000))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    core = opener * depth + "1" + closer * depth
    wrap = draw(st.sampled_from(["{}", '{{"method":"item/completed","params":{{"x":{}}}}}',
                                 '{{"id":1,"result":{}}}', '{{"text":{}}}']))
    return wrap.format(core) if wrap != "{}" else core


# JSON text whose strings hold lone surrogates (`\ud800`): valid JSON, and json.loads
# turns it into a str that cannot be encoded to UTF-8.
lone_surrogate_json = st.builds(
    lambda pre, s, post: json.dumps(pre + "\\u" + s + post, ensure_ascii=True)
    .replace("\\\\u", "\\u"),
    st.text(st.characters(codec="ascii", exclude_characters='"\\'), max_size=5),
    st.sampled_from(["d800", "DBFF", "dc00", "dfff"]),
    st.text(st.characters(codec="ascii", exclude_characters='"\\'), max_size=5))

junk_bytes = st.binary(max_size=300) | st.builds(
    lambda v, cut: json.dumps(v).encode()[:cut], json_values, st.integers(0, 80))
junk_text = st.text(max_size=300) | nasty_text | st.builds(
    lambda v, cut: json.dumps(v)[:cut], json_values, st.integers(0, 80))


def jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True

"""How much text one message may carry to the other agent's model. Pure.

Everything we put in front of a model is bounded: a request over the limit is refused
(the sender can shorten it), and an answer over it — Codex's reply going to Claude,
Claude's final message going back to Codex — is cut with a note saying where the rest
is, because refusing an answer would lose it.

    CODEX_BRIDGE_TEXT_MAX    characters per message (default 200,000; the MCP
                             tools read the same knob)
"""

from __future__ import annotations

from collections.abc import Mapping

TEXT_MAX_ENV = "CODEX_BRIDGE_TEXT_MAX"
DEFAULT_TEXT_MAX = 200_000


def text_max(env: Mapping[str, str]) -> int:
    raw = env.get(TEXT_MAX_ENV, "").strip()
    try:
        value = int(raw) if raw else DEFAULT_TEXT_MAX
    except ValueError:
        return DEFAULT_TEXT_MAX  # a bad knob must not make every send fail
    return value if value > 0 else DEFAULT_TEXT_MAX


def over_limit(text: str, limit: int) -> str | None:
    """Why `text` may not be sent, or None."""
    if len(text) <= limit:
        return None
    return (f"the message is {len(text)} characters; the limit is {limit} "
            f"(${TEXT_MAX_ENV}) — shorten it, or send a file path instead")


def clip(text: str, limit: int, rest: str) -> str:
    """`text` cut to `limit` characters, ending with a note that says where `rest` is."""
    if len(text) <= limit:
        return text
    note = f"\n\n[… {len(text) - limit} more characters cut here; the whole text: {rest}]"
    return text[:max(0, limit - len(note))] + note

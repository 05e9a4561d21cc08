"""How much text one message may carry to the other agent's model.

Everything we put in front of a model is bounded: a request over the limit is refused
(the sender can shorten it), and an answer over it — Codex's reply going to Claude,
Claude's final message going back to Codex — is cut with a note saying where the rest
is, because refusing an answer would lose it.

    CODEX_BRIDGE_TEXT_MAX    characters per message to Codex (default 200,000; the
                             MCP tools read the same knob)
    CODEX_BRIDGE_MAIL_MAX    bytes per mail to Claude (default 10 MiB): the hard cap
                             of a push; mail over 64 KiB reaches Claude as a preview
                             and the path of the whole text (inbox/render.py)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from ..errors import UsageError

TEXT_MAX_ENV = "CODEX_BRIDGE_TEXT_MAX"
DEFAULT_TEXT_MAX = 200_000


def text_max(env: Mapping[str, str]) -> int:
    return env_int(env, TEXT_MAX_ENV, DEFAULT_TEXT_MAX)


MAIL_MAX_ENV = "CODEX_BRIDGE_MAIL_MAX"
DEFAULT_MAIL_MAX = 10 * 1024 * 1024


def mail_max(env: Mapping[str, str]) -> int:
    return env_int(env, MAIL_MAX_ENV, DEFAULT_MAIL_MAX)


MAX_HOPS_ENV = "CODEX_BRIDGE_MAX_HOPS"
DEFAULT_MAX_HOPS = 4


def max_hops(env: dict[str, str] | None = None) -> int:
    raw = (os.environ if env is None else env).get(MAX_HOPS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_HOPS
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{MAX_HOPS_ENV}={raw!r} is not a whole number") from None
    if value < 1:
        raise UsageError(f"{MAX_HOPS_ENV} must be at least 1, got {raw!r}")
    return value


_said: set[str] = set()


def env_int(env: Mapping[str, str], name: str, default: int) -> int:
    """`env[name]` as a whole number >= 1; unset or empty is `default`.

    A bad value (`zz`, `0`, `-5`) falls back to `default` and says so once per process
    (a warning logged: on stderr — `codexbridge: ` first in a command, bare where
    nothing is set up), rather than failing: these caps are also read where an answer is
    already in hand — the courier bounding Codex's reply to Claude (talk/courier.py), the
    delivery clipping Claude's answer (talk/deliveries.py) — and failing there would
    lose it. The courier's stderr is its log (logs/courier.log), so it is said there too.
    """
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value >= 1:
        return value
    note = f"{name}={raw!r} is not a whole number of at least 1; using the default, {default}"
    if note not in _said:
        _said.add(note)
        logging.getLogger(__name__).warning("%s", note)
    return default


def mail_over_limit(text: str, limit: int) -> str | None:
    """Why a mail may not be stored, or None (the cap counts UTF-8 bytes)."""
    size = len(text.encode("utf-8"))
    if size <= limit:
        return None
    return (f"the mail is {size} bytes; the cap is {limit} (${MAIL_MAX_ENV}) — write it to "
            "a file and send the path instead")


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

"""How much text one message may carry to the other agent's model.

Everything we put in front of a model is bounded: a request over the limit is refused
(the sender can shorten it), and an answer over it — Codex's reply going to Claude,
Claude's final message going back to Codex — is cut with a note saying where the rest
is, because refusing an answer would lose it.

    CODEX_BRIDGE_TEXT_MAX    characters per message to Codex (default 200,000; the
                             MCP tools read the same knob)
    CODEX_BRIDGE_MAIL_MAX    bytes per mail to Claude (default 1 MiB): the hard cap
                             of a push (`inbox push`, MCP `claude_message_send`, and
                             the courier cutting Codex's answer to fit); mail over
                             64 KiB reaches Claude as a preview and the path of the
                             whole text (messages/render.py)
    CODEX_BRIDGE_BATCH_MAX   bytes of mail one delivery hands Claude — the Stop hook's
                             block, the watcher's wake, a live frame — (default 256
                             KiB, always at least one mail): the rest waits for the
                             next delivery (inbox/store.py `take_for_claude`)
    CODEX_BRIDGE_FRAME_MAX   bytes of one message codexbridge accepts from the
                             app-server (default 16 MiB): a bigger one ends the
                             connection with an error naming this (codex/transport.py)
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
# A mail is handed to a model: a megabyte of text is already more than a context holds
# (over 64 KiB it reaches Claude as a preview and a file), and every mail is read whole
# by each delivery. Bigger content travels as a file path.
DEFAULT_MAIL_MAX = 1024 * 1024


def mail_max(env: Mapping[str, str]) -> int:
    return env_int(env, MAIL_MAX_ENV, DEFAULT_MAIL_MAX)


BATCH_MAX_ENV = "CODEX_BRIDGE_BATCH_MAX"
DEFAULT_BATCH_MAX = 256 * 1024


def batch_max(env: Mapping[str, str]) -> int:
    return env_int(env, BATCH_MAX_ENV, DEFAULT_BATCH_MAX)


FRAME_MAX_ENV = "CODEX_BRIDGE_FRAME_MAX"
# codex sends a finished message once more as one frame, and a thread's history page is
# one frame: 16 MiB holds any reply a model writes and pages of long threads, while a
# flood (a broken or hostile server) costs a bounded few times this in memory.
DEFAULT_FRAME_MAX = 16 * 1024 * 1024


def frame_max(env: Mapping[str, str]) -> int:
    return env_int(env, FRAME_MAX_ENV, DEFAULT_FRAME_MAX)


MAX_HOPS_ENV = "CODEX_BRIDGE_MAX_HOPS"
# A ceiling for runaway loops, not a length for conversations: a real review goes back
# and forth a dozen times (the twelve-exchange journey), and a loop that repeats itself
# is stopped by what it does long before this (budget.py, "no progress"). 4 ended a
# review after two questions each way.
DEFAULT_MAX_HOPS = 40


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
    already in hand — the courier bounding Codex's reply to Claude (messages/courier.py), the
    delivery clipping Claude's answer (messages/to_codex.py) — and failing there would
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
    return mail_refused(f"{size} bytes", limit)


def mail_refused(size: str, limit: int) -> str:
    """The refusal of a mail of `size` (e.g. "1048577 bytes") over the cap `limit`."""
    return (f"the mail is {size}; the cap is {limit} bytes (${MAIL_MAX_ENV}) — write it to "
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

"""Which conversation a new request belongs to (see `budget.py` for why it matters).

    1. the one named: `--conversation` / the tool argument
    2. `CODEX_BRIDGE_CONVERSATION` — set in the environment of what codexbridge starts
    3. the one the sending agent is handling right now:
       * a command codex runs (it has `CODEX_THREAD_ID`) inside a turn that a bridge
         message started: that delivery's conversation;
       * a command Claude runs (it has `CLAUDE_CODE_SESSION_ID`) while its session
         handles peer mail: that mail's conversation (`handling.py`);
    4. none: the request starts a new conversation.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import handling
from .budget import CONVERSATION_ENV, valid_id
from .records import DeliveryState, DeliveryStore, Direction
from .routing import SESSION_ENV, THREAD_ENV

IN_FLIGHT = (DeliveryState.QUEUED, DeliveryState.DELIVERING, DeliveryState.AWAITING_REPLY)


def current_conversation(explicit: str | None, env: Mapping[str, str],
                         store: DeliveryStore | None = None) -> str | None:
    if explicit:
        return valid_id(explicit)
    if env.get(CONVERSATION_ENV):
        return valid_id(env[CONVERSATION_ENV])
    thread = env.get(THREAD_ENV)
    if thread:
        ours = [r for r in (store or DeliveryStore()).recent(200)
                if r.direction is Direction.TO_CODEX and r.thread_id == thread
                and r.state in IN_FLIGHT and r.conversation]
        running = [r for r in ours if r.state is not DeliveryState.QUEUED]
        # The courier may not have seen its turn start yet (the sender queued it a moment
        # ago): then the message codex runs first — the oldest in its queue. At worst an
        # unrelated turn shares that budget: stricter, never looser.
        waiting = sorted((r for r in ours if r.submission_id), key=lambda r: r.created_at)
        if running or waiting:
            return (running or waiting)[0].conversation
    session = env.get(SESSION_ENV)
    if session:
        marker = handling.read(session)
        conv = marker.get("conversation") if marker else None
        if isinstance(conv, str):
            return conv
    return None

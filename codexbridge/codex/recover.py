"""Finding a bridge message in a thread after the fact — never resending it.

A message sent through codexbridge carries its delivery id as `clientUserMessageId`;
codex keeps it as the `clientId` of the turn's userMessage item in the thread's history
(docs/protocol-notes.md, "Turns"). So whatever happened to the process that sent it,
the thread itself says whether the message ran, in which turn, how that turn ended, and
what Codex answered — only text of that turn counts.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, NamedTuple

from ..errors import RpcError
from .client import Rpc
from .protocol.generated.calls import Calls
from .protocol.generated.enums import ThreadItemType, TurnStatus
from .threads import pages

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

PAGE = 100
MAX_PAGES = 50
NO_ITEMS_YET = "thread/items/list is not supported yet"


class Found(NamedTuple):
    turn_id: str
    status: str  # the turn's status: inProgress | completed | failed | interrupted
    reply: str  # the turn's last agentMessage ("" if none yet)
    error: JsonObject | None  # the turn's error as codex sent it


async def turn_of(rpc: Rpc, thread_id: str, client_id: str) -> str | None:
    """The turn whose userMessage was sent with `client_id`, newest first; None if the
    thread has no such message (it never ran, or not yet)."""
    calls = Calls(rpc)
    try:
        async for entry in pages(lambda cursor: calls.thread_items_list(
                thread_id=thread_id, limit=PAGE, sort_direction="desc", cursor=cursor),
                MAX_PAGES):
            item = entry.item
            if (item is not None and item.type == ThreadItemType.USER_MESSAGE
                    and item.client_id == client_id):
                return entry.turn_id or None
    except RpcError as exc:
        # Measured: a thread without a rollout (no turn yet) answers "not supported
        # yet" — it holds no message at all. Any other error is not an answer.
        if NO_ITEMS_YET in exc.message:
            return None
        raise
    return None


async def turn_status(rpc: Rpc, thread_id: str, turn_id: str) -> Found:
    """How turn `turn_id` stands: its status (inProgress if not listed yet) and reply."""
    calls = Calls(rpc)
    status, error = TurnStatus.IN_PROGRESS.value, None
    async for turn in pages(lambda cursor: calls.thread_turns_list(
            thread_id=thread_id, limit=PAGE, sort_direction="desc", items_view="notLoaded",
            cursor=cursor), MAX_PAGES):
        if turn.id == turn_id:
            status = turn.status or status
            error = turn.error.as_dict() if turn.error is not None else None
            break
    reply = await _last_agent_message(rpc, thread_id, turn_id)
    # A turn listed completed a moment before its final message is (codex 0.169.0, seen
    # in the journeys: an empty reply was delivered): look again, briefly, before taking
    # a completed turn for one that said nothing.
    for _ in range(SETTLE_LOOKS):
        if reply or status != TurnStatus.COMPLETED.value:
            break
        await asyncio.sleep(SETTLE_POLL)
        reply = await _last_agent_message(rpc, thread_id, turn_id)
    return Found(turn_id, status, reply, error)


SETTLE_LOOKS = 10
SETTLE_POLL = 0.2


async def _last_agent_message(rpc: Rpc, thread_id: str, turn_id: str) -> str:
    page = await Calls(rpc).thread_items_list(thread_id=thread_id, turn_id=turn_id,
                                              sort_direction="desc", limit=PAGE)
    for entry in page.data:
        item = entry.item
        if item is not None and item.type == ThreadItemType.AGENT_MESSAGE:
            return item.text or ""
    return ""


async def still_queued(rpc: Rpc, thread_id: str, submission_id: str | None,
                       client_id: str) -> bool:
    """Is the message still waiting in codex's queue for the thread?"""
    calls = Calls(rpc)
    try:
        async for entry in pages(lambda cursor: calls.thread_queue_list(
                thread_id=thread_id, limit=PAGE, cursor=cursor), MAX_PAGES):
            if entry.id == submission_id or entry.client_user_message_id == client_id:
                return True
    except RpcError:
        return False
    return False

"""Finding a bridge message in a thread after the fact — never resending it.

A message sent through codexbridge carries its delivery id as `clientUserMessageId`;
codex keeps it as the `clientId` of the turn's userMessage item in the thread's history
(docs/protocol-notes.md, "Turns"). So whatever happened to the process that sent it,
the thread itself says whether the message ran, in which turn, how that turn ended, and
what Codex answered — only text of that turn counts.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from ..errors import RpcError
from .client import Rpc
from .protocol.generated.calls import Calls
from .protocol.generated.enums import ThreadItemType, TurnStatus

if TYPE_CHECKING:
    from ..jsontypes import JsonObject
    from .threads import Page

T = TypeVar("T")

PAGE = 100
MAX_PAGES = 50
NO_ITEMS_YET = "thread/items/list is not supported yet"


class Found(NamedTuple):
    turn_id: str
    status: str  # the turn's status: inProgress | completed | failed | interrupted
    reply: str  # the turn's last agentMessage ("" if none yet)
    error: JsonObject | None  # the turn's error as codex sent it


async def _pages(fetch: Callable[[str | None], Awaitable[Page[T]]]) -> AsyncIterator[T]:
    """The entries of a paged method, page by page (`fetch(cursor)` reads one)."""
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        for entry in page.data:
            yield entry
        cursor = page.next_cursor
        if not cursor:
            return


async def turn_of(rpc: Rpc, thread_id: str, client_id: str) -> str | None:
    """The turn whose userMessage was sent with `client_id`, newest first; None if the
    thread has no such message (it never ran, or not yet)."""
    calls = Calls(rpc)
    try:
        async for entry in _pages(lambda cursor: calls.thread_items_list(
                thread_id=thread_id, limit=PAGE, sort_direction="desc", cursor=cursor)):
            item = entry.item
            if (item is not None and item.type == ThreadItemType.USER_MESSAGE
                    and item.raw.get("clientId") == client_id):
                return entry.turn_id or None
    except RpcError as exc:
        # Measured: a thread without a rollout (no turn yet) answers "not supported
        # yet" — it holds no message at all. Any other error is not an answer.
        if NO_ITEMS_YET in exc.message:
            return None
        raise
    return None


async def locate(rpc: Rpc, thread_id: str, client_id: str) -> Found | None:
    """Where the message `client_id` is in the thread: its turn, status and reply."""
    turn_id = await turn_of(rpc, thread_id, client_id)
    if turn_id is None:
        return None
    return await turn_status(rpc, thread_id, turn_id)


async def turn_status(rpc: Rpc, thread_id: str, turn_id: str) -> Found:
    """How turn `turn_id` stands: its status (inProgress if not listed yet) and reply."""
    calls = Calls(rpc)
    status, error = TurnStatus.IN_PROGRESS.value, None
    async for turn in _pages(lambda cursor: calls.thread_turns_list(
            thread_id=thread_id, limit=PAGE, sort_direction="desc", items_view="notLoaded",
            cursor=cursor)):
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
            said = item.raw.get("text")
            return str(said or "")
    return ""


async def still_queued(rpc: Rpc, thread_id: str, submission_id: str | None,
                       client_id: str) -> bool:
    """Is the message still waiting in codex's queue for the thread?"""
    calls = Calls(rpc)
    try:
        async for entry in _pages(lambda cursor: calls.thread_queue_list(
                thread_id=thread_id, limit=PAGE, cursor=cursor)):
            if entry.id == submission_id or entry.client_user_message_id == client_id:
                return True
    except RpcError:
        return False
    return False

"""Finding a bridge message in a thread after the fact — never resending it.

A message sent through codexbridge carries its delivery id as `clientUserMessageId`;
codex keeps it as the `clientId` of the turn's userMessage item in the thread's history
(docs/protocol-notes.md, "Turns"). So whatever happened to the process that sent it,
the thread itself says whether the message ran, in which turn, how that turn ended, and
what Codex answered — only text of that turn counts.
"""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

from ..errors import RpcError
from ..protocol.generated import methods as m
from ..protocol.generated.enums import ThreadItemType, TurnStatus
from .client import Rpc

PAGE = 100
MAX_PAGES = 50
NO_ITEMS_YET = "thread/items/list is not supported yet"


class Found(NamedTuple):
    turn_id: str
    status: str  # the turn's status: inProgress | completed | failed | interrupted
    reply: str  # the turn's last agentMessage ("" if none yet)
    error: dict[str, Any] | None


async def _pages(rpc: Rpc, method: str, params: dict[str, Any], *,
                 newest_first: bool = True) -> Any:
    cursor: Any = None
    order = {"sortDirection": "desc"} if newest_first else {}
    for _ in range(MAX_PAGES):
        page = await rpc.request(method, {**params, "limit": PAGE, **order,
                                          **({"cursor": cursor} if cursor else {})})
        for entry in page.get("data") or []:
            yield entry
        cursor = page.get("nextCursor")
        if not cursor:
            return


async def turn_of(rpc: Rpc, thread_id: str, client_id: str) -> str | None:
    """The turn whose userMessage was sent with `client_id`, newest first; None if the
    thread has no such message (it never ran, or not yet)."""
    try:
        async for entry in _pages(rpc, m.THREAD_ITEMS_LIST, {"threadId": thread_id}):
            item = entry.get("item") if isinstance(entry, dict) else None
            if (isinstance(item, dict) and item.get("type") == ThreadItemType.USER_MESSAGE
                    and item.get("clientId") == client_id):
                turn = entry.get("turnId")
                return str(turn) if turn else None
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
    status, error = TurnStatus.IN_PROGRESS.value, None
    async for turn in _pages(rpc, m.THREAD_TURNS_LIST, {"threadId": thread_id,
                                                       "itemsView": "notLoaded"}):
        if isinstance(turn, dict) and turn.get("id") == turn_id:
            status = str(turn.get("status") or status)
            error = turn.get("error") if isinstance(turn.get("error"), dict) else None
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
    page = await rpc.request(m.THREAD_ITEMS_LIST, {"threadId": thread_id, "turnId": turn_id,
                                                   "sortDirection": "desc", "limit": PAGE})
    for entry in page.get("data") or []:
        item = entry.get("item") if isinstance(entry, dict) else None
        if isinstance(item, dict) and item.get("type") == ThreadItemType.AGENT_MESSAGE:
            return str(item.get("text") or "")
    return ""


async def still_queued(rpc: Rpc, thread_id: str, submission_id: str | None,
                       client_id: str) -> bool:
    """Is the message still waiting in codex's queue for the thread?"""
    try:
        async for entry in _pages(rpc, m.THREAD_QUEUE_LIST, {"threadId": thread_id},
                                  newest_first=False):
            if isinstance(entry, dict) and (entry.get("id") == submission_id
                                            or entry.get("clientUserMessageId") == client_id):
                return True
    except RpcError:
        return False
    return False

"""A thread's history, read the supported way: `thread/turns/list` + `thread/items/list`.

TUI threads are paginated and full hydration is deprecated (docs/protocol-notes.md,
"History"), so history is paged, never taken from `thread/resume`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import NoRolloutError, NoThreadError
from ..protocol.generated import methods as m
from ..protocol.generated.enums import ThreadItemType
from .client import Rpc
from .threads import paged


class TurnRecord(NamedTuple):
    id: str
    status: str
    started_at: int | None
    items: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "startedAt": self.started_at,
                "items": self.items}


async def read_history(rpc: Rpc, thread_id: str, *,
                       page_size: int = 50) -> list[TurnRecord]:
    """The whole thread, oldest first, paged through thread/turns/list and
    thread/items/list (TUI threads are paginated; full hydration is deprecated)."""
    from ..protocol.generated.models import (  # lazy: pydantic
        ThreadItemsListResponse,
        ThreadTurnsListResponse,
    )

    try:
        turns = await paged(rpc, m.THREAD_TURNS_LIST,
                             {"threadId": thread_id, "limit": page_size,
                              "sortDirection": "asc", "itemsView": "notLoaded"})
    except NoRolloutError:
        raise NoThreadError(f"thread {thread_id} has no history yet",
                            details={"thread_id": thread_id}) from None
    items = await paged(rpc, m.THREAD_ITEMS_LIST,
                         {"threadId": thread_id, "limit": page_size, "sortDirection": "asc"})
    # The pages' `data` arrays, concatenated, parse as one result each.
    by_turn: dict[str, list[dict[str, Any]]] = {}
    for entry in ThreadItemsListResponse.model_validate({"data": items}).data:
        by_turn.setdefault(str(entry.turn_id), []).append(entry.item.as_dict())
    return [TurnRecord(t.id, t.status or "unknown", t.started_at, by_turn.get(t.id, []))
            for t in ThreadTurnsListResponse.model_validate({"data": turns}).data]


def render_item(item: dict[str, Any]) -> str | None:
    """One transcript line for an item, or None for items a reader does not need."""
    kind = ThreadItemType.parse(item.get("type"))
    if kind is ThreadItemType.USER_MESSAGE:
        parts = [c.get("text", "") for c in item.get("content") or []
                 if isinstance(c, dict) and c.get("type") == "text"]
        return "› " + "\n  ".join("".join(parts).splitlines() or [""])
    if kind is ThreadItemType.AGENT_MESSAGE:
        return "• " + "\n  ".join(str(item.get("text", "")).splitlines() or [""])
    if kind is ThreadItemType.COMMAND_EXECUTION:
        code = item.get("exitCode")
        return f"$ {item.get('command', '')}  [{item.get('status')}" + (
            f", exit {code}]" if code is not None else "]")
    if kind is ThreadItemType.FILE_CHANGE:
        return f"✎ file change [{item.get('status')}]"
    return None

"""A thread's history, read the supported way: `thread/turns/list` + `thread/items/list`.

TUI threads are paginated and full hydration is deprecated (docs/protocol-notes.md,
"History"), so history is paged, never taken from `thread/resume`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ..errors import NoRolloutError, NoThreadError
from ..jsontypes import JsonRecord
from .client import Rpc
from .protocol.generated.calls import Calls
from .protocol.generated.enums import ThreadItemType
from .threads import paged

if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue


class TurnRecord(NamedTuple):
    id: str
    status: str
    started_at: int | None
    items: list[JsonObject]  # as codex sent them

    def as_dict(self) -> JsonObject:
        return {"id": self.id, "status": self.status, "startedAt": self.started_at,
                "items": [*self.items]}


async def read_history(rpc: Rpc, thread_id: str, *,
                       page_size: int = 50) -> list[TurnRecord]:
    """The whole thread, oldest first, paged through thread/turns/list and
    thread/items/list (TUI threads are paginated; full hydration is deprecated)."""
    calls = Calls(rpc)
    try:
        turns = await paged(lambda cursor: calls.thread_turns_list(
            thread_id=thread_id, limit=page_size, sort_direction="asc",
            items_view="notLoaded", cursor=cursor))
    except NoRolloutError:
        raise NoThreadError(f"thread {thread_id} has no history yet",
                            details={"thread_id": thread_id}) from None
    items = await paged(lambda cursor: calls.thread_items_list(
        thread_id=thread_id, limit=page_size, sort_direction="asc", cursor=cursor))
    by_turn: dict[str, list[JsonObject]] = {}
    for entry in items:
        if entry.item is not None:
            by_turn.setdefault(str(entry.turn_id), []).append(entry.item.as_dict())
    return [TurnRecord(t.id, t.status or "unknown", t.started_at, by_turn.get(t.id, []))
            for t in turns]


class _Part(JsonRecord, wire={"kind": "type"}):
    kind: str | None = None
    text: JsonValue = ""


class ItemView(JsonRecord, wire={"kind": "type", "exit_code": "exitCode"}):
    """What a transcript line shows of a thread item (its JSON, as the server sent it;
    shown as found)."""

    kind: str | None = None
    content: tuple[_Part, ...] = ()  # a user message's
    text: JsonValue = ""  # an agent message's
    command: JsonValue = ""
    status: JsonValue = None
    exit_code: JsonValue = None


def render_item(data: JsonObject) -> str | None:
    """One transcript line for an item, or None for items a reader does not need."""
    item = ItemView.read(data)
    kind = ThreadItemType.parse(item.kind)
    if kind is ThreadItemType.USER_MESSAGE:
        parts = [str(c.text) for c in item.content if c.kind == "text"]
        return "› " + "\n  ".join("".join(parts).splitlines() or [""])
    if kind is ThreadItemType.AGENT_MESSAGE:
        return "• " + "\n  ".join(str(item.text).splitlines() or [""])
    if kind is ThreadItemType.COMMAND_EXECUTION:
        code = item.exit_code
        return f"$ {item.command}  [{item.status}" + (
            f", exit {code}]" if code is not None else "]")
    if kind is ThreadItemType.FILE_CHANGE:
        return f"✎ file change [{item.status}]"
    return None

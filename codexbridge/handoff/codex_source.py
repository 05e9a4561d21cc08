"""A Codex thread as a handoff source: its items, read the supported way.

`thread/items/list` through the app-server — never the rollout file (docs/protocol-notes.md,
"History"). Only `userMessage` and `agentMessage` items cross; commands, MCP calls,
reasoning and the rest are tool activity (a `fileChange` gives its paths, names only).
Items `thread/inject_items` added are not in the list at all, so a delta that went
into the thread never comes back out of it; our own handoff notice turns are left out
too (their `clientId` is the handoff id) — Codex's answer to one is kept. A message a
peer agent sent through the bridge (it opens with the envelope line) is labelled so,
not as the human's. What the target already has (`claude_source.received_by`: its own
requests and answers, and the replies the courier mailed it) is left out.

The watermark is `<turn id>:<item id>` of the last item packed. Pages are read newest
first until the mark shows up, so a long thread costs what is new, not its length.
An item not yet completed (a turn still running) stops the reading there: the mark
never passes what is still being written. `parse` is pure; `read_thread` pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..codex.client import Rpc
from ..codex.protocol.generated import methods as m
from ..codex.protocol.generated.calls import Calls
from ..codex.protocol.generated.enums import ThreadItemType
from ..codex.protocol.generated.results import ThreadItem, ThreadItemEntry
from ..errors import RpcError
from ..host.text import writable
from ..jsontypes import objs
from ..messages.frame import is_framed, words_of
from .delta import CODEX, PEER, Parsed, Received, Said, SourceRead, is_handoff_id, source_key

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

ROLES = (ThreadItemType.USER_MESSAGE.value, ThreadItemType.AGENT_MESSAGE.value)
PAGE = 100
MAX_PAGES = 100
NO_ITEMS_YET = "not supported yet"  # a thread without a rollout (recover.py measured it)


def _mark(entry: ThreadItemEntry) -> str | None:
    if entry.item is None or not entry.item.id:
        return None
    return writable(f"{entry.turn_id}:{entry.item.id}")


def entry_mark(entry: JsonObject) -> str | None:
    """The watermark of one `thread/items/list` entry (None: it names no item)."""
    return _mark(ThreadItemEntry.from_wire(entry))


def _user_text(item: ThreadItem) -> str | None:
    """A userMessage's words: its `text` parts (UserInput), joined."""
    if not isinstance(item.raw.get("content"), list):  # unreadable, counted as such
        return None
    return writable("".join(part.text or "" for part in item.content if part.type == "text"))


def _completed(entry: ThreadItemEntry, item: ThreadItem) -> bool:
    """The item is written to its end (an item carrying its own completedAtMs counts
    too, though the schema puts the field on the entry only)."""
    return entry.completed_at_ms is not None or item.raw.get("completedAtMs") is not None


def _changed_paths(item: ThreadItem) -> list[str]:
    """The paths a fileChange names (`changes` may be any JSON: an int was a TypeError)."""
    return [p for c in objs(item.changes) if isinstance(p := c.get("path"), str)]


def _speaker(kind: ThreadItemType, text: str) -> tuple[str, str]:
    """Who said `text` in the thread, and the words that cross: a peer's words without the
    frame codexbridge put around them for this thread (`messages/frame.py`)."""
    if kind is ThreadItemType.AGENT_MESSAGE:
        return CODEX, text
    return (PEER, words_of(text)) if is_framed(text) else ("user", text)


def parse(entries: list[JsonObject], since: str | None,
          received: Received | None = None) -> Parsed:
    """Messages after the item `since` (all when it is not found); entries oldest first.
    `received`: what the target already has from this thread (left out)."""
    out = Parsed()
    stats = out.stats
    last: str | None = None
    received = received or Received()
    mailed: dict[str, Said] = {}  # turn → its last agentMessage, which was mailed
    rows = [ThreadItemEntry.from_wire(e) if isinstance(e, dict) else None for e in entries]
    newest_turn = rows[-1].turn_id if rows and rows[-1] is not None else None
    for entry in rows:
        stats.records += 1
        item = entry.item if entry is not None else None
        if entry is None or item is None:
            stats.bad_rows += 1
            continue
        if entry.turn_id == newest_turn and not _completed(entry, item):
            break  # the running turn's item is still being written: the mark stays before it
        kind = writable(item.type or "?")
        stats.kinds[kind] += 1
        parsed = ThreadItemType.parse(kind)
        if parsed is None:
            stats.unknown[kind] += 1
        mark = _mark(entry)
        if parsed is ThreadItemType.USER_MESSAGE or parsed is ThreadItemType.AGENT_MESSAGE:
            text = (_user_text(item) if parsed is ThreadItemType.USER_MESSAGE
                    else writable(item.text) if item.text is not None else None)
            if text is None or mark is None:
                stats.unreadable += 1
            else:
                stats.said += 1
                # our own visible turn, or a message the target wrote itself
                ours = is_handoff_id(item.client_id) or item.client_id in received.client_ids
                role, text = _speaker(parsed, text)
                if text.strip() and not ours:
                    out.messages.append(Said(role, text.strip(), mark))
                    turn = entry.turn_id
                    if role == CODEX and turn is not None and turn in received.reply_turns:
                        mailed[turn] = out.messages[-1]
        elif parsed is ThreadItemType.FILE_CHANGE:
            for path in _changed_paths(item):
                if writable(path) not in out.files:
                    out.files.append(writable(path))
        if mark is not None:
            last = mark
        if since is not None and mark == since:
            out.found = True
            out.messages.clear()
            out.files.clear()
    if mailed:  # the final agentMessage of a turn is the reply the courier mailed
        gone = {id(said) for said in mailed.values()}
        out.messages = [m for m in out.messages if id(m) not in gone]
    # The mark moves past tool items too: the next delta starts after all of this.
    out.mark = last if last is not None else since
    return out


async def recent_entries(rpc: Rpc, thread_id: str, since: str | None,
                         max_pages: int = MAX_PAGES) -> list[JsonObject]:
    """Items oldest first: newest pages until the one holding `since` (or all)."""
    pages: list[list[JsonObject]] = []
    cursor: str | None = None
    try:
        for _ in range(max_pages):
            page = await Calls(rpc).thread_items_list(
                thread_id=thread_id, limit=PAGE, sort_direction="desc", cursor=cursor)
            # The entries stay as codex sent them (`parse` counts the rows it cannot
            # use); a `data` that is not a list is a clear error (read_thread reports
            # it), not a TypeError.
            items = page.raw.get("data")
            if not isinstance(items, (list, type(None))):
                raise RpcError(-32603, f"{m.THREAD_ITEMS_LIST} for thread {thread_id} "
                                       f"answered a {type(items).__name__}, not a page "
                                       "of items")
            data = [e for e in items or [] if isinstance(e, dict)]
            pages.append(data)
            if since is not None and any(entry_mark(e) == since for e in data):
                break
            cursor = page.next_cursor or None
            if not cursor:
                break
    except RpcError as exc:
        if NO_ITEMS_YET in exc.message:
            return []  # no rollout yet: nothing said
        raise
    return [e for page in reversed(pages) for e in reversed(page)]


async def read_thread(rpc: Rpc, thread_id: str, since: str | None,
                      label: str | None = None, max_pages: int = MAX_PAGES,
                      received: Received | None = None) -> SourceRead:
    read = SourceRead(key=source_key(CODEX, thread_id), kind=CODEX,
                      label=label or f"Codex thread {thread_id}", since=since, mark=since,
                      where=thread_id)
    try:
        entries = await recent_entries(rpc, thread_id, since, max_pages)
    except RpcError as exc:
        read.problem = f"cannot read thread {thread_id}: {exc.message}"
        return read
    return read.take(parse(entries, since, received))

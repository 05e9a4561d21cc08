"""Into the Codex thread: the road a delta to Codex takes (to a Claude session:
`to_claude.py`).

`thread/inject_items` appends the delta to the thread's model-visible history —
measured: no notification, not in `thread/items/list`, not on the TUI's screen, kept
across a restart, and in the next model request right before the new user message
(docs/protocol-notes.md, "Injected items") — then a short *visible* turn through codex's
queue, so the human sees in the TUI that context arrived and Codex acts on it at once.
The visible turn carries the handoff id as its `clientUserMessageId`: the thread itself
later proves the handoff went in (the inject comes first). The thread is waited idle
first: an inject during a turn adds a model call to that turn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from ..codex.client import Rpc
from ..codex.protocol.approvals import DEFAULT_APPROVAL_TIMEOUT
from ..codex.protocol.enums import ApprovalPolicy, TurnOutcome, WireEnum
from ..codex.protocol.generated.calls import Calls
from ..codex.threads import join, wait_idle
from ..codex.turn import SayProgress, say
from ..errors import QueueTimeoutError
from ..messages.frame import frame

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

NOTICE_MAX = 600  # characters of the Next section quoted in the visible turn
START_WAIT = 30.0  # s for codex to start the visible turn before we stop watching


class NotFollowed(WireEnum):
    """Where the visible turn was when we stopped watching it (no `--wait`)."""

    STARTED = "started"  # codex started it; it runs on in the TUI
    QUEUED = "queued"  # still in codex's queue after START_WAIT


class IntoThread(NamedTuple):
    turn_id: str | None
    status: TurnOutcome | NotFollowed  # how the followed turn ended, or NotFollowed
    reply: str


def injected_item(text: str) -> JsonObject:
    """The Responses API item the delta goes in as (a user message: the human's other
    agent speaking, not an instruction of the system)."""
    return {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]}


def notice(source: str, handoff_id: str, messages: int, full_path: str, next_text: str
           ) -> str:
    """The visible turn, framed like every bridge message (`messages/frame.py`: a tagged
    header line, the words, a tagged end line). It says who the work comes from, never
    that the human moved it: an agent can start a handoff too (MCP `bridge_handoff`)."""
    nxt = next_text.strip()
    if len(nxt) > NOTICE_MAX:
        nxt = nxt[:NOTICE_MAX - 1] + "…"
    return frame(
        [f"from {source} — handoff: its work moves to you"],
        f"Handoff {handoff_id}: {source}'s context since your last handoff ({messages} "
        "message(s), decisions, work, next step) is in your history just above this "
        f"message; every message in full is in {full_path}. Carry on from there."
        + (f"\nNext: {nxt}" if nxt else ""),
        "end of the handoff notice")


async def into_thread(rpc: Rpc, thread_id: str, delta_text: str, notice_text: str,
                      client_id: str, *, busy_timeout: float, wait: bool,
                      timeout: float, approvals: ApprovalPolicy = ApprovalPolicy.TUI,
                      approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT,
                      on_injected: Callable[[], None] | None = None) -> IntoThread:
    """Inject the delta (then call `on_injected`), then queue the visible turn; follow it
    to its end with `wait`, else return once codex started it (or after START_WAIT, still
    queued)."""
    await join(rpc, thread_id)
    if not await wait_idle(rpc, thread_id, busy_timeout):
        raise QueueTimeoutError(
            f"thread {thread_id} stayed busy for {busy_timeout:g} s; nothing was handed "
            "over (run the handoff again, or pass --busy-timeout)",
            details={"threadId": thread_id})
    await Calls(rpc).thread_inject_items(thread_id=thread_id,
                                         items=[injected_item(delta_text)])
    if on_injected is not None:
        on_injected()
    started = asyncio.Event()

    def changed(what: str, _: SayProgress) -> None:
        if what == "started":
            started.set()

    progress = SayProgress(client_id=client_id, on_change=changed)
    task = asyncio.create_task(say(rpc, thread_id, notice_text, approvals=approvals,
                                   approval_timeout=approval_timeout, timeout=timeout,
                                   join_first=False, progress=progress))
    if wait:
        result = await task
        return IntoThread(result.turn_id, result.status, result.reply)
    waiter = asyncio.ensure_future(started.wait())
    try:
        await asyncio.wait([task, waiter], timeout=START_WAIT,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task.done():
        result = task.result()
        return IntoThread(result.turn_id, result.status, result.reply)
    task.cancel()  # the turn runs on in the TUI; nobody here needs its answer
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    return IntoThread(progress.turn_id,
                      NotFollowed.STARTED if progress.turn_id else NotFollowed.QUEUED, "")


def completed(status: TurnOutcome | NotFollowed) -> bool:
    return isinstance(status, NotFollowed) or status is TurnOutcome.COMPLETED

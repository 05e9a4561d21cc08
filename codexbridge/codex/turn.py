"""One bridge turn on a live thread: hand the message to codex, follow its turn to the end.

A message goes through **codex's own server-side queue** (`thread/queue/add`): codex
runs it as a turn as soon as the thread is idle — at once, or 0–9 ms after the running
turn (the human's, another send's) ends — one submission per turn, in order, across
every client, and the submission survives an app-server restart (docs/protocol-notes.md,
"Server-side queue"). So two senders never fold into each other's turns, which a
`turn/start` on a thread that just went idle could do. Our turn is found by the
`clientUserMessageId` we queued it with (codex echoes it as the userMessage's
`clientId`). `steer` adds the text to the running turn instead (`turn/steer`);
`turn_cwd`, which the queue cannot carry, waits for idle and uses `turn/start`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Literal, NoReturn, TypedDict, TypeVar

from ..errors import BridgeError, OutputClosedError, RpcError, internal
from .client import Rpc
from .follow import ApprovalRecord, SayResult, TurnFollower
from .protocol.approvals import DEFAULT_APPROVAL_TIMEOUT
from .protocol.enums import ApprovalPolicy, TurnOutcome
from .protocol.generated.calls import Calls
from .protocol.generated.enums import ThreadItemType, TurnStatus
from .protocol.turn import CAPTURE_LIMIT
from .recover import still_queued, turn_of, turn_status
from .rollout import turn_usage as rollout_usage
from .threads import join, wait_idle

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

T = TypeVar("T")

__all__ = ["DEFAULT_TURN_TIMEOUT", "ApprovalRecord", "SayOptions", "SayProgress", "SayResult",
           "follow_queued", "interrupt", "queue_message", "running_turn", "say", "steer",
           "take_back"]

DEFAULT_TURN_TIMEOUT = 900.0
INTERRUPT_GRACE = 5.0  # measured: an interrupted turn completes in ~0.05 s
# How often a queued message looks whether codex left its queue paused (it drains an idle
# thread's queue within 50 ms otherwise).
QUEUE_CHECK = 1.0


class SayProgress:
    """How far a say() got, readable even when it raised or was cancelled.

    `turn_start_sent` is true from the moment the message went to codex (queued or
    started) until an answer proves no turn will run it: from then on the turn may be
    running and a retry could run it twice. `submission_id` is codex's queue entry.
    """

    __slots__ = ("approval", "client_id", "on_change", "submission_id", "turn_id",
                 "turn_start_sent")

    def __init__(self, client_id: str | None = None,
                 on_change: Callable[[str, SayProgress], None] | None = None) -> None:
        self.client_id = client_id or f"cb_{uuid.uuid4().hex}"
        self.turn_start_sent = False
        self.submission_id: str | None = None
        self.turn_id: str | None = None
        self.approval: str | None = None  # an approval waiting for the TUI: what it asks
        # Told "queued" (codex has the message), "started" (our turn runs) and
        # "approval" (one waits for the TUI, or no longer does).
        self.on_change = on_change

    def waiting(self, approval: str | None) -> None:
        self.approval = approval
        self.changed("approval")

    def changed(self, what: str) -> None:
        if self.on_change is not None:
            self.on_change(what, self)


class SayOptions(TypedDict, total=False):
    """How a front end wants its turn followed (say()'s keywords, passed through
    `deliveries.blocking_say`)."""

    approvals: ApprovalPolicy
    approval_timeout: float
    timeout: float
    busy_timeout: float | None
    turn_cwd: str | None
    steer: bool
    interrupt_on_timeout: bool
    capture_limit: int
    on_delta: Callable[[str], None] | None
    on_approval: Callable[[str], None] | None


def user_input(text: str) -> list[JsonObject]:
    return [{"type": "text", "text": text, "text_elements": []}]


async def running_turn(rpc: Rpc, thread_id: str) -> str | None:
    """The id of the turn in progress on the thread, if any (newest turn first)."""
    page = await Calls(rpc).thread_turns_list(thread_id=thread_id, limit=1,
                                              sort_direction="desc", items_view="notLoaded")
    if page.data and page.data[0].status == TurnStatus.IN_PROGRESS:
        return page.data[0].id
    return None


async def steer(rpc: Rpc, thread_id: str, text: str) -> str | None:
    """Add `text` to the turn running in the thread (`turn/steer`): the model sees it at
    once, in the same turn. Returns that turn's id; None when no turn runs."""
    running = await running_turn(rpc, thread_id)
    if running is None:
        return None
    answer = await Calls(rpc).turn_steer(thread_id=thread_id, expected_turn_id=running,
                                         input=user_input(text))
    return answer.turn_id or running


async def interrupt(rpc: Rpc, thread_id: str, turn_id: str | None = None) -> str | None:
    """`turn/interrupt` the given (or the running) turn; returns its id, None if idle."""
    turn_id = turn_id or await running_turn(rpc, thread_id)
    if turn_id is None:
        return None
    await Calls(rpc).turn_interrupt(thread_id=thread_id, turn_id=turn_id)
    return turn_id


async def take_back(rpc: Rpc, thread_id: str, client_id: str, turn_id: str | None = None,
                    submission_id: str | None = None) -> bool:
    """Stop our message wherever codex has it: its turn interrupted (found by our client
    id — never someone else's turn), or else taken out of codex's queue. True when a
    turn of it ran (its follower sees it end `interrupted`); False when none will."""
    turn = turn_id or await turn_of(rpc, thread_id, client_id)
    if turn:
        await interrupt(rpc, thread_id, turn)
        return True
    if submission_id:
        await Calls(rpc).thread_queue_delete(thread_id=thread_id,
                                             queued_submission_id=submission_id)
    return False


async def say(rpc: Rpc, thread_id: str, text: str, *,
              approvals: ApprovalPolicy = ApprovalPolicy.TUI,
              approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT,
              timeout: float = DEFAULT_TURN_TIMEOUT,
              busy_timeout: float | None = None,
              turn_cwd: str | None = None,
              join_first: bool = True,
              steer: bool = False,
              interrupt_on_timeout: bool = False,
              capture_limit: int = CAPTURE_LIMIT,
              on_delta: Callable[[str], None] | None = None,
              on_approval: Callable[[str], None] | None = None,
              progress: SayProgress | None = None) -> SayResult:
    """Send `text` into the thread as a turn and follow it to the end.

    Outcomes (completed / interrupted / failed / timed out / busy) come back as the
    result's `status`; transport and target problems raise. BUSY: the turn had not
    started after `busy_timeout` (default: the whole `timeout`) and was taken back out of
    codex's queue — nothing was sent. TIMED_OUT: it started but did not finish in
    `timeout`; it keeps running in the TUI unless `interrupt_on_timeout`. `join_first`
    is False for the client that started the thread itself (already subscribed).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    progress = progress or SayProgress()
    run = TurnFollower(rpc, thread_id, approvals, approval_timeout, on_delta, on_approval,
                       client_id=None if steer or turn_cwd else progress.client_id,
                       capture_limit=capture_limit)
    run.tracker.own_client_id = progress.client_id  # (steered, turn_cwd: sent with it)
    run.on_waiting = progress.waiting

    def left() -> float:
        return max(0.0, deadline - loop.time())

    async with _pumping(rpc, run, "codexbridge-turn-pump"):
        thread = (await join(rpc, thread_id)).thread if join_first else None
        busy = thread is not None and thread.busy
        wait = left() if busy_timeout is None else min(left(), busy_timeout)
        refused = await _begin(rpc, run, thread_id, text, progress, steer=steer,
                               turn_cwd=turn_cwd, busy=busy, wait=wait, left=left)
        if refused is not None:
            return refused
        progress.turn_id = run.tracker.turn_id
        if progress.turn_id:
            progress.changed("started")
        timed_out = not await _wait(run.done, left())
        if timed_out and interrupt_on_timeout and progress.turn_id:
            with contextlib.suppress(RpcError):
                await interrupt(rpc, thread_id, progress.turn_id)
            timed_out = not await _wait(run.done, INTERRUPT_GRACE)
        return run.result(progress.turn_id or "", timed_out, timeout)


async def _begin(rpc: Rpc, run: TurnFollower, thread_id: str, text: str,
                 progress: SayProgress, *, steer: bool, turn_cwd: str | None, busy: bool,
                 wait: float, left: Callable[[], float]) -> SayResult | None:
    """Get our turn going the way the caller asked — steered into the running turn, a
    turn of its own in `turn_cwd`, or (the default) through codex's queue — and bound
    to `run`. A SayResult (BUSY) when it never started and was taken back."""
    if steer and busy and (running := await running_turn(rpc, thread_id)):
        run.feeding = True
        progress.turn_start_sent = True
        answer = await Calls(rpc).turn_steer(
            thread_id=thread_id, expected_turn_id=running, input=user_input(text),
            client_user_message_id=progress.client_id)
        await run.bind(answer.turn_id or running)
    elif turn_cwd:
        if busy:
            run._say("a turn is running on this thread; waiting for it to finish")
            if not await wait_idle(rpc, thread_id, wait):
                return _busy(thread_id, wait)
        run.feeding = True
        progress.turn_start_sent = True
        started = await _refusable(progress, Calls(rpc).turn_start(
            thread_id=thread_id, input=user_input(text), cwd=turn_cwd,
            client_user_message_id=progress.client_id))
        await run.bind(started.turn.id if started.turn is not None else "")
    else:
        if busy:
            run._say("a turn is running on this thread; queued in codex, waiting for it "
                     "to finish (--steer adds the message to it instead)")
        run.feeding = True  # before the add: on an idle thread the turn starts at once
        progress.turn_start_sent = True
        if progress.submission_id is None:  # else: taking over one queued before
            await queue_message(rpc, thread_id, text, progress)
        if not await _await_our_turn(rpc, run, thread_id, progress, wait) \
                and await _unqueue(rpc, thread_id, progress):
            return _busy(thread_id, wait)
        await _started(run, left())
    return None


async def follow_queued(rpc: Rpc, thread_id: str, progress: SayProgress,
                        text: str | None, *,
                        approvals: ApprovalPolicy = ApprovalPolicy.TUI,
                        approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT,
                        timeout: float = DEFAULT_TURN_TIMEOUT,
                        capture_limit: int = CAPTURE_LIMIT,
                        on_delta: Callable[[str], None] | None = None,
                        on_unattended: Callable[[ApprovalRecord, float], None] | None = None
                        ) -> SayResult | None:
    """Carry a message codex may already hold — queued by its sender, or by a courier
    that lost its app-server — to the end of its turn, never sending it twice.

    Subscribed first, then it looks: the thread (our turn, by the `clientId` codex kept),
    then codex's queue; and again every second while it waits, so a turn that started
    between two looks is never missed. Only when codex has the message nowhere is `text`
    queued (once). None: nowhere, and no `text` to send (the message is lost: orphaned).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    run = TurnFollower(rpc, thread_id, approvals, approval_timeout, on_delta, None,
                       client_id=progress.client_id, capture_limit=capture_limit)
    run.unattended = on_unattended is not None
    run.on_unattended = on_unattended
    run.on_waiting = progress.waiting
    async with _pumping(rpc, run, "codexbridge-courier-follow"):
        run.feeding = True  # before the join: a pending approval is replayed during it
        joined = (await join(rpc, thread_id)).thread
        rollout = joined.path if joined is not None else None
        found = await _find_ours(rpc, run, thread_id, progress, text, deadline)
        if found is None:
            return found
        if isinstance(found, SayResult):
            return await _whole_usage(found, False, rollout)
        progress.turn_id = run.tracker.turn_id
        if progress.turn_id:
            progress.changed("started")
        timed_out = not await _wait(run.done, max(0.0, deadline - loop.time()))
        result = run.result(progress.turn_id or "", timed_out, timeout)
        return await _whole_usage(result, run.tracker.saw_start, rollout)


async def _whole_usage(result: SayResult, seen_from_start: bool,
                       rollout: str | None) -> SayResult:
    """The turn's usage, all of it or none: what this connection saw when it was
    subscribed before the turn began; else what codex's rollout says of the turn (a
    follower that joined late missed some calls' notifications — codex tells usage to
    no one afterwards); else none (docs/tokens.md, "What is not counted")."""
    if seen_from_start or not result.turn_id or result.status is TurnOutcome.TIMED_OUT:
        return result
    return result._replace(usage=await rollout_usage(rollout, result.turn_id) or ())


async def _find_ours(rpc: Rpc, run: TurnFollower, thread_id: str, progress: SayProgress,
                     text: str | None, deadline: float) -> SayResult | Literal[True] | None:
    """Until our turn runs: True (follow it), a result (it already ended), None (codex
    has the message nowhere and there is no `text` to send)."""
    loop = asyncio.get_running_loop()
    misses = 0
    while not run.started.is_set():
        turn = await turn_of(rpc, thread_id, progress.client_id)
        if turn is not None:
            await run.bind(turn)
            # Joined after the turn began: what was added to it (the human's Enter in
            # the TUI steers it) is read from the thread, not missed.
            await run.handle(run.tracker.note_user_items(
                await user_items(rpc, thread_id, turn)))
            ended = await turn_status(rpc, thread_id, turn)
            if ended.status != TurnStatus.IN_PROGRESS:
                return SayResult(thread_id, turn, TurnOutcome.parse(ended.status)
                                 or TurnOutcome.FAILED, ended.reply, [], ended.error,
                                 added=tuple(a.text for a in run.tracker.added))
            # Running since before we looked: Codex is at it (its first words may be out
            # already; codex lists an agent message only once it is complete).
            progress.turn_id = turn
            progress.changed("started")
            progress.changed("answering")
            return True
        if await still_queued(rpc, thread_id, progress.submission_id, progress.client_id):
            misses = 0
            await _start_if_first(rpc, thread_id, progress)
        elif text is not None:
            await queue_message(rpc, thread_id, text, progress)
            text = None
        else:
            # Nowhere — or in between: codex takes a submission off its queue a moment
            # before the turn's user message is listed (measured: a turn started by the
            # sender's add was in neither). Only several looks, a second apart, say the
            # message is gone.
            misses += 1
            if misses >= NOWHERE_LOOKS:
                return None
        await _started(run, min(QUEUE_CHECK, max(0.0, deadline - loop.time())))
        if run.lost is not None or loop.time() >= deadline:
            return True
    return True


NOWHERE_LOOKS = 3  # one a second (QUEUE_CHECK): a message is gone only if it stays gone
USER_ITEMS_PAGE = 100


async def user_items(rpc: Rpc, thread_id: str, turn_id: str) -> list[JsonObject]:
    """The userMessage items of one turn as the thread keeps them, oldest first ([] when
    codex cannot list them: the live notifications still tell)."""
    try:
        page = await Calls(rpc).thread_items_list(
            thread_id=thread_id, turn_id=turn_id, sort_direction="asc",
            limit=USER_ITEMS_PAGE)
    except RpcError:
        return []
    return [entry.item.raw for entry in page.data if entry.item is not None
            and entry.item.type == ThreadItemType.USER_MESSAGE]


async def queue_message(rpc: Rpc, thread_id: str, text: str, progress: SayProgress) -> None:
    """`thread/queue/add` with our client id; notes the submission on `progress`."""
    progress.turn_start_sent = True
    queued = await _refusable(progress, Calls(rpc).thread_queue_add(
        thread_id=thread_id, client_user_message_id=progress.client_id,
        input=user_input(text)))
    submission = queued.queued_submission
    progress.submission_id = submission.id if submission is not None else None
    progress.changed("queued")


@contextlib.asynccontextmanager
async def _pumping(rpc: Rpc, run: TurnFollower, name: str) -> AsyncIterator[None]:
    """Feed the connection's notifications to `run` for the block; stop cleanly after.

    A pump that dies (its sink raised — a closed stderr —, or a bug) would leave the
    block waiting out its whole timeout for events nobody feeds it any more: its death
    wakes every wait at once (`run.lost`, `run.done`) and the block ends with its cause.
    """
    sub = rpc.subscribe()
    pump = asyncio.create_task(run.pump(sub), name=name)
    died: list[BaseException] = []

    def ended(task: asyncio.Task[None]) -> None:
        cause = None if task.cancelled() else task.exception()
        if cause is not None:
            died.append(cause)
            run.lost = f"following the turn stopped: {cause!r}"
            run.done.set()

    pump.add_done_callback(ended)
    try:
        yield
    except BridgeError:
        if died:  # the body only saw the pump's death (as "lost"): name the cause
            _raise_dead(died[0])
        raise
    finally:
        pump.remove_done_callback(ended)
        run.cancel_deadlines()
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pump
        sub.close()
    if not died and not pump.cancelled() and (cause := pump.exception()) is not None:
        died.append(cause)  # it died as the block ended, before `ended` ran
    if died:  # a result the pump did not see to its end is not one to report
        _raise_dead(died[0])


def _raise_dead(cause: BaseException) -> NoReturn:
    """End say() / follow_queued() with the error of a dead pump, naming its cause."""
    if isinstance(cause, BridgeError):
        raise cause
    if not isinstance(cause, OSError):
        raise internal(cause, "following the turn") from cause
    where = ("writing codexbridge's output failed (did whoever read it go away?)"
             if isinstance(cause, BrokenPipeError) else "writing codexbridge's output failed")
    raise OutputClosedError(
        f"{where}: {type(cause).__name__}: {cause}; the turn may still be running — "
        "`codexbridge talk read` shows what the thread kept. Do not resend blindly",
        details={"type": type(cause).__name__}) from cause


async def _refusable(progress: SayProgress, call: Awaitable[T]) -> T:
    """An error *answer* is a refusal: no turn will run. Only silence (a timeout, a lost
    connection) leaves the message's fate unknown."""
    try:
        return await call
    except RpcError:
        progress.turn_start_sent = False
        raise


async def _wait(event: asyncio.Event, timeout: float) -> bool:
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return False
    return True


async def _started(run: TurnFollower, timeout: float) -> bool:
    """Our turn started (or the connection is gone: then the caller finds out)."""
    if run.started.is_set():
        return True
    waiters = [asyncio.ensure_future(run.started.wait()), asyncio.ensure_future(run.done.wait())]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    return run.started.is_set() or run.lost is not None


async def _await_our_turn(rpc: Rpc, run: TurnFollower, thread_id: str,
                          progress: SayProgress, timeout: float) -> bool:
    """Wait up to `timeout` for our queued turn to start.

    Codex drains its queue by itself when a turn ends — except after an interrupt
    (measured: the queue then stays paused on an idle thread). So while we wait, an idle
    thread whose queue has *our* submission at its head gets `thread/queue/start` for it;
    submissions ahead of ours are left alone (their senders, or the human, decide).
    """
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        if await _started(run, min(QUEUE_CHECK, max(0.0, end - loop.time()))):
            return True
        if loop.time() >= end:
            return False
        await _start_if_first(rpc, thread_id, progress)


async def _start_if_first(rpc: Rpc, thread_id: str, progress: SayProgress) -> None:
    calls = Calls(rpc)
    thread = (await calls.thread_read(thread_id=thread_id)).thread
    if thread is not None and thread.busy:
        return
    listed = await calls.thread_queue_list(thread_id=thread_id, limit=1)
    if listed.data and listed.data[0].id == progress.submission_id:
        # Refused when it started meanwhile ("not found", "active or pending turn"): fine.
        with contextlib.suppress(RpcError):
            await calls.thread_queue_start(thread_id=thread_id,
                                           queued_submission_id=progress.submission_id)


async def _unqueue(rpc: Rpc, thread_id: str, progress: SayProgress) -> bool:
    """Take our submission back out of codex's queue; True if it never ran."""
    if progress.submission_id is None:
        return False
    deleted = (await Calls(rpc).thread_queue_delete(
        thread_id=thread_id, queued_submission_id=progress.submission_id)).deleted
    if deleted:
        progress.turn_start_sent = False
    return deleted


def _busy(thread_id: str, waited: float) -> SayResult:
    return SayResult(thread_id, None, TurnOutcome.BUSY, "", [], {
        "message": f"the thread stayed busy for {waited:g} s; nothing was sent"})

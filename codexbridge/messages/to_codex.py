"""Claude → Codex conversations: sending with a receipt, saying and waiting, and reading
where a message is — the one service `talk send`, `talk say`, MCP `codex_message_send`
and the Stop hook's answers back call.

    guards      a send from inside a Codex turn into that same thread is refused
                (`CODEX_THREAD_ID`, measured: codex sets it for the commands it runs);
                a request over its conversation's hop budget is refused — both before
                anything is recorded or delivered
    record      `deliveries/<id>.json` (queued), the text beside it (0600)
    send        the sender hands the message to codex's queue itself (it is connected
                and joined already: no second process on the way), then hands the record
                to the resident courier (`courier.py`), which follows the turn and routes
                the answer; the receipt says `queued` with codex's queue entry
    blocking    `talk say` and MCP wait=true: `blocking_say` — the same guards and a
                record (an agent's words), the turn followed by the caller itself; as
                an MCP task (`mcp/tasks.py`) its reply waits on the record until the
                session takes it (`task_told`), or the courier mails it (`take_over`)
    status      a record as it stands; one that needs a courier and has none gets one
                (it finds the message in the thread or codex's queue — never resent)
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, NamedTuple, Unpack, overload

from ..codex.client import AppServerClient, Rpc
from ..codex.endpoint import Reach, reach_of, resolve_endpoint
from ..codex.outcome import turn_started
from ..codex.protocol.enums import ApprovalPolicy, TurnOutcome
from ..codex.protocol.generated.enums import ThreadStatusType
from ..codex.protocol.threads import ThreadInfo, in_project
from ..codex.threads import find_joinable, join
from ..codex.turn import SayProgress, queue_message, say, take_back
from ..errors import (
    BridgeError,
    DeliveryNotFoundError,
    RpcError,
    SelfSendError,
    TurnStartFailedError,
)
from ..host.limits import max_hops
from ..host.mailboxes import inbox_dir
from ..host.paths import state_dir
from ..host.procs import pid_alive
from . import courier_link, envelope
from .conversations import Conversations, count_tokens, current_conversation
from .listeners import read_listeners
from .records import (
    Core,
    Cost,
    Damaged,
    Delivery,
    DeliveryStore,
    R,
    ToCodex,
    Tokens,
    envelope_of,
    preview,
)
from .routing import SESSION_ENV, SOCKET_ENV, reply_mailbox, sending_from_thread

if TYPE_CHECKING:
    from ..codex.turn import SayOptions, SayProgress, SayResult


class Receipt(NamedTuple):
    delivery: ToCodex
    thread: ThreadInfo

    def as_dict(self) -> dict[str, object]:
        d = self.delivery
        return {"ok": True, "delivery_id": d.id, "state": d.state.value,
                "thread": self.thread.as_dict(), "thread_id": d.thread_id,
                "chosen_by": d.chosen_by, "conversation": d.conversation, "hop": d.hop,
                "max_hops": d.max_hops, "reply_to": d.reply_to,
                "reply_to_how": d.reply_to_how, "in_reply_to": d.in_reply_to,
                "submission_id": d.submission_id, "warnings": d.warnings}


async def choose(rpc: Rpc, selector: str | None, cwd: str | None = None, *,
                 wait: float = 0.0) -> tuple[ThreadInfo, str]:
    """The target thread, and how it was chosen (`caller`, `cwd`, `only-thread`). It
    must be joinable now: a thread the TUI made but the human has not spoken in yet
    has no rollout, and a message queued there would fail after the receipt said ok."""
    thread = await find_joinable(rpc, selector, cwd, wait=wait)
    if wait <= 0:
        await join(rpc, thread.id)
    if selector or cwd:
        return thread, "caller" if selector else "cwd"

    here = os.path.realpath(os.getcwd())
    return thread, "project" if in_project([thread], here) else "only-thread"


def refuse_self_send(thread_id: str, env: Mapping[str, str]) -> None:
    """A command codex runs inside a turn of `thread_id` may not send into it."""
    if sending_from_thread(env) == thread_id:
        raise SelfSendError(
            f"refusing to send into thread {thread_id} from a command running inside it: "
            "the message would wait for the very turn that sends it. Answer in this turn "
            "instead (your final message is routed back by itself)",
            details={"threadId": thread_id})


def prepare(text: str, thread: ThreadInfo, chosen_by: str, *,
            reply_to: str | None = None, conversation: str | None = None,
            in_reply_to: str | None = None, policy: ApprovalPolicy = ApprovalPolicy.TUI,
            approval_timeout: float = 300.0, turn_timeout: float = 4 * 3600.0,
            env: Mapping[str, str] | None = None, reach: Reach | None = None,
            store: DeliveryStore | None = None, sender: envelope.Sender | None = None,
            new_conversation: bool = False) -> Receipt:
    """Pass the guards, spend the hop, write the record (nothing is sent yet). `reach`:
    how the courier gets to the app-server (none: it finds one itself). `sender`: who
    sends (default: `envelope.who_sends(env)`)."""
    env = os.environ if env is None else env
    store = store or DeliveryStore()
    sender = sender or envelope.who_sends(env)
    refuse_self_send(thread.id, env)
    token = envelope.request_token()
    conv = current_conversation(conversation, env, store, new=new_conversation)
    limit = max_hops(dict(env))
    if in_reply_to:
        hop, conv = 0, conv or envelope.conversation_id()
        recorded = Conversations().get(conv) if conv else None
        limit = recorded.max_hops if recorded and recorded.max_hops else limit
        route = None
    else:
        route = reply_mailbox(reply_to, env, read_listeners(inbox_dir()))
        conv, hop, limit = Conversations().spend_hop(conv, {
            "direction": _direction(sender), "delivery": token, "thread": thread.id,
            "reply_to": route.mailbox}, limit, words=text)
    record = ToCodex(id=token, conversation=conv, hop=hop, max_hops=limit,
                     in_reply_to=in_reply_to, thread_id=thread.id, chosen_by=chosen_by,
                     text_preview=preview(text), reply_to=route.mailbox if route else None,
                     reply_to_how=route.how if route else None, approvals=policy.value,
                     approval_timeout=approval_timeout, turn_timeout=turn_timeout,
                     sender=sender.speaker.value, sender_thread=sender.thread)
    store.note_reach(record, reach or Reach())
    if route is not None and route.mailbox is None:
        record.warnings.append(_no_mailbox_warning(env, token))
    store.queue(record, text)
    return Receipt(record, thread)


def _direction(sender: envelope.Sender) -> str:
    """The hop trail's arrow: who asked whom (a human's send counts as its shell's)."""
    return {envelope.Speaker.CODEX: "codex→codex",
            envelope.Speaker.HUMAN: "human→codex"}.get(sender.speaker, "claude→codex")


def _no_mailbox_warning(env: Mapping[str, str], token: str) -> str:
    where = (f"the reply stays readable with `codexbridge talk status {token}`; pass "
             "--reply-to MAILBOX or set $CODEX_BRIDGE_MAILBOX to have it brought to you")
    if env.get(SESSION_ENV) or env.get(SOCKET_ENV):
        return ("no reply-to mailbox: this Claude Code session is not registered with a "
                "codexbridge mailbox (`codexbridge install-hook --as NAME` registers it "
                f"when a session starts); {where}")
    return f"no reply-to mailbox: not run from a Claude Code session; {where}"


class Blocking(NamedTuple):
    """A blocking request (`talk say` run by an agent, MCP `codex_message_send`
    wait=true): its record — so `talk status` finds the request id its envelope names —
    and the text to send, framed."""

    record: ToCodex
    words: str

    def progress(self, store: DeliveryStore) -> SayProgress:
        """What say() reports, written on the record: codex's queue entry, the turn."""

        def changed(what: str, p: SayProgress) -> None:
            store.update(self.record.id, lambda r: r.progress(
                what, p.submission_id, p.turn_id, p.approval), ToCodex)

        return SayProgress(client_id=self.record.id, on_change=changed)


def blocking_request(text: str, thread_id: str, env: Mapping[str, str] | None = None,
                     conversation: str | None = None, sender: envelope.Sender | None = None,
                     new_conversation: bool = False, store: DeliveryStore | None = None,
                     task: bool = False) -> Blocking:
    """An agent's blocking message: the same guards, hop and envelope as `send`, and a
    record (`blocking`: the caller follows the turn and takes the answer itself, so no
    courier carries it and nothing is routed as mail; `finish_blocking` ends it). A
    `task`'s record also names the mailbox a non-blocking send would: where the answer
    goes should the asking session end before it takes it."""
    env = os.environ if env is None else env
    store = store or DeliveryStore()
    sender = sender or envelope.who_sends(env)
    refuse_self_send(thread_id, env)
    token = envelope.request_token()
    conv, hop, limit = Conversations().spend_hop(
        current_conversation(conversation, env, store, new=new_conversation), {
            "direction": _direction(sender), "delivery": token, "thread": thread_id,
            "reply_to": "inline"}, max_hops(dict(env)), words=text)
    mailbox = reply_mailbox(None, env, read_listeners(inbox_dir())).mailbox if task else None
    record = ToCodex(id=token, conversation=conv, hop=hop, max_hops=limit,
                     thread_id=thread_id, chosen_by="caller", text_preview=preview(text),
                     reply_to=mailbox,
                     reply_to_how=("the MCP task's result" + (
                         f" (mail to {mailbox} if the asking session ends first)"
                         if mailbox else "")) if task else "the call's own result",
                     sender=sender.speaker.value, sender_thread=sender.thread,
                     blocking=True, task=task, courier_pid=os.getpid())
    store.queue(record, text)
    return Blocking(record, envelope_of(record).wrap(text))


def finish_blocking(store: DeliveryStore, blocking: Blocking, result: SayResult | None,
                    failure: str | None = None) -> Cost | None:
    """The end of a blocking request, on its record: delivered with the reply's start,
    or why not (`failure`: the call raised — nothing was sent, or the turn may still
    run; `result` not completed: how the turn ended). What its turn cost (None: codex
    said nothing of it). A task's reply waits on the record (`reply_ready`) until its
    session takes it (`task_told`)."""

    def end(r: ToCodex) -> None:
        if r.state.final:
            return
        if result is not None:
            r.turn_id = result.turn_id or r.turn_id
        if result is not None and result.status is TurnOutcome.COMPLETED:
            if r.task:
                r.reply_ready(result.reply, result.reply_bytes)
                return
            r.courier_pid = None
            r.reply_preview, r.reply_bytes = preview(result.reply), result.reply_bytes
            r.deliver()
            return
        r.courier_pid = None
        r.fail(failure or _ended(result))

    store.update(blocking.record.id, end, ToCodex)
    if result is None or result.status is TurnOutcome.TIMED_OUT:
        return None  # (still running: not all of it is known)
    return count_tokens(store, blocking.record.id, Tokens.of_codex(result.usage))


def task_told(delivery_id: str, status: str, *, took_reply: bool = False,
              store: DeliveryStore | None = None) -> None:
    """What an MCP task's session was last told of it (`mcp/tasks.py`: its status, shown
    as is), on its record. `took_reply`: it was told the result — delivered, and the
    courier watching the task lets it go; the reply never goes as mail too."""

    def note(r: ToCodex) -> None:
        r.task_status = status
        if took_reply and not r.state.final:
            r.courier_pid = None
            r.deliver()

    (store or DeliveryStore()).update(delivery_id, note, ToCodex)


async def stop_request(delivery_id: str,
                       connect: Callable[[], AbstractAsyncContextManager[Rpc]],
                       reason: str, store: DeliveryStore | None = None) -> bool:
    """Its asker stops a request (an MCP task's cancel): failed with `reason`, its turn
    interrupted or its message taken back out of codex's queue. False when no turn of it
    will run — its follower has nothing to wait for."""

    def stopped(r: ToCodex) -> None:
        if not r.state.final:
            r.fail(reason)

    record = (store or DeliveryStore()).update(delivery_id, stopped, ToCodex)
    if record is None:
        return False
    async with connect() as rpc:
        return await take_back(rpc, record.thread_id, record.id, record.turn_id,
                               record.submission_id)


class Said(NamedTuple):
    """A blocking say's end, whoever called it: the thread, how its turn ended, and the
    request's record (None for the human's own words, which carry none)."""

    thread: ThreadInfo
    result: SayResult
    delivery_id: str | None
    cost: Cost | None = None  # what the turn cost (and its conversation so far)


async def blocking_say(text: str, *, connect: Callable[[], AbstractAsyncContextManager[Rpc]],
                       sender: envelope.Sender, selector: str | None = None,
                       cwd: str | None = None, wait_thread: float = 0.0,
                       conversation: str | None = None, new_conversation: bool = False,
                       store: DeliveryStore | None = None,
                       task: Callable[[Blocking], None] | None = None,
                       **options: Unpack[SayOptions]) -> Said:
    """Say `text` into the thread and wait for its turn — the one composition `talk say`
    and MCP `codex_message_send` (wait=true) call; they only render what comes back.

    An agent's words are a request: the envelope, a hop and a record (`blocking_request`),
    codex's progress written on it, its end written whatever happens (`finish_blocking`).
    The human's own words go as typed, with no record. A failure raises as
    `_raised_after` decides: once the message went to codex, marked `turnStarted`.
    `task`: an MCP task follows this request (`mcp/tasks.py`), told of it once it is
    recorded, before anything goes to codex."""

    store = store or DeliveryStore()
    async with connect() as client:
        thread = await find_joinable(client, selector, cwd, wait=wait_thread)
        request = None
        if sender.is_agent:
            request = blocking_request(text, thread.id, sender=sender,
                                       conversation=conversation,
                                       new_conversation=new_conversation, store=store,
                                       task=task is not None)
            if task is not None:
                task(request)
        progress = request.progress(store) if request else SayProgress()
        try:
            result = await say(client, thread.id, request.words if request else text,
                               progress=progress, **options)
        except BaseException as exc:
            # A task's call cancelled is its MCP server going away (a tasks/cancel fails
            # the record itself): the record stays for the courier, which watches it.
            if request is not None and not (task and isinstance(exc, asyncio.CancelledError)):
                finish_blocking(store, request, None, failure=_why_not(exc))
            raised = _raised_after(exc, progress)
            if raised is exc:
                raise
            raise raised from exc
        cost = (finish_blocking(store, request, result) if request is not None else
                Cost(tokens) if (tokens := Tokens.of_codex(result.usage)) else None)
    return Said(thread, result, request.record.id if request else None, cost)


def _why_not(exc: BaseException) -> str:
    """A blocking request's end when the call itself failed (its record says it)."""

    if isinstance(exc, BridgeError):
        return exc.message
    if isinstance(exc, (KeyboardInterrupt, SystemExit, asyncio.CancelledError)):
        return "the call was stopped while it waited; the turn may still run in the TUI"
    return f"the call failed: {exc!r}"


def _raised_after(exc: BaseException, progress: SayProgress) -> BaseException:
    """What a blocking say's failure raises. After the message went to codex the turn may
    be running, whatever the error: marked `turnStarted` (never retry it). Before, a
    plain refusal from codex is a refused turn start — nothing ran."""

    if not isinstance(exc, BridgeError):
        return exc
    if progress.turn_start_sent:
        return turn_started(exc)
    if type(exc) is RpcError:
        return TurnStartFailedError(exc.rpc_code, exc.message, exc.data)
    return exc


def _ended(result: SayResult | None) -> str:
    """Why a blocking request's turn gave no answer, as its record says it."""

    if result is None:
        return "the call ended before its turn did"
    if result.status is TurnOutcome.BUSY:
        return ("it waited in codex's queue too long and was taken back out: nothing was "
                "sent (CODEX_BRIDGE_QUEUE_WAIT)")
    if result.status is TurnOutcome.TIMED_OUT:
        return "the call stopped following the turn at its timeout; the turn may still run"
    return f"the turn ended {result.status.value}" + (f": {result.error}" if result.error
                                                      else "")


RECOVER_WAIT = 5.0  # s: a courier started for `talk status` settles a dead one's record


async def send(text: str, *, selector: str | None = None, cwd: str | None = None,
               url: str | None = None, reply_to: str | None = None,
               conversation: str | None = None, in_reply_to: str | None = None,
               policy: ApprovalPolicy = ApprovalPolicy.TUI, approval_timeout: float = 300.0,
               turn_timeout: float = 4 * 3600.0, wait_thread: float = 0.0,
               env: Mapping[str, str] | None = None,
               store: DeliveryStore | None = None,
               connect: Callable[[], AbstractAsyncContextManager[Rpc]] | None = None,
               reach: Reach | None = None, sender: envelope.Sender | None = None,
               new_conversation: bool = False) -> Receipt:
    """Send `text` into the thread: guards, record, codex's queue, the courier — and the
    receipt, within a second. Errors before codex took the message mean nothing was
    sent (and nothing is left recorded as on its way). `connect` (the MCP server's
    connector) replaces connecting to `url`, with `reach` saying how the courier gets
    to the same server (none: it finds the endpoint itself). Everything the courier
    needs to reach the server travels in the record: it never uses its own
    environment (it was started by whoever came first)."""

    store = store or DeliveryStore()
    if connect is None:
        endpoint = resolve_endpoint(url, thread=selector)
        reach = reach_of(endpoint)

        def connect() -> AbstractAsyncContextManager[Rpc]:
            return AppServerClient(endpoint.url, token=endpoint.token,
                                   ca_file=endpoint.ca_file, ca_dir=endpoint.ca_dir)

    async with connect() as client:
        thread, chosen_by = await choose(client, selector, cwd, wait=wait_thread)
        receipt = prepare(text, thread, chosen_by, reply_to=reply_to,
                          conversation=conversation, in_reply_to=in_reply_to, policy=policy,
                          approval_timeout=approval_timeout, turn_timeout=turn_timeout,
                          env=env, reach=reach, store=store, sender=sender,
                          new_conversation=new_conversation)
        record = receipt.delivery
        if thread.state is ThreadStatusType.NOT_LOADED:
            record = _unattended(store, record, thread)
        progress = SayProgress(client_id=record.id)
        try:
            await queue_message(client, thread.id, envelope_of(record).wrap(text), progress)
        except RpcError as exc:  # an answer: codex refused it, no turn will run it
            why = f"codex refused the message: {exc.message}"
            store.update(record.id, lambda r: r.fail(why))
            raise
        except BridgeError:
            pass  # no answer: codex may hold it; the courier looks before anything else
        else:
            store.update(record.id, lambda r: r.progress("queued", progress.submission_id,
                                                         None), ToCodex)
    if not await asyncio.to_thread(courier_link.ensure, [record.id]):
        store.update(record.id, lambda r: r.warnings.append(
            "no courier could be started to follow the turn (see "
            f"{state_dir(create=False) / 'logs' / 'courier.log'}); the message is in "
            "codex's queue, and "
            "the next codexbridge command or Claude stop starts one to route the answer"))
    return receipt._replace(delivery=get(store, record.id, ToCodex))


def _unattended(store: DeliveryStore, record: ToCodex, thread: ThreadInfo) -> ToCodex:
    """The thread was not loaded (`--thread ID` of a thread codex unloaded after its TUI
    quit): nobody watches its turn. Said in the receipt; the courier tells the asker at
    once of any approval the turn waits on."""
    where = thread.cwd or "its project"
    note = (f"thread {thread.id} was not loaded — no Codex TUI is attached to it — so "
            "codexbridge resumed it: the turn runs unseen, and an approval it asks for "
            f"has nobody to answer it (declined after {record.approval_timeout:g} s, "
            "fail-closed; you are told at once if one comes). The human sees it with "
            f"`codex resume --last` in {where} (or `codex resume {thread.id}`)")

    def change(r: ToCodex) -> None:
        r.unattended = True
        r.warnings.append(note)

    return store.update(record.id, change, ToCodex) or get(store, record.id, ToCodex)


def status(store: DeliveryStore, delivery_id: str) -> Delivery:
    """The record as it stands. One that still needs a courier and has none (it died, or
    the machine rebooted) is handed to a new one, which finds the message in the thread
    or codex's queue and carries on — never resending it."""
    record = get(store, delivery_id)
    if _caller_gone(record):
        # A blocking send whose caller died waiting (Claude Code's Bash tool kills a
        # command after 120 s): the courier adopts it — it finds the turn by the
        # record's id in the thread, or the message in codex's queue; never resent.
        record = take_over(store, delivery_id) or record
    if record.needs_courier and not courier_link.running():
        courier_link.ensure([record.id])
        # The new courier looks in the thread at once: what it finds is worth showing.
        end = time.monotonic() + RECOVER_WAIT
        while time.monotonic() < end:
            latest = get(store, delivery_id)
            if latest.state is not record.state or latest.state.final:
                return latest
            time.sleep(0.05)
        record = get(store, delivery_id)
    return record


def _caller_gone(record: Delivery) -> bool:
    return (isinstance(record, ToCodex) and record.blocking and not record.state.final
            and record.courier_pid is not None and not pid_alive(record.courier_pid))


def take_over(store: DeliveryStore, delivery_id: str) -> ToCodex | None:
    """A blocking request whose caller died before taking the answer is the courier's
    from now on (its answer goes as mail to the record's `reply_to`, if it names one)."""
    return store.update(delivery_id, _adopt, ToCodex)


def _adopt(record: ToCodex) -> None:
    if _caller_gone(record):
        record.blocking = False
        record.warnings.append(
            f"the call that sent it (pid {record.courier_pid}) ended before the answer; "
            "the courier follows the turn instead" + (
                f" and the answer goes as mail to mailbox {record.reply_to}"
                if record.reply_to else ""))


@overload
def get(store: DeliveryStore, delivery_id: str) -> Delivery: ...
@overload
def get(store: DeliveryStore, delivery_id: str, kind: type[R]) -> R: ...


def get(store: DeliveryStore, delivery_id: str, kind: type[Core] = Core) -> Core:
    """The record (of road `kind`); DeliveryNotFoundError when there is none, its file
    is damaged, or it is another road's."""
    record = store.read(delivery_id)
    if isinstance(record, Damaged):
        # Not "never made": the file is there but damaged (left as it is, for a person).
        raise DeliveryNotFoundError(
            f"delivery {delivery_id!r}: its record {record.path} is damaged "
            f"({record.reason}); it is left as it is — {record.fix}",
            details={"delivery": delivery_id, "path": record.path, "reason": record.reason})
    if record is None:
        raise DeliveryNotFoundError(f"no delivery {delivery_id!r} in {store.root} (never made "
                                    "here, or expired)", details={"delivery": delivery_id})
    if not isinstance(record, kind):
        raise DeliveryNotFoundError(f"delivery {delivery_id!r} is a {record.direction.value} "
                                    "record, not the kind asked for",
                                    details={"delivery": delivery_id})
    return record

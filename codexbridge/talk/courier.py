"""The courier: carries one Claude → Codex delivery to its end, then routes the reply.

Started detached by `talk send` (`codexbridge talk courier ID`), or again by recovery
to take over a delivery whose courier died. It hands the message to codex's queue
(wrapped in the envelope the peer and the human see), follows the turn, answers its
approvals by the record's policy, and — when Codex has answered — leaves the reply as
mail in the reply-to mailbox (`in_reply_to`, `conversation`, `delivery_id` fields), so
the Stop hook or the watcher brings it into the Claude session that asked.

A courier never resends: taking over, it looks for the message in the thread first
(`recover.py`) and follows that turn, or waits for the submission still in codex's
queue.
"""

from __future__ import annotations

import os
from typing import Any

from ..conversation import envelope
from ..conversation.limits import clip, mail_max
from ..conversation.records import Delivery, DeliveryState, DeliveryStore, Direction, preview
from ..errors import BridgeError, ConnectionLostError, RequestTimeoutError
from ..host.locking import try_lock
from ..host.private import ensure_private_dir, write_private
from ..inbox import service as inbox
from ..protocol.enums import ApprovalPolicy, TurnOutcome
from ..protocol.generated.enums import TurnStatus
from .client import AppServerClient, Rpc
from .deliveries import get, text_path
from .endpoint import resolve_endpoint
from .follow import SayResult
from .recover import locate, still_queued
from .turn import SayProgress, follow, say

CLIENT_NAME = "codexbridge-courier"
# Failures after which codex may hold the message even though we never heard so.
UNSURE = (ConnectionLostError, RequestTimeoutError)


class Orphaned(Exception):
    """The message is nowhere: not in the thread, not in codex's queue."""


def envelope_of(record: Delivery) -> envelope.Envelope:
    where = f'mailbox "{record.reply_to}" (the asking Claude)' if record.reply_to else None
    return envelope.Envelope(envelope.CLAUDE, record.id, record.conversation or "",
                             record.hop, record.max_hops, where, record.in_reply_to)


async def carry(delivery_id: str, store: DeliveryStore | None = None) -> Delivery:
    """Carry the delivery (fresh, or taking over) to a final state, or leave it
    `awaiting-reply` when the turn outlives `turn_timeout`."""
    store = store or DeliveryStore()
    record = get(store, delivery_id)
    text = text_path(store, record.id).read_text(encoding="utf-8")
    store.update(record.id, lambda r: setattr(r, "courier_pid", os.getpid()))
    ep = resolve_endpoint(record.app_server)
    try:
        async with AppServerClient(ep.url, token=ep.token, client_name=CLIENT_NAME) as client:
            result, took_over = await _run(client, store, record,
                                           envelope_of(record).wrap(text))
    except Orphaned as exc:
        return _final(store, record.id, DeliveryState.ORPHANED, reason=str(exc),
                      courier_pid=None)
    except BridgeError as exc:
        latest = get(store, record.id)
        if latest.submission_id is None and latest.turn_id is None and not isinstance(
                exc, UNSURE):
            # Refused or never connected before codex took the message: provably
            # nothing will run it, so it failed (and the asker hears of it).
            reason = f"not delivered: {exc.message}"
            mail_id = _notify(latest, f"DELIVERY FAILED: your request {latest.id} to Codex "
                                      f"(thread {latest.thread_id}) — {reason}", False)
            return _final(store, record.id, DeliveryState.FAILED, reason=reason,
                          reply_mail_id=mail_id)
        raise  # codex may hold it: the record stays for `talk status` to recover
    # An answer read from a turn a dead courier left behind is a recovered one.
    return finish(store, record.id, result, recovered=took_over)


async def _run(client: Rpc, store: DeliveryStore, record: Delivery,
               text: str) -> tuple[SayResult, bool]:
    policy = ApprovalPolicy.parse(record.approvals) or ApprovalPolicy.TUI
    common: dict[str, Any] = {"approvals": policy, "approval_timeout": record.approval_timeout,
                              "timeout": record.turn_timeout}
    assert record.thread_id is not None
    progress = SayProgress(client_id=record.id, on_change=lambda what, p: _progress(
        store, record.id, what, p))
    if record.state is not DeliveryState.QUEUED or record.submission_id is not None:
        found = await locate(client, record.thread_id, record.id)
        if found is not None:
            store.update(record.id, lambda r: r.move(DeliveryState.AWAITING_REPLY,
                                                     turn_id=found.turn_id))
            return await follow(client, record.thread_id, found.turn_id, **common), True
        if not await still_queued(client, record.thread_id, record.submission_id, record.id):
            raise Orphaned("codex no longer has the message (not in the thread, not in its "
                           "queue); it is not resent")
        progress.submission_id = record.submission_id
    answering = False

    def on_delta(_chunk: str) -> None:
        nonlocal answering
        if not answering:
            answering = True
            store.update(record.id, _answering)

    return await say(client, record.thread_id, text, progress=progress, on_delta=on_delta,
                     **common), False


def _answering(r: Delivery) -> None:
    """Codex's first words: the message was delivered (even if the news of the turn's
    start is still on its way) and the answer is coming."""
    if r.state is DeliveryState.QUEUED:
        r.move(DeliveryState.DELIVERING)
    r.move(DeliveryState.AWAITING_REPLY)


def _progress(store: DeliveryStore, delivery_id: str, what: str, p: SayProgress) -> None:
    """Note codex's queue entry and the turn's start. Never backwards: on an idle thread
    the turn (even its first delta) can come before the answer to thread/queue/add."""
    def queued(r: Delivery) -> None:
        r.submission_id = p.submission_id

    def started(r: Delivery) -> None:
        r.turn_id = p.turn_id
        if r.state is DeliveryState.QUEUED:
            r.move(DeliveryState.DELIVERING)

    if what in ("queued", "started"):
        store.update(delivery_id, queued if what == "queued" else started)


def finish(store: DeliveryStore, delivery_id: str, result: SayResult, *,
           recovered: bool = False) -> Delivery:
    """Route the outcome of the turn and close the record."""
    record = get(store, delivery_id)
    message = (result.error or {}).get("message") if isinstance(result.error, dict) else None
    if result.status is TurnOutcome.TIMED_OUT:
        return _final(store, delivery_id, DeliveryState.AWAITING_REPLY, courier_pid=None,
                      reason=f"the courier stopped following after {record.turn_timeout:g} s; "
                             "`talk status` recovers the answer when the turn ends")
    if result.status is not TurnOutcome.COMPLETED:
        reason = f"the turn ended {result.status}" + (f": {message}" if message else "")
        mail_id = _notify(record, f"DELIVERY FAILED: your request {record.id} to Codex "
                                  f"(thread {record.thread_id}) did not complete — {reason}.",
                          recovered)
        return _final(store, delivery_id, DeliveryState.FAILED, reason=reason,
                      turn_id=result.turn_id or record.turn_id, reply_mail_id=mail_id,
                      reply_preview=preview(result.reply), recovered=recovered)
    label = "RECOVERED reply" if recovered else "Reply"
    cut = (f"\n\n[codexbridge: Codex's reply was {result.reply_bytes} bytes; the first "
           f"{len(result.reply.encode('utf-8'))} were kept — `codexbridge talk read` shows "
           "the thread]" if result.truncated else "")
    mail_id = _notify(record, f"{label} from Codex (thread {record.thread_id}) to your request "
                              f"{record.id}, conversation {record.conversation}:\n\n"
                              f"{_bounded(store, record.id, result.reply)}{cut}", recovered)
    return _final(store, delivery_id, DeliveryState.DELIVERED,
                  turn_id=result.turn_id or record.turn_id, reply_preview=preview(result.reply),
                  reply_bytes=result.reply_bytes or len(result.reply.encode("utf-8")),
                  reply_mail_id=mail_id, recovered=recovered)


def _bounded(store: DeliveryStore, delivery_id: str, reply: str) -> str:
    """The reply as mail can carry it: whole up to the mail cap (over 64 KiB the mailbox
    hands Claude a preview and a file, inbox/spill.py), else cut with the path of the
    whole text (kept beside the record, 0600)."""
    limit = mail_max(os.environ) // 4  # characters, so the mail stays under the byte cap
    if len(reply) <= limit:
        return reply
    path = store.root / f"{delivery_id}.reply"
    write_private(path, reply.encode("utf-8"))
    return clip(reply, limit, f"in the file {path}")


def _notify(record: Delivery, text: str, recovered: bool) -> str | None:
    """Leave `text` in the reply-to mailbox; None when there is none (or it failed)."""
    if not record.reply_to or record.in_reply_to:
        return None  # nobody to tell, or this was itself a reply: replies are not answered
    try:
        receipt = inbox.push(text, to=record.reply_to, sender="codex", new=True, fields={
            "in_reply_to": record.id, "conversation": record.conversation,
            "delivery_id": record.id, "recovered": recovered})
    except BridgeError:
        return None
    return receipt.mail.mail_id


def _final(store: DeliveryStore, delivery_id: str, state: DeliveryState,
           **changes: Any) -> Delivery:
    updated = store.update(delivery_id, lambda r: r.move(state, **changes))
    record = updated or get(store, delivery_id)
    if record.in_reply_to and record.state.final:
        close_request(store, record.in_reply_to, record)
    return record


def close_request(store: DeliveryStore, request: str, reply: Delivery | None,
                  failure: str | None = None) -> None:
    """Claude's answer to `request` reached the asking thread (a turn ran with it), or
    did not — then the request says so, and where the answer is kept."""
    ran = reply is not None and reply.turn_id is not None and failure is None
    why = failure or (reply.reason if reply is not None else None) or "unknown"

    def change(r: Delivery) -> None:
        if r.state.final:
            return
        if ran:
            r.move(DeliveryState.DELIVERED)
        else:
            kept = text_path(store, reply.id) if reply is not None else None
            r.move(DeliveryState.FAILED, reason=f"the answer did not reach thread "
                   f"{r.thread_id}: {why}" + (f" (the answer is kept in {kept})" if kept
                                               else ""))

    store.update(request, change)


async def check(store: DeliveryStore, delivery_id: str) -> Delivery:
    """A record as it stands — recovered when its courier died before the end.

    The thread decides (`recover.py`): our turn finished → the answer is routed,
    marked RECOVERED; still running, or still in codex's queue → a new courier takes
    over (no resend); nowhere → `orphaned`. Messages to Claude have no courier.
    """
    from .deliveries import courier_gone

    record = get(store, delivery_id)
    if (record.direction is not Direction.TO_CODEX or not courier_gone(record)
            or record.thread_id is None):
        return record
    # One recovery at a time (two `talk status` must not start two couriers); a second
    # checker sees the record as it stands and leaves it to the first.
    ensure_private_dir(store.root)
    with try_lock(str(store.root / f".{delivery_id}.check.lock")) as mine:
        if not mine:
            return record
        record = get(store, delivery_id)
        if not courier_gone(record):
            return record
        return await _recover(store, record)


async def _recover(store: DeliveryStore, record: Delivery) -> Delivery:
    from .deliveries import start_courier

    delivery_id = record.id
    assert record.thread_id is not None
    ep = resolve_endpoint(record.app_server)
    async with AppServerClient(ep.url, token=ep.token, client_name=CLIENT_NAME) as client:
        found = await locate(client, record.thread_id, record.id)
        if found is None and await still_queued(client, record.thread_id,
                                                record.submission_id, record.id):
            start_courier(record, store)
            return get(store, delivery_id)
    if found is None:
        why = ("the courier stopped before it handed the message to codex"
               if record.submission_id is None
               else "codex no longer has the message (not in the thread, not in its queue)")
        return _final(store, delivery_id, DeliveryState.ORPHANED, courier_pid=None,
                      reason=f"{why}; it is not resent")
    if found.status == TurnStatus.IN_PROGRESS:
        store.update(delivery_id, lambda r: r.move(DeliveryState.AWAITING_REPLY,
                                                   turn_id=found.turn_id))
        start_courier(record, store)
        return get(store, delivery_id)
    outcome = TurnOutcome.parse(found.status) or TurnOutcome.FAILED
    return finish(store, delivery_id, SayResult(record.thread_id, found.turn_id, outcome,
                                                found.reply, [], found.error),
                  recovered=True)

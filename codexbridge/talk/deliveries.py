"""Claude → Codex conversations: `talk send` and `talk status`, for the CLI and MCP.

`send` makes the decisions and returns a receipt within a second; a detached courier
process (`courier.py`) carries the message after the caller is gone — it works with any
app-server (our `serve` or the user's own daemon), and a Claude Code Bash call that is
killed after 120 s no longer loses the answer.

    guards      a send from inside a Codex turn into that same thread is refused
                (`CODEX_THREAD_ID`, measured: codex sets it for the commands it runs);
                a request over its conversation's hop budget is refused — both before
                anything is recorded or delivered
    record      `deliveries/<id>.json` (queued), the text beside it (0600)
    courier     started detached; the receipt waits ≤ 0.8 s for it to report codex's
                queue entry, and says `queued` either way
    status      a record; one whose courier died is recovered from the thread — the
                answer read by the delivery id codex kept as the turn's `clientId` —
                marked `recovered`, or `orphaned` when the message is nowhere. Never resent.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from ..conversation import envelope
from ..conversation.budget import CONVERSATION_ENV, Conversations, max_hops
from ..conversation.context import current_conversation
from ..conversation.records import Delivery, DeliveryState, DeliveryStore, Direction, preview
from ..conversation.routing import (
    SESSION_ENV,
    SOCKET_ENV,
    reply_mailbox,
    sending_from_thread,
)
from ..errors import DeliveryNotFoundError, SelfSendError
from ..host.paths import state_dir
from ..host.procs import pid_alive
from ..inbox.listeners import read_listeners
from ..inbox.location import inbox_dir
from ..protocol.enums import ApprovalPolicy
from ..protocol.threads import ThreadInfo
from .client import Rpc
from .threads import find_joinable, join

RECEIPT_WAIT = 0.8  # of the 1 s a send may take: the rest is connecting and resolving


class Receipt(NamedTuple):
    delivery: Delivery
    thread: ThreadInfo

    def as_dict(self) -> dict[str, object]:
        d = self.delivery
        return {"ok": True, "delivery_id": d.id, "state": d.state.value,
                "thread": self.thread.as_dict(), "thread_id": d.thread_id,
                "chosen_by": d.chosen_by, "conversation": d.conversation, "hop": d.hop,
                "max_hops": d.max_hops, "reply_to": d.reply_to,
                "reply_to_how": d.reply_to_how, "in_reply_to": d.in_reply_to,
                "submission_id": d.submission_id, "warnings": d.warnings}


def text_path(store: DeliveryStore, delivery_id: str) -> Path:
    return store.root / f"{delivery_id}.text"


async def choose(rpc: Rpc, selector: str | None, cwd: str | None = None, *,
                 wait: float = 0.0) -> tuple[ThreadInfo, str]:
    """The target thread, and how it was chosen (`caller`, `cwd`, `only-thread`). It
    must be joinable now: a thread the TUI made but the human has not spoken in yet
    has no rollout, and a message queued there would fail after the receipt said ok."""
    thread = await find_joinable(rpc, selector, cwd, wait=wait)
    if wait <= 0:
        await join(rpc, thread.id)
    return thread, "caller" if selector else ("cwd" if cwd else "only-thread")


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
            env: Mapping[str, str] | None = None, app_server: str | None = None,
            store: DeliveryStore | None = None) -> Receipt:
    """Pass the guards, spend the hop, write the record (nothing is sent yet)."""
    env = os.environ if env is None else env
    store = store or DeliveryStore()
    refuse_self_send(thread.id, env)
    token = envelope.request_token()
    conv = current_conversation(conversation, env, store)
    limit = max_hops(dict(env))
    if in_reply_to:
        hop, conv = 0, conv or envelope.conversation_id()
        route = None
    else:
        route = reply_mailbox(reply_to, env, read_listeners(inbox_dir()))
        conv, hop = Conversations().spend(conv, {
            "direction": "claude→codex", "delivery": token, "thread": thread.id,
            "reply_to": route.mailbox}, limit)
    record = Delivery(id=token, direction=Direction.TO_CODEX, conversation=conv, hop=hop,
                      max_hops=limit, in_reply_to=in_reply_to, thread_id=thread.id,
                      chosen_by=chosen_by, text_preview=preview(text),
                      reply_to=route.mailbox if route else None,
                      reply_to_how=route.how if route else None,
                      approvals=policy.value, approval_timeout=approval_timeout,
                      turn_timeout=turn_timeout, app_server=app_server)
    if route is not None and route.mailbox is None:
        record.warnings.append(_no_mailbox_warning(env, token))
    record.move(DeliveryState.QUEUED)
    store.save(record)
    from ..host.private import write_private

    write_private(text_path(store, token), text.encode("utf-8"))
    return Receipt(record, thread)


def _no_mailbox_warning(env: Mapping[str, str], token: str) -> str:
    where = (f"the reply stays readable with `codexbridge talk status {token}`; pass "
             "--reply-to MAILBOX or set $CODEX_BRIDGE_MAILBOX to have it brought to you")
    if env.get(SESSION_ENV) or env.get(SOCKET_ENV):
        return ("no reply-to mailbox: this Claude Code session is not registered with a "
                "codexbridge mailbox (`codexbridge install-hook --as NAME` registers it "
                f"when a session starts); {where}")
    return f"no reply-to mailbox: not run from a Claude Code session; {where}"


def blocking_request(text: str, thread_id: str, env: Mapping[str, str] | None = None,
                     conversation: str | None = None) -> str:
    """An agent's blocking message (MCP `codex_message_send`, `talk say` from Claude Code):
    the same guards and hop as `send`, and the envelope — the answer is the call's own
    result, so nothing is recorded or routed. Returns the text to send."""
    env = os.environ if env is None else env
    refuse_self_send(thread_id, env)
    token = envelope.request_token()
    limit = max_hops(dict(env))
    conv, hop = Conversations().spend(current_conversation(conversation, env), {
        "direction": "claude→codex", "delivery": token, "thread": thread_id,
        "reply_to": "inline"}, limit)
    return envelope.Envelope(envelope.CLAUDE, token, conv, hop, limit,
                             "this call (the asking Claude waits for it)").wrap(text)


def start_courier(record: Delivery, store: DeliveryStore | None = None,
                  env: Mapping[str, str] | None = None) -> int:
    """The detached process that carries `record` (its own session: it outlives us);
    its pid goes on the record, so a courier that died is told from one at work."""
    child_env = dict(os.environ if env is None else env)
    if record.conversation:
        child_env[CONVERSATION_ENV] = record.conversation
    logs = state_dir() / "logs"
    from ..host.private import ensure_private_dir

    ensure_private_dir(logs)
    with open(logs / "courier.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "talk", "courier",
                                 record.id], env=child_env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True)
    (store or DeliveryStore()).update(record.id, lambda r: setattr(r, "courier_pid", proc.pid))
    return proc.pid


async def await_receipt(store: DeliveryStore, record: Delivery,
                        wait: float = RECEIPT_WAIT) -> Delivery:
    """The record once the courier reports codex's queue entry (or after `wait`)."""
    end = time.monotonic() + wait
    current = record
    while time.monotonic() < end:
        latest = store.get(record.id)
        if latest is not None:
            current = latest
            if latest.submission_id or latest.state is not DeliveryState.QUEUED:
                break
        await asyncio.sleep(0.02)
    return current


def get(store: DeliveryStore, delivery_id: str) -> Delivery:
    record = store.get(delivery_id)
    if record is None:
        try:
            path = store.path(delivery_id)
        except ValueError:
            path = None
        if path is not None and path.exists():
            # Not "never made": the file is there but damaged (left as it is, for a person).
            raise DeliveryNotFoundError(
                f"delivery {delivery_id!r}: its record {path} is damaged (not a delivery "
                "record this codexbridge can read); it is left as it is",
                details={"delivery": delivery_id, "path": str(path)})
        raise DeliveryNotFoundError(f"no delivery {delivery_id!r} in {store.root} (never made "
                                    "here, or expired)", details={"delivery": delivery_id})
    return record


COURIER_START_GRACE = 10.0  # s: between writing a record and noting its courier's pid


def courier_gone(record: Delivery, now: float | None = None) -> bool:
    """True when nobody carries this unfinished delivery any more."""
    if record.state.final:
        return False
    if record.courier_pid is None:
        # Just written: the sender is starting its courier this very moment.
        age = (time.time() if now is None else now) - record.updated_at
        return age > COURIER_START_GRACE
    return not pid_alive(record.courier_pid)

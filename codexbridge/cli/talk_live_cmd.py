"""`codexbridge talk send | status | steer | interrupt | name`: conversations and live
control, the front end of `messages/to_codex.py`, `messages/courier.py`, `codex/turn.py`."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import click

from ..codex.protocol.approvals import approval_settings
from ..codex.threads import find_target, rename
from ..codex.turn import interrupt as interrupt_turn
from ..codex.turn import steer as steer_turn
from ..error_tables import exit_help
from ..errors import (
    AmbiguousThreadError,
    BridgeError,
    ConnectError,
    DeliveryNotFoundError,
    LoopGuardError,
    NoRunningTurnError,
    NoThreadError,
    UsageError,
)
from ..host.limits import DEFAULT_MAX_HOPS
from ..host.mailboxes import mailbox_name
from ..host.private import ensure_private_dir, write_private
from ..messages.conversations import Conversations, cost_of
from ..messages.envelope import steer_text, who_sends
from ..messages.records import Damaged, Delivery, DeliveryStore, ToCodex, close_request
from ..messages.to_codex import refuse_self_send
from ..messages.to_codex import send as send_message
from ..messages.to_codex import status as check
from .command import (
    approval_timeout_option,
    approvals_option,
    command,
    echo,
    emit_json,
    json_option,
    read_text_arg,
    run_async,
    url_option,
    wait_thread_option,
)
from .talk_cmd import connect, cwd_option, thread_option

if TYPE_CHECKING:
    from ..messages.to_codex import Receipt


SEND_EXIT_HELP = exit_help(UsageError, NoThreadError, AmbiguousThreadError, ConnectError,
                           LoopGuardError, success="the message is on its way (see the receipt)")
STATUS_EXIT_HELP = exit_help(DeliveryNotFoundError, ConnectError,
                             success="shown (with --wait: it reached a final state)",
                             extra={6: "timed out: --wait passed before a final state"})
CONTROL_EXIT_HELP = exit_help(UsageError, NoThreadError, NoRunningTurnError,
                              AmbiguousThreadError, ConnectError)
COURIER_TIMEOUT = 4 * 3600.0


@click.command("send", epilog=SEND_EXIT_HELP)
@click.argument("text")
@thread_option
@cwd_option
@click.option("--reply-to", metavar="MAILBOX",
              help="Where Codex's answer goes. Default: the mailbox of the Claude Code "
                   "session running this command ($CLAUDE_CODE_MESSAGING_SOCKET), else "
                   "$CODEX_BRIDGE_MAILBOX.")
@click.option("--conversation", metavar="ID",
              help="Conversation to continue (its hop budget). Default: the one this "
                   "session is handling, else a new one.")
@click.option("--new-conversation", is_flag=True,
              help="Start a new conversation with its own hop budget (what a send refused "
                   "over budget does to go on).")
@click.option("--in-reply-to", metavar="REQUEST",
              help="This answers request REQUEST: spends no hop, and Codex's next words "
                   "are not routed back.")
@approvals_option
@approval_timeout_option
@click.option("--timeout", type=click.FloatRange(min=1), default=COURIER_TIMEOUT, metavar="S",
              show_default=True, help="How long the courier follows the turn.")
@wait_thread_option
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@url_option
@json_option
@command
def send(text: str, selector: str | None, target_cwd: str | None, reply_to: str | None,
         conversation: str | None, new_conversation: bool, in_reply_to: str | None,
         approvals: str | None,
         approval_timeout: float | None, timeout: float, wait_thread: float, quiet: bool,
         url: str | None, as_json: bool) -> None:
    """Send TEXT (or `-` for stdin) into the thread and return at once with a receipt.

    \b
    The message goes into codex's queue for the thread (the human watches its turn in
    the TUI); codexbridge's courier — one background process, started when needed —
    follows the turn and, when Codex has answered, leaves the answer as mail in the
    reply-to mailbox, which reaches the Claude session that asked by itself (live, or
    its Stop hook / watcher). If the app-server goes away, the courier waits for it
    (CODEX_BRIDGE_SERVER_WAIT, 60 s) and otherwise mails DELIVERY FAILED.
    `talk status ID` shows where it is. Every request carries an envelope
    (who sends it, conversation, hop n/N, request token) and spends one hop of its
    conversation's budget (40 by default; `talk budget N` changes it for every
    conversation, running ones included); the same request three times in one
    conversation is refused as a loop, and so is a send from inside a Codex turn into
    that same thread.
    """
    message = read_text_arg(text)
    if selector:
        refuse_self_send(selector, os.environ)  # before connecting: the sandbox may not let us
    policy, deadline = approval_settings(os.environ, policy=approvals,
                                         timeout=approval_timeout)
    if reply_to:
        reply_to = mailbox_name(reply_to)
    store = DeliveryStore()

    async def go() -> Receipt:
        return await send_message(message, selector=selector, cwd=target_cwd, url=url,
                            reply_to=reply_to, conversation=conversation,
                            in_reply_to=in_reply_to, policy=policy, approval_timeout=deadline,
                            turn_timeout=timeout, wait_thread=wait_thread, store=store,
                            new_conversation=new_conversation)

    try:
        receipt = run_async(go)
    except BridgeError as exc:
        if in_reply_to:  # Claude's answer could not even be queued: say so on the request
            _answer_lost(store, in_reply_to, message, exc)
        raise
    d = receipt.delivery
    if as_json:
        emit_json(receipt.as_dict())
    elif not quiet:
        echo(d.id)
        where = f"reply → mailbox {d.reply_to} ({d.reply_to_how})" if d.reply_to else \
            ("a reply: nothing comes back" if d.in_reply_to else "reply → talk status only")
        echo(f"codexbridge: {d.state} in thread {d.thread_id} ({d.chosen_by}), "
             f"conversation {d.conversation} hop {d.hop}/{d.max_hops}; {where}",
             err=True)
    for warning in d.warnings:
        echo(f"codexbridge: warning: {warning}", err=True)


def _answer_lost(store: DeliveryStore, request: str, answer: str, exc: BridgeError) -> None:
    ensure_private_dir(store.root)
    kept = store.root / f"{request}.answer.text"
    write_private(kept, answer.encode("utf-8"))
    close_request(store, request, None, failure=f"{exc.message} (the answer is kept in {kept})")


@click.command("status", epilog=STATUS_EXIT_HELP)
@click.argument("delivery_id", required=False)
@click.option("--wait", "wait", type=click.FloatRange(min=0), default=0.0, metavar="S",
              help="Wait up to S seconds for a final state (delivered, failed, orphaned).")
@click.option("--limit", type=click.IntRange(1, 500), default=20, show_default=True,
              help="Without an id: how many recent deliveries.")
@json_option
@command
def status(delivery_id: str | None, wait: float, limit: int, as_json: bool) -> int:
    """One delivery (its states and times, the reply's first 2,000 characters), or the
    recent ones — read from this machine's records, with or without an app-server. A
    delivery whose courier died gets a new one, which finds the message in the thread
    (its answer routed, marked recovered) or says `orphaned`; never resent."""
    store = DeliveryStore()
    if delivery_id is None:
        records = store.recent(limit)
        damaged = store.damaged()
        if as_json:
            emit_json({"ok": True, "deliveries": [r.as_dict() for r in records],
                       "damaged": [{**d._asdict(), "fix": d.fix} for d in damaged]})
        else:
            _print_table(records, damaged)
        return 0
    record = check(store, delivery_id)
    end = time.monotonic() + wait
    while not record.state.final and time.monotonic() < end:
        time.sleep(min(0.2, max(0.0, end - time.monotonic())))
        record = check(store, delivery_id)
    cost = cost_of(record)
    if as_json:
        emit_json({"ok": True, "delivery": record.as_dict(),
                   "tokens": cost.as_dict() if cost is not None else None})
    else:
        _print_record(record)
        if cost is not None:
            echo(f"  {cost.line()}")
    return 6 if wait and not record.state.final else 0


def _age(ts: float) -> str:
    secs = max(0, int(time.time() - ts))
    return f"{secs}s" if secs < 120 else f"{secs // 60}m" if secs < 7200 else f"{secs // 3600}h"


def _print_table(records: list[Delivery], damaged: list[Damaged]) -> None:
    for d in damaged:
        echo(f"damaged record {d.path}: {d.reason} — not shown below; {d.fix}", err=True)
    if not records:
        echo("no readable deliveries" if damaged else "no deliveries yet")
        return
    for r in records:
        target = (r.thread_id or "-") if isinstance(r, ToCodex) else f"mailbox {r.mailbox}"
        if isinstance(r, ToCodex) and r.server_lost_at is not None and not r.state.final:
            target += " (app-server down: the courier waits for it)"
        spent = f"  {r.tokens.input + r.tokens.output:,} tokens" if r.tokens else ""
        if isinstance(r, ToCodex) and r.task:
            target += " (MCP task)"
        echo(f"{r.id}  {r.state.value:<14} {_age(r.created_at):>4}  {r.direction.value}"
             f"  {target}  {r.text_preview[:40]!r}{spent}")


def _print_record(r: Delivery) -> None:
    if isinstance(r, ToCodex):
        recovered, turn, answers, mailbox = r.recovered, r.turn_id, r.in_reply_to, r.reply_to
        lost = None if r.state.final else r.server_lost_at
        if r.task:
            echo(f"delivery {r.id} is an MCP task of the Claude session that asked: "
                 "Codex's answer is the task's result"
                 + (f" (mail to {r.reply_to} only if that session ends first)"
                    if r.reply_to and r.blocking else "")
                 + (f"; the session was last told: {r.task_status}" if r.task_status
                    else ""))
        if r.approval_waiting and not r.state.final:
            echo(f"  an approval waits for the human in the Codex TUI: "
                 f"{r.approval_waiting}")
    else:
        recovered, turn, answers, mailbox, lost = False, None, None, r.mailbox, None
    echo(f"delivery {r.id} ({r.direction.value}): {r.state.value}"
         + (" — recovered" if recovered else ""))
    echo(f"  thread {r.thread_id or '-'}  turn {turn or '-'}  conversation "
         f"{r.conversation} hop {r.hop}/{r.max_hops}"
         + (f"  in reply to {answers}" if answers else ""))
    if mailbox:
        echo(f"  mailbox {mailbox}")
    for step in r.history:
        at = step.get("at")
        try:  # a hand-edited step's time must not hide the rest of the record
            stamp = time.strftime("%H:%M:%S", time.localtime(at)) if at is not None else "?"
        except (TypeError, ValueError, OverflowError, OSError):
            stamp = "?"
        echo(f"  {stamp}  {step.get('state')}"
             + (f": {step['reason']}" if step.get("reason") else ""))
    if lost is not None:
        stamp = time.strftime("%H:%M:%S", time.localtime(lost))
        echo(f"  the app-server is down: the courier lost it at {stamp} and waits for it "
             "to come back (CODEX_BRIDGE_SERVER_WAIT); then it finds the turn again")
    if r.reason:
        echo(f"  reason: {r.reason}")
    if r.reply_preview:
        echo("  reply:\n    " + "\n    ".join(r.reply_preview.splitlines()))


@click.command("steer", epilog=CONTROL_EXIT_HELP)
@click.argument("text")
@thread_option
@url_option
@json_option
@command
def steer(text: str, selector: str | None, url: str | None, as_json: bool) -> None:
    """Add TEXT (or `-`) to the turn running in the thread (`turn/steer`): the model
    sees it at once, in the same turn."""
    message = read_text_arg(text)
    sender = who_sends(os.environ)

    async def go() -> tuple[str, str]:
        async with connect(url, selector) as client:
            thread = await find_target(client, selector)
            turn = await steer_turn(client, thread.id, steer_text(sender.label, message))
            if turn is None:
                raise NoRunningTurnError(f"no turn is running in thread {thread.id}: nothing "
                                         "to steer (use `talk say` or `talk send`)",
                                         details={"threadId": thread.id})
            return thread.id, turn

    thread_id, turn_id = run_async(go)
    if as_json:
        emit_json({"ok": True, "thread_id": thread_id, "turn_id": turn_id})
    else:
        echo(turn_id)


@click.command("interrupt", epilog=CONTROL_EXIT_HELP)
@thread_option
@url_option
@json_option
@command
def interrupt(selector: str | None, url: str | None, as_json: bool) -> None:
    """Interrupt the turn running in the thread (`turn/interrupt`); it ends
    `interrupted` within a moment."""

    async def go() -> tuple[str, str | None]:
        async with connect(url, selector) as client:
            thread = await find_target(client, selector)
            return thread.id, await interrupt_turn(client, thread.id)

    thread_id, turn_id = run_async(go)
    if turn_id is None:
        raise NoRunningTurnError(f"no turn is running in thread {thread_id}: nothing to "
                                 "interrupt", details={"threadId": thread_id})
    if as_json:
        emit_json({"ok": True, "thread_id": thread_id, "turn_id": turn_id})
    else:
        echo(turn_id)


@click.command("name", epilog=CONTROL_EXIT_HELP)
@click.argument("thread")
@click.argument("new_name", metavar="NAME")
@url_option
@json_option
@command
def name(thread: str, new_name: str, url: str | None, as_json: bool) -> None:
    """Name THREAD (an id or its current exact name) NAME (`thread/name/set`); the TUI and
    `--thread NAME` see the new name."""
    if not new_name.strip():
        raise UsageError("the name is empty")

    async def go() -> str:
        async with connect(url, thread) as client:
            target = await find_target(client, thread)
            await rename(client, target.id, new_name)
            return target.id

    thread_id = run_async(go)
    if as_json:
        emit_json({"ok": True, "thread_id": thread_id, "name": new_name})
    else:
        echo(thread_id)


BUDGET_EXIT_HELP = exit_help(UsageError, success="shown (or set)")


@click.command("budget", epilog=BUDGET_EXIT_HELP)
@click.argument("max_hops", required=False, type=click.IntRange(min=1), metavar="[N]")
@click.option("--reset", is_flag=True,
              help="Remove the setting: each conversation keeps the budget it started "
                   "with; new ones take $CODEX_BRIDGE_MAX_HOPS, else the default.")
@json_option
@command
def budget(max_hops: int | None, reset: bool, as_json: bool) -> None:
    """The hop budget of the conversations between the agents: show it, or set it to N.

    \b
    A setting made here is read at every request, under the conversation's lock, from
    this state home — so it reaches the Claude and Codex sessions already running (they
    never re-read their environment) and every conversation from its next request,
    including one that was just refused over budget. Without it a conversation keeps
    the budget it started with: the sender's $CODEX_BRIDGE_MAX_HOPS, else 40.
    """
    if reset and max_hops is not None:
        raise UsageError("pass N or --reset, not both")
    convs = Conversations()
    if reset or max_hops is not None:
        convs.set_setting(max_hops)
    now = convs.budget_for_new(os.environ)
    if as_json:
        emit_json({"ok": True, "max_hops": now.value, "source": now.source,
                   "setting": convs.setting(), "default": DEFAULT_MAX_HOPS})
        return
    if convs.setting() is not None:
        echo(f"{now.value} hops per conversation, every conversation from its next request "
             f"(set in {now.source}; `codexbridge talk budget --reset` removes it)")
    else:
        echo(f"{now.value} hops for a conversation started now ({now.source}); a "
             "conversation already going keeps the budget it started with. `codexbridge "
             "talk budget N` sets one for all of them, running sessions included")

"""`codexbridge handoff --to codex|claude` and `handoff status`: the front end of
`codexbridge/handoff/` (docs/handoff.md)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from ..codex.client import AppServerClient
from ..codex.endpoint import resolve_endpoint
from ..codex.protocol.approvals import approval_settings
from ..error_tables import exit_help
from ..errors import (
    AmbiguousSessionError,
    ConnectError,
    HandoffStateError,
    MailboxError,
    QueueTimeoutError,
    SelfSendError,
    UsageError,
)
from ..handoff.ledger import status
from ..handoff.note import parse_note
from ..handoff.to_claude import handoff_to_claude
from ..handoff.to_codex import handoff_to_codex
from .command import (
    approval_timeout_option,
    approvals_option,
    command,
    echo,
    emit_json,
    ensure_dir,
    json_option,
    run_async,
    url_option,
)

if TYPE_CHECKING:
    from ..handoff.flow import Outcome

LEDGER_DAMAGED = "the handoff ledger is damaged (named in the message); it was left as it is"
HANDOFF_EXIT_HELP = exit_help(
    UsageError, HandoffStateError, AmbiguousSessionError, ConnectError, QueueTimeoutError,
    MailboxError, SelfSendError,
    success="handed over — delivered, or waiting where the output says (queued, parked, "
            "waiting for the Claude session to resume); or nothing new",
    extra={3: "no thread / no Claude Code session to hand to or from",
           4: "ambiguous target: several threads or Claude sessions fit",
           6: "the thread stayed busy (--busy-timeout); nothing was handed over",
           73: LEDGER_DAMAGED})
STATUS_EXIT_HELP = exit_help(HandoffStateError, success="shown", extra={73: LEDGER_DAMAGED})


def read_note(note: str | None) -> str | None:
    if note != "-":
        return note
    raw = sys.stdin.buffer.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the note on stdin is not UTF-8 ({exc.reason} at byte "
                         f"{exc.start})") from exc


@click.group("handoff", invoke_without_command=True, epilog=HANDOFF_EXIT_HELP)
@click.option("--to", "to", type=click.Choice(["codex", "claude"]),
              help="Who takes over: the live Codex thread, or a Claude Code session.")
@click.option("--thread", "selector", metavar="ID|NAME",
              help="The Codex thread (to codex: the target; to claude: the source). "
                   "Default: $CODEX_THREAD_ID inside Codex, else the only user thread.")
@click.option("--from-session", metavar="ID",
              help="To codex: the departing Claude session. Default: the session running "
                   "this command, else the only one hooked in --project.")
@click.option("--as", "mailbox", metavar="MAILBOX",
              help="To claude: the mailbox of the session to hand to. Default: the only "
                   "session hooked in --project.")
@click.option("--note", metavar="TEXT|-",
              help="What files cannot show, by the departing agent: `Decisions:` (and "
                   "`Rejected:`) and `Next:` parts, on their own lines or inline "
                   "(\"Decisions: use X. Next: write the tests\"); plain text is the next "
                   "step. `-` reads stdin.")
@click.option("--via", type=click.Choice(["auto", "mail", "resume"]), default="auto",
              show_default=True,
              help="To claude: mail (the session runs), resume (its SessionStart hook — "
                   "the codexbridge plugin's, or install-hook's — on `claude --resume`), or "
                   "auto: mail if it runs, else resume.")
@click.option("--project", default=".", metavar="DIR", show_default=True,
              help="The project: its ledger, its git, its hooked Claude sessions.")
@click.option("--wait/--no-wait", default=False, show_default=True,
              help="To codex: follow Codex's visible turn to its end and print the reply.")
@click.option("--busy-timeout", type=click.FloatRange(min=0), default=300.0, metavar="S",
              show_default=True, help="To codex: how long to wait for a running turn.")
@click.option("--timeout", type=click.FloatRange(min=1), default=900.0, metavar="S",
              show_default=True, help="With --wait: how long to follow the turn.")
@approvals_option
@approval_timeout_option
@click.option("--dry-run", is_flag=True,
              help="Build and show the delta; deliver nothing, move no watermark.")
@url_option
@json_option
@click.pass_context
def handoff(ctx: click.Context, /, **options: object) -> None:
    """Hand the work to the other agent: only what it has not seen crosses.

    \b
    The delta has four sections — Conversation (what was said since the target
    last knew, from the source's own records; tool calls and their output never
    cross), Decisions, Work (git since the last handoff's checkpoint), Next — and
    is capped ($CODEX_BRIDGE_HANDOFF_MAX characters, the middle cut); beside it an
    un-truncated companion file (0600) holds every message, and the delta names it.
    Watermarks move only once the delta is delivered. `handoff status` shows them.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(run, **options)


@command
def run(to: str | None, selector: str | None, from_session: str | None,
        mailbox: str | None, note: str | None, via: str, project: str, wait: bool,
        busy_timeout: float, timeout: float, approvals: str | None,
        approval_timeout: float | None, dry_run: bool, url: str | None,
        as_json: bool) -> None:
    if to is None:
        raise UsageError("pass --to codex or --to claude (or run `handoff status`)")
    if to == "codex" and mailbox:
        raise UsageError("--as names the Claude mailbox to hand to: use it with --to claude")
    if to == "claude" and from_session:
        raise UsageError("--from-session names the departing Claude session: use it with "
                         "--to codex")
    project = ensure_dir(project, "--project")
    parsed = parse_note(read_note(note))
    policy, deadline = approval_settings(os.environ, policy=approvals,
                                         timeout=approval_timeout)

    async def go() -> Outcome:
        ep = resolve_endpoint(url)
        async with AppServerClient(ep.url, token=ep.token,
                                   client_name="codexbridge-handoff") as client:
            if to == "codex":
                return await handoff_to_codex(
                    client, project=project, note=parsed, thread=selector,
                    from_session=from_session, wait=wait, busy_timeout=busy_timeout,
                    timeout=timeout, approvals=policy, approval_timeout=deadline,
                    dry_run=dry_run)
            return await handoff_to_claude(client, project=project, note=parsed,
                                           mailbox=mailbox, thread=selector, via=via,
                                           dry_run=dry_run)

    outcome = run_async(go)
    if as_json:
        emit_json(outcome.as_dict())
        return
    _say(outcome)


def _say(outcome: Outcome) -> None:
    for line in outcome.settled:
        echo(f"codexbridge: earlier handoff {line}", err=True)
    for warning in outcome.all_warnings:
        echo(f"codexbridge: {warning}", err=True)
    prepared, built = outcome.prepared, outcome.prepared.built
    if outcome.dry_run:
        echo(built.delta, nl=False)
        echo(f"(dry run: nothing delivered; delta {len(built.delta)} characters, "
             f"companion {prepared.full_path})", err=True)
        return
    if outcome.nothing_new:
        echo(f"nothing new to hand to {outcome.target}: it has heard everything "
             "(pass --note to send one anyway)")
        return
    where = (f"thread {outcome.thread.id}" if outcome.to == "codex"
             else f"Claude session {outcome.session.session_id} "
                  f"(mailbox {outcome.session.mailbox})")
    echo(f"handoff {outcome.handoff_id} → {where} via {outcome.via}: "
         f"{outcome.state_text()}; "
         f"{built.messages} message(s), delta {len(built.delta)} characters"
         + (f" ({built.cut_messages} cut from the middle)" if built.cut_messages else "")
         + f"; every message in full: {prepared.full_path}")
    turn = outcome.turn
    if turn is not None:
        echo(f"visible turn {turn.turn_id or '(queued)'}: {turn.status.value}")
        if turn.reply:
            echo(turn.reply)


@handoff.command("status", epilog=STATUS_EXIT_HELP)
@click.option("--project", default=".", metavar="DIR", show_default=True,
              help="The project whose ledger to show.")
@json_option
@command
def status_cmd(project: str, as_json: bool) -> None:
    """The project's handoff ledger: agents, what each target knows (knownBy), the git
    checkpoints, pending handoffs (and where a resume delta waits), recent handoffs."""
    shown = status(ensure_dir(project, "--project"))
    if as_json:
        emit_json(shown.as_dict())
    else:
        echo(shown.render())

"""`codexbridge talk list | say | read`: the front end of the talk service (`codex/`)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from ..codex.client import AppServerClient
from ..codex.endpoint import Endpoint, resolve_endpoint
from ..codex.outcome import turn_error
from ..codex.protocol.approvals import approval_settings
from ..codex.protocol.enums import TurnOutcome
from ..codex.turn import DEFAULT_TURN_TIMEOUT, SayResult
from ..error_tables import exit_help
from ..errors import (
    AmbiguousThreadError,
    ConnectError,
    NoThreadError,
    OutputClosedError,
    TurnFailedError,
    TurnInterruptedError,
    TurnTimeoutError,
    UsageError,
)
from ..host.text import for_terminal
from ..messages.envelope import who_sends

if TYPE_CHECKING:
    from ..codex.protocol.threads import ThreadInfo
    from ..messages.envelope import Sender
    from ..messages.to_codex import Said
from ..codex.threads import find_target, list_threads
from ..host.daemon import attach_line, open_tui, token_word
from .app import LazyGroup
from .command import (
    approval_timeout_option,
    approvals_option,
    command,
    echo,
    emit_json,
    ensure_dir,
    json_option,
    read_text_arg,
    run_async,
    url_option,
    wait_thread_option,
)

TALK_EXIT_HELP = exit_help(TurnFailedError, UsageError, NoThreadError, AmbiguousThreadError,
                           ConnectError, TurnTimeoutError, TurnInterruptedError,
                           OutputClosedError, success="turn completed",
                           extra={6: "timed out (the turn may still be running in the TUI)"})
LIST_EXIT_HELP = exit_help(UsageError, ConnectError)
READ_EXIT_HELP = exit_help(UsageError, NoThreadError, AmbiguousThreadError, ConnectError)


def connect(url: str | None, thread: str | None = None) -> AppServerClient:
    """A client of the app-server in force; `thread` (when the command names one) picks
    the one that holds it when serve and the daemon both run."""
    ep = resolve_endpoint(url, thread=thread)
    return AppServerClient(ep.url, token=ep.token)


thread_option = click.option("--thread", "selector", metavar="ID|NAME",
                             help="Thread id or exact name. Default: the only user thread.")
cwd_option = click.option("--cwd", "target_cwd", metavar="DIR",
                          help="Pick the user thread whose working directory is DIR.")


def open_tui_hint(ep: Endpoint) -> str:
    """How to open a TUI on `ep` (host/daemon.open_tui: plain `codex` for codex's own
    daemon, the --remote line for another server), with the token flag a protected
    server needs."""
    if ep.token:
        line = attach_line(ep.url, "DIR", token=token_word(ep.token_file))
        return f"open the Codex TUI with `{line}`"
    return open_tui(ep.url)


LIVE = "codexbridge.cli.talk_live_cmd"


@click.group(cls=LazyGroup, epilog=TALK_EXIT_HELP, lazy={
    "send": (LIVE, "send", "Send without waiting: a receipt now, the reply into a mailbox."),
    "status": (LIVE, "status", "Delivery records: one, or the recent ones (--wait)."),
    "steer": (LIVE, "steer", "Add text to the turn running in the thread."),
    "interrupt": (LIVE, "interrupt", "Interrupt the turn running in the thread."),
    "name": (LIVE, "name", "Name a thread (what --thread NAME matches)."),
    "budget": (LIVE, "budget", "The conversations' hop budget: show it, or set it."),
})
def talk() -> None:
    """Talk into a live Codex thread (the one your TUI shows).

    The thread must have had one message from the TUI first; after that, `say` joins
    it with thread/resume and the TUI renders the bridge's message and Codex's answer.
    `say` waits for the answer; `send` returns a receipt at once and the answer comes
    back as mail (see `talk send --help`).
    """


@talk.command("list", epilog=LIST_EXIT_HELP)
@click.option("--all", "include_all", is_flag=True,
              help="Also show ephemeral helper threads (the TUI's title threads).")
@url_option
@json_option
@command
def list_cmd(include_all: bool, url: str | None, as_json: bool) -> None:
    """Threads loaded in the app-server: id, name, cwd, status."""
    ep = resolve_endpoint(url)

    async def go() -> list[ThreadInfo]:
        async with AppServerClient(ep.url, token=ep.token) as client:
            return await list_threads(client, include_all=include_all)

    threads = run_async(go)
    if as_json:
        emit_json({"ok": True, "threads": [t.as_dict() for t in threads]})
        return
    if not threads:
        echo(f"no user threads loaded: {open_tui_hint(ep)} and send it one message",
             err=True)
        return
    for t in threads:
        extra = "" if t.is_user_thread else f"  [{t.thread_source or 'ephemeral'}]"
        echo(f"{t.id}  {t.status_label:<10} name={t.name or '-'}  cwd={t.cwd or '-'}{extra}")


@talk.command("say", epilog=TALK_EXIT_HELP)
@click.argument("text")
@thread_option
@cwd_option
@click.option("--turn-cwd", metavar="DIR",
              help="Run this turn (and later ones) in DIR instead of the thread's cwd.")
@approvals_option
@approval_timeout_option
@click.option("--timeout", type=float, default=DEFAULT_TURN_TIMEOUT, metavar="S",
              show_default=True, help="Seconds to wait for the turn to finish.")
@click.option("--on-timeout", type=click.Choice(["leave", "interrupt"]), default="leave",
              show_default=True,
              help="When --timeout passes: leave the turn running in the TUI, or interrupt it.")
@click.option("--steer", is_flag=True,
              help="If a turn is already running, add the message to it instead of waiting "
                   "for it to finish.")
@wait_thread_option
@click.option("-q", "--quiet", is_flag=True,
              help="Do not stream the reply as it is written; print it once, at the end.")
@click.option("--conversation", metavar="ID",
              help="Conversation to continue (its hop budget), when an agent runs this. "
                   "Default: the one this session is handling, else a new one.")
@click.option("--new-conversation", is_flag=True,
              help="Start a new conversation (its own hop budget), when an agent runs this.")
@url_option
@json_option
@command
def say_cmd(text: str, selector: str | None, target_cwd: str | None, turn_cwd: str | None,
            approvals: str | None, approval_timeout: float | None, timeout: float,
            on_timeout: str, steer: bool, wait_thread: float, quiet: bool,
            conversation: str | None, new_conversation: bool, url: str | None,
            as_json: bool) -> None:
    """Send TEXT (or `-` for stdin) into the thread and print Codex's reply.

    The reply is printed once: streamed to stdout in a terminal; else whole on stdout
    at the end (`--json`: {thread_id, turn_id, status, reply, approvals, delivery_id}),
    streamed to stderr too only when stderr is a terminal. Approvals are lines on stderr. Run by
    an agent, the message carries the envelope, spends a hop and has a record (`talk
    status ID`); from the human's own shell the words go as the human's.
    """
    # lazy: `talk --help` and `talk list|read` import no engine (messages/, inbox/)
    from ..messages.to_codex import blocking_say

    message = read_text_arg(text)
    policy, deadline = approval_settings(os.environ, policy=approvals,
                                         timeout=approval_timeout)
    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    if target_cwd:
        target_cwd = ensure_dir(target_cwd, "--cwd")
    if turn_cwd:
        turn_cwd = ensure_dir(turn_cwd, "--turn-cwd")
    out = _ReplyOutput(quiet=quiet, to_stdout=not as_json and sys.stdout.isatty(),
                       watched=sys.stderr.isatty())
    sender = _agent_only(conversation, new_conversation)

    async def go() -> Said:
        return await blocking_say(
            message, connect=lambda: connect(url, selector), sender=sender,
            selector=selector, cwd=target_cwd, wait_thread=wait_thread,
            conversation=conversation, new_conversation=new_conversation,
            approvals=policy, approval_timeout=deadline, timeout=timeout, turn_cwd=turn_cwd,
            steer=steer, interrupt_on_timeout=on_timeout == "interrupt",
            on_delta=out.delta, on_approval=out.approval)

    try:
        said = run_async(go)
    finally:
        out.end_line()  # the error or the summary starts on its own line
    result = said.result
    if as_json:
        out.truncation_note(result)
        emit_json({"ok": result.status is TurnOutcome.COMPLETED, **result.as_dict(),
                   "delivery_id": said.delivery_id,
                   "tokens": said.cost.as_dict() if said.cost is not None else None})
    else:
        out.finish(result)
        if said.cost is not None and not quiet:  # last, on stderr: after every reply line
            echo(f"codexbridge: {said.cost.line()}", err=True)
    error = turn_error(result, timeout=timeout, read_with="`codexbridge talk read`")
    if error is not None:
        error.reported = as_json  # the JSON result above already says what happened
        raise error


def _agent_only(conversation: str | None, new_conversation: bool) -> Sender:
    """Who sends; a conversation is refused to the human, whose words carry none."""
    sender = who_sends(os.environ)
    if (conversation or new_conversation) and not sender.is_agent:
        raise UsageError("--conversation / --new-conversation are for an agent's request; "
                         "from your own shell `talk say` sends your words as they are")
    return sender


class _ReplyOutput:
    """Where `talk say` writes the reply, so that whoever reads it gets it once.

    stdout a terminal: the deltas stream to stdout and the reply is not printed again
    (only when the stream missed it: a final message that came with no deltas). stdout a
    pipe or a file: stdout gets the whole reply once at the end — what scripts and
    Claude Code's Bash tool read — and the deltas stream to stderr only when stderr is a
    terminal (`watched`): a person sees the reply come, while a caller that reads both
    streams (Claude Code's Bash tool hands the model stdout and stderr together) is not
    given it twice, which cost every reply double context.
    Either way the reply is Codex's text: what it writes goes through `for_terminal` (a
    reply's escape sequences do not act on the person's terminal), delta by delta — a
    sequence split across deltas is shown piece by piece, as harmless as whole.
    """

    TAIL = 1 << 16  # characters of the stream kept to tell whether the reply was shown

    def __init__(self, *, quiet: bool, to_stdout: bool, watched: bool = False) -> None:
        self.to_stdout = to_stdout
        self.stream = None if quiet else (sys.stdout if to_stdout else
                                          sys.stderr if watched else None)
        self.streamed = False
        self.mid_line = False
        self._tail: list[str] = []
        self._tail_len = 0
        self._cr = ""  # a delta's last CR: a line end if the next delta opens with LF

    def delta(self, chunk: str) -> None:
        if self.stream is None or not chunk:
            return
        if self.to_stdout:
            self._keep(chunk)
        shown, self._cr = self._cr + chunk, ""
        if shown.endswith("\r"):
            shown, self._cr = shown[:-1], "\r"
        self.stream.write(for_terminal(shown))
        self.stream.flush()
        self.streamed = True
        self.mid_line = not chunk.endswith("\n")

    def _keep(self, chunk: str) -> None:
        # a bounded tail, trimmed now and then: a 100 MB reply must not be kept twice
        self._tail.append(chunk)
        self._tail_len += len(chunk)
        if self._tail_len > 2 * self.TAIL:
            kept = "".join(self._tail)[-self.TAIL:]
            self._tail, self._tail_len = [kept], len(kept)

    def approval(self, line: str) -> None:
        self.end_line()
        echo(f"codexbridge: {line}", err=True)  # it quotes the command Codex wants to run

    def end_line(self) -> None:
        """What comes next (an approval, an error, the summary) starts on its own line."""
        if self.stream is not None and self._cr:
            self.stream.write(for_terminal(self._cr))
            self._cr = ""
        if self.stream is not None and self.mid_line:
            self.stream.write("\n")
            self.stream.flush()
            self.mid_line = False

    def truncation_note(self, result: SayResult) -> None:
        if result.truncated:
            echo(f"codexbridge: the reply is {result.reply_bytes} bytes; only the first "
                 f"{len(result.reply.encode('utf-8'))} are printed", err=True)

    def finish(self, result: SayResult) -> None:
        if self.to_stdout and self.stream is not None and self._shown(result):
            return
        self.truncation_note(result)
        if self.to_stdout and not result.reply:
            return  # a terminal needs no empty line; a pipe still gets its one line
        echo(result.reply)

    def _shown(self, result: SayResult) -> bool:
        """The stream already put the whole reply on the terminal."""
        if not self.streamed:
            return not result.reply
        if result.truncated:
            return True  # every delta was streamed; only the kept copy was cut
        want = result.reply.rstrip()[-self.TAIL:]
        return "".join(self._tail).rstrip().endswith(want)


@talk.command("read", epilog=READ_EXIT_HELP)
@thread_option
@cwd_option
@click.option("--page-size", type=click.IntRange(1, 500), default=50, show_default=True,
              help="Turns/items fetched per request.")
@url_option
@json_option
@command
def read_cmd(selector: str | None, target_cwd: str | None, page_size: int, url: str | None,
             as_json: bool) -> None:
    """The thread's history as a readable transcript (`--json`: turns with items)."""
    # lazy: `talk --help` and `talk say` do not read a thread's history
    from ..codex.history import TurnRecord, read_history, render_item

    if target_cwd:
        target_cwd = ensure_dir(target_cwd, "--cwd")

    async def go() -> tuple[ThreadInfo, list[TurnRecord]]:
        async with connect(url, selector) as client:
            target = await find_target(client, selector, target_cwd)
            return target, await read_history(client, target.id, page_size=page_size)

    target, turns = run_async(go)
    if as_json:
        emit_json({"ok": True, "thread": target.as_dict(),
                   "turns": [t.as_dict() for t in turns]})
        return
    echo(f"thread {target.id}  name={target.name or '-'}  cwd={target.cwd or '-'}")
    for n, turn in enumerate(turns, 1):
        echo(f"\n── turn {n} ({turn.status}) {turn.id}")
        for item in turn.items:
            line = render_item(item)
            if line is not None:
                echo(line)

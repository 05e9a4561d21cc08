"""`codexbridge log [CONVERSATION]`: one conversation as a timeline across both agents,
the front end of `messages/timeline.py` (which reads the records; nothing is kept here).

Every word a model, a peer or a record file holds reaches the terminal through
`host/text.for_terminal` (escape sequences shown, not obeyed) before codexbridge's own
colour is put around it — colour only when stdout is a terminal and NO_COLOR is unset.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import textwrap
import time

import click

from ..error_tables import exit_help
from ..errors import ConversationNotFoundError, OutputClosedError, UsageError
from ..host.text import for_terminal
from ..messages.envelope import cost_line
from ..messages.timeline import Event, Kind, Reader, Timeline, whole_text
from .command import command, echo, echo_painted, reader_gone, stdout_gone

POLL = 0.5  # s between two looks at the records while following
SHOWN_LINES = 6  # lines of a message shown without --full
INDENT = " " * 12
LOG_EXIT_HELP = exit_help(UsageError, ConversationNotFoundError, OutputClosedError,
                          success="shown (with --follow: stopped with Ctrl-C)", extra={
                              2: "not a conversation id, or no record of it (or of any, "
                                 "without --follow) on this machine"})
_COLOURS = {"claude": "magenta", "codex": "cyan", "human": "yellow", "codexbridge": "blue",
            "failed": "red", "orphaned": "red", "delivered": "green", "damaged": "red"}


@click.command("log", epilog=LOG_EXIT_HELP)
@click.argument("conversation", required=False)
@click.option("-f", "--follow", is_flag=True,
              help=f"Keep going: new hops, state changes and answers appear as they happen "
                   f"(the records are looked at every {POLL:g} s) until Ctrl-C. With no "
                   "conversation yet, waits for the first.")
@click.option("--full", is_flag=True,
              help=f"Every message whole. Default: its first {SHOWN_LINES} lines, then how "
                   "many more and the file that holds it all.")
@click.option("--list", "list_all", is_flag=True,
              help="List the conversations, the most recently active first.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per line, for scripts (see above).")
@command
def log(conversation: str | None, follow: bool, full: bool, list_all: bool,
        as_json: bool) -> int | None:
    """One conversation as a timeline across both agents: who asked whom, each hop, the
    text, every state change of its deliveries, and each answer with its latency (asked
    → answered), the tokens each bridged turn cost with the conversation's running total
    — read from this machine's records (`talk status` shows the same
    deliveries one by one). CONVERSATION is its id (`conv_…`, in every envelope and
    receipt); default: the most recently active one.

    \b
    --json: one JSON object per line — first {"kind": "conversation", …}, then one per
    event ({"kind": "asked"|"answered"|"notice"|"tokens"|"state"|"damaged", "at",
    "delivery", "who", "to", "hop", "text", "latency", "tokens", "total", …}); with
    --follow, each as it happens.
    """
    reader = Reader()
    if list_all:
        _list(reader, as_json)
        return None
    out = _Out(as_json, full)
    if follow:
        # Ctrl-C is how a follow ends, even when whoever started it ignored SIGINT (a
        # background job of a script, a CI runner): Python keeps an inherited SIG_IGN.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return _show(reader, out, conversation, follow)
    except KeyboardInterrupt:
        if not follow:
            raise
        return 0  # Ctrl-C is how a follow ends: not an interruption (130)


def _show(reader: Reader, out: _Out, conversation: str | None, follow: bool) -> int | None:
    conv = conversation or _newest(reader, wait=follow, out=out)
    timeline = reader.timeline(conv)
    if timeline is None:
        raise ConversationNotFoundError(
            f"no records of conversation {conv} on this machine (never here, or expired "
            "after 7 days); `codexbridge log --list` shows the ones there are",
            details={"conversation": conv})
    out.header(timeline)
    shown: set[str] = set()
    out.events(timeline, shown)
    while follow:
        time.sleep(POLL)
        if stdout_gone():
            return reader_gone()
        out.events(reader.timeline(conv) or timeline, shown)
    return None


def _newest(reader: Reader, *, wait: bool, out: _Out) -> str:
    """The most recently active conversation; with `wait`, the first to start."""
    found = reader.conversations()
    if not found and wait:
        out.note("no conversation yet: waiting for the first (Ctrl-C stops)")
        while not found:
            time.sleep(POLL)
            if stdout_gone():
                raise OutputClosedError("the reader of the log went away")
            found = reader.conversations()
    if not found:
        raise ConversationNotFoundError(
            "no conversations yet: one starts when an agent asks the other (`talk send`, "
            "`inbox push --expect-reply`, the MCP tools); `codexbridge log --follow` waits "
            "for it")
    return found[0].conversation


def _list(reader: Reader, as_json: bool) -> None:
    found = reader.conversations()
    if as_json:
        echo(json.dumps({"ok": True, "conversations": [c._asdict() for c in found]}))
        return
    if not found:
        echo("no conversations yet")
    for c in found:
        hops = "? hops (no hop record)" if c.hops is None else f"{c.hops} hop(s)"
        echo(f"{c.conversation}  last {_stamp(c.last, date=True)}  {hops}")


class _Out:
    """Where the timeline goes: a person's terminal (width-aware, coloured when it is a
    terminal) or a script (one JSON object per line)."""

    def __init__(self, as_json: bool, full: bool) -> None:
        self.as_json, self.full = as_json, full
        self.colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        self.width = max(40, shutil.get_terminal_size((100, 24)).columns)

    def note(self, text: str) -> None:
        echo(f"codexbridge: {text}", err=True)

    def header(self, t: Timeline) -> None:
        if self.as_json:
            self._json({"kind": "conversation", **t.header()})
            return
        budget = (f"{len(t.record.hops)} of {t.record.max_hops or '?'} hops"
                  if t.record else "no hop record")
        if t.record and t.record.tokens:
            budget += f", {t.record.tokens.input + t.record.tokens.output:,} tokens so far"
        self._line(self._paint(f"conversation {t.conversation}", bold=True)
                   + self._paint(f" — {budget}, started {_stamp(t.started, date=True)}"))
        if t.damaged:
            self._line(self._paint(f"damaged: {t.damaged}", "damaged"))

    def events(self, t: Timeline, shown: set[str]) -> None:
        for event in t.events:
            if event.key in shown:
                continue
            shown.add(event.key)
            if self.as_json:
                data = event.as_json()
                if self.full:
                    data["text"] = whole_text(event)
                self._json({"conversation": t.conversation, **data})
            else:
                self._event(t.conversation, event)
        sys.stdout.flush()

    def _event(self, conv: str, e: Event) -> None:
        stamp = self._paint(_stamp(e.at), dim=True)
        hop = f"hop {e.hop}/{e.max_hops or '?'}" if e.hop else ""
        pair = (self._paint(str(e.who or "?"), str(e.who)) + " → "
                + self._paint(str(e.to or "?"), str(e.to)))
        if e.kind is Kind.STATE:
            state = str(e.state or "?")
            line = (f"{stamp}  {'':<9} {self._paint(str(e.delivery), dim=True)}  "
                    + self._paint(state, state)
                    + (self._paint(f": {e.reason}") if e.reason else ""))
        elif e.kind is Kind.DAMAGED:
            line = f"{stamp}  {hop:<9} " + self._paint(f"damaged record: {e.reason}",
                                                      "damaged")
        elif e.kind is Kind.TOKENS and e.tokens:
            total = e.total.input + e.total.output if e.total else None
            line = (f"{stamp}  {'':<9} " + self._paint(str(e.who), str(e.who))
                    + self._paint(f"  {cost_line(e.tokens.spent, conv, total)}", dim=True)
                    + self._paint(f"  ({e.delivery})", dim=True))
        elif e.kind is Kind.ASKED:
            line = f"{stamp}  {hop:<9} {pair}  asks  {self._paint(str(e.delivery))}"
        else:
            what = "notice about" if e.kind is Kind.NOTICE else "answers"
            took = f" after {_seconds(e.latency)}" if e.latency is not None else ""
            # (Claude's answer is a delivery of its own into the Codex thread)
            own = f" as {e.delivery}" if e.delivery != e.in_reply_to else ""
            line = (f"{stamp}  {'':<9} {pair}  {what} "
                    + self._paint(f"{e.in_reply_to}{took}{own}"))
        self._line(line)
        if e.kind is Kind.ASKED and e.reason:
            self._text(e.reason)
        if e.kind in (Kind.ASKED, Kind.ANSWERED, Kind.NOTICE) and (e.text or e.whole):
            self._message(conv, e)

    def _message(self, conv: str, e: Event) -> None:
        text = whole_text(e) if self.full else e.text
        lines = self._wrapped(text)
        if self.full or (len(lines) <= SHOWN_LINES and not e.cut):
            self._text_lines(lines)
            return
        self._text_lines(lines[:SHOWN_LINES])
        more = len(lines) - SHOWN_LINES
        self._text_lines([self._paint(
            (f"… {more} more line(s)" if more > 0 else "… the rest")
            + f": `codexbridge log {conv} --full`", dim=True)])
        if e.whole:  # a path is not wrapped: it is copied whole
            self._text_lines([self._paint(f"  whole text: {e.whole}", dim=True)])

    def _wrapped(self, text: str) -> list[str]:
        room = max(20, self.width - len(INDENT) - 2)
        out: list[str] = []
        for raw in for_terminal(text).splitlines() or [""]:
            out += textwrap.wrap(raw, room, replace_whitespace=False,
                                 drop_whitespace=False) or [""]
        return out

    def _text_lines(self, lines: list[str]) -> None:
        for line in lines:
            self._line(INDENT + self._paint("│ ", dim=True) + line)

    def _text(self, text: str, *, dim: bool = False) -> None:
        self._text_lines([self._paint(x, dim=dim) for x in self._wrapped(text)])

    def _paint(self, text: str, colour: str | None = None, *, bold: bool = False,
               dim: bool = False) -> str:
        """`text` made harmless for a terminal, in codexbridge's colour when there is
        one (for_terminal is idempotent: text wrapped already passes through the same)."""
        safe = for_terminal(text)
        if not self.colour:
            return safe
        return click.style(safe, fg=_COLOURS.get(colour or ""), bold=bold, dim=dim)

    def _line(self, line: str) -> None:
        echo_painted(line, colour=self.colour)

    def _json(self, data: dict[str, object]) -> None:
        echo(json.dumps(data, ensure_ascii=False))


def _stamp(at: float, *, date: bool = False) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S", time.localtime(at))
    except (ValueError, OverflowError, OSError):
        return "?"


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"

"""`codexbridge log --follow` beside both real TUIs, at the defaults (see conftest), while
the agents talk both ways in one conversation:

    hop 1   Claude asks Codex (its Bash tool runs `codexbridge talk send`; the human
            allows it in Claude's TUI)
    hop 2   Codex, in the turn that handles it, asks Claude back with `inbox push
            --expect-reply` (the human allows the command in the Codex TUI)
            Claude answers hop 2 into the Codex thread; Codex's answer to hop 1 comes
            to Claude as mail

The log runs the way a user runs it — in a terminal of its own (a tmux pane), and as a
script reads it (`--json`, one event a line) — and shows each hop and each answer as it
happens, in order, with who asked and who answered, and what each turn cost: Codex's
tokens are what the mock model reported for each of its calls (`mock_model.USAGE`),
Claude's what its transcript recorded, the total their sum. Each "not yet" is checked while the
next step is held (the human's approval not given yet, Claude's model request held), so
nothing here waits on time.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any

import pytest

from codexbridge.doctor import mock_model
from codexbridge.host.procs import pid_alive
from tests.support.helpers import wait_until

from .conftest import Journey, one_line
from .steps import Gate, bash

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]

Event = dict[str, Any]
QUESTION = "LOG-GATE Codex asks back: is the release branch cut?"
ASK = f"ASK_CLAUDE: {QUESTION}"


class Follower:
    """`codexbridge log --follow --json` typed in the project: its events as they come."""

    def __init__(self, j: Journey) -> None:
        self.j = j
        self.proc = subprocess.Popen(
            [j.world.codexbridge, "log", "--follow", "--json"], cwd=j.world.projects["project"],
            env=j.world.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events: list[Event] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def wait(self, what: str, match: Callable[[Event], bool]) -> int:
        """The index of the first event `match` takes, once the log has shown it."""
        return wait_until(lambda: next((i + 1 for i, e in enumerate(list(self.events))
                                        if match(e)), None), 90, f"the log to show {what}",
                          lambda: f"{self.events}\n{self.j.explain(what)}") - 1

    def has(self, match: Callable[[Event], bool]) -> bool:
        return any(match(e) for e in list(self.events))

    def stop(self) -> int:
        """Ctrl-C, as the person ends it."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(30)
        finally:
            self.proc.kill()


def asked(who: str, to: str, hop: int) -> Callable[[Event], bool]:
    return lambda e: (e["kind"], e.get("who"), e.get("to"), e.get("hop")) == (
        "asked", who, to, hop)


def answered(who: str, to: str, request: str) -> Callable[[Event], bool]:
    return lambda e: (e["kind"], e.get("who"), e.get("to"), e.get("in_reply_to")) == (
        "answered", who, to, request)


def cost(delivery: str) -> Callable[[Event], bool]:
    return lambda e: (e["kind"], e.get("delivery")) == ("tokens", delivery)


def per_call(calls: int) -> dict[str, int]:
    """What codex reports for `calls` model calls of the mock (mock_model.USAGE)."""
    usage = mock_model.USAGE
    details = usage["input_tokens_details"]
    assert isinstance(details, dict)
    return {"input": calls * int(str(usage["input_tokens"])),
            "cached": calls * int(str(details["cached_tokens"])),
            "output": calls * int(str(usage["output_tokens"]))}


def delivered(request: str) -> Callable[[Event], bool]:
    return lambda e: (e.get("delivery"), e.get("state")) == (request, "delivered")


def test_the_log_follows_a_live_two_way_exchange(journey: Journey) -> None:
    j = journey
    codex, claude = j.codex["project"], j.claude["project"]
    log = Follower(j)
    pane = j.world.terminal("codexbridge", "log", "--follow")
    try:
        # no conversation yet: both wait for the first
        pane.wait_for_text("waiting for the first", 30, what="log terminal")
        claude.send(bash(f'codexbridge talk send "{ASK}"'))
        j.claude_allows()
        first = log.wait("Claude's request (hop 1)", asked("claude", "codex", 1))
        req1 = log.events[first]["delivery"]
        assert ASK in log.events[first]["text"]
        conv = log.events[first]["conversation"]
        assert (log.events[0]["kind"], log.events[0]["conversation"]) == ("conversation",
                                                                           conv)
        # Codex's turn wants to run the push: until the human allows it, no hop 2
        j.on_screen(codex, "Would you like to run the following command?")
        log.wait("req 1 delivering", lambda e: e.get("delivery") == req1
                 and e.get("state") in ("delivering", "awaiting-reply"))
        assert not log.has(lambda e: e.get("hop") == 2)
        with Gate(j, "LOG-GATE") as gate:
            codex.answer("Would you like to run the following command?", "y")
            second = log.wait("Codex's request back (hop 2)", asked("codex", "claude", 2))
            req2 = log.events[second]["delivery"]
            assert log.events[second]["text"] == QUESTION
            assert log.events[second]["conversation"] == conv  # one conversation
            gate.wait_held()  # Claude's model has the question: no answer yet
            assert not log.has(lambda e: e["kind"] == "answered" and
                               e.get("in_reply_to") == req2)
            codex_answer = log.wait("Codex's answer to hop 1",
                                    answered("codex", "claude", req1))
            gate.release()
        claude_answer = log.wait("Claude's answer to hop 2", answered("claude", "codex", req2))
        assert log.events[claude_answer]["text"].startswith(f"CLAUDE ANSWER to {req2}")
        assert log.events[codex_answer]["text"].startswith("MOCK DONE")
        assert first < second < claude_answer and first < codex_answer
        for i in (codex_answer, claude_answer):
            assert log.events[i]["latency"] > 0
        done = [log.wait(f"{r} delivered", delivered(r)) for r in (req1, req2)]
        assert min(done) > first and done[1] > claude_answer
        assert all(e["conversation"] == conv for e in log.events)
        # what each turn cost: Codex's turn on hop 1 made two model calls (the command,
        # then its output), its turn on Claude's answer one; Claude's answer, as recorded
        # (Claude's answer's own record: the answered event may have been read from the
        # request's record, before the answer's was written — a follower shows it once)
        reply = wait_until(lambda: next((r["id"] for r in j.records()
                                         if r.get("in_reply_to") == req2
                                         and not r.get("notice")), None),
                           30, "the record of Claude's answer")
        spent = {r: log.events[log.wait(f"{r}'s tokens", cost(r))] for r in (req1, req2, reply)}
        assert (spent[req1]["who"], spent[req1]["tokens"]) == ("codex", per_call(2))
        assert (spent[reply]["who"], spent[reply]["tokens"]) == ("codex", per_call(1))
        assert spent[req2]["who"] == "claude"
        assert spent[req2]["tokens"] == j.record(req2)["tokens"] and spent[req2]["tokens"]
        total = max((e for e in spent.values()), key=lambda e: e["at"])["total"]
        assert total == {k: sum(e["tokens"][k] for e in spent.values()) for k in total}
        assert json.loads(j.cb("log", conv, "--json").stdout.splitlines()[0])["tokens"] == total
        # the person's terminal shows the same, in the same order
        lines = [f"claude → codex asks {req1}", f"codex → claude asks {req2}",
                 f"claude → codex answers {req2}", f"codex → claude answers {req1}"]
        def shown() -> str | None:
            screen = one_line(pane.capture(scrollback=True))
            return screen if all(line in screen for line in lines) else None

        screen = wait_until(shown, 30, "the log terminal", lambda: pane.capture(scrollback=True))
        assert screen.index(lines[0]) < screen.index(lines[1]) < screen.index(lines[2])
        assert screen.index(lines[0]) < screen.index(lines[3])
        assert QUESTION in screen and "\x1b" not in screen
        total_line = f"conversation {conv}: {total['input'] + total['output']:,}"
        pane.wait_for_text(total_line, 30, what="log terminal")
        assert conv in j.cb("log", "--list").stdout
        pane.keys("C-c")  # the person ends it
        wait_until(lambda: not pid_alive(pane.pid), 30, "the log to end on Ctrl-C",
                   lambda: pane.capture(scrollback=True))
        assert log.stop() == 0, log.proc.stderr.read() if log.proc.stderr else ""
    finally:
        log.proc.kill()

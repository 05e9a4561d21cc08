"""The offline demo (`./scripts/demo`, README's first command): the whole conversation,
both ways, on the real binaries.

It starts the offline world a user has after README's "Use it for real"
(`tests/support/world.py`: a private HOME under /tmp, both mock models on 127.0.0.1),
runs README's set-up block in it, opens the real Codex TUI (`codex -C ~/project`, on
codex's own daemon) and the real interactive Claude Code beside it in one tmux window,
and then plays the human at both keyboards:

    1/5  set-up as README says (codexbridge setup claude, setup codex, …)
    2/5  codex -C ~/project and the human's first message; claude in ~/project
    3/5  Claude asks Codex: its Bash tool runs `codexbridge talk send "…"`; Codex's
         answer comes into Claude by itself
    4/5  Codex asks Claude: its MCP tool `claude_message_send` with expectReply; Claude's
         answer comes back into the Codex thread as a reply turn
    5/5  `codexbridge talk status`: both requests delivered

The mock models do what the typed text says (`CALL_TOOL …` for Claude, `MCP_CALL: …`
for Codex), and the mock Claude answers a Codex request that waits for an answer
(`mock_claude.peer_answer`). Every step waits on a readiness signal (a model request, a
delivery record, text on a TUI screen) within a bound; one that never comes is a
ServeError naming the step and showing the end of the screen.

It runs from the checkout, not from the installed package (the mocks and the tmux
driver are test harness): `python -m tests.support.demo [--tui]` from the checkout's
root. Exit status: 0 both directions went through; 2 tmux is missing (or a bad option);
10 a binary is missing; the ServeError status when a step did not happen in time;
the interrupted status on Ctrl-C before the last step (everything is cleaned up).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from codexbridge.errors import INTERRUPTED_EXIT, BridgeError, ServeError, UsageError
from codexbridge.host.binaries import find_claude, find_codex, pinned_claude, pinned_codex
from codexbridge.host.jsonfile import read_object
from codexbridge.host.text import for_terminal
from tests.support.mock_claude import peer_answer
from tests.support.tmux_tui import approve_claude
from tests.support.world import World, readme_setup

if TYPE_CHECKING:
    from typing import TypeAlias

    from tests.support.tmux_tui import ClaudeTUI, CodexTUI

    TUI: TypeAlias = CodexTUI | ClaudeTUI

T = TypeVar("T")
STEPS = 5
FIRST = "hello from the human"
CLAUDE_ASKS = "Claude asks: which tests cover the auth module?"
CODEX_ASKS = "Codex asks: is the auth refactor safe to merge?"
# Bounds per step, generous for a loaded 2-core machine; the first `codex` also starts
# codex's daemon.
START_S = 90.0
STEP_S = 90.0
FINAL_STATES = ("delivered", "failed", "orphaned")


def echo(text: str) -> None:
    """A line for the person watching; what a model or a TUI wrote cannot act on the
    terminal (its control characters are shown as escapes)."""
    print(for_terminal(text), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/demo",
        description="Show the whole conversation, both ways, offline, on the real codex "
                    "and Claude Code (in tmux; no account, no network: both models are "
                    "mocks on 127.0.0.1, in a private HOME under /tmp removed afterwards).")
    parser.add_argument("--tui", action="store_true",
                        help="Keep both real TUIs running side by side in one tmux window, "
                             "print how to attach, and wait for Ctrl-C.")
    args = parser.parse_args(argv)
    try:
        return run_demo(tui=args.tui, echo=echo)
    except BridgeError as exc:
        print(for_terminal(f"demo: error: {exc}"), file=sys.stderr, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print("demo: interrupted (everything it started is stopped)", file=sys.stderr)
        return INTERRUPTED_EXIT


# -- the binaries ------------------------------------------------------------------------

def _pinned_first(env_var: str, pinned: Callable[[], Path | None],
                  find: Callable[[], str]) -> str:
    """The variable's binary if set; else the checkout's pinned one (the versions the mock
    models are measured against); else whatever `find` finds on PATH (or its
    BinaryNotFoundError, naming the install)."""
    if os.environ.get(env_var):
        return find()
    found = pinned()
    return str(found) if found is not None else find()


def binaries() -> tuple[str, str, str]:
    """(codex, claude, tmux) for the demo, or a clear error naming the fix."""
    codex = _pinned_first("CODEX_BRIDGE_CODEX_BIN", pinned_codex, find_codex)
    claude = _pinned_first("CODEX_BRIDGE_CLAUDE_BIN", pinned_claude, find_claude)
    tmux = shutil.which("tmux")
    if tmux is None:
        raise UsageError("the demo runs both real TUIs in tmux, and tmux is not on PATH: "
                         "install it (`scripts/bootstrap` does, or your package manager: "
                         "`apt-get install tmux`, `brew install tmux`)")
    return codex, claude, tmux


# -- waiting, with a clear error -----------------------------------------------------------

def one_line(text: str) -> str:
    """A TUI wraps long lines (more so in half a window): compare words, not layout."""
    return re.sub(r"\s+", " ", text)


@dataclass
class Demo:
    """The world, its two TUIs, and what has been printed of them so far."""

    world: World
    echo: Callable[[str], None]
    step: int = 0
    title: str = ""
    codex: CodexTUI | None = None
    claude: ClaudeTUI | None = None
    shown: set[str] = field(default_factory=set)
    started: float = field(default_factory=time.monotonic)

    def begin(self, step: int, title: str, detail: str) -> None:
        self.step, self.title = step, title
        self.echo(f"demo: {step}/{STEPS} {title} {detail}")

    def fail(self, what: str, bound: float, tui: TUI | None = None) -> ServeError:
        """The step that never came: named, with the last lines of the screen it shows on."""
        where = f"demo step {self.step}/{STEPS} ({self.title})"
        if tui is None:
            return ServeError(f"{where}: {what} did not happen within {bound:g} s")
        alive = "" if tui.alive else f" (the {tui.what} exited)"
        try:
            rows = [r.rstrip() for r in tui.capture().splitlines() if r.strip()]
        except (RuntimeError, OSError, subprocess.SubprocessError):
            rows = ["(the screen could not be read)"]
        tail = "\n".join("    " + r for r in rows[-15:])
        return ServeError(f"{where}: {what} did not happen within {bound:g} s{alive}; "
                          f"the {tui.what} screen ended:\n{tail}")

    def until(self, probe: Callable[[], T | None], what: str, bound: float = STEP_S,
              tui: TUI | None = None) -> T:
        """Poll `probe` (a screen, a record) until it gives something; watch the TUIs."""
        deadline = time.monotonic() + bound
        while True:
            found = probe()
            if found:
                return found
            for each in (self.codex, self.claude):
                if each is not None and each.pane is not None and not each.alive:
                    raise self.fail(what, bound, each)
            if time.monotonic() > deadline:
                raise self.fail(what, bound, tui)
            time.sleep(0.05)

    def on_screen(self, tui: TUI, text: str, bound: float = STEP_S) -> str:
        def probe() -> str | None:
            screen = str(tui.capture(scrollback=True))
            return screen if one_line(text) in one_line(screen) else None
        return self.until(probe, f"{text!r} on the {tui.what} screen", bound, tui)

    def _require(self) -> tuple[CodexTUI, ClaudeTUI]:
        assert self.codex is not None and self.claude is not None
        return self.codex, self.claude

    # -- what the human sees --------------------------------------------------------------

    def show_codex(self) -> None:
        """Print the Codex TUI's turns (its `›` / `•` blocks) not printed yet."""
        codex, _ = self._require()
        for block in codex_blocks(codex.capture(scrollback=True)):
            key = one_line(" ".join(block))
            if key in self.shown:
                continue
            self.shown.add(key)
            for line in block:
                self.echo(f"     codex │ {line}")


def codex_blocks(screen: str) -> list[list[str]]:
    """The Codex TUI's history as blocks: a `›` (a user turn) or `•` (Codex's) line and
    what is indented under it, blank lines and the "Worked for" footers left out; the
    composer (its placeholder and what follows it) is not history."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for raw in screen.splitlines():
        line = raw.rstrip()
        if line.startswith(("› ", "• ")):
            if "Ask Codex to do anything" in line:
                break
            current = [line]
            blocks.append(current)
        elif current is not None and line.startswith("  ") and line.strip() \
                and not line.strip().startswith(("Worked for", "+ Show details")):
            current.append(line)
        elif line.strip().startswith("Worked for"):
            current = None
    return blocks


# -- the steps -------------------------------------------------------------------------------

def step_setup(d: Demo) -> None:
    d.begin(1, "set-up", "as README says: " + "; ".join(readme_setup() or ["(README's)"]))
    try:
        d.world.setup()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        raise ServeError(f"demo step 1/{STEPS} (set-up): {exc}") from None
    d.echo(f"    each exited 0 (HOME={d.world.home})")


def step_open(d: Demo, tui: bool) -> None:
    d.begin(2, "the two terminals", "README opens: codex -C ~/project (codex's own "
            "daemon), the human's first message; claude in ~/project beside it")
    w = d.world
    try:
        d.codex = w.codex_tui("project")
        d.claude = w.claude_tui("project", beside=d.codex)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", None) or exc
        raise ServeError(f"demo step 2/{STEPS}: tmux could not open the TUIs' panes: "
                         f"{detail}") from None
    if tui and w.tmux is not None:
        d.echo(f"demo: watch it live (both TUIs side by side): {w.tmux.attach_line()}")
    d.on_screen(d.codex, "Ask Codex to do anything", START_S)
    d.codex.send(FIRST)
    d.on_screen(d.codex, f"MOCK REPLY: {FIRST}", START_S)
    d.show_codex()
    d.on_screen(d.claude, "❯", START_S)
    claude = d.claude
    name = d.until(lambda: listener(w, claude.pid), "Claude's session listening on its "
                   "project's mailbox (the plugin's SessionStart hook)", START_S, claude)
    d.echo(f"    claude │ Claude Code is at its prompt, listening on mailbox {name!r}")


def listener(world: World, pid: int | None) -> str | None:
    """The mailbox the Claude session `pid` of ~/project listens on, once it does."""
    inbox = world.bridge_home / "inbox"
    for path in sorted(inbox.glob("*.session.json")) if inbox.exists() else []:
        rec = read_object(str(path)) or {}
        if rec.get("cwd") == str(world.projects["project"]) and \
                rec.get("claude_pid") == str(pid) and rec.get("name"):
            return str(rec["name"])
    return None


def bash(command_line: str) -> str:
    """What the human types into Claude's TUI so the mock model runs `command_line` with
    its Bash tool (the mock does what a `CALL_TOOL` line says)."""
    return "CALL_TOOL Bash " + json.dumps({"command": command_line})


def records(world: World) -> list[dict[str, object]]:
    """codexbridge's delivery records in the world, oldest first."""
    folder = world.bridge_home / "deliveries"
    found = [read_object(str(p)) for p in sorted(folder.glob("req_*.json"))] \
        if folder.exists() else []
    return sorted((dict(r) for r in found if r), key=lambda r: str(r.get("created_at", "")))


def approve(d: Demo, tui: ClaudeTUI) -> None:
    """The human answers Claude Code's permission prompt with Yes."""
    try:
        approve_claude(tui, timeout=STEP_S)
    except (TimeoutError, RuntimeError):
        raise d.fail("Claude Code's permission prompt", STEP_S, tui) from None


def step_claude_asks(d: Demo) -> str:
    """Claude's Bash tool runs `talk send`; the message and Codex's answer render in the
    Codex TUI; the answer comes into Claude as a new turn by itself. The request id."""
    codex, claude = d._require()
    w = d.world
    d.begin(3, "Claude asks Codex", "(its Bash tool runs codexbridge talk send) …")
    line = f'codexbridge talk send "{CLAUDE_ASKS}"'
    since = len(w.claude_mock.requests)
    d.echo(f"    claude │ the human types: {bash(line)}")
    claude.send(bash(line))
    approve(d, claude)
    d.echo("    claude │ the human allows it at Claude Code's permission prompt (Yes)")
    d.on_screen(codex, f"MOCK REPLY: {CLAUDE_ASKS}")
    d.show_codex()
    got = w.claude_mock.wait_for(lambda r: r.index >= since and
                                 f"MOCK REPLY: {CLAUDE_ASKS}" in r.all_text(), STEP_S)
    if got is None:
        raise d.fail("Codex's answer reaching Claude", STEP_S, claude)
    # Live, it is a new turn shown in full; if it comes just as Claude's turn stops, the
    # Stop hook (or the watcher) hands it over: the TUI shows a collapsed "Stop hook
    # feedback" (measured, 2.1.332).
    how = ("through its Stop hook (the TUI shows it collapsed: \"Stop hook feedback\")"
           if got.stop_feedback() is not None else "straight into the session, a new turn")
    d.echo(f"    claude │ Codex's answer comes in by itself, {how}:")
    mail = [x.strip() for x in got.all_text().splitlines()
            if x.startswith(("Reply from Codex", f"MOCK REPLY: {CLAUDE_ASKS}"))]
    for x in mail[-2:]:
        d.echo(f"    claude │   {x}")
    sent = [r for r in records(w) if r.get("text_preview") == CLAUDE_ASKS]
    if not sent:
        raise d.fail("the record of Claude's request", 0)
    return str(sent[0]["id"])


def step_codex_asks(d: Demo) -> str:
    """Codex's MCP tool `claude_message_send` (expectReply), allowed in the TUI; Claude
    gets it live and answers; the answer renders in the Codex TUI as a reply turn."""
    codex, claude = d._require()
    w = d.world
    d.begin(4, "Codex asks Claude", "(its MCP tool claude_message_send, expectReply) …")
    call = "MCP_CALL: claude_message_send " + json.dumps(
        {"text": CODEX_ASKS, "expectReply": True})
    before = {str(r.get("id")) for r in records(w)}
    since = len(w.claude_mock.requests)
    d.echo(f"     codex │ the human types: {call}")
    codex.send(call)
    d.on_screen(codex, 'run tool "claude_message_send"')
    codex.key("Enter")
    d.echo("     codex │ the human allows the tool in the Codex TUI (Enter on Allow)")
    made = d.until(lambda: [r for r in records(w) if str(r.get("id")) not in before
                            and r.get("direction") == "to-claude"],
                   "the record of Codex's request", STEP_S, codex)
    rid = str(made[0]["id"])
    if w.claude_mock.wait_for(lambda r: r.index >= since and CODEX_ASKS in r.all_text(),
                              STEP_S) is None:
        raise d.fail("Codex's question reaching Claude", STEP_S, claude)
    d.echo(f"    claude │ Codex's question arrives live, as a new turn (request {rid})")
    answer = f"CLAUDE ANSWER to {rid}: {CODEX_ASKS}"
    d.on_screen(claude, answer)
    d.echo(f"    claude │ ● {answer}")
    try:
        w.codex_mock.wait_for_request(lambda r: r.is_model_call and
                                      f"reply to {rid}" in (r.user_text or ""), STEP_S)
    except TimeoutError:
        raise d.fail("Claude's answer reaching the Codex thread", STEP_S, codex) from None
    d.on_screen(codex, f"MOCK REPLY: {answer}")
    d.show_codex()
    return rid


def step_status(d: Demo, asked_codex: str, asked_claude: str) -> None:
    """Both requests (and the reply mail Claude's answer went back in) end delivered;
    `codexbridge talk status` as the user would run it."""
    w = d.world
    d.begin(5, "where each message went:", "codexbridge talk status")

    def final(pick: Callable[[dict[str, object]], bool]
              ) -> list[dict[str, object]] | None:
        done = [r for r in records(w) if pick(r)]
        return done if done and all(r.get("state") in FINAL_STATES for r in done) else None

    ends = [*d.until(lambda: final(lambda r: r.get("id") in (asked_codex, asked_claude)
                                   or r.get("in_reply_to") == asked_claude),
                     "both requests and the reply ending (their delivery records)", STEP_S)]
    wrong = [r for r in ends if r.get("state") != "delivered"]
    if wrong or len(ends) < 3:
        raise ServeError(f"demo step 5/{STEPS}: not every message was delivered: " + "; ".join(
            f"{r.get('id')} {r.get('state')} {r.get('error') or ''}".strip() for r in ends))
    turns = [c.user_text or "" for c in w.codex_mock.model_calls]
    twice = [what for what, n in (
        ("Claude's message", sum(CLAUDE_ASKS in t and "reply to" not in t for t in turns)),
        ("Claude's answer", sum(f"reply to {asked_claude}" in t for t in turns))) if n != 1]
    if twice:
        raise ServeError(f"demo step 5/{STEPS}: not once in the Codex thread: "
                         + ", ".join(twice))
    shown = w.run("codexbridge", "talk", "status", cwd=w.projects["project"])
    d.echo("    $ codexbridge talk status")
    for x in (shown.stdout + shown.stderr).splitlines():
        if x.strip():
            d.echo(f"      {x.rstrip()}")


# -- the run ----------------------------------------------------------------------------------

def run_demo(*, tui: bool, echo: Callable[[str], None]) -> int:
    codex_bin, claude_bin, _tmux = binaries()
    world = World(codex_bin, claude_bin, responder=peer_answer)
    with _signals_end_it():
        try:
            world.start()
            d = Demo(world, echo)
            echo(f"demo: offline: a private HOME {world.home} (removed afterwards); the "
                 f"mock models on 127.0.0.1 (no account, nothing leaves the machine)")
            echo(f"demo: codex {codex_bin}")
            echo(f"demo: claude {claude_bin}")
            play(d, tui)
            echo(f"demo: done in {time.monotonic() - d.started:.0f} s: Claude asked Codex "
                 "and got its answer by itself; Codex asked Claude and got the answer back "
                 "into its thread; both delivered, once each.")
            if tui:
                _until_ctrl_c(world, echo)
            return 0
        finally:
            _stop(world)


def play(d: Demo, tui: bool) -> None:
    try:
        step_setup(d)
        step_open(d, tui)
        asked_codex = step_claude_asks(d)
        asked_claude = step_codex_asks(d)
        step_status(d, asked_codex, asked_claude)
    except subprocess.CalledProcessError as exc:  # tmux, typing into a pane that closed
        raise ServeError(f"demo step {d.step}/{STEPS} ({d.title}): tmux could not reach "
                         f"a TUI's pane (did the TUI exit?): {(exc.stderr or '').strip()}"
                         ) from None


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _signals_end_it() -> Iterator[None]:
    """SIGTERM or SIGHUP (the terminal closed) mid-demo end it like Ctrl-C: through the
    clean-up, not past it (by default they would leave both TUIs and the daemon behind)."""
    if not _main_thread():
        yield
        return

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    saved = {s: signal.signal(s, interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _until_ctrl_c(world: World, echo: Callable[[str], None]) -> None:
    """Keep both TUIs running for the person watching until Ctrl-C (or SIGTERM/SIGHUP),
    which ends the demo normally."""
    stop = threading.Event()
    if _main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, lambda *_: stop.set())
    where = world.tmux.attach_line() if world.tmux is not None else "(no tmux server)"
    echo(f"demo: both TUIs still run side by side: {where}")
    echo("demo: type into either one; Ctrl-C ends the demo (and removes its HOME).")
    stop.wait()
    echo("demo: stopping both TUIs and codex's daemon, removing the private HOME")


def _stop(world: World) -> None:
    """Everything the demo started, gone; a second Ctrl-C must not cut that short."""
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    try:
        world.stop()  # (and whatever the agents started that would outlive them)
    finally:
        if saved is not None:
            signal.signal(signal.SIGINT, saved)


if __name__ == "__main__":  # python -m tests.support.demo (scripts/demo)
    sys.exit(main())

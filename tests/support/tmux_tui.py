"""Drive the real Codex TUI and the real interactive Claude Code inside tmux.

Each TUI runs in a pane of a private tmux server (`-S <own socket file>`, no user
tmux.conf), so nothing touches the user's tmux and stop() leaves no socket file behind.
Two TUIs may share one server, side by side in one window (`demo --tui`). A TUI process
gets exactly the environment given (plus TERM), nothing inherited.

    tui = CodexTUI(codex_bin, app_server.url, workdir, env)   # url None: plain `codex`
    tui.start(); tui.wait_ready()
    tui.send("hello"); tui.wait_for_text("MOCK REPLY: hello")
    tui.stop()
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from codexbridge.host.procs import pid_alive

READY_MARKER = "Ask Codex to do anything"
CLAUDE_READY_MARKER = "❯"
SESSION = "tui"


class TmuxServer:
    """A private tmux server: its own socket file, no config, no user state."""

    def __init__(self, home: str | None = None, tmux: str = "tmux") -> None:
        # A short path on purpose: a unix socket path must fit in ~104 bytes.
        self._dir = tempfile.mkdtemp(prefix="cbtui-",
                                     dir="/tmp" if os.path.isdir("/tmp") else None)
        self.socket = os.path.join(self._dir, "tmux.sock")
        self.tmux_bin = tmux
        self.home = home or os.environ.get("HOME", "/")
        self.sessions = 0

    def _env(self) -> dict[str, str]:
        # The tmux server only needs to find itself; keep credentials out of it too.
        env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TMUX_TMPDIR")
               if k in os.environ}
        env["HOME"] = self.home
        return env

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.tmux_bin, "-S", self.socket, "-f", "/dev/null", *args],
                              env=self._env(), capture_output=True, text=True,
                              check=check, timeout=10)

    def new_pane(self, command: list[str], cwd: Path, *, width: int, height: int,
                 beside: Pane | None = None) -> Pane:
        """A pane running `command` (argv words: tmux execs them directly, no shell, so
        the pane's pid is the program's own) — a new session, or split beside a pane."""
        fmt = ["-P", "-F", "#{pane_id} #{pane_pid}"]
        if beside is None:
            self.sessions += 1
            out = self.run("new-session", "-d", "-s", f"{SESSION}{self.sessions}", *fmt,
                           "-x", str(width), "-y", str(height), "-c", str(cwd), *command)
            self.run("set-option", "-g", "history-limit", "10000", check=False)
        else:
            out = self.run("split-window", "-h", "-t", beside.target, *fmt, "-c", str(cwd),
                           *command)
        target, pid = out.stdout.split()
        return Pane(self, target, int(pid))

    def kill(self) -> None:
        if os.path.exists(self.socket):
            self.run("kill-server", check=False)
        shutil.rmtree(self._dir, ignore_errors=True)

    def attach_line(self) -> str:
        return f"tmux -S {self.socket} attach -t {SESSION}1"


class Pane:
    """One pane: type into it, press keys, read the screen."""

    def __init__(self, server: TmuxServer, target: str, pid: int) -> None:
        self.server = server
        self.target = target
        self.pid = pid

    def keys(self, *keys: str) -> None:
        self.server.run("send-keys", "-t", self.target, *keys)

    def literal(self, text: str) -> None:
        self.server.run("send-keys", "-t", self.target, "-l", text)

    def capture(self, *, scrollback: bool = False) -> str:
        args = ["capture-pane", "-p", "-J", "-t", self.target]
        if scrollback:
            args += ["-S", "-"]
        return self.server.run(*args, check=False).stdout

    def bottom(self, lines: int) -> str:
        """The last few non-blank lines of the pane: where the composer is."""
        rows = [r for r in self.capture().splitlines() if r.strip()]
        return "\n".join(rows[-lines:])

    def submit(self, text: str, *, composer_lines: int, timeout: float = 15.0) -> None:
        """Type `text`, then press Enter once the composer shows it — and again while it
        still sits there (measured on a loaded machine: an Enter that arrives while the
        TUI is still taking in the typed text is lost)."""
        self.literal(text)
        probe = text.strip()[-10:] or text
        deadline = time.monotonic() + timeout
        while probe not in self.bottom(composer_lines) and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(3):
            # A paste-burst detector may swallow an Enter glued to the text; give it a beat.
            time.sleep(0.15)
            self.keys("Enter")
            left = time.monotonic() + 3.0
            while time.monotonic() < left:
                if probe not in self.bottom(composer_lines):
                    return  # submitted: the composer no longer holds it
                time.sleep(0.05)

    def wait_for_text(self, text: str, timeout: float, *, scrollback: bool = True,
                      what: str = "TUI") -> str:
        """Poll the pane until `text` shows; return the screen. TimeoutError shows it."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture(scrollback=scrollback)
            if text in screen:
                return screen
            if not pid_alive(self.pid):
                raise RuntimeError(f"the {what} exited while waiting for {text!r}:\n{screen}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} not on the {what} screen after {timeout}s:\n"
                                   f"{screen}")
            time.sleep(0.1)


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _kill(pid: int, grace: float = 3.0) -> bool:
    """SIGTERM, then SIGKILL after `grace`; True when the process is gone."""
    if pid_alive(pid):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return True
        if not _wait_gone(pid, grace):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                return True
    return _wait_gone(pid, 5.0)


class _TUI:
    """What both TUIs share: a pane in a private (or shared) tmux server."""

    what = "TUI"
    composer_lines = 4
    ready_marker = READY_MARKER

    def __init__(self, workdir: Path, env: Mapping[str, str], *, width: int, height: int,
                 tmux: str) -> None:
        self.workdir = Path(workdir)
        self.env = dict(env)
        self.width = width
        self.height = height
        self.tmux_bin = tmux
        self.server: TmuxServer | None = None
        self._owns_server = False
        self.pane: Pane | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def _argv(self, program: list[str]) -> list[str]:
        env = {**self.env, "TERM": "xterm-256color"}
        return ["env", "-i", *(f"{k}={v}" for k, v in sorted(env.items())), *program]

    def start(self, server: TmuxServer | None = None, beside: _TUI | None = None) -> _TUI:
        """Start in `server` (beside another TUI's pane), else in a server of its own."""
        self._owns_server = server is None
        self.server = server or TmuxServer(self.env.get("HOME"), self.tmux_bin)
        self.pane = self.server.new_pane(self.command(), self.workdir, width=self.width,
                                         height=self.height,
                                         beside=beside.pane if beside else None)
        return self

    @property
    def pid(self) -> int | None:
        return self.pane.pid if self.pane is not None else None

    @property
    def alive(self) -> bool:
        return self.pid is not None and pid_alive(self.pid)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill the TUI process only (a fault: the pane and server stay)."""
        if self.pid is not None and pid_alive(self.pid):
            os.kill(self.pid, sig)

    def stop(self) -> None:
        """Kill the TUI by pid first (Claude Code survives a tmux kill-server), then the
        private tmux server; raise if the TUI survives."""
        pid = self.pid
        gone = _kill(pid) if pid is not None else True
        self.pane = None
        if self.server is not None and self._owns_server:
            self.server.kill()
        self.server = None
        if not gone:
            raise RuntimeError(f"{self.what} pid {pid} still alive after kill")

    def __enter__(self) -> _TUI:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _pane(self) -> Pane:
        if self.pane is None:
            raise RuntimeError(f"the {self.what} is not started")
        return self.pane

    def send(self, text: str, *, enter: bool = True, timeout: float = 15.0) -> None:
        if not enter:
            self._pane().literal(text)
            return
        self._pane().submit(text, composer_lines=self.composer_lines, timeout=timeout)

    def key(self, *keys: str) -> None:
        """Press tmux key names (`Enter`, `Escape`, `y`, `C-c`, …)."""
        self._pane().keys(*keys)

    def capture(self, *, scrollback: bool = False) -> str:
        return self._pane().capture(scrollback=scrollback)

    def wait_for_text(self, text: str, timeout: float = 20.0, *,
                      scrollback: bool = True) -> str:
        return self._pane().wait_for_text(text, timeout, scrollback=scrollback,
                                          what=self.what)

    def wait_ready(self, timeout: float = 20.0) -> str:
        return self.wait_for_text(self.ready_marker, timeout, scrollback=False)


class CodexTUI(_TUI):
    """The Codex TUI in a 160x50 pane: attached to `url` (`--remote`), or — url None —
    plain `codex -C DIR`, which attaches to codex's own daemon (and starts it)."""

    what = "codex TUI"

    def __init__(self, codex_bin: str, url: str | None, workdir: Path,
                 env: Mapping[str, str], *, width: int = 160, height: int = 50,
                 tmux: str = "tmux", extra_args: list[str] | None = None) -> None:
        super().__init__(workdir, env, width=width, height=height, tmux=tmux)
        self.codex_bin = codex_bin
        self.url = url
        self.extra_args = extra_args or []

    def command(self) -> list[str]:
        remote = ["--remote", self.url] if self.url else []
        return self._argv([self.codex_bin, *remote, "-C", str(self.workdir),
                           *self.extra_args])

    def start(self, server: TmuxServer | None = None, beside: _TUI | None = None
              ) -> CodexTUI:
        super().start(server, beside)
        return self

    def answer(self, prompt: str, key: str, timeout: float = 60.0) -> str:
        """As the human: once `prompt` (an approval) is on the screen, press `key` — and
        again while the prompt still stands there, as `submit` does for Enter (a cold CI
        run caught a `y` pressed as the prompt appeared doing nothing, leaving the turn
        waiting on it). Returns the screen that showed the prompt."""
        pane = self._pane()
        screen = pane.wait_for_text(prompt, timeout, scrollback=False, what=self.what)
        for _ in range(3):
            time.sleep(0.15)  # the overlay that shows it takes keys a beat later
            pane.keys(key)
            left = time.monotonic() + 3.0
            while time.monotonic() < left:
                if prompt not in pane.capture():
                    return screen  # answered: the prompt is gone
                time.sleep(0.05)
        raise TimeoutError(f"{prompt!r} still on the {self.what} screen after pressing "
                           f"{key!r} three times:\n{pane.capture()}")


class ClaudeTUI(_TUI):
    """Interactive Claude Code in a 200x50 pane, run in `workdir` with `args`."""

    what = "Claude Code TUI"
    composer_lines = 6  # Claude's prompt box and its footer
    ready_marker = CLAUDE_READY_MARKER

    def __init__(self, claude_bin: str, workdir: Path, env: Mapping[str, str], *,
                 args: list[str] | None = None, width: int = 200, height: int = 50,
                 tmux: str = "tmux") -> None:
        super().__init__(workdir, env, width=width, height=height, tmux=tmux)
        self.claude_bin = claude_bin
        self.args = args or []

    def command(self) -> list[str]:
        return self._argv([self.claude_bin, *self.args])

    def start(self, server: TmuxServer | None = None, beside: _TUI | None = None
              ) -> ClaudeTUI:
        super().start(server, beside)
        return self


PROCEED = "Do you want to proceed?"
STAY_IN_AUTO = "Enter to stay in auto mode"


def approve_claude(tui: ClaudeTUI, timeout: float = 30.0, *,
                   unless: str | None = None) -> str:
    """Answer Claude Code's permission prompt for the action it waits on with Yes, as the
    human would. Behind a gateway (our mock on loopback) Claude's auto mode cannot run its
    server-side safety check, says so once (Enter keeps auto mode) and then asks for each
    action that needs the check (measured on 2.1.332); `unless`: text that shows the action
    ran without asking (auto mode lets some through). Returns the screen it answered."""
    pane = tui._pane()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = pane.capture()
        # The permission prompt first: auto mode's notice can still be on screen beside
        # it, and an Enter meant for the notice lands on the prompt — where, behind a
        # gateway, "No" is preselected (the journeys caught a tool rejected that way).
        if PROCEED not in screen and STAY_IN_AUTO in screen:
            pane.keys("Enter")
            time.sleep(0.2)
            continue
        if PROCEED in screen:
            choice = _selected(screen)
            if "Yes" in choice and "Yes" in _selected(pane.capture()):
                pane.keys("Enter")
                # A key that lands while the dialog is still settling is ignored
                # (measured: the prompt stayed, Yes selected): look again, press again.
                gone = time.monotonic() + 3.0
                while PROCEED in pane.capture() and time.monotonic() < gone:
                    time.sleep(0.05)
                if PROCEED not in pane.capture():
                    return screen
                continue
            pane.keys("Down")
            # One step at a time: a second Down before the list redraws would wrap
            # around past Yes.
            moved = time.monotonic() + 2.0
            while _selected(pane.capture()) == choice and time.monotonic() < moved:
                time.sleep(0.05)
            continue
        if unless is not None and unless in screen:
            return screen
        if not pid_alive(pane.pid):
            raise RuntimeError(f"Claude Code exited before its permission prompt:\n{screen}")
        time.sleep(0.1)
    raise TimeoutError(f"no permission prompt in Claude Code after {timeout}s:\n"
                       f"{pane.capture()}")


def _selected(screen: str) -> str:
    """The highlighted option of the permission prompt on `screen` ("" if none)."""
    if PROCEED not in screen:
        return ""
    options = screen.split(PROCEED, 1)[1].splitlines()
    return next((line for line in options if line.strip().startswith("❯")), "")

"""Drive the real Codex TUI (`codex --remote ws://…`) inside tmux.

Each instance owns a private tmux server (`-S <own socket file>`, no user tmux.conf), so
a test never touches the user's tmux, and stop() leaves no socket file behind. The TUI
process gets exactly the environment given (plus TERM), nothing inherited.

    tui = CodexTUI(codex_bin, app_server.url, workdir, app_server.env)
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

from .procs import pid_alive

READY_MARKER = "Ask Codex to do anything"
SESSION = "tui"


class CodexTUI:
    """The Codex TUI attached to `url`, in a detached 160x50 tmux pane."""

    def __init__(self, codex_bin: str, url: str, workdir: Path, env: Mapping[str, str], *,
                 width: int = 160, height: int = 50, tmux: str = "tmux",
                 extra_args: list[str] | None = None) -> None:
        self.codex_bin = codex_bin
        self.url = url
        self.workdir = Path(workdir)
        self.env = dict(env)
        self.width = width
        self.height = height
        self.tmux_bin = tmux
        self.extra_args = extra_args or []
        self._socket_dir: str | None = None
        self.socket = ""
        self.pid: int | None = None

    # -- tmux plumbing -----------------------------------------------------------------

    def _tmux_env(self) -> dict[str, str]:
        # The tmux server only needs to find itself; keep credentials out of it too.
        env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TMUX_TMPDIR")
               if k in os.environ}
        env["HOME"] = self.env.get("HOME", os.environ.get("HOME", "/"))
        return env

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.tmux_bin, "-S", self.socket, "-f", "/dev/null", *args],
                              env=self._tmux_env(), capture_output=True, text=True,
                              check=check, timeout=10)

    # -- lifecycle ---------------------------------------------------------------------

    def command(self) -> list[str]:
        env = {**self.env, "TERM": "xterm-256color"}
        return ["env", "-i", *(f"{k}={v}" for k, v in sorted(env.items())),
                self.codex_bin, "--remote", self.url, "-C", str(self.workdir), *self.extra_args]

    def start(self) -> CodexTUI:
        # A short path on purpose: a unix socket path must fit in ~104 bytes.
        self._socket_dir = tempfile.mkdtemp(prefix="cbtui-",
                                            dir="/tmp" if os.path.isdir("/tmp") else None)
        self.socket = os.path.join(self._socket_dir, "tmux.sock")
        # Several argv words: tmux execs them directly, no shell, so the pane pid is codex.
        self.tmux("new-session", "-d", "-s", SESSION, "-x", str(self.width),
                  "-y", str(self.height), "-c", str(self.workdir), *self.command())
        self.tmux("set-option", "-t", SESSION, "history-limit", "10000")
        out = self.tmux("list-panes", "-t", SESSION, "-F", "#{pane_pid}").stdout.split()
        self.pid = int(out[0]) if out else None
        return self

    def stop(self) -> None:
        """Kill the TUI by pid, then the private tmux server; raise if the TUI survives."""
        pid, self.pid = self.pid, None
        if pid is not None and pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
            if not self._wait_gone(pid, 3.0):
                os.kill(pid, signal.SIGKILL)
        if self.socket and os.path.exists(self.socket):
            self.tmux("kill-server", check=False)
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
        if pid is not None and not self._wait_gone(pid, 5.0):
            raise RuntimeError(f"codex TUI pid {pid} still alive after kill-server")

    @staticmethod
    def _wait_gone(pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while pid_alive(pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    @property
    def alive(self) -> bool:
        return self.pid is not None and pid_alive(self.pid)

    def __enter__(self) -> CodexTUI:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- screen ------------------------------------------------------------------------

    def send(self, text: str, *, enter: bool = True, timeout: float = 15.0) -> None:
        """Type `text` literally, then press Enter — once the composer shows the text,
        and again if it is still sitting there (measured on a loaded machine: an Enter
        that arrives while the TUI is still taking in the typed text is lost)."""
        self.tmux("send-keys", "-t", SESSION, "-l", text)
        if not enter:
            return
        probe = text.strip()[-10:] or text
        deadline = time.monotonic() + timeout
        while probe not in self._bottom() and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(3):
            # A paste-burst detector may swallow an Enter glued to the text; give it a beat.
            time.sleep(0.15)
            self.tmux("send-keys", "-t", SESSION, "Enter")
            left = time.monotonic() + 3.0
            while time.monotonic() < left:
                if probe not in self._bottom():
                    return  # submitted: the composer no longer holds it
                time.sleep(0.05)

    def _bottom(self, lines: int = 4) -> str:
        """The last few non-blank lines of the pane: where the composer is."""
        rows = [r for r in self.capture().splitlines() if r.strip()]
        return "\n".join(rows[-lines:])

    def key(self, *keys: str) -> None:
        """Press tmux key names (`Enter`, `Escape`, `y`, `C-c`, …)."""
        self.tmux("send-keys", "-t", SESSION, *keys)

    def capture(self, *, scrollback: bool = False) -> str:
        args = ["capture-pane", "-p", "-J", "-t", SESSION]
        if scrollback:
            args += ["-S", "-"]
        return self.tmux(*args, check=False).stdout

    def wait_for_text(self, text: str, timeout: float = 20.0, *,
                      scrollback: bool = True) -> str:
        """Poll the pane until `text` shows; return the screen. TimeoutError shows the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture(scrollback=scrollback)
            if text in screen:
                return screen
            if self.pid is not None and not pid_alive(self.pid):
                raise RuntimeError(f"codex TUI exited while waiting for {text!r}:\n{screen}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} not on the TUI screen after {timeout}s:\n{screen}")
            time.sleep(0.1)

    def wait_ready(self, timeout: float = 20.0) -> str:
        return self.wait_for_text(READY_MARKER, timeout, scrollback=False)

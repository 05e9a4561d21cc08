"""The offline world a user has after README's "Use it for real", on this machine.

A private HOME under a short /tmp path, with codexbridge installed the way SETUP.md
says (this checkout's .venv first on PATH) and the real `codex` and `claude` on PATH;
the two mock models on 127.0.0.1 stand in for the accounts (`~/.codex/config.toml`
names the mock provider, `ANTHROPIC_BASE_URL` the mock Messages API). Nothing else is
set: no CODEX_HOME, no CLAUDE_CONFIG_DIR, no CODEX_BRIDGE_* — everything at its default
place under HOME. Then, as the README says:

    codexbridge setup claude          world.setup()
    codexbridge setup codex
    codex -C ~/project                world.codex_tui("project")   (codex's own daemon)
    claude        (in ~/project)      world.claude_tui("project")

The journeys (tests/journeys/), scripts/demo and bench/ all start this world. The
codex daemon that the first `codex` starts gets proxy variables pointing at a closed
loopback port: its updater fetches chatgpt.com and analytics go to ab.chatgpt.com
(measured, docs/fitting-in.md); with the proxy nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from codexbridge.doctor.offline_stack import (
    LOOPBACK,
    MOCK_API_KEY,
    MOCK_API_KEY_VAR,
    write_codex_home,
)
from codexbridge.host.daemon import socket_path, socket_url
from codexbridge.host.procs import pid_alive
from tests.support.claude_env import API_KEY, QUIET, seed_interactive, temp_env
from tests.support.mock_claude import MockMessages, Responder
from tests.support.mock_codex import MockResponsesServer, Planner, plan_reply
from tests.support.tmux_tui import ClaudeTUI, CodexTUI, Pane, TmuxServer

# A closed port on loopback: whatever codex's daemon would fetch from the internet fails
# at once, and nothing leaves the machine.
PROXY_GUARD = {**{k: "http://127.0.0.1:9" for k in (
    "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")},
    "NO_PROXY": LOOPBACK, "no_proxy": LOOPBACK}


README = Path(__file__).resolve().parents[2] / "README.md"


def readme_setup(readme: Path = README) -> list[str]:
    """The `codexbridge …` commands of the first shell block under README's "Use it for
    real" (comments cut); [] when there is no README (an installed package)."""
    return readme_block(0, readme)


def readme_block(index: int, readme: Path = README) -> list[str]:
    """The `codexbridge …` commands of shell block `index` under README's "Use it for
    real" (comments cut); [] when there is no such block or no README."""
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError:
        return []
    section = text.split("## Use it for real", 1)[-1] if "## Use it for real" in text else ""
    section = section.split("\n## ", 1)[0]
    blocks = [part.split("```", 1)[0] for part in section.split("```bash")[1:]]
    if index >= len(blocks):
        return []
    lines = [line.split("#", 1)[0].strip() for line in blocks[index].splitlines()]
    return [line for line in lines if line.startswith("codexbridge ")]


class World:
    """One user's machine, offline. `start()` prepares it; `stop()` removes all of it."""

    def __init__(self, codex_bin: str, claude_bin: str, *,
                 projects: Iterable[str] = ("project",), planner: Planner = plan_reply,
                 responder: Responder | None = None, base: Path | None = None) -> None:
        self.codex_bin = codex_bin
        self.claude_bin = claude_bin
        self._owns_root = base is None
        # Short: the daemon's socket lives under ~/.codex and must fit in ~104 bytes.
        self.root = Path(base) if base is not None else Path(
            tempfile.mkdtemp(prefix="cbw-", dir="/tmp" if os.path.isdir("/tmp") else None))
        self.home = self.root / "h"
        self.bin_dir = self.root / "bin"
        self.projects = {name: self.home / name for name in projects}
        self.codex_mock = MockResponsesServer(planner=planner)
        self.claude_mock = MockMessages(responder=responder)
        self.tuis: list[CodexTUI | ClaudeTUI] = []
        self.tmux: TmuxServer | None = None

    # -- the machine -------------------------------------------------------------------

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def bridge_home(self) -> Path:
        return self.home / ".codex-bridge"

    @property
    def codexbridge(self) -> str:
        """The installed command, as SETUP.md installs it (this checkout's .venv)."""
        return str(Path(sys.executable).parent / "codexbridge")

    @property
    def env(self) -> dict[str, str]:
        """The user's shell: PATH with codexbridge, codex and claude on it; the mock
        accounts; nothing that moves a default."""
        path = [str(Path(sys.executable).parent), str(self.bin_dir), "/usr/local/bin",
                "/usr/bin", "/bin"]
        return {"HOME": str(self.home), "PATH": ":".join(path), "LANG": "C.UTF-8",
                "TERM": "xterm-256color", "USER": os.environ.get("USER", "root"),
                "ANTHROPIC_BASE_URL": self.claude_mock.url, "ANTHROPIC_API_KEY": API_KEY,
                **QUIET, MOCK_API_KEY_VAR: MOCK_API_KEY, "RUST_LOG": "warn",
                **PROXY_GUARD, **temp_env()}

    def start(self) -> World:
        self.home.mkdir(parents=True, exist_ok=True)
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        for name, target in (("codex", self.codex_bin), ("claude", self.claude_bin)):
            link = self.bin_dir / name
            if not link.exists():
                link.symlink_to(target)
        for project in self.projects.values():
            project.mkdir(parents=True, exist_ok=True)
        self.codex_mock.start()
        self.claude_mock.start()
        # `codex login` stands in: the provider is the mock (an env_key, no account).
        write_codex_home(self.codex_home, self.codex_mock.url, list(self.projects.values()))
        with open(self.codex_home / "config.toml", "a", encoding="utf-8") as fh:
            fh.write("\n[analytics]\nenabled = false\n")
        # Claude's first run: onboarding done, the key approved, the projects trusted.
        for project in self.projects.values():
            seed_interactive(self.home, project, merge=True)
        return self

    def run(self, *argv: str, cwd: Path | None = None, stdin: str | None = None,
            timeout: float = 60, extra_env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        """A command as the user types it in their terminal."""
        return subprocess.run(list(argv), cwd=cwd or self.home,
                              env={**self.env, **(extra_env or {})}, input=stdin,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def setup(self) -> list[str]:
        """README's "Use it for real" set-up, run literally: every `codexbridge …` line of
        its first block (the install line aside: this checkout's .venv is installed).
        Returns the commands run."""
        commands = readme_setup() or ["codexbridge setup claude", "codexbridge setup codex"]
        for line in commands:
            done = self.run(*shlex.split(line))
            if done.returncode != 0:
                raise RuntimeError(f"{line} failed ({done.returncode}):\n"
                                   f"{done.stdout}{done.stderr}")
        return commands

    # -- the two TUIs ------------------------------------------------------------------

    def _server(self) -> TmuxServer:
        if self.tmux is None:
            self.tmux = TmuxServer(str(self.home))
        return self.tmux

    def codex_tui(self, project: str = "project", *, beside: CodexTUI | ClaudeTUI | None = None,
                  resume: str | None = None) -> CodexTUI:
        """`codex -C ~/project`: the TUI on codex's own daemon (started if none runs);
        `resume`: `codex -C ~/project resume ID`, back on that thread."""
        tui = CodexTUI(self.codex_bin, None, self.projects[project], self.env,
                       extra_args=["resume", resume] if resume else None)
        tui.start(self._server(), beside)
        self.tuis.append(tui)
        return tui

    def claude_tui(self, project: str = "project", *args: str,
                   beside: CodexTUI | ClaudeTUI | None = None
                   ) -> ClaudeTUI:
        """`claude` started in ~/project (`args` e.g. `--resume ID`)."""
        tui = ClaudeTUI(self.claude_bin, self.projects[project], self.env, args=list(args))
        tui.start(self._server(), beside)
        self.tuis.append(tui)
        return tui

    def terminal(self, *argv: str, project: str = "project", width: int = 120,
                 height: int = 50) -> Pane:
        """`argv` run in a terminal of its own in ~/project (a tmux pane: a tty of
        `width` columns), as the user runs `codexbridge log --follow` beside the TUIs."""
        env = {**self.env, "TERM": "xterm-256color"}
        return self._server().new_pane(
            ["env", "-i", *(f"{k}={v}" for k, v in sorted(env.items())), *argv],
            self.projects[project], width=width, height=height)

    @property
    def daemon_url(self) -> str:
        return socket_url(socket_path(self.codex_home))

    # -- teardown ----------------------------------------------------------------------

    def stop_daemon(self) -> None:
        """`codex app-server daemon stop`, then whatever it leaves (the updater
        survives `daemon stop`), by the pids the daemon recorded."""
        links = [socket_path(self.codex_home),
                 self.codex_home / "app-server-daemon" / "daemon-updater.sock"]
        targets = [os.path.realpath(link) for link in links if link.is_symlink()]
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            self.run(self.codex_bin, "app-server", "daemon", "stop", timeout=60)
        for name in ("daemon-updater.pid", "daemon.pid"):
            self._kill_recorded(name)
        for target in targets:
            for leftover in (target, target + ".lock"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)

    def daemon_pid(self) -> int | None:
        return self._recorded_pid("daemon.pid")

    def _recorded_pid(self, name: str) -> int | None:
        """The pid codex's daemon recorded in `name`, while it is one of this world's."""
        try:
            pid = json.loads((self.codex_home / "app-server-daemon" / name).read_text())["pid"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return pid if isinstance(pid, int) and self._ours(pid) else None

    def _ours(self, pid: int) -> bool:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            return False
        environ = b""
        with contextlib.suppress(OSError):
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        return b"app-server" in cmdline and str(self.home).encode() in environ + cmdline

    def _kill_recorded(self, name: str) -> None:
        pid = self._recorded_pid(name)
        if pid is not None and pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.02)

    def stop(self) -> None:
        for tui in reversed(self.tuis):
            with contextlib.suppress(Exception):
                tui.stop()
        self.tuis.clear()
        if self.tmux is not None:
            self.tmux.kill()
            self.tmux = None
        self.stop_daemon()
        end_leftovers(self.root)
        self.codex_mock.stop()
        self.claude_mock.stop()
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> World:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def signal_naming(mark: str, sig: int = signal.SIGTERM) -> None:
    """Send `sig` to every process whose argv names `mark` — the plugin's warm MCP
    server names its runtime dir there, and outlives the session that started it."""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if mark.encode() in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), sig)
        except OSError:
            continue


def started_in(root: Path) -> list[int]:
    """Processes started inside a world: their environment names its private root (HOME,
    PATH). What the agents started and outlives them — the courier (it waits 60 s idle)
    and the plugin's warm MCP server (600 s) — would otherwise stay on, holding a HOME
    that is gone. Linux /proc; elsewhere none are found."""
    mark = (str(root).rstrip("/") + "/").encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        pid = int(entry.name)
        if mark in environ and pid != os.getpid():
            found.append(pid)
    return found


def end_leftovers(root: Path, grace: float = 2.0) -> None:
    """SIGINT first (the courier closes its socket and lock on its way out), then
    SIGTERM, then SIGKILL."""
    pids = started_in(root)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [p for p in pids if pid_alive(p)]
        if not pids:
            return

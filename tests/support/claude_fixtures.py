"""Fixtures for the real Claude Code binary, offline against the mock Messages API.

The environment is the one measured in ../shared/reference/claude-code.md §2: a
minimal `env -i` style environment, ANTHROPIC_BASE_URL pointing at our loopback mock,
CLAUDE_CONFIG_DIR in a temp dir, and the four "quiet" variables that keep the CLI from
touching anything but the mock. CODEX_BRIDGE_HOME is passed through so the hooks Claude
runs use the test's isolated state dir.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.binaries import require_claude, require_tmux
from tests.support.claude_env import offline_env, seed_interactive
from tests.support.mock_claude import MockMessages


def hook_settings(hooks: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """`{"hooks": {event: [{"hooks": [...]}]}}` from event → list of hook entries."""
    return {"hooks": {event: [{"hooks": entries}] for event, entries in hooks.items()}}


class ClaudeHarness:
    """Runs the pinned `claude` in an isolated home against one mock server."""

    def __init__(self, binary: str, root: Path, mock: MockMessages) -> None:
        self.binary = binary
        self.root = root
        self.mock = mock
        self.home = root / "home"
        self.config_dir = self.home / ".claude"
        self.config_dir.mkdir(parents=True, exist_ok=True)

    def env(self, extra: dict[str, str] | None = None, *, term: str = "dumb"
            ) -> dict[str, str]:
        """The minimal offline environment (claude-code.md §2) plus `extra`."""
        env = offline_env(self.home, self.config_dir, self.mock.url, term=term, extra=extra)
        env["CODEX_BRIDGE_HOME"] = os.environ["CODEX_BRIDGE_HOME"]
        return env

    def run_p(self, project: Path, prompt: str, *args: str,
              env: dict[str, str] | None = None, timeout: float = 90
              ) -> subprocess.CompletedProcess[str]:
        """`claude -p PROMPT --output-format json` in `project`."""
        return subprocess.run(
            [self.binary, "-p", prompt, "--output-format", "json", *args],
            cwd=project, env=self.env(env), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=timeout, check=False)

    @staticmethod
    def result_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
        lines = [line for line in proc.stdout.splitlines() if line.strip()]
        assert lines, f"claude printed nothing; rc={proc.returncode} stderr={proc.stderr!r}"
        data = json.loads(lines[-1])
        assert isinstance(data, dict)
        return data

    def seed_interactive(self, project: Path) -> None:
        """`.claude.json` that skips onboarding, the API-key question and trust."""
        seed_interactive(self.config_dir, project)


def write_project_settings(project: Path, settings: dict[str, Any]) -> Path:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return path


class TmuxClaude:
    """Interactive `claude` in a tmux session on a private `-L` socket."""

    def __init__(self, harness: ClaudeHarness, project: Path,
                 env: dict[str, str] | None = None) -> None:
        self.harness = harness
        self.project = project
        self.tmux = require_tmux()
        self.socket = f"cbtest-{uuid.uuid4().hex[:10]}"
        self.env = harness.env(env, term="xterm-256color")
        self.pid: int | None = None
        self.socket_path: str | None = None

    def _tmux(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run([self.tmux, "-L", self.socket, *args], env=self.env,
                              capture_output=True, text=True, timeout=20, check=False)
        if check and proc.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout

    def start(self, *claude_args: str) -> None:
        # The command as separate argv words: tmux execs it directly, so the pane's pid
        # is claude's own pid and teardown can kill exactly that process.
        self._tmux("new-session", "-d", "-s", "main", "-x", "200", "-y", "50",
                   "-c", str(self.project), self.harness.binary, *claude_args)
        pane_pid, self.socket_path = self._tmux(
            "display-message", "-p", "-t", "main", "#{pane_pid} #{socket_path}"
        ).strip().split(" ", 1)
        self.pid = int(pane_pid)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "main", check=False)

    def wait_for_screen(self, needle: str, timeout: float = 30) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.screen():
                return True
            time.sleep(0.1)
        return False

    def type(self, text: str, timeout: float = 15.0) -> None:
        """Type `text`, then Enter once the prompt shows it, and Enter again while it is
        still there (under load an Enter that beats the typed text is lost)."""
        self._tmux("send-keys", "-t", "main", "-l", text)
        probe = text.strip()[-10:]
        deadline = time.monotonic() + timeout
        while probe not in self._bottom() and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(3):
            time.sleep(0.2)
            self._tmux("send-keys", "-t", "main", "Enter")
            left = time.monotonic() + 3.0
            while time.monotonic() < left:
                if probe not in self._bottom():
                    return
                time.sleep(0.05)

    def _bottom(self, lines: int = 6) -> str:
        """The last non-blank lines of the pane: Claude's prompt box and its footer."""
        rows = [r for r in self.screen().splitlines() if r.strip()]
        return "\n".join(rows[-lines:])

    def stop(self) -> None:
        """Kill claude by pid first: killing the tmux server alone leaves it running."""
        if self.pid is not None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.kill(self.pid, sig)
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    try:
                        os.kill(self.pid, 0)
                    except ProcessLookupError:
                        break
                    time.sleep(0.05)
                else:
                    continue
                break
            self.pid = None
        self._tmux("kill-server", check=False)
        # With its only pane gone the server exits by itself and leaves the socket file.
        if self.socket_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)
            self.socket_path = None


@pytest.fixture
def mock_messages() -> Iterator[MockMessages]:
    with MockMessages() as mock:
        yield mock


@pytest.fixture
def claude(tmp_path: Path, mock_messages: MockMessages) -> ClaudeHarness:
    """The pinned Claude Code, offline against `mock_messages` (fails in CI if missing)."""
    return ClaudeHarness(require_claude(), tmp_path / "claude-root", mock_messages)


@pytest.fixture
def claude_project(tmp_path: Path) -> Path:
    """An empty project directory for Claude to run in."""
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def tmux_claude(claude: ClaudeHarness, claude_project: Path) -> Iterator[TmuxClaude]:
    """An interactive claude in tmux; the test calls `.start()`. Always torn down."""
    session = TmuxClaude(claude, claude_project)
    try:
        yield session
    finally:
        session.stop()

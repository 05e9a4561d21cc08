"""Where setup reads and writes: the settings files of each scope, the plugin shipped in
this package, and the installed codexbridge command the agents should run."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from ..claude.plugin import claude_user_settings as claude_user_settings
from ..errors import UsageError
from ..host.daemon import codex_home
from ..host.private import state_home

LEDGER = "setup.json"


class Scope(NamedTuple):
    agent: str  # "claude" | "codex"
    project: str | None  # absolute project dir; None: the user's own settings

    @property
    def key(self) -> str:
        return f"{self.agent}:project:{self.project}" if self.project else f"{self.agent}:user"

    @property
    def label(self) -> str:
        return f"project {self.project}" if self.project else "user"


def scope_for(agent: str, project: str | None, user: bool) -> Scope:
    if project and user:
        raise UsageError("--project and --user exclude each other: pick one scope")
    if not project:
        return Scope(agent, None)
    full = os.path.abspath(os.path.expanduser(project))
    if not os.path.isdir(full):
        raise UsageError(f"--project {project!r} is not a directory")
    return Scope(agent, os.path.realpath(full))


def claude_settings(scope: Scope, env: Mapping[str, str] | None = None) -> str:
    if scope.project:
        return os.path.join(scope.project, ".claude", "settings.json")
    return claude_user_settings(env)


def codex_config(scope: Scope, env: Mapping[str, str] | None = None) -> str:
    if scope.project:
        return os.path.join(scope.project, ".codex", "config.toml")

    return str(codex_home(env) / "config.toml")


def plugin_dir() -> str:
    """The Claude Code plugin shipped inside this package (also its own marketplace)."""
    return str(Path(__file__).resolve().parent.parent / "claude_plugin")


def ledger_path() -> str:
    return os.path.join(state_home(), LEDGER)


def installed_command() -> str | None:
    """The `codexbridge` console script of the environment running now (the one a
    pipx or venv install made beside its python), else the one on PATH."""
    beside = Path(sys.executable).parent / "codexbridge"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside.absolute())
    found = shutil.which("codexbridge")
    return os.path.abspath(found) if found else None


def command_argv() -> list[str]:
    """How an agent should start codexbridge: the console script, else this python."""
    script = installed_command()
    if script:
        return [script]
    # -P: the agent's working directory never shadows the package.
    return [os.path.abspath(sys.executable), "-P", "-m", "codexbridge"]

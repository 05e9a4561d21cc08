"""Fixtures for the real codex binary against the loopback mock model.

    codex_bin     the pinned native codex (fails in CI when missing, skips locally)
    mock_model    a started MockResponsesServer, stopped after the test
    workdir       an empty, trusted project directory
    codex_home    CODEX_HOME with config.toml pointing at `mock_model`
    codex_env     the whole clean environment for codex processes
    app_server    `codex app-server` on ws://127.0.0.1:<port>, killed after the test
    tui_factory   call it to get a started CodexTUI attached to `app_server` (needs tmux)

All function-scoped: an app-server starts in ~0.3 s, and sharing one between tests would
let thread lists and approvals leak from one test into the next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codexbridge.doctor.offline_stack import isolated_env, write_codex_home
from codexbridge.host.appserver import AppServerProcess, launch
from tests.support.mock_codex import MockResponsesServer
from tests.support.tmux_tui import CodexTUI

from .binaries import require_codex, require_tmux

# What an app-server fixture yields: the package's own process handle.
AppServer = AppServerProcess


@pytest.fixture
def codex_bin() -> str:
    return require_codex()


@pytest.fixture
def mock_model() -> Iterator[MockResponsesServer]:
    with MockResponsesServer() as mock:
        yield mock


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def codex_home(tmp_path: Path, mock_model: MockResponsesServer, workdir: Path) -> Path:
    return write_codex_home(tmp_path / "codex-home", mock_model.url, [workdir])


@pytest.fixture
def codex_env(tmp_path: Path, codex_home: Path) -> dict[str, str]:
    user_home = tmp_path / "home"
    user_home.mkdir(exist_ok=True)
    return isolated_env(codex_home, user_home=user_home)


@pytest.fixture
def app_server(codex_bin: str, workdir: Path, codex_env: dict[str, str],
               tmp_path: Path) -> Iterator[AppServer]:
    server = launch(codex_bin, workdir, codex_env, stderr_path=tmp_path / "app-server.stderr")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tui_factory(codex_bin: str, app_server: AppServer, workdir: Path,
                codex_env: dict[str, str]) -> Iterator[Callable[[], CodexTUI]]:
    tmux = require_tmux()
    started: list[CodexTUI] = []

    def make() -> CodexTUI:
        tui = CodexTUI(codex_bin, app_server.url, workdir, codex_env, tmux=tmux)
        started.append(tui)
        return tui.start()

    yield make
    for tui in started:
        tui.stop()

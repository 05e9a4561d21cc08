"""pid_alive: a process reaped between the two looks is gone, not alive."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from codexbridge.host import procs


def test_live_process_is_alive() -> None:
    assert procs.pid_alive(os.getpid())


def test_reaped_process_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not procs.pid_alive(child.pid)


def test_reaped_between_kill_and_stat_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """kill(0) finds the zombie, its parent reaps it before /proc/<pid>/stat is opened
    (seen once in a full suite run: a stopped TUI read as still running)."""
    def reaped(path: str, *args: Any, **kwargs: Any) -> Any:
        raise FileNotFoundError(path)

    monkeypatch.setattr(procs, "open", reaped, raising=False)
    assert not procs.pid_alive(os.getpid())

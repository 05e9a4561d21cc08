"""The real-binary policy: in CI a missing pinned binary fails the test, locally it skips."""

from __future__ import annotations

import os

import pytest

from codexbridge.host.binaries import pinned_claude, pinned_codex


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _require(path: object, what: str) -> str:
    if path is None:
        msg = f"pinned {what} is not installed; run scripts/install-binaries"
        if _in_ci():
            pytest.fail(f"CI=true and {msg}", pytrace=False)
        pytest.skip(msg)
    return str(path)


def require_codex() -> str:
    """The pinned codex native binary (never one from PATH: tests pin the version)."""
    return _require(pinned_codex(), "codex 0.169.0")


def require_claude() -> str:
    return _require(pinned_claude(), "Claude Code 2.1.332")


def require_tmux() -> str:
    import shutil

    tmux = shutil.which("tmux")
    return _require(tmux, "tmux")


def wait_flock_held(path: str, timeout: float = 10.0) -> None:
    """Until some other process holds the flock on `path` (a readiness signal, not a
    sleep): our own non-blocking try fails exactly while it is held elsewhere."""
    import os
    import time

    from codexbridge.host.locking import lock, unlock

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if not lock(fd, blocking=False):
                return
            unlock(fd)
        finally:
            os.close(fd)
        time.sleep(0.02)
    raise AssertionError(f"nobody took the lock on {path} within {timeout}s")

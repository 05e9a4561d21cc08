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

"""The real-binary policy: in CI a missing pinned binary fails the test, locally it skips.

Which copy of the version matrix a run uses is `CODEX_BRIDGE_PINNED_CODEX` /
`..._CLAUDE` (scripts/test sets them for each leg); a test that needs a version string
reads it from the binary (`codex_version()`), never from a literal — only the tests of
the pin itself compare against the pin.
"""

from __future__ import annotations

import functools
import os
import subprocess

import pytest

from codexbridge.host.binaries import (
    CLAUDE_VERSION,
    CODEX_VERSION,
    parse_version,
    pinned_claude,
    pinned_codex,
)


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
    want = os.environ.get("CODEX_BRIDGE_PINNED_CODEX") or CODEX_VERSION
    return _require(pinned_codex(), f"codex {want}")


def require_claude() -> str:
    want = os.environ.get("CODEX_BRIDGE_PINNED_CLAUDE") or CLAUDE_VERSION
    return _require(pinned_claude(), f"Claude Code {want}")


@functools.cache
def _version_of(path: str) -> str:
    done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    found = parse_version(done.stdout)
    assert found, f"{path} --version printed no version: {done.stdout!r} {done.stderr!r}"
    return found


def codex_version() -> str:
    """The version of the codex this run tests (what its `--version` says)."""
    return _version_of(require_codex())


def claude_version() -> str:
    return _version_of(require_claude())


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

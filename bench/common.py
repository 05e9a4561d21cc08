"""What the benches that run a real app-server share."""

from __future__ import annotations

import os
import sys

from codexbridge.host.binaries import pinned_codex

MISSING_BINARY = 3  # a bench's exit status when the pinned codex is not installed


def codex_binary(bench: str) -> str | None:
    """The codex a bench runs (`CODEX_BRIDGE_CODEX_BIN`, else the pinned one); None, and
    the reason on stderr, when there is none: the bench then exits MISSING_BINARY."""
    codex = os.environ.get("CODEX_BRIDGE_CODEX_BIN") or str(pinned_codex() or "")
    if not codex:
        print(f"{bench}: pinned codex missing; run scripts/install-binaries", file=sys.stderr)
        return None
    return codex

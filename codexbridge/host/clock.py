"""Timestamps in the format claude-codex-bridge writes (`Date.toISOString()`)."""

from __future__ import annotations

import time


def iso_utc(when: float | None = None) -> str:
    """`2026-05-01T12:34:56.789Z` for `when` (default: now)."""
    ts = time.time() if when is None else when
    whole = int(ts)
    millis = int((ts - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"

"""The schema guard's machinery, free of pytest so a guarded subprocess stays light.

`SchemaGuard.wrap` wraps a transport (`codexbridge.codex.transport.observe` hands it
every transport the client opens): each outgoing frame is checked with
`SchemaSet.validate_outgoing` over `schemas/`, and each incoming server request is
remembered so an answer's result can be checked against that method's schema. The
frame is still sent unchanged, so a violation cannot turn into a hang that hides it.
The pytest side is `tests/support/schema_guard.py`.
"""

from __future__ import annotations

import atexit
import json
import os
from pathlib import Path
from typing import Any

from codexbridge.codex import transport as tp
from codexbridge.codex.protocol.envelopes import RequestId, ServerRequest, parse_frame
from codexbridge.errors import SchemaViolation
from tests.support.schemas import repo_schemas

GUARD_ENV = "CODEX_BRIDGE_TEST_SCHEMA_GUARD"


class _Guarded:
    """A transport that shows every frame to the guard on its way."""

    def __init__(self, guard: SchemaGuard, inner: tp.Transport) -> None:
        self._guard = guard
        self._inner = inner
        # server-request id → method, to check an answer's result shape.
        self.seen: dict[RequestId, str] = {}

    async def send(self, text: str) -> None:
        self._guard.check(self, text)
        await self._inner.send(text)

    async def recv(self) -> str | bytes:
        frame = await self._inner.recv()
        for env in parse_frame(frame):
            if isinstance(env, ServerRequest):
                self.seen[env.id] = env.method
        return frame

    async def close(self) -> None:
        await self._inner.close()


class SchemaGuard:
    """Collects violations; `checked` counts the messages it saw (so a test can tell the
    guard was really in the path)."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.checked = 0
        self.sent: list[dict[str, Any]] = []

    def wrap(self, transport: tp.Transport) -> tp.Transport:
        return _Guarded(self, transport)

    def check(self, link: _Guarded, text: str) -> None:
        self.checked += 1
        try:
            message = json.loads(text)
        except ValueError:
            self.violations.append(f"not JSON: {text[:200]!r}")
            return
        self.sent.append(message)
        try:
            repo_schemas().validate_outgoing(message, link.seen.get)
        except SchemaViolation as exc:
            self.violations.append(f"{exc}\n  message: {json.dumps(message)[:500]}")

    def read_child_reports(self, report: Path) -> int:
        """Fold in what guarded subprocesses wrote; returns how many messages they checked."""
        checked = 0
        if not report.exists():
            return 0
        for line in report.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if "violation" in entry:
                self.violations.append(f"[pid {entry.get('pid')}] {entry['violation']}")
            checked += int(entry.get("checked", 0))
        return checked


def install_in_child() -> None:
    """Called by child_site/sitecustomize.py in a subprocess that has GUARD_ENV."""
    report = os.environ.get(GUARD_ENV)
    if not report:
        return
    guard = SchemaGuard()
    tp.observe(guard.wrap)
    pid = os.getpid()

    def flush() -> None:
        lines = [json.dumps({"pid": pid, "violation": v}) for v in guard.violations]
        lines.append(json.dumps({"pid": pid, "checked": guard.checked}))
        # One O_APPEND write per process: concurrent children do not interleave lines.
        fd = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, ("\n".join(lines) + "\n").encode())
        finally:
            os.close(fd)

    atexit.register(flush)

"""The schema guard's machinery, free of pytest so a guarded subprocess stays light.

`SchemaGuard` wraps `AppServerClient._send` (every request, notification and answer
leaves through it) and `_dispatch` (to learn which server request an answer replies
to) and checks each outgoing message with `codexbridge.protocol.schema.validate_outgoing`.
The pytest side is `tests/support/schema_guard.py`.
"""

from __future__ import annotations

import atexit
import json
import os
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codexbridge.client import AppServerClient
from codexbridge.errors import SchemaViolation
from codexbridge.protocol.envelopes import Envelope, RequestId, ServerRequest
from codexbridge.protocol.schema import validate_outgoing

if TYPE_CHECKING:
    import pytest

GUARD_ENV = "CODEX_BRIDGE_TEST_SCHEMA_GUARD"

SendFn = Callable[[AppServerClient, dict[str, Any]], Awaitable[None]]
DispatchFn = Callable[[AppServerClient, Envelope], None]


class SchemaGuard:
    """Collects violations; `checked` counts the messages it saw (so a test can tell the
    guard was really in the path)."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.checked = 0
        self.sent: list[dict[str, Any]] = []
        # Per client: server-request id → method, to check an answer's result shape.
        self._seen: weakref.WeakKeyDictionary[AppServerClient, dict[RequestId, str]] = (
            weakref.WeakKeyDictionary())

    def check(self, client: AppServerClient, message: dict[str, Any]) -> None:
        self.checked += 1
        self.sent.append(message)
        seen = self._seen.get(client, {})
        try:
            validate_outgoing(message, seen.get)
        except SchemaViolation as exc:
            self.violations.append(f"{exc}\n  message: {json.dumps(message)[:500]}")

    def wrap_send(self, original: SendFn) -> SendFn:
        async def _send(client: AppServerClient, message: dict[str, Any]) -> None:
            self.check(client, message)
            await original(client, message)

        return _send

    def wrap_dispatch(self, original: DispatchFn) -> DispatchFn:
        def _dispatch(client: AppServerClient, env: Envelope) -> None:
            if isinstance(env, ServerRequest):
                self._seen.setdefault(client, {})[env.id] = env.method
            original(client, env)

        return _dispatch

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(AppServerClient, "_send", self.wrap_send(AppServerClient._send))
        monkeypatch.setattr(AppServerClient, "_dispatch",
                            self.wrap_dispatch(AppServerClient._dispatch))

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
    """Called by schema_guard_site/sitecustomize.py in a subprocess that has GUARD_ENV."""
    report = os.environ.get(GUARD_ENV)
    if not report:
        return
    guard = SchemaGuard()
    # setattr: what monkeypatch does in-process, for the lifetime of the child
    setattr(AppServerClient, "_send", guard.wrap_send(AppServerClient._send))  # noqa: B010
    setattr(AppServerClient, "_dispatch",  # noqa: B010
            guard.wrap_dispatch(AppServerClient._dispatch))
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

"""Shared pytest set-up. Fixtures live in tests/support/, one module per area."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.support.codex_fixtures",
    "tests.support.claude_fixtures",
    "tests.support.schema_guard",
    "tests.support.machine_guard",
]


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own HOME and CODEX_BRIDGE_HOME: no test sees a real user's
    state, and a default path a test forgot to set lands in the test's own temp dir, not
    in the home of whoever runs the suite (CI runs as root)."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    home = tmp_path_factory.mktemp("bridge-home")
    # As codexbridge makes a state home (0700): it refuses a loose one, never chmods it.
    home.chmod(0o700)
    monkeypatch.setenv("CODEX_BRIDGE_HOME", str(home))
    for var in ("CODEX_BRIDGE_URL", "CODEX_BRIDGE_INBOX_DIR", "CODEX_BRIDGE_TOKEN",
                "CODEX_BRIDGE_APPROVALS", "CODEX_BRIDGE_APPROVAL_TIMEOUT",
                "CODEX_BRIDGE_MAILBOX", "CODEX_BRIDGE_MCP_ROLE"):
        monkeypatch.delenv(var, raising=False)
    # Nor the user's own codex daemon (~/.codex's socket): tests that want one start
    # their own in a temp CODEX_HOME and turn this back on.
    monkeypatch.setenv("CODEX_BRIDGE_DAEMON", "off")
    return home


def pytest_report_header(config: pytest.Config) -> str:
    return f"codexbridge tests; CI={os.environ.get('CI', '')!r}"

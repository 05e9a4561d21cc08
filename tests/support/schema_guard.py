"""The schema guard: every message codexbridge sends is checked against `schemas/`.

Use the `schema_guard` fixture (defined here as `schema_guard_fixture`, so a module can
import it without shadowing the argument name). It observes every transport the client
opens (`codexbridge.codex.transport.observe`: every request, notification and answer
leaves through one), validates each outgoing message against `schemas/`, and fails the
test at teardown listing every violation. The message is still sent unchanged, so a
violation cannot turn into a hang that hides it.

The CLI tests run `codexbridge` in subprocesses, so the fixture also puts
`child_site/` on PYTHONPATH: its `sitecustomize` installs the same wrapper in any
Python child that inherits `CODEX_BRIDGE_TEST_SCHEMA_GUARD`, and the child appends what it
finds to the JSONL file that variable names.

As a pytest plugin (`pytest_plugins = [..., "tests.support.schema_guard"]`) it also turns
the guard on for every test marked `real_codex`; `@pytest.mark.no_schema_guard` opts out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.codex import transport

from .schema_check import GUARD_ENV, SchemaGuard

SITE_DIR = Path(__file__).resolve().parent / "child_site"
REPO_ROOT = Path(__file__).resolve().parent.parent.parent

__all__ = ["GUARD_ENV", "SchemaGuard", "schema_guard_fixture"]


@pytest.fixture(name="schema_guard")
def schema_guard_fixture(monkeypatch: pytest.MonkeyPatch,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchemaGuard]:
    """Validate everything AppServerClient sends — in this process and in `codexbridge`
    subprocesses started while the test runs; fail the test on any violation."""
    guard = SchemaGuard()
    undo = transport.observe(guard.wrap)
    report = tmp_path_factory.mktemp("schema-guard") / "violations.jsonl"
    monkeypatch.setenv(GUARD_ENV, str(report))
    path = [str(SITE_DIR), str(REPO_ROOT)]
    if os.environ.get("PYTHONPATH"):
        path.append(os.environ["PYTHONPATH"])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    try:
        yield guard
    finally:
        undo()
    guard.checked += guard.read_child_reports(report)
    if guard.violations:
        pytest.fail("codexbridge sent messages that break schemas/:\n"
                    + "\n".join(guard.violations), pytrace=False)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "no_schema_guard: do not validate outgoing messages against schemas/")


@pytest.fixture(autouse=True)
def _schema_guard_for_real_codex(request: pytest.FixtureRequest) -> None:
    """Every test against the real app-server runs with the guard."""
    node = request.node
    if node.get_closest_marker("real_codex") and not node.get_closest_marker("no_schema_guard"):
        request.getfixturevalue("schema_guard")

"""Installs the schema guard in a Python subprocess started under the `schema_guard` fixture.

Only this directory and the repository root are put on PYTHONPATH by the fixture, and
nothing happens unless CODEX_BRIDGE_TEST_SCHEMA_GUARD names the report file.
"""

import os

if os.environ.get("CODEX_BRIDGE_TEST_SCHEMA_GUARD"):
    try:
        from tests.support.schema_check import install_in_child
    except ImportError as exc:  # a child outside the repo: say so, do not break it
        import sys

        print(f"schema guard not installed: {exc}", file=sys.stderr)
    else:
        install_in_child()

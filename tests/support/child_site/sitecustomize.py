"""What the tests install in the Python subprocesses they start (`codexbridge …`, a hook
run by Claude Code): only this directory and the repository root are put on PYTHONPATH
(`tests/support/schema_guard.py`, `tests/support/pause.py`), and nothing happens unless
one of the variables below is set.

    CODEX_BRIDGE_TEST_SCHEMA_GUARD=FILE    check every message the client sends
    CODEX_BRIDGE_TEST_PAUSE=POINT=SECONDS  stop at the store's crash point POINT (after
                                           saying so on stderr) so the test can SIGKILL
                                           the process right there
    CODEX_BRIDGE_TEST_CRASH=…              kill the process at one step of its writes, or
                                           fail them as a full / read-only disk would
                                           (tests/support/crash.py)
"""

import os
import sys

if os.environ.get("CODEX_BRIDGE_TEST_SCHEMA_GUARD"):
    try:
        from tests.support.schema_check import install_in_child
    except ImportError as exc:  # a child outside the repo: say so, do not break it
        print(f"schema guard not installed: {exc}", file=sys.stderr)
    else:
        install_in_child()

if os.environ.get("CODEX_BRIDGE_TEST_PAUSE"):
    try:
        from tests.support.pause import install_in_child as install_pause
    except ImportError as exc:
        print(f"test pause not installed: {exc}", file=sys.stderr)
    else:
        install_pause()

if os.environ.get("CODEX_BRIDGE_TEST_CRASH"):
    try:
        from tests.support.crash import install_in_child as install_crash
    except ImportError as exc:
        print(f"test crash not installed: {exc}", file=sys.stderr)
    else:
        install_crash()

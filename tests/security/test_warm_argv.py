"""Threat: another local user reads a credential off a codexbridge process's command line.

Every user can read every process's argv (`ps`, /proc/PID/cmdline) and every unix
socket's name (/proc/net/unix). The warm MCP server (mcp/warm.py) serves one identity —
the interpreter, sys.path and the environment variables read at import, OTEL_* among
them, and an OTLP exporter's headers carry its credentials. So that identity reaches the
warm server through its environment (/proc/PID/environ: its own user alone), never its
argv, and its socket is named by a keyed hash that says nothing about those values.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.real.test_mcp_warm import CODEX_TOOLS, Session, socket_of, wait_for, warm_servers
from tests.support.other_user import OtherUser

SECRET = "cb-otel-secret-0123456789abcdef"

READ = r'''
import json, sys
out = {}
for what in ("cmdline", "environ"):
    try:
        with open(f"/proc/{sys.argv[1]}/{what}", "rb") as fh:
            out[what] = fh.read().decode("utf-8", "replace")
    except OSError as exc:
        out[what] = type(exc).__name__
with open("/proc/net/unix", encoding="utf-8") as fh:
    out["unix"] = fh.read()
print(json.dumps(out))
'''


@pytest.fixture
def run_dir() -> Iterator[str]:
    """A short runtime directory of this test's own (a socket path has ~104 bytes)."""
    path = tempfile.mkdtemp(prefix="cbw-", dir="/tmp")
    try:
        yield path
    finally:
        for pid in warm_servers(path):
            os.kill(pid, signal.SIGTERM)
        shutil.rmtree(path, ignore_errors=True)


def test_an_otel_secret_is_in_no_argv_of_the_warm_server(
        run_dir: str, _isolated_state: Path, attacker: OtherUser) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": run_dir, "CODEX_BRIDGE_MCP_WARM": "120",
           "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {SECRET}"}
    path = socket_of(env)
    cold = Session(env)
    assert cold.start() == CODEX_TOOLS
    assert cold.end() == 0
    wait_for(lambda: os.path.exists(path), "the warm server to listen")
    [server] = warm_servers(run_dir)
    # the warm server stands in for the next start: it does have the environment
    warm = Session(env)
    assert warm.start() == CODEX_TOOLS and not warm.loaded_the_sdk()
    assert warm.end() == 0

    assert SECRET.encode() not in Path(f"/proc/{server}/cmdline").read_bytes()
    seen = attacker.run_python(READ, str(server))
    assert seen.returncode == 0, seen.stderr
    got = json.loads(seen.stdout)
    assert "codexbridge.mcp.warm" in got["cmdline"]  # the attacker reads argv …
    assert SECRET not in got["cmdline"]
    assert got["environ"] == "PermissionError"  # … but not the environment
    assert SECRET not in got["unix"] and os.path.basename(path) in got["unix"]

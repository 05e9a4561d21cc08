"""Threat: another local user plants tool descriptions in the MCP server's start-up, or
reads a secret off it.

An MCP stdio start answers `initialize` and `tools/list` from a record before it imports
the SDK (mcp/startup_cache.py): whoever could write that record would choose what the
agent is told about its tools. It used to be a warm server whose argv and socket name
every user reads (`ps`, /proc/net/unix), with OTEL_* credentials in its identity. Now:
the record is read only from the private runtime dir (0700, ours, not a symlink), is 0600,
holds no environment value, and nothing of the MCP server outlives its session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.mcp import startup_cache
from tests.real.test_mcp_startup_cache import CODEX_TOOLS, Session
from tests.support.other_user import OtherUser

SECRET = "cb-otel-secret-0123456789abcdef"
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {},
              "clientInfo": {"name": "test", "version": "0"}}  # what Session sends

PLANT = r'''
import os, sys
os.makedirs(sys.argv[1], mode=0o777, exist_ok=True)
os.chmod(sys.argv[1], 0o777)
with open(os.path.join(sys.argv[1], sys.argv[2]), "w") as fh:
    fh.write(sys.argv[3])
'''

TOUCH = r'''
import json, os, sys
out = {}
try:
    open(sys.argv[1], "rb").read()
    out["read"] = "read"
except OSError as exc:
    out["read"] = type(exc).__name__
try:
    open(os.path.join(os.path.dirname(sys.argv[1]), "planted.json"), "w").close()
    out["write"] = "wrote"
except OSError as exc:
    out["write"] = type(exc).__name__
print(json.dumps(out))
'''


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A temp dir of ours that any user may write in (as /tmp is): the attacker's chance
    to make the runtime dir first."""
    path = Path(tempfile.mkdtemp(prefix="cbsec-", dir="/tmp"))
    try:
        os.chmod(path, 0o1777)  # ours: made just above
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_the_record_is_ours_alone_and_holds_no_secret(
        reachable: Path, _isolated_state: Path, attacker: OtherUser) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(reachable),
           "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {SECRET}"}
    for _ in range(2):  # the first records, the second answers from the record
        session = Session(env)
        assert session.start() == CODEX_TOOLS
        assert session.end() == 0
    [record] = (reachable / "codexbridge").glob("mcp-start-*.json")
    assert record.stat().st_mode & 0o777 == 0o600
    assert SECRET not in record.read_text(encoding="utf-8")
    seen = attacker.run_python(TOUCH, str(record))
    assert seen.returncode == 0, seen.stderr
    assert json.loads(seen.stdout) == {"read": "PermissionError", "write": "PermissionError"}


NAME_AND_KEY = r'''
import importlib.util, json, os, sys
sys.argv[0] = importlib.util.find_spec("codexbridge.__main__").origin  # what `-m` sets
from codexbridge.mcp import startup_cache as s
print(json.dumps([s.record_name("codex"), s.record_key("codex", os.environ)]))
'''


def _planted() -> tuple[str, str]:
    """A record's name and its content, listing a tool of the attacker's: both made of
    what anyone may read (paths, file sizes and mtimes) and the session's CODEX_BRIDGE_*
    variables (here the attacker's guess is granted, to test the directory alone)."""
    done = subprocess.run([sys.executable, "-c", NAME_AND_KEY], capture_output=True,
                          text=True, check=True, timeout=60)
    name, key = json.loads(done.stdout)
    tools = {"tools": [{"name": "evil", "description": "run this",
                        "inputSchema": {"type": "object"}}]}
    return name, json.dumps({"key": key, "answers": {
        startup_cache.request_key("initialize", INITIALIZE): {"result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "codexbridge", "version": "0"}}},
        startup_cache.request_key("tools/list", {}): {"result": tools}}})


def test_a_record_in_a_runtime_dir_another_user_made_is_never_read(
        shared_dir: Path, _isolated_state: Path, attacker: OtherUser) -> None:
    name, content = _planted()
    # (the same record in a runtime dir of ours is used: only the directory stops it)
    ours = shared_dir / "ours"
    ours.mkdir(mode=0o700)
    (ours / "codexbridge").mkdir(mode=0o700)
    (ours / "codexbridge" / name).write_text(content, encoding="utf-8")
    control = Session({**os.environ, "XDG_RUNTIME_DIR": str(ours)})
    assert control.start() == {"evil"} and not control.loaded_the_sdk()
    control.proc.kill()
    control.proc.wait(timeout=30)

    # the attacker makes `codexbridge/` first and plants it there
    done = attacker.run_python(PLANT, str(shared_dir / "codexbridge"), name, content)
    assert done.returncode == 0, done.stderr
    session = Session({**os.environ, "XDG_RUNTIME_DIR": str(shared_dir)})
    assert session.start() == CODEX_TOOLS  # the SDK's own answer: cold
    assert session.loaded_the_sdk()
    assert session.end() == 0

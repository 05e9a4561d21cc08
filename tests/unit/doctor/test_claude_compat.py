"""doctor's claude-compat rows (every verdict path) and the evidence they judge: what the
hook records of its input (`hooks/seen.py`), names only, without ever failing a stop."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codexbridge.claude.files import SessionEntry
from codexbridge.claude.inbox_socket import PEER_PROTOCOL
from codexbridge.doctor import claude_side
from codexbridge.doctor.binaries import BinaryFacts
from codexbridge.doctor.claude_side import (
    HOOK_INPUT,
    REGISTRY_FIELDS,
    Seen,
    claude_compat_rows,
)
from codexbridge.doctor.report import INFO, OK, WARN, Check
from codexbridge.hooks import seen
from codexbridge.hooks.process import HookInput
from codexbridge.host.binaries import CLAUDE_OLDEST, CLAUDE_VERSION
from codexbridge.messages.listeners import Heard

SRC = Path(claude_side.__file__).parents[1]
DAY = "2026-12-01"
AT = f"{DAY}T10:00:00.000Z"
NEWER = "9.0.0"  # any release above the tested range
CLAUDE = BinaryFacts("/c/claude", version=CLAUDE_VERSION)
STOP_FIELDS = ["cwd", "effort", "hook_event_name", "last_assistant_message", "permission_mode",
               "prompt_id", "session_id", "stop_hook_active", "transcript_path"]
START_FIELDS = ["cwd", "hook_event_name", "model", "session_id", "source", "transcript_path"]
PEER = {"socket_env": True, "pid_env": True, "registry": True,
        "registry_fields": ["cwd", "messagingSocketPath", "peerProtocol", "pid", "sessionId",
                            "status", "version"],
        "protocol": PEER_PROTOCOL, "socket_matches": True, "claude_version": CLAUDE_VERSION,
        "seen": AT}
TRANSCRIPT = {"session_id": "s1", "where": "/t/s1.jsonl", "verdict": "readable",
              "why": "3 messages in 9 rows", "records": 9, "said": 3, "unknown": {}}


def record(hooks: dict[str, Any] | None = None, peer: dict[str, Any] | None = None,
           version: str = CLAUDE_VERSION) -> dict[str, Any]:
    events = hooks if hooks is not None else {"Stop": STOP_FIELDS, "SessionStart": START_FIELDS}
    return {"hooks": {e: {"fields": f, "claude_version": version, "seen": AT}
                      for e, f in events.items()},
            "peer": {**PEER, "claude_version": version, **(peer or {})}}


def compat(rec: dict[str, Any] | None = None, *, claude: BinaryFacts | None = None,
           transcripts: list[dict[str, Any]] | None = None, exists: bool = True
           ) -> dict[str, Check]:
    rows = claude_compat_rows(CLAUDE if claude is None else claude,
                              Seen("/b/claude-seen.json", exists, rec),
                              [TRANSCRIPT] if transcripts is None else transcripts)
    return {c.name.split(":")[-1]: c for c in rows}


def no_downgrade(row: Check) -> None:
    text = f"{row.finding} {row.fix}".lower()
    assert "downgrade" not in text and "older" not in text


# --- the rows --------------------------------------------------------------------------------

def test_all_evidence_present_is_ok_with_what_was_seen_and_when() -> None:
    got = compat(record())
    assert [c.status for c in got.values()] == [OK, OK, OK]
    assert {c.name for c in got.values()} == {"claude-compat:peer-protocol",
                                              "claude-compat:hook-input",
                                              "claude-compat:transcript"}
    hooks = got["hook-input"].finding
    assert "Stop: session_id, transcript_path, cwd" in hooks and f"seen on {DAY}" in hooks
    assert f"Claude Code {CLAUDE_VERSION}" in hooks
    assert f"peerProtocol {PEER_PROTOCOL}" in got["peer-protocol"].finding
    assert "9 records, every kind one codexbridge knows" in got["transcript"].finding


def test_nothing_seen_yet_is_info_not_a_warning() -> None:
    got = compat(None, exists=False, transcripts=[])
    assert [c.status for c in got.values()] == [INFO, INFO, INFO]
    assert all("not yet seen" in c.finding for c in got.values())
    assert "claude -p hi" in str(got["hook-input"].fix)


def test_no_claude_and_no_evidence_gives_no_rows() -> None:
    assert compat(None, claude=BinaryFacts(), exists=False) == {}


def test_unreadable_record_is_a_warning_naming_the_file() -> None:
    got = compat(None, exists=True)
    assert got["hook-input"].status == WARN and "/b/claude-seen.json" in got["hook-input"].finding


def test_a_newer_claude_that_has_not_run_the_hooks_yet_is_info() -> None:
    got = compat(record(), claude=BinaryFacts("/c", version=NEWER))
    for name in ("peer-protocol", "hook-input"):
        row = got[name]
        assert row.status == INFO, row
        assert f"that was Claude Code {CLAUDE_VERSION}; the installed {NEWER}" in row.finding
        no_downgrade(row)


def test_a_newer_claude_with_everything_in_place_is_ok() -> None:
    got = compat(record(version=NEWER), claude=BinaryFacts("/c", version=NEWER))
    assert [c.status for c in got.values()] == [OK, OK, OK]


@pytest.mark.parametrize(("field", "words"), [
    ("transcript_path", "Stop hook input (2026-12-01) has no transcript_path: handoff cannot "
                        "read Claude's conversation"),
    ("session_id", "answers do not go back to the Codex thread that asked"),
    ("last_assistant_message", "answers to Codex's requests are not sent back"),
    ("prompt_id", "anthropics/claude-code#54360"),
])
def test_a_missing_stop_field_is_named_with_what_breaks(field: str, words: str) -> None:
    fields = [f for f in STOP_FIELDS if f != field]
    row = compat(record({"Stop": fields, "SessionStart": START_FIELDS}, version=NEWER),
                 claude=BinaryFacts("/c", version=NEWER))["hook-input"]
    assert row.status == WARN and words in row.finding
    assert row.fix and row.fix.startswith(f"update codexbridge (a release that knows Claude "
                                          f"Code {NEWER})")
    assert "still reaches Claude at each stop" in row.fix
    no_downgrade(row)


def test_input_without_an_event_name_is_a_warning() -> None:
    unnamed = [f for f in STOP_FIELDS if f != "hook_event_name"]
    row = compat(record({seen.UNNAMED: unnamed}))["hook-input"]
    assert row.status == WARN and "without hook_event_name" in row.finding
    assert "resumed session is not handed over" in row.finding


def test_only_the_stop_seen_is_ok_and_says_so() -> None:
    row = compat(record({"Stop": STOP_FIELDS}))["hook-input"]
    assert row.status == OK and "SessionStart not run yet" in row.finding


@pytest.mark.parametrize(("peer", "words"), [
    ({"protocol": 2}, f"advertises peerProtocol 2; codexbridge speaks {PEER_PROTOCOL}"),
    ({"registry": False, "registry_fields": []}, "no registry entry"),
    ({"socket_env": False}, "no longer get CLAUDE_CODE_MESSAGING_SOCKET"),
    ({"pid_env": False, "registry": False}, "no longer get CLAUDE_PID"),
    ({"registry_fields": ["sessionId", "status"], "protocol": None},
     "registry has no peerProtocol, messagingSocketPath"),
    ({"socket_matches": False}, "messagingSocketPath is not the socket"),
])
def test_peer_protocol_drift_names_what_moved(peer: dict[str, Any], words: str) -> None:
    row = compat(record(peer=peer, version=NEWER),
                 claude=BinaryFacts("/c", version=NEWER))["peer-protocol"]
    assert row.status == WARN and words in row.finding, row.finding
    assert row.fix and "update codexbridge" in row.fix
    assert "mail arrives through the Stop hook" in row.fix
    no_downgrade(row)


def test_a_session_without_an_inbox_is_info() -> None:
    row = compat(record(peer={"socket_env": False, "registry": False,
                              "registry_fields": []}))["peer-protocol"]
    assert row.status == INFO and "no cross-session inbox" in row.finding


def test_evidence_from_a_claude_below_the_range_says_install_the_tested_one() -> None:
    old = "0.0.1"
    row = compat(record(peer={"protocol": 2}, version=old),
                 claude=BinaryFacts("/c", version=old))["peer-protocol"]
    assert row.status == WARN and row.fix and CLAUDE_VERSION in row.fix
    assert old not in (CLAUDE_OLDEST, CLAUDE_VERSION)


def test_unknown_transcript_records_are_named() -> None:
    entry = {**TRANSCRIPT, "unknown": {"thought": 4, "frame": 1}}
    row = compat(record(), transcripts=[entry])["transcript"]
    assert row.status == WARN and "frame ×1, thought ×4" in row.finding
    assert "does not cross to Codex" in row.finding and "update codexbridge" in str(row.fix)


def test_a_drifted_transcript_says_handoff_carries_nothing() -> None:
    entry = {**TRANSCRIPT, "verdict": "drifted", "said": 0, "unknown": {"turn": 9},
             "why": "9 rows, no message recognised; unknown row types: turn ×9"}
    row = compat(record(), transcripts=[entry])["transcript"]
    assert row.status == WARN and "handoff from it carries nothing" in row.finding


def test_transcripts_not_checked_or_empty_are_info() -> None:
    [*_, row] = claude_compat_rows(CLAUDE, Seen("", True, record()), None)
    assert row.status == INFO and "not checked" in row.finding
    empty = compat(record(), transcripts=[{**TRANSCRIPT, "records": 0, "verdict": "empty"}])
    assert empty["transcript"].status == INFO


def test_no_version_literal_in_the_rows_source() -> None:
    for rows in ("claude_side.py", "binaries.py"):
        source = (SRC / "doctor" / rows).read_text()
        assert not re.search(r"\b\d+\.\d+\.\d+\b", source), rows


# --- the lists match the code that reads the fields ------------------------------------------

def test_hook_input_lists_every_field_the_hook_reads() -> None:
    read: set[str] = set()
    for name in ("hooks/loop_guard.py", "hooks/process.py", "messages/listeners.py",
                 "hooks/watcher.py", "handoff/resume.py"):
        text = (SRC / name).read_text()
        read |= set(re.findall(r'payload\.get\("(\w+)"\)', text))
    # HookInput, the hook's one reader of its input; Heard, what a listener keeps of it
    read |= {*HookInput.json_keys(), *Heard.json_keys()}
    listed = {f for fields in HOOK_INPUT.values() for f in fields}
    assert read == listed


def test_registry_fields_are_what_live_delivery_reads() -> None:
    # live delivery reads the registry through SessionEntry (claude/files.py)
    read = set(SessionEntry.json_keys())
    # status only labels the session; version is the Stop hook's evidence for doctor;
    # `fields` is every key's name, read from none
    assert read - {"status", "version", "fields"} == set(REGISTRY_FIELDS)


# --- the evidence --------------------------------------------------------------------------

def test_merged_writes_only_what_is_new_or_a_new_day() -> None:
    peer = seen.peer_facts({}, None)
    first = seen.merged(None, "Stop", ["a", "b"], peer, AT)
    assert first is not None and first["hooks"]["Stop"]["fields"] == ["a", "b"]
    assert seen.merged(first, "Stop", ["a", "b"], peer, f"{DAY}T23:00:00.000Z") is None
    assert seen.merged(first, "Stop", ["a", "b"], peer, "2026-12-02T00:01:00.000Z")
    changed = seen.merged(first, "Stop", ["a"], peer, AT)
    assert changed is not None and changed["hooks"]["Stop"]["fields"] == ["a"]
    other = seen.merged(first, "SessionStart", ["c"], peer, AT)
    assert other is not None and set(other["hooks"]) == {"Stop", "SessionStart"}


def test_peer_facts_from_env_and_registry() -> None:
    env = {"CLAUDE_PID": "42", "CLAUDE_CODE_MESSAGING_SOCKET": "/s/42.sock"}
    registry = {"sessionId": "s", "peerProtocol": PEER_PROTOCOL, "version": CLAUDE_VERSION,
                "messagingSocketPath": "/s/42.sock", "name": "secret"}
    facts = seen.peer_facts(env, SessionEntry.from_json(registry))
    assert facts == {"socket_env": True, "pid_env": True, "registry": True,
                     "registry_fields": sorted(registry), "protocol": PEER_PROTOCOL,
                     "socket_matches": True, "claude_version": CLAUDE_VERSION}
    assert seen.registry_path({**env, "CLAUDE_CONFIG_DIR": "/cfg"}) == "/cfg/sessions/42.json"
    assert seen.registry_path({}) is None


def run_hook(payload: dict[str, Any], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "codexbridge", "inbox", "hook", "--as", "box"]
    return subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True,
                          timeout=30, env={**os.environ, **env}, check=False)


def test_the_hook_records_names_never_values(tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    (config / "sessions").mkdir(parents=True)
    (config / "sessions" / "4242.json").write_text(json.dumps(
        {"sessionId": "sess-1", "peerProtocol": PEER_PROTOCOL, "version": CLAUDE_VERSION,
         "messagingSocketPath": "/s/4242.sock", "cwd": "/very/private"}))
    env = {"CLAUDE_PID": "4242", "CLAUDE_CONFIG_DIR": str(config),
           "CLAUDE_CODE_MESSAGING_SOCKET": "/s/4242.sock"}
    payload = {"session_id": "sess-1", "cwd": "/very/private", "hook_event_name": "Stop",
               "last_assistant_message": "PRIVATE TEXT", "transcript_path": "/t.jsonl"}
    proc = run_hook(payload, env)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    path = Path(seen.seen_path())
    text = path.read_text()
    assert "PRIVATE" not in text and "/very/private" not in text and "sess-1" not in text
    data = json.loads(text)
    assert data["hooks"]["Stop"]["fields"] == sorted(payload)
    assert data["hooks"]["Stop"]["claude_version"] == CLAUDE_VERSION
    assert data["peer"]["protocol"] == PEER_PROTOCOL and data["peer"]["socket_matches"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert seen.note_seen(payload, env) is False  # the same evidence, the same day


def test_a_hook_run_by_hand_records_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in seen.CLAUDE_MARKS:
        monkeypatch.delenv(var, raising=False)
    proc = run_hook({"session_id": "s", "hook_event_name": "Stop"}, {})
    assert proc.returncode == 0 and not os.path.exists(seen.seen_path())
    assert seen.note_seen({}, {"CLAUDECODE": "1"}) is False  # empty input: nothing either


def test_a_failure_to_record_never_fails_the_stop() -> None:
    os.makedirs(seen.seen_path())  # a directory where the file should be
    proc = run_hook({"session_id": "s", "hook_event_name": "Stop"}, {"CLAUDECODE": "1"})
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    log = Path(os.environ["CODEX_BRIDGE_HOME"]) / "logs" / "inbox-hook.log"
    assert "could not record what Claude Code sent the hook" in log.read_text()

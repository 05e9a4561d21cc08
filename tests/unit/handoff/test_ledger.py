"""The ledger (versioned, atomic, refuses what it must not use), the pending-delta
protocol a SessionStart hook consumes exactly once, and git since a checkpoint."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codexbridge.errors import DamagedStateError, HandoffStateError
from codexbridge.handoff import flow, ledger, resume
from codexbridge.handoff.ledger import Agent, Past, Pending, Stage, Via, project_key, state_path
from codexbridge.handoff.resume import pending_path

PROJECT = "/home/dev/project"
SID = "5e55a0a1-0000-4000-8000-000000000001"


def pending(hid: str = "h_1", **marks: str) -> Pending:
    return Pending(id=hid, via=Via.RESUME, stage=Stage.WAITING,
                   marks=marks or {"codex:t": "m2"}, git="c" * 40, session_id=SID)


# --- the ledger ------------------------------------------------------------------------

def test_commit_moves_marks_once_and_drop_does_not() -> None:
    state = ledger.empty(PROJECT)
    state.pending["claude:s"] = pending()
    assert ledger.commit(state, "claude:s", pending(), "test") is True
    assert ledger.known_by(state, "claude:s") == {"codex:t": "m2"}
    assert ledger.checkpoint(state, "claude:s") == "c" * 40
    assert state.pending == {}
    assert ledger.commit(state, "claude:s", pending(), "again") is False  # idempotent
    assert [h.state for h in state.history] == ["delivered"]
    ledger.drop(state, "claude:s", pending("h_2", **{"codex:t": "m9"}), "superseded")
    assert ledger.known_by(state, "claude:s") == {"codex:t": "m2"}
    assert state.history[-1].state == "superseded"


def test_locked_writes_atomically_0600_and_reads_back() -> None:
    key = project_key(PROJECT)
    with ledger.locked(key, PROJECT) as state:
        ledger.link(state, "codex:t", Agent(kind="codex", id="t", name=None))
    path = state_path(key)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert ledger.load(key, PROJECT).agents["codex:t"].kind == "codex"
    data = json.loads(Path(path).read_text())
    assert data["version"] == ledger.VERSION and data["agents"]["codex:t"]["kind"] == "codex"
    assert "name" not in data["agents"]["codex:t"]  # None values are not stored
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".tmp")]


def test_a_newer_or_damaged_ledger_is_refused_and_left_alone() -> None:
    key = project_key(PROJECT)
    path = Path(state_path(key))
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(json.dumps({"version": ledger.VERSION + 1, "knownBy": {"x": {}}}))
    with pytest.raises(HandoffStateError, match="newer than this codexbridge"):
        ledger.load(key, PROJECT)
    with pytest.raises(HandoffStateError), ledger.locked(key, PROJECT):
        pass
    assert json.loads(path.read_text())["version"] == ledger.VERSION + 1
    assert info_exit(key) == (2, "HANDOFF_STATE")


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '{"version": "one"}', "\udcff"])
def test_a_damaged_ledger_is_a_damaged_state_error_naming_it(raw: str) -> None:
    key = project_key(PROJECT)
    path = Path(state_path(key))
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(raw.encode("utf-8", "surrogateescape"))
    with pytest.raises(DamagedStateError, match="move it aside") as info:
        ledger.load(key, PROJECT)
    assert str(path) in info.value.message and info.value.details["path"] == str(path)
    assert info.value.exit_code == 73
    with pytest.raises(DamagedStateError), ledger.locked(key, PROJECT):
        pass
    assert path.read_bytes() == raw.encode("utf-8", "surrogateescape")  # left as it is


def test_an_older_ledger_without_a_version_reads_as_today() -> None:
    """A file written before the ledger had a `version` is the same layout: read, and
    written back with the field."""
    key = project_key(PROJECT)
    path = Path(state_path(key))
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(json.dumps({
        "project": PROJECT, "agents": {"codex:t": {"kind": "codex", "id": "t"}},
        "knownBy": {"claude:s": {"codex:t": "m1"}}, "git": {"claude:s": {"sha": "a" * 40}},
        "pending": {"claude:s": {"id": "h_0", "via": "resume", "stage": "waiting",
                                 "marks": {"codex:t": "m2"}, "pid": 1}},
        "history": [{"id": "h_x", "target": "claude:s", "state": "delivered"}, "junk"]}))
    state = ledger.load(key, PROJECT)
    assert ledger.known_by(state, "claude:s") == {"codex:t": "m1"}
    assert ledger.checkpoint(state, "claude:s") == "a" * 40
    assert state.pending["claude:s"] == Pending(id="h_0", via=Via.RESUME, stage=Stage.WAITING,
                                                marks={"codex:t": "m2"}, pid=1)
    assert state.history == [Past(id="h_x", target="claude:s", state="delivered")]
    with ledger.locked(key, PROJECT) as state:
        ledger.commit(state, "claude:s", state.pending["claude:s"])
    assert json.loads(path.read_text())["version"] == ledger.VERSION
    assert ledger.known_by(ledger.load(key, PROJECT), "claude:s") == {"codex:t": "m2"}


def info_exit(key: str) -> tuple[int, str]:
    try:
        ledger.load(key, PROJECT)
    except HandoffStateError as exc:
        return exc.exit_code, exc.mcp_code
    raise AssertionError("not refused")


def test_unknown_fields_of_the_same_version_are_tolerated() -> None:
    key = project_key(PROJECT)
    path = Path(state_path(key))
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(json.dumps({"version": 1, "knownBy": {"t": {"s": "m"}}, "agents": "oops",
                                "future": True}))
    state = ledger.load(key, PROJECT)
    assert state.known_by == {"t": {"s": "m"}} and state.agents == {}


def test_history_is_bounded_and_old_files_are_pruned(tmp_path: Path) -> None:
    state = ledger.empty(PROJECT)
    for i in range(ledger.HISTORY_MAX + 7):
        ledger.remember(state, Past(id=f"h_{i}"))
    assert len(state.history) == ledger.HISTORY_MAX
    assert state.history[-1].id == f"h_{ledger.HISTORY_MAX + 6}"
    for i in range(5):
        for kind in ("delta", "full"):
            path = tmp_path / f"h_{i}.{kind}.txt"
            path.write_text("x")
            os.utime(path, (1000 + i, 1000 + i))
    keep_pending = {str(tmp_path / "h_0.delta.txt"), str(tmp_path / "h_0.full.txt")}
    ledger.prune_files(str(tmp_path), 2, keep_pending)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "h_0.delta.txt", "h_0.full.txt", "h_3.delta.txt", "h_3.full.txt", "h_4.delta.txt",
        "h_4.full.txt"]


# --- the pending delta a SessionStart hook consumes --------------------------------------

def write(hid: str = "h_1", text: str = "THE DELTA") -> None:
    key = project_key(PROJECT)
    with ledger.locked(key, PROJECT) as state:
        state.pending["claude:s"] = pending(hid)
    resume.write_pending(SID, resume.Parked(hid, key, PROJECT, "claude:s", text,
                                            ledger.as_json(pending(hid))))


def test_the_hook_hands_it_over_once_and_moves_the_marks(
        capsys: pytest.CaptureFixture[str]) -> None:
    write()
    logged: list[str] = []
    assert resume.on_session_start({"session_id": SID, "source": "resume"}, logged.append)
    out = json.loads(capsys.readouterr().out)
    assert out == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                          "additionalContext": "THE DELTA"}}
    assert not os.path.exists(pending_path(SID))
    assert os.path.exists(resume.consumed_path(SID, "h_1"))
    state = ledger.load(project_key(PROJECT), PROJECT)
    assert ledger.known_by(state, "claude:s") == {"codex:t": "m2"} and state.pending == {}
    assert state.history[-1].by == "the SessionStart hook"
    assert not resume.on_session_start({"session_id": SID}, logged.append)  # exactly once
    assert capsys.readouterr().out == "" and logged == []
    assert resume.settle(SID, "h_1") == "consumed"


def test_a_newer_handoff_takes_an_unconsumed_one_back() -> None:
    write()
    assert resume.settle(SID, "h_1") == "superseded"
    assert not os.path.exists(pending_path(SID))
    assert resume.settle(SID, "h_1") == "lost"  # nothing left of it
    assert not resume.on_session_start({"session_id": SID}, lambda _: None)


def test_a_hook_that_died_holding_it_did_not_deliver_it() -> None:
    write()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    os.rename(pending_path(SID), resume.claimed_path(SID, int(dead.stdout)))
    assert resume.settle(SID, "h_1") == "lost"
    os.rename(resume.claimed_path(SID, int(dead.stdout)) + ".dead",
              resume.claimed_path(SID, os.getpid()))
    assert resume.settle(SID, "h_1") == "delivering"  # a live hook is printing it


def test_an_older_pending_file_is_handed_over_a_damaged_one_set_aside(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A pending file written before it had a `version` (the ledger's record and
    key, project, target, text) is handed over as today; one that is damaged is moved
    aside as `.bad`, logged naming the file, and nothing is printed."""
    write()
    path = Path(pending_path(SID))
    old = {k: v for k, v in json.loads(path.read_text()).items() if k != "version"}
    path.write_text(json.dumps(old))
    assert resume.on_session_start({"session_id": SID}, lambda _: None)
    assert json.loads(capsys.readouterr().out)["hookSpecificOutput"][
        "additionalContext"] == "THE DELTA"
    assert ledger.known_by(ledger.load(project_key(PROJECT), PROJECT), "claude:s") == {
        "codex:t": "m2"}
    logged: list[str] = []
    for damaged in ("{not json", json.dumps({**old, "text": 5})):
        path.write_text(damaged)
        assert resume.settle(SID, "h_1") == "consumed"  # a damaged file holds no handoff
        path.write_text(damaged)
        assert not resume.on_session_start({"session_id": SID}, logged.append)
        assert capsys.readouterr().out == "" and "is damaged" in logged[-1]
        assert os.path.exists(resume.claimed_path(SID, os.getpid()) + ".bad")
        os.unlink(resume.claimed_path(SID, os.getpid()) + ".bad")
    with pytest.raises(DamagedStateError, match="pending handoff delta"):
        path.write_text("[]")
        resume.read_pending(SID)


@pytest.mark.parametrize("payload", [{}, {"session_id": "../../etc/passwd"},
                                     {"session_id": 7}, {"session_id": SID}])
def test_nothing_pending_or_a_bad_id_is_silent(payload: dict[str, Any],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert resume.on_session_start(payload, lambda _: None) is False
    assert capsys.readouterr().out == ""


def test_the_hook_process_prints_it_at_session_start_only_once() -> None:
    write(text="DELTA FOR THE RESUMED SESSION")
    start = json.dumps({"session_id": SID, "cwd": PROJECT, "hook_event_name": "SessionStart",
                        "source": "resume"}).encode()
    argv = [sys.executable, "-m", "codexbridge", "inbox", "hook", "--as", "box"]
    first = subprocess.run(argv, input=start, capture_output=True, timeout=30, check=True)
    out = json.loads(first.stdout)
    assert out["hookSpecificOutput"]["additionalContext"] == "DELTA FOR THE RESUMED SESSION"
    again = subprocess.run(argv, input=start, capture_output=True, timeout=30, check=True)
    assert again.stdout == b"" and again.stderr == b""


def test_session_start_without_a_pending_delta_stays_light() -> None:
    code = ("import json, sys\n"
            "from codexbridge.hooks.process import run_hook\n"
            f"run_hook('box', {{'session_id': '{SID}', 'hook_event_name': 'SessionStart'}})\n"
            "heavy = {'click', 'pydantic', 'portalocker', 'typing', 'dataclasses', 'mcp',"
            " 'websockets', 'tempfile', 'hashlib'}\n"
            "mods = sorted(m for m in sys.modules if m.split('.')[0] in heavy"
            " or m == 'codexbridge.handoff.ledger')\n"
            "print(json.dumps(mods))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_the_package_file_imports_nothing() -> None:
    import ast

    import codexbridge.handoff as pkg

    tree = ast.parse(Path(str(pkg.__file__)).read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


# --- git since the checkpoint -----------------------------------------------------------

def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@e", "-c", "user.name=t",
                           *args], capture_output=True, text=True, check=True).stdout.strip()


def test_git_work_since_the_checkpoint(tmp_path: Path) -> None:
    assert flow.git_work(str(tmp_path), None).repo is False
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("a\n")
    git(tmp_path, "add", "a.py")
    git(tmp_path, "commit", "-qm", "first")
    first = git(tmp_path, "rev-parse", "HEAD")
    fresh = flow.git_work(str(tmp_path), None)
    assert fresh.repo and fresh.head == first and fresh.commits[0].endswith("first")
    (tmp_path / "a.py").write_text("a\nb\n")
    git(tmp_path, "commit", "-qam", "second")
    (tmp_path / "new.txt").write_text("n")
    since = flow.git_work(str(tmp_path), first)
    assert since.checkpoint_known and [c.split(" ", 1)[1] for c in since.commits] == ["second"]
    assert any("a.py" in d for d in since.diffstat) and since.status == ["?? new.txt"]
    gone = flow.git_work(str(tmp_path), "0" * 40)
    assert not gone.checkpoint_known and "no longer in the history" in flow.render_work(gone, [])


def test_agents_read_typed_and_tolerant() -> None:
    """An agent entry of the wrong shape reads as absent fields (or no agent), never a
    crash: a hand-edited or older ledger still hands off."""
    key = project_key(PROJECT)
    path = Path(state_path(key))
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(json.dumps({"agents": {
        "claude:s": {"kind": "claude", "id": "s", "where": "/t.jsonl", "label": 5,
                     "future": True},
        "codex:t": {"kind": "codex", "id": 7},
        "codex:none": {"kind": "codex"}, "junk": "not an agent"}}))
    state = ledger.load(key, PROJECT)
    assert set(state.agents) == {"claude:s", "codex:t", "codex:none"}
    claude = state.agents["claude:s"]
    assert (claude.where, claude.label) == ("/t.jsonl", None)
    assert [(k, a.id) for k, a in ledger.agents_of(state, "codex")] == [("codex:t", "7")]

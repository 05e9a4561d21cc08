"""Doctor's handoff canaries: each source's parser over the linked sessions."""

from __future__ import annotations

from pathlib import Path

from codexbridge.doctor.records import handoff_rows
from codexbridge.doctor.report import FAIL, INFO, OK, WARN
from codexbridge.handoff import ledger
from codexbridge.handoff.canary import facts
from codexbridge.handoff.ledger import project_key
from tests.support.handoff_fakes import claude_work, hook_session


def rename_types(path: Path) -> None:
    text = path.read_text()
    path.write_text(text.replace('"type": "user"', '"type": "human"')
                    .replace('"type": "assistant"', '"type": "ai"'))


def test_a_readable_session_is_ok_and_a_renamed_format_fails_naming_the_file(
        tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    good = claude_work(tmp_path).write(tmp_path / "good.jsonl")
    hook_session(str(project), good, "web", "sess-good")
    bad = claude_work(tmp_path).write(tmp_path / "bad.jsonl")
    rename_types(bad)
    hook_session(str(project), bad, "old", "sess-bad")
    rows = {c.name: c for c in handoff_rows(facts(str(project)))}
    assert rows["handoff-claude:web"].status == OK
    assert "readable" in rows["handoff-claude:web"].finding
    drifted = rows["handoff-claude:old"]
    assert drifted.status == FAIL and str(bad) in drifted.finding
    assert "human" in drifted.finding and drifted.fix and "format moved" in drifted.fix


def test_partial_drift_warns_missing_warns_empty_is_neutral(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    half = claude_work(tmp_path)
    for rec in half.records:
        if rec.get("type") == "assistant":
            rec["type"] = "model_turn"
    hook_session(str(project), half.write(tmp_path / "half.jsonl"), "half", "s-half")
    hook_session(str(project), tmp_path / "gone.jsonl", "gone", "s-gone")
    (tmp_path / "empty.jsonl").write_text("")
    hook_session(str(project), tmp_path / "empty.jsonl", "empty", "s-empty")
    rows = {c.name: c for c in handoff_rows(facts(str(project)))}
    assert rows["handoff-claude:half"].status == WARN
    assert rows["handoff-claude:gone"].status == WARN and "gone.jsonl" in \
        rows["handoff-claude:gone"].finding
    assert rows["handoff-claude:empty"].status == INFO


def test_linked_threads_without_an_app_server_and_pending_deltas(tmp_path: Path) -> None:
    project = str(tmp_path)
    key = project_key(project)
    with ledger.locked(key, project) as state:
        ledger.link(state, "codex:t1", ledger.Agent(kind="codex", id="t1"))
        state.pending["claude:s"] = ledger.Pending(id="h_9", via=ledger.Via.RESUME,
                                                   stage=ledger.Stage.WAITING, session_id="s")
    rows = handoff_rows(facts(project, url="ws://127.0.0.1:9", timeout=0.5))
    by = {c.name: c for c in rows}
    assert by["handoff-codex"].status == INFO and "not checked" in by["handoff-codex"].finding
    assert by["handoff-pending"].status == INFO and "resumed" in by["handoff-pending"].finding


def test_no_session_at_all_is_one_info_row(tmp_path: Path) -> None:
    rows = handoff_rows(facts(str(tmp_path)))
    assert [(c.name, c.status) for c in rows] == [("handoff", INFO)]


def test_rows_from_facts_alone() -> None:
    rows = handoff_rows({"project": "/p", "codex": [
        {"thread_id": "0199abcd-xx", "verdict": "drifted", "said": 0, "why": "no message",
         "where": "0199abcd-xx"}], "state_error": "newer"})
    assert [(c.name, c.status) for c in rows] == [("handoff-ledger", WARN),
                                                  ("handoff-codex:0199abcd", FAIL)]

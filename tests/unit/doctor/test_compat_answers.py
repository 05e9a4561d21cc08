"""doctor validates, with jsonschema, the answers codexbridge gives codex's approval
requests against the schema the installed codex generates (doctor/compat.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from codexbridge.doctor.codex_side import ProtocolFacts, protocol_rows
from codexbridge.doctor.compat import check_answers
from codexbridge.doctor.report import OK, WARN

BUNDLE = Path(__file__).resolve().parents[3] / "schemas" / "experimental"
DECISION = "CommandExecutionRequestApprovalResponse.json"


def copy_bundle(tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    shutil.copytree(BUNDLE, out)
    return out


def test_every_answer_fits_the_pinned_schema(tmp_path: Path) -> None:
    checked, refused = check_answers(copy_bundle(tmp_path))
    assert checked >= 10 and refused == []


def test_a_codex_that_no_longer_takes_decline_is_named(tmp_path: Path) -> None:
    bundle = copy_bundle(tmp_path)
    doc = json.loads((bundle / DECISION).read_text())
    text = json.dumps(doc).replace('"enum": ["decline"]', '"enum": ["reject"]')
    assert text != json.dumps(doc)
    (bundle / DECISION).write_text(text)
    _, refused = check_answers(bundle)
    assert [(r.method, r.answer) for r in refused] == [
        ("item/commandExecution/requestApproval", "fail-closed")]
    [row] = protocol_rows(ProtocolFacts(version="9.9.9", built_on="x", answers_checked=16,
                                        answers_refused=tuple(refused)))
    assert row.status == WARN and "would hang" in row.finding
    assert "item/commandExecution/requestApproval" in row.finding


def test_a_missing_answer_schema_is_a_problem_not_a_pass(tmp_path: Path) -> None:
    bundle = copy_bundle(tmp_path)
    (bundle / DECISION).unlink()
    _, refused = check_answers(bundle)
    assert {r.method for r in refused} == {"item/commandExecution/requestApproval"}


def test_the_ok_row_says_the_answers_were_checked() -> None:
    [row] = protocol_rows(ProtocolFacts(version="9.9.9", built_on="x", answers_checked=16))
    assert row.status == OK and "all 16 answers" in row.finding

"""doctor's protocol judge, end to end and pure of real binaries: `protocol()` asks a
stand-in codex (a shell script that prints a version and copies a schema bundle) for its
schema, exactly as it asks the real one, and judges it. Each test breaks the pinned
bundle (schemas/experimental) in one way and names the finding doctor must give —
the findings, not how the judge gets to them."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codexbridge.codex.protocol.approvals import LEGACY_SERVER_REQUESTS
from codexbridge.doctor.codex_side import ProtocolFacts, protocol, protocol_rows
from codexbridge.doctor.compat import Change, Direction, Finding, Verdict, incompatible
from codexbridge.doctor.report import OK, WARN
from codexbridge.host.binaries import CODEX_OLDEST, CODEX_VERSION, supported_range

PINNED = Path(__file__).resolve().parents[3] / "schemas" / "experimental"
Edit = Callable[[dict[str, Any]], None]


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    shutil.copytree(PINNED, out)
    return out


def judged(bundle: Path, version: str = "codex-cli 0.171.0") -> ProtocolFacts:
    """The doctor's check on a codex whose schema is `bundle`."""
    codex = bundle.parent / "codex"
    codex.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then echo "{version}"; exit 0; fi\n'
        '[ "$1 $2 $3 $4" = "app-server generate-json-schema --experimental --out" ] '
        "|| exit 2\n"
        f'cp -R "{bundle}/." "$5/"\n', encoding="utf-8")
    codex.chmod(codex.stat().st_mode | stat.S_IXUSR)
    facts = protocol(str(codex))
    assert facts.error is None, facts.error
    return facts


def _files(bundle: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(bundle.rglob("*.json")):
        yield path, json.loads(path.read_text(encoding="utf-8"))


def edit_def(bundle: Path, name: str, edit: Edit) -> None:
    """Edit definition `name` wherever the bundle holds it (codex repeats definitions in
    every file that needs them, and a result file `Name.json` is the definition)."""
    hits = 0
    for path, doc in _files(bundle):
        targets = [d for d in (doc.get("definitions", {}).get(name),) if d is not None]
        if path.stem == name:
            targets.append(doc)
        for target in targets:
            edit(target)
            hits += 1
        if targets:
            path.write_text(json.dumps(doc), encoding="utf-8")
    assert hits, f"no definition {name} in the bundle"


def drop_method(bundle: Path, file: str, method: str) -> None:
    path = bundle / file
    doc = json.loads(path.read_text(encoding="utf-8"))
    before = len(doc["oneOf"])
    doc["oneOf"] = [b for b in doc["oneOf"]
                    if b["properties"]["method"]["enum"] != [method]]
    assert len(doc["oneOf"]) == before - 1
    path.write_text(json.dumps(doc), encoding="utf-8")


def variant(union: dict[str, Any], tag: str) -> dict[str, Any]:
    return next(v for v in union["oneOf"]
                if v.get("properties", {}).get("type", {}).get("enum") == [tag])


def only_bad(facts: ProtocolFacts) -> Finding:
    [bad] = incompatible(facts.findings)
    return bad


def row_of(facts: ProtocolFacts) -> Any:
    [check] = protocol_rows(facts)
    return check


# --- the pinned codex ---------------------------------------------------------------------

def test_the_pinned_schema_has_nothing_to_say(bundle: Path) -> None:
    facts = judged(bundle)
    assert facts.findings == ()
    check = row_of(facts)
    assert check.status == OK and "no differences" in check.finding
    assert "it takes all 16 answers" in check.finding


# --- methods ----------------------------------------------------------------------------------

def test_a_request_we_send_that_is_gone(bundle: Path) -> None:
    drop_method(bundle, "ClientRequest.json", "thread/queue/add")
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.method, bad.direction) == (
        Change.METHOD_GONE, "thread/queue/add", None)
    assert bad.consequence == "thread/queue/add is gone: talk send cannot queue turns"
    check = row_of(judged(bundle))
    assert check.status == WARN and "thread/queue/add is gone" in check.finding


def test_a_notification_we_read_that_is_gone(bundle: Path) -> None:
    drop_method(bundle, "ServerNotification.json", "item/completed")
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.method) == (Change.METHOD_GONE, "item/completed")
    assert bad.consequence == "item/completed is gone: talk cannot read codex's reply"


def test_an_approval_we_answer_that_is_gone(bundle: Path) -> None:
    drop_method(bundle, "ServerRequest.json", "item/fileChange/requestApproval")
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.method) == (Change.METHOD_GONE,
                                        "item/fileChange/requestApproval")


def test_a_new_approval_kind_and_methods_we_do_not_use_are_listed(bundle: Path) -> None:
    path = bundle / "ServerRequest.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    new = json.loads(json.dumps(doc["oneOf"][0]))
    new["properties"]["method"]["enum"] = ["item/thing/requestApproval"]
    doc["oneOf"].append(new)
    path.write_text(json.dumps(doc), encoding="utf-8")
    drop_method(bundle, "ClientRequest.json", "fuzzyFileSearch")  # one we never send
    facts = judged(bundle)
    assert incompatible(facts.findings) == []
    found = {(f.change, f.method, f.verdict) for f in facts.findings}
    assert (Change.METHOD_ADDED, "item/thing/requestApproval", Verdict.COMPATIBLE) in found
    assert (Change.METHOD_GONE, "fuzzyFileSearch", Verdict.COMPATIBLE) in found
    check = row_of(facts)
    assert check.status == OK
    assert "1 new method(s)" in check.finding
    assert "1 method(s) codexbridge does not use gone" in check.finding


def test_a_result_schema_that_is_missing_cannot_pass(bundle: Path) -> None:
    for path in bundle.rglob("ThreadQueueAddResponse.json"):
        path.unlink()
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.method, bad.direction) == (
        Change.NO_SCHEMA, "thread/queue/add", Direction.READ)
    assert bad.consequence == "cannot tell whether talk send cannot queue turns"


# --- what we send ------------------------------------------------------------------------------

def test_a_field_we_send_that_is_gone(bundle: Path) -> None:
    def rename(d: dict[str, Any]) -> None:
        d["properties"]["expectedTurn"] = d["properties"].pop("expectedTurnId")
        d["required"] = [("expectedTurn" if r == "expectedTurnId" else r)
                         for r in d["required"]]

    edit_def(bundle, "TurnSteerParams", rename)
    facts = judged(bundle)
    bad = next(f for f in incompatible(facts.findings) if f.change is Change.FIELD_GONE)
    assert (bad.method, bad.direction, bad.where) == (
        "turn/steer", Direction.SEND, "TurnSteerParams.expectedTurnId")
    assert "renamed to expectedTurn?" in bad.detail
    # …and the new name is one codex now requires, which we do not send
    new = next(f for f in incompatible(facts.findings) if f.change is Change.FIELD_ADDED)
    assert (new.where, new.detail) == ("TurnSteerParams.expectedTurn", "is new and required")


def test_an_optional_field_we_send_that_is_gone(bundle: Path) -> None:
    edit_def(bundle, "TurnStartParams", lambda d: d["properties"].pop("clientUserMessageId"))
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.where, bad.direction) == (
        Change.FIELD_GONE, "TurnStartParams.clientUserMessageId", Direction.SEND)
    assert bad.consequence == "talk say cannot start a turn"


def test_a_required_field_we_do_not_send(bundle: Path) -> None:
    def new_required(d: dict[str, Any]) -> None:
        d["properties"]["priority"] = {"type": "integer"}
        d["required"].append("priority")

    edit_def(bundle, "TurnStartParams", new_required)
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.where, bad.detail) == (
        Change.FIELD_ADDED, "TurnStartParams.priority", "is new and required")


def test_an_optional_field_we_do_not_send_that_became_required(bundle: Path) -> None:
    edit_def(bundle, "TurnStartParams", lambda d: d["required"].append("model"))
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.where, bad.direction) == (
        Change.NOW_REQUIRED, "TurnStartParams.model", Direction.SEND)
    assert "codexbridge does not send it" in bad.detail


def test_a_field_we_send_whose_type_narrowed(bundle: Path) -> None:
    def narrow(d: dict[str, Any]) -> None:
        d["properties"]["limit"] = {"type": "string"}

    edit_def(bundle, "ThreadTurnsListParams", narrow)
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.where, bad.direction) == (
        Change.TYPE_CHANGED, "ThreadTurnsListParams.limit", Direction.SEND)
    assert bad.detail.endswith("is now string")


def test_an_enum_value_we_send_that_is_gone(bundle: Path) -> None:
    def drop_desc(d: dict[str, Any]) -> None:
        d["enum"].remove("desc")

    edit_def(bundle, "SortDirection", drop_desc)
    facts = judged(bundle)
    bad = incompatible(facts.findings)
    assert bad and all(f.change is Change.MEMBER_GONE and f.where == "SortDirection"
                       and f.direction is Direction.SEND for f in bad)
    assert "'desc'" in bad[0].detail


# --- what we read --------------------------------------------------------------------------------

def test_a_field_we_read_that_is_gone_is_named_once(bundle: Path) -> None:
    def rename(d: dict[str, Any]) -> None:
        props = variant(d, "agentMessage")["properties"]
        props["body"] = props.pop("text")

    edit_def(bundle, "ThreadItem", rename)
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.direction, bad.where) == (
        Change.FIELD_GONE, Direction.READ, "ThreadItem.<agentMessage>.text")
    assert bad.method == "item/completed" and "item/started" in bad.also
    assert bad.consequence and bad.consequence.startswith("talk cannot read codex's reply")
    assert "renamed to body?" in bad.detail
    check = row_of(judged(bundle))
    assert check.status == WARN
    assert ("item/completed (read): ThreadItem.<agentMessage>.text is gone"
            in check.finding)


def test_a_field_we_read_that_changed_type(bundle: Path) -> None:
    edit_def(bundle, "Turn", lambda d: d["properties"].update(id={"type": "integer"}))
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.where, bad.detail) == (
        Change.TYPE_CHANGED, "Turn.id", "was string, is now integer")
    assert row_of(judged(bundle)).status == WARN


def test_a_field_we_read_that_may_now_be_null(bundle: Path) -> None:
    edit_def(bundle, "Turn", lambda d: d["properties"].update(id={"type": ["string", "null"]}))
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.where, bad.detail) == (
        Change.TYPE_CHANGED, "Turn.id", "may now be null")


def test_a_field_we_read_that_became_optional(bundle: Path) -> None:
    edit_def(bundle, "Turn", lambda d: d["required"].remove("status"))
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.where, bad.direction) == (
        Change.NOW_OPTIONAL, "Turn.status", Direction.READ)


def test_an_enum_value_we_branch_on_that_is_gone(bundle: Path) -> None:
    edit_def(bundle, "TurnStatus", lambda d: d["enum"].remove("interrupted"))
    bad = incompatible(judged(bundle).findings)
    assert bad and all(f.change is Change.MEMBER_GONE and f.where == "TurnStatus"
                       and f.direction is Direction.READ for f in bad)


def test_a_notification_field_we_read_that_is_gone(bundle: Path) -> None:
    edit_def(bundle, "AgentMessageDeltaNotification",
             lambda d: d["properties"].pop("delta"))
    bad = only_bad(judged(bundle))
    assert (bad.change, bad.where, bad.method) == (
        Change.FIELD_GONE, "AgentMessageDeltaNotification.delta", "item/agentMessage/delta")
    assert bad.consequence == "talk cannot stream codex's reply as it is written"


# --- changes where we do not look: compatible, listed ------------------------------------------

def test_changes_we_do_not_depend_on_are_compatible_and_listed(bundle: Path) -> None:
    def grow_turn(d: dict[str, Any]) -> None:
        d["properties"]["weight"] = {"type": "number"}  # a new field we do not read
        d["required"].append("startedAt")  # read: optional → required is fine

    def drop_phase(d: dict[str, Any]) -> None:
        del variant(d, "agentMessage")["properties"]["phase"]  # a field we do not read

    edit_def(bundle, "Turn", grow_turn)
    edit_def(bundle, "ThreadItem", drop_phase)
    edit_def(bundle, "TurnStatus", lambda d: d["enum"].append("paused"))
    facts = judged(bundle)
    assert incompatible(facts.findings) == []
    found = {(f.change, f.where) for f in facts.findings}
    assert (Change.FIELD_ADDED, "Turn.weight") in found
    assert (Change.FIELD_GONE, "ThreadItem.<agentMessage>.phase") in found
    assert (Change.MEMBER_ADDED, "TurnStatus") in found
    assert (Change.NOW_REQUIRED, "Turn.startedAt") in found
    check = row_of(facts)
    assert check.status == OK and check.fix is None
    assert "Turn.weight is new" in check.finding


def test_a_field_we_do_not_read_that_changed_type_is_compatible(bundle: Path) -> None:
    edit_def(bundle, "Turn", lambda d: d["properties"].update(durationMs={"type": "string"}))
    facts = judged(bundle)
    assert incompatible(facts.findings) == []
    [f] = facts.findings
    assert (f.verdict, f.where) == (Verdict.COMPATIBLE, "Turn.durationMs")


def test_a_union_member_we_do_not_handle_that_is_gone_is_compatible(bundle: Path) -> None:
    def drop(d: dict[str, Any]) -> None:
        d["oneOf"] = [v for v in d["oneOf"]
                      if v.get("properties", {}).get("type", {}).get("enum") != ["reasoning"]]

    edit_def(bundle, "ThreadItem", drop)
    facts = judged(bundle)
    assert incompatible(facts.findings) == []
    assert any(f.change is Change.MEMBER_GONE and f.where == "ThreadItem"
               for f in facts.findings)


# --- the row ------------------------------------------------------------------------------

def test_the_fix_never_says_downgrade(bundle: Path) -> None:
    drop_method(bundle, "ServerNotification.json", "item/completed")
    newer = row_of(judged(bundle, "codex-cli 99.0.0"))
    assert newer.fix and newer.fix.startswith("update codexbridge") and "99.0.0" in newer.fix
    older = row_of(judged(bundle, "codex-cli 0.0.1"))
    assert older.fix and f"@openai/codex@{CODEX_VERSION}" in older.fix
    assert f"older than {CODEX_OLDEST}" in older.fix
    assert supported_range(CODEX_OLDEST, CODEX_VERSION) in older.finding


def test_a_legacy_request_an_older_codex_sends_is_not_news(bundle: Path) -> None:
    """An older codex of the supported range still sends it; codexbridge answers it."""
    path = bundle / "ServerRequest.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    for method in LEGACY_SERVER_REQUESTS:
        new = json.loads(json.dumps(doc["oneOf"][0]))
        new["properties"]["method"]["enum"] = [method]
        doc["oneOf"].append(new)
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert judged(bundle).findings == ()

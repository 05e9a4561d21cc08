"""Protocol drift: the comparison (pure), and that the method sets it checks are the ones
the code really uses."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from codexbridge.doctor import drift
from codexbridge.doctor.rows_health import protocol_rows, state_rows
from codexbridge.host.schemas import repo_schemas, schema_dir
from codexbridge.protocol.generated import methods as m

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = schema_dir(experimental=True)


def loader(files: dict[str, Any]) -> drift.Loader:
    return lambda name: files.get(name)


def bundle() -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in BUNDLE.glob("*.json")}


def test_every_method_we_check_exists_in_our_bundle() -> None:
    files = bundle()
    for file, methods in (("ClientRequest.json", drift.CLIENT_REQUESTS),
                          ("ServerNotification.json", drift.NOTIFICATIONS),
                          ("ServerRequest.json", drift.SERVER_REQUESTS)):
        for method in methods:
            assert drift._branch(files[file], method) is not None, (file, method)


def test_the_sets_cover_what_the_code_uses() -> None:
    """Every method constant the (hand-written) code refers to is compared."""
    used: set[str] = set()
    for path in (ROOT / "codexbridge").rglob("*.py"):
        if "generated" in path.parts:
            continue
        used |= set(re.findall(r"\bm\.([A-Z][A-Z0-9_]+)\b", path.read_text()))
    values = {getattr(m, name) for name in used if isinstance(getattr(m, name, None), str)}
    checked = drift.CLIENT_REQUESTS | drift.NOTIFICATIONS | drift.SERVER_REQUESTS
    wire = {"initialized"}  # a client notification: no params to drift
    assert values - checked - wire == set()


def test_an_identical_codex_shows_no_drift() -> None:
    files = bundle()
    responses = repo_schemas().server_request_responses()
    assert drift.compare(loader(files), loader(copy.deepcopy(files)), responses) == []


def test_a_renamed_field_is_reported_by_method_and_definition() -> None:
    files = bundle()
    theirs = copy.deepcopy(files)
    params = theirs["ClientRequest.json"]["definitions"]["ThreadResumeParams"]
    params["properties"]["threadIdentifier"] = params["properties"].pop("threadId")
    answer = theirs["CommandExecutionRequestApprovalResponse.json"]
    answer["properties"]["verdict"] = answer["properties"].pop("decision")
    del theirs["ServerNotification.json"]["oneOf"][0]
    responses = repo_schemas().server_request_responses()
    found = {(d.kind, d.method): d.what for d in drift.compare(
        loader(files), loader(theirs), responses)}
    assert "ThreadResumeParams" in found[("client request", "thread/resume")]
    assert found[("answer", "item/commandExecution/requestApproval")] == \
        "CommandExecutionRequestApprovalResponse.json"
    first = files["ServerNotification.json"]["oneOf"][0]["properties"]["method"]["enum"][0]
    if first in drift.NOTIFICATIONS:
        assert found[("notification", first)] == "missing"
    rows = protocol_rows({"schemas": "/s", "built_on": "codex 0.169.0",
                          "drifts": [{"kind": k, "method": mm, "what": w}
                                     for (k, mm), w in found.items()]})
    assert rows[0].status == "WARN" and "thread/resume" in rows[0].finding
    assert rows[0].fix and "0.169.0" in rows[0].fix


def test_state_rows() -> None:
    assert state_rows({"home": "/", "problem": "CODEX_BRIDGE_HOME resolves to /"})[0].status \
        == "FAIL"
    loose = state_rows({"home": "/h", "exists": True, "loose": ["/h/x (0o644)"]})[0]
    assert loose.status == "WARN" and loose.fix == "chmod -R go-rwx /h"
    assert state_rows({"home": "/h", "exists": True, "loose": []})[0].status == "OK"

"""doctor's silent-failure rows against the real codex 0.169.0: protocol drift (a schema
file edited to differ is reported by name), a loose state dir, `--deep`."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from codexbridge.doctor.rows_health import gather_protocol, protocol_rows
from codexbridge.host.schemas import schema_dir
from tests.support.cli import run_cli

pytestmark = pytest.mark.real_codex


def test_an_edited_schema_file_is_reported_by_name(codex_bin: str, tmp_path: Path) -> None:
    healthy = protocol_rows(gather_protocol(codex_bin, schema_dir()))
    assert healthy[0].status == "OK", healthy[0].finding
    copy = tmp_path / "schemas"
    shutil.copytree(schema_dir(), copy)
    path = copy / "experimental" / "ClientRequest.json"
    data = json.loads(path.read_text())
    props = data["definitions"]["TurnSteerParams"]["properties"]
    props["expectedTurn"] = props.pop("expectedTurnId")
    path.write_text(json.dumps(data))
    [row] = protocol_rows(gather_protocol(codex_bin, copy))
    assert row.status == "WARN"
    assert "client request turn/steer: TurnSteerParams" in row.finding
    assert "npm install -g @openai/codex@0.169.0" in (row.fix or "")


def test_doctor_json_state_and_deep(codex_bin: str, tmp_path: Path) -> None:
    home = Path(os.environ["CODEX_BRIDGE_HOME"])
    (home / "inbox").mkdir(parents=True, exist_ok=True)
    (home / "inbox" / "web.jsonl").write_text("")
    os.chmod(home / "inbox" / "web.jsonl", 0o644)  # someone loosened it
    env = {"CODEX_BRIDGE_CODEX_BIN": codex_bin}
    res = run_cli("doctor", "--json", "--deep", "--project", str(tmp_path), env=env,
                  timeout=120)
    rows = {r["name"]: r for r in json.loads(res.out)["checks"]}
    assert rows["state"]["status"] == "WARN" and "web.jsonl" in rows["state"]["finding"]
    assert rows["state"]["fix"] == f"chmod -R go-rwx {home}"
    assert rows["protocol"]["status"] == "OK"
    assert rows["deep"]["status"] == "OK" and rows["deep"]["finding"].startswith("LIVE")
    bad = run_cli("doctor", "--json", "--project", str(tmp_path),
                  env={**env, "CODEX_BRIDGE_HOME": "/"})
    assert bad.code == 1
    assert {r["name"]: r for r in json.loads(bad.out)["checks"]}["state"]["status"] == "FAIL"

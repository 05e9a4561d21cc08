"""doctor's silent-failure rows against the real codex: the protocol judge (OK for the
codex of this run and for the oldest supported one; a field we read or send renamed in
what codex generates is a WARN naming it), a loose state dir, `--deep`."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from codexbridge.doctor.codex_side import protocol, protocol_rows
from codexbridge.host.binaries import CODEX_OLDEST, CODEX_VERSION, supported_range
from tests.support.binaries import require_codex
from tests.support.cli import run_cli

pytestmark = pytest.mark.real_codex

# A codex that generates what the real one does, with two fields renamed: one we read
# (the reply's text, in item/completed) and one we send (turn/steer's expectedTurnId).
RENAMING_CODEX = """#!{python}
import json, subprocess, sys
from pathlib import Path

args = sys.argv[1:]
done = subprocess.run([{real!r}, *args])
if done.returncode or "generate-json-schema" not in args:
    sys.exit(done.returncode)
out = Path(args[args.index("--out") + 1])


def edit(name, change):
    data = json.loads((out / name).read_text())
    change(data["definitions"])
    (out / name).write_text(json.dumps(data))


def reply(defs):
    for member in defs["ThreadItem"]["oneOf"]:
        if member["properties"]["type"]["enum"] == ["agentMessage"]:
            member["properties"]["body"] = member["properties"].pop("text")


def steer(defs):
    props = defs["TurnSteerParams"]["properties"]
    props["expectedTurn"] = props.pop("expectedTurnId")


edit("ServerNotification.json", reply)
edit("ClientRequest.json", steer)
"""


def oldest_codex(monkeypatch: pytest.MonkeyPatch) -> str:
    """The oldest supported codex's copy in .tools/ (skips locally, fails in CI without)."""
    monkeypatch.setenv("CODEX_BRIDGE_PINNED_CODEX", CODEX_OLDEST)
    return require_codex()


def test_the_protocol_row_is_ok_for_this_codex_and_the_oldest(
        codex_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for codex in (codex_bin, oldest_codex(monkeypatch)):
        facts = protocol(codex)
        [row] = protocol_rows(facts)
        assert row.status == "OK", row.finding
        assert row.fix is None and "speaks what codexbridge uses" in row.finding
        assert supported_range(CODEX_OLDEST, CODEX_VERSION) in row.finding
        assert f"codex {facts.version}" in row.finding


def test_a_renamed_field_is_a_warn_naming_it(codex_bin: str, tmp_path: Path) -> None:
    fake = tmp_path / "codex"
    fake.write_text(RENAMING_CODEX.format(python=sys.executable, real=codex_bin))
    fake.chmod(0o755)
    [row] = protocol_rows(protocol(str(fake)))
    assert row.status == "WARN", row.finding
    assert "in 2 place(s)" in row.finding
    assert ("item/completed (read): ThreadItem.<agentMessage>.text is gone (renamed to "
            "body?) — talk cannot read codex's reply") in row.finding
    assert ("turn/steer (send): TurnSteerParams.expectedTurnId is gone (renamed to "
            "expectedTurn?) — talk steer") in row.finding
    assert row.fix and row.fix.startswith("update codexbridge")  # never "downgrade"


def test_doctor_json_state_and_deep(codex_bin: str, tmp_path: Path) -> None:
    home = Path(os.environ["CODEX_BRIDGE_HOME"])
    (home / "inbox").mkdir(parents=True, exist_ok=True, mode=0o700)
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
    # A state home that exists loosely (as `/` does for root): FAIL with the fix, and
    # doctor leaves it exactly as it was — it reads, it never chmods or creates. (Never
    # `/` itself: a test touches nothing outside its own temp dirs.)
    loose = tmp_path / "loose-home"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    bad = run_cli("doctor", "--json", "--project", str(tmp_path),
                  env={**env, "CODEX_BRIDGE_HOME": str(loose)})
    assert bad.code == 1
    row = {r["name"]: r for r in json.loads(bad.out)["checks"]}["state"]
    assert row["status"] == "FAIL" and row["fix"] == f"chmod 700 {loose}"
    assert stat.S_IMODE(loose.stat().st_mode) == 0o755 and not any(loose.iterdir())

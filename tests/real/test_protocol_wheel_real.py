"""The doctor's protocol check works from an installed wheel: no checkout, no schemas/
beside the package — only what it was built on (codex/protocol/generated/uses.py).

The wheel is built from a copy of the package (the checkout gets no build/ or dist/),
offline: no build isolation and no index — the dev extra brings the setuptools pyproject
asks for into the .venv, so nothing is fetched. Installed with --no-deps into a bare target
directory and run from outside the checkout, it must judge the real codex OK — not
"not checked"."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.pipx_like import build_wheel

pytestmark = pytest.mark.real_codex

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys
import codexbridge
from codexbridge.doctor.codex_side import protocol, protocol_rows
from codexbridge.host.binaries import in_checkout
[row] = protocol_rows(protocol(sys.argv[1]))
print(json.dumps({"module": codexbridge.__file__, "in_checkout": in_checkout(),
                  "status": row.status, "finding": row.finding}))
"""


def _pip(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_an_installed_wheel_judges_the_real_codex(codex_bin: str, tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "codexbridge/codex/protocol/generated/uses.py" in names
    assert not any(n.startswith("schemas/") for n in names)  # the 11 MB bundle stays home
    site = tmp_path / "site"
    _pip("install", "--no-deps", "--no-index", "--quiet", "--target", str(site), str(wheel),
         cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-c", PROBE, codex_bin], cwd=elsewhere,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site),
                               "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert Path(said["module"]).is_relative_to(site)
    assert said["in_checkout"] is False
    assert said["status"] == "OK", said["finding"]
    assert "speaks what codexbridge uses" in said["finding"]

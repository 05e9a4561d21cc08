"""The spikes as tests: each runs exactly as a human runs it, `python -m spikes.<name>`
from the repository root, against the real pinned codex and the offline mock."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.binaries import require_codex

pytestmark = pytest.mark.real_codex

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0
TOTAL = re.compile(r"^(\d+) passed, 0 failed$")

# The fewest checks each spike must report: a spike that silently stopped checking
# (a section that now returns early) must not pass as green.
MINIMUM_CHECKS = {
    "spike_multiclient": 16,
    "spike_multithread": 14,
    "spike_approvals": 14,
    "spike_steer_interrupt": 12,
}


def _run(name: str) -> tuple[int, str, str]:
    """(exit code, stdout, stdout and stderr for a failure message)."""
    proc = subprocess.Popen([sys.executable, "-m", f"spikes.{name}"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        # SIGTERM first: the spike then stops its own app-server (a SIGKILL would orphan it).
        proc.terminate()
        try:
            out, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        pytest.fail(f"spikes.{name} ran over {TIMEOUT:g} s:\n{out}\n{err}", pytrace=False)
    return proc.returncode, out, f"{out}\n--- stderr ---\n{err}" if err.strip() else out


@pytest.mark.parametrize("name", sorted(MINIMUM_CHECKS))
def test_spike(name: str) -> None:
    require_codex()
    code, out, shown = _run(name)
    lines = out.strip().splitlines()
    total = TOTAL.match(lines[-1]) if lines else None
    assert code == 0 and total is not None, f"spikes.{name} exited {code}:\n{shown}"
    assert int(total.group(1)) >= MINIMUM_CHECKS[name], \
        f"spikes.{name} made fewer than {MINIMUM_CHECKS[name]} checks:\n{shown}"
    assert not [line for line in lines if line.startswith("FAIL ")], shown

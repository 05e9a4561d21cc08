"""Memory under a 100 MB reply: peak RSS of `talk say`.

    .venv/bin/python bench/bench_flood.py [--mb 100]

A private real app-server with the mock model (`BIG:<n>` makes it stream n bytes in
8 KiB deltas). Baseline: the same `talk say` process on a small turn, in the same run.
codex sends the finished message once more as one frame; a frame over
$CODEX_BRIDGE_FRAME_MAX (16 MiB) is refused as its header arrives, and `say` exits with
the error naming the cap, so the peak is bounded whatever the server sends; the deltas
before it are bounded by the 10 MiB capture.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import MISSING_BINARY, codex_binary  # noqa: E402
from codexbridge.host.limits import frame_max  # noqa: E402
from tests.support.mock_codex import OfflineStack  # noqa: E402


def peak_kib(argv: list[str], env: dict[str, str], *, refused: bool = False
             ) -> tuple[int, str]:
    """Peak RSS of the process; `refused`: it must fail with the frame cap's error."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read().decode("utf-8", "replace")
    _pid, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if refused and (code == 0 or "CODEX_BRIDGE_FRAME_MAX" not in err):
        raise SystemExit(f"bench_flood: {argv[3:]} was not refused by the frame cap "
                         f"(exit {code}): {err[-500:]}")
    if not refused and code != 0:
        raise SystemExit(f"bench_flood: {argv[3:]} failed (exit {code}): {err[-500:]}")
    return usage.ru_maxrss, err.strip().splitlines()[-1] if err.strip() else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=100)
    args = ap.parse_args()
    codex = codex_binary("bench_flood")
    if codex is None:
        return MISSING_BINARY
    with OfflineStack(codex) as stack:
        asyncio.run(stack.human_thread("bench setup"))
        env = {**os.environ, "CODEX_BRIDGE_URL": stack.url,
               "CODEX_BRIDGE_HOME": str(stack.base / "bridge-home")}
        say = [sys.executable, "-m", "codexbridge", "talk", "say", "-q"]
        small, _ = peak_kib([*say, "a small turn"], env)
        refused = args.mb * 1_000_000 > frame_max(env)
        flood, said = peak_kib([*say, f"BIG:{args.mb * 1_000_000}"], env, refused=refused)
    print(f"talk say peak RSS, small turn {small / 1024:.0f} MiB, {args.mb} MB reply "
          f"{flood / 1024:.0f} MiB")
    print(f"    growth +{(flood - small) / 1024:.0f} MiB = "
          f"{(flood - small) / 1024 / (args.mb * 1e6 / 2**20):.2f}x the reply")
    print(f"    ratio flood / small          {flood / small:.2f}x")
    if refused:
        print(f"    refused, as it must be: {said[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Memory under a 100 MB reply: peak RSS of `talk say` and of the courier.

    .venv/bin/python bench/bench_flood.py [--mb 100]

A private real app-server with the mock model (`BIG:<n>` makes it stream n bytes in
8 KiB deltas). Baseline: the same `talk say` process on a small turn, in the same run.
codex sends the finished message once more as one frame, so ~3x its size is the floor;
the deltas before it are bounded by the 10 MiB capture.
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

from codexbridge.host.binaries import pinned_codex  # noqa: E402
from codexbridge.mock.stack import OfflineStack  # noqa: E402


def peak_kib(argv: list[str], env: dict[str, str]) -> int:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_flood: {argv[3:]} failed")
    return usage.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=100)
    args = ap.parse_args()
    codex = os.environ.get("CODEX_BRIDGE_CODEX_BIN") or str(pinned_codex() or "")
    if not codex:
        print("bench_flood: pinned codex missing; run scripts/install-binaries",
              file=sys.stderr)
        return 3
    with OfflineStack(codex) as stack:
        asyncio.run(stack.human_thread("bench setup"))
        env = {**os.environ, "CODEX_BRIDGE_URL": stack.url,
               "CODEX_BRIDGE_HOME": str(stack.base / "bridge-home")}
        say = [sys.executable, "-m", "codexbridge", "talk", "say", "-q"]
        small = peak_kib([*say, "a small turn"], env)
        flood = peak_kib([*say, f"BIG:{args.mb * 1_000_000}"], env)
    print(f"talk say peak RSS, small turn {small / 1024:.0f} MiB, {args.mb} MB reply "
          f"{flood / 1024:.0f} MiB")
    print(f"    growth +{(flood - small) / 1024:.0f} MiB = "
          f"{(flood - small) / 1024 / (args.mb * 1e6 / 2**20):.2f}x the reply")
    print(f"    ratio flood / small          {flood / small:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

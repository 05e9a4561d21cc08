"""Speed of `talk say`, as ratios against a minimal raw websockets client (issue 2).

    .venv/bin/python bench/bench_talk.py [--turns 30] [--procs 15]

Both sides run against the same real codex app-server and mock model in the same run,
alternating, so machine noise hits both equally. Targets:
  in-process turn   codexbridge talk.say  vs  bench/raw_say.raw_say        <= 1.15x
  whole process     `codexbridge talk say` vs `python bench/raw_say.py`    <= 1.15x
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import MISSING_BINARY, codex_binary  # noqa: E402
from bench.raw_say import raw_say  # noqa: E402
from codexbridge.codex.client import AppServerClient  # noqa: E402
from codexbridge.codex.turn import say  # noqa: E402
from tests.support.mock_codex import OfflineStack  # noqa: E402


async def bridge_turn(url: str, thread_id: str, text: str) -> str:
    async with AppServerClient(url) as client:
        result = await say(client, thread_id, text)
        return result.reply


async def in_process(url: str, thread_id: str, turns: int
                     ) -> tuple[float, float, list[float]]:
    raw_times: list[float] = []
    ours: list[float] = []
    for i in range(turns):
        for fn, sink in ((raw_say, raw_times), (bridge_turn, ours)):
            t0 = time.perf_counter()
            reply = await fn(url, thread_id, f"bench {i}")
            sink.append(time.perf_counter() - t0)
            assert reply == f"MOCK REPLY: bench {i}", reply
    return statistics.median(raw_times), statistics.median(ours), sorted(
        o / r for r, o in zip(raw_times, ours, strict=True))


def whole_process(url: str, thread_id: str, runs: int
                  ) -> tuple[float, float, list[float]]:
    """Medians of each, and each back-to-back pair's ratio (start-up drifts by tens of
    ms between runs on a 2-core box: the pairs' median is the steadier figure)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    raw_cmd = [sys.executable, str(ROOT / "bench" / "raw_say.py"), "--url", url,
               "--thread", thread_id]
    ours_cmd = [sys.executable, "-m", "codexbridge", "talk", "say", "--url", url,
                "--thread", thread_id, "-q"]
    raw_times: list[float] = []
    ours: list[float] = []
    for i in range(runs):
        for cmd, sink in ((raw_cmd, raw_times), (ours_cmd, ours)):
            t0 = time.perf_counter()
            out = subprocess.run([*cmd, f"proc {i}"], env=env, capture_output=True, text=True,
                                 check=False)
            sink.append(time.perf_counter() - t0)
            assert out.returncode == 0 and out.stdout.strip() == f"MOCK REPLY: proc {i}", out
    return statistics.median(raw_times), statistics.median(ours), sorted(
        o / r for r, o in zip(raw_times, ours, strict=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--procs", type=int, default=21)
    args = ap.parse_args()
    codex = codex_binary("bench_talk")
    if codex is None:
        return MISSING_BINARY
    with OfflineStack(codex) as stack:
        url = stack.url
        thread_id, _ = asyncio.run(stack.human_thread("bench setup"))
        raw_t, our_t, turn_pairs = asyncio.run(in_process(url, thread_id, args.turns))
        raw_p, our_p, pairs = whole_process(url, thread_id, args.procs)
    print(f"in-process turn : raw {raw_t * 1000:7.1f} ms  codexbridge {our_t * 1000:7.1f} ms  "
          f"ratio {statistics.median(turn_pairs):.3f}x  (pairs {turn_pairs[0]:.2f}-"
          f"{turn_pairs[-1]:.2f})  (target <= 1.15x)")
    print(f"whole process   : raw {raw_p * 1000:7.1f} ms  codexbridge {our_p * 1000:7.1f} ms  "
          f"ratio {statistics.median(pairs):.3f}x  (pairs {pairs[0]:.2f}-{pairs[-1]:.2f})  "
          "(target <= 1.15x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

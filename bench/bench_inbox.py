#!/usr/bin/env python3
"""Benchmark the reverse channel; every ratio is measured within this one run.

1. Stop hook, empty mailbox, vs `python -c pass` on the same interpreter (target ≤ 1.3×).
   The hook is run exactly as `codexbridge install-hook` writes it, with a realistic
   Stop-hook JSON on stdin. Runs alternate between the two commands; medians compared.
2. 50 writer processes × 200 mails through `store.push` while this process drains
   with `store.take`/`commit` until all 10 000 are delivered, vs 50 × 200 raw appends
   under the same mailbox lock (target ≥ 0.7× the raw throughput).

    .venv/bin/python bench/bench_inbox.py [--runs 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from codexbridge.inbox import peek as reading  # noqa: E402
from codexbridge.inbox import store  # noqa: E402
from codexbridge.inbox.lines import new_mail  # noqa: E402
from codexbridge.messages.listeners import hook_command  # noqa: E402

STOP_INPUT = json.dumps({
    "session_id": "bbc71d1d-75b1-4703-87aa-1e925bce0360",
    "transcript_path": "/tmp/x/bbc71d1d-75b1-4703-87aa-1e925bce0360.jsonl",
    "cwd": str(REPO), "prompt_id": "e8c41989-0000", "permission_mode": "default",
    "effort": {"level": "medium"}, "hook_event_name": "Stop", "stop_hook_active": False,
    "last_assistant_message": "done", "background_tasks": [], "session_crons": []}).encode()


def _time(cmd: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or proc.stdout:
        raise SystemExit(f"unexpected result from {cmd}: rc={proc.returncode} "
                         f"out={proc.stdout[:200]!r} err={proc.stderr[:200]!r}")
    return elapsed


def bench_hook(runs: int, home: str) -> dict[str, float]:
    env = {**os.environ, "CODEX_BRIDGE_HOME": home}
    env.pop("CODEX_BRIDGE_INBOX_DIR", None)
    hook = shlex.split(hook_command("bench"))
    bare = [sys.executable, "-c", "pass"]
    for _ in range(5):  # warm the page cache and the .pyc files
        _time(hook, STOP_INPUT, env)
        _time(bare, b"", env)
    hook_times, bare_times = [], []
    for _ in range(runs):
        bare_times.append(_time(bare, b"", env))
        hook_times.append(_time(hook, STOP_INPUT, env))
    with_mail = []
    inbox = os.path.join(home, "inbox")
    for _ in range(max(5, runs // 10)):
        store.push(inbox, new_mail("bench mail", to="bench", sender="codex"))
        start = time.perf_counter()
        proc = subprocess.run(hook, input=STOP_INPUT, capture_output=True, env=env,
                              check=False)
        with_mail.append(time.perf_counter() - start)
        assert b'"decision": "block"' in proc.stdout, proc
        # End the chain so the next run is a first stop again.
        subprocess.run(hook, input=STOP_INPUT.replace(b'"prompt_id": "e8c41989-0000"',
                                                      b'"prompt_id": "next"'),
                       capture_output=True, env=env, check=False)
    return {"bare": statistics.median(bare_times), "hook": statistics.median(hook_times),
            "hook_p90": sorted(hook_times)[int(len(hook_times) * 0.9)],
            "with_mail": statistics.median(with_mail), "runs": runs}


def _writers(mode: str, home: str, writers: int, per_writer: int) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "CODEX_BRIDGE_HOME": home}
    env.pop("CODEX_BRIDGE_INBOX_DIR", None)
    return [subprocess.Popen([sys.executable, "-m", "tests.stress.inbox_workers", mode,
                              "--to", "tp", "--count", str(per_writer), "--tag", f"w{k}"],
                             cwd=REPO, env=env, stdout=subprocess.DEVNULL)
            for k in range(writers)]


def bench_throughput(home_root: str, writers: int, per_writer: int, rounds: int
                     ) -> dict[str, float]:
    total = writers * per_writer
    raw_times, ours_times = [], []
    for r in range(rounds):
        raw_home = os.path.join(home_root, f"raw{r}")
        start = time.perf_counter()
        procs = _writers("raw", raw_home, writers, per_writer)
        for p in procs:
            p.wait()
        raw_times.append(time.perf_counter() - start)
        lines = reading.count_lines(os.path.join(raw_home, "inbox", "tp.jsonl"))
        assert lines == total, lines

        ours_home = os.path.join(home_root, f"ours{r}")
        inbox = os.path.join(ours_home, "inbox")
        delivered = 0
        seen: set[str] = set()
        start = time.perf_counter()
        procs = _writers("push", ours_home, writers, per_writer)
        while delivered < total:
            with store.take(inbox, "tp") as batch:
                if batch.mails:
                    delivered += len(batch.mails)
                    seen.update(m.mail_id or "" for m in batch.mails)
                batch.commit()
            if delivered < total:
                time.sleep(0.01)
        ours_times.append(time.perf_counter() - start)
        for p in procs:
            p.wait()
        assert delivered == len(seen) == total, (delivered, len(seen))
    raw = statistics.median(raw_times)
    ours = statistics.median(ours_times)
    return {"raw_s": raw, "ours_s": ours, "raw_per_s": total / raw, "ours_per_s": total / ours,
            "mails": total, "rounds": rounds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100, help="hook runs (and bare runs)")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds")
    parser.add_argument("--writers", type=int, default=50)
    parser.add_argument("--per-writer", type=int, default=200)
    args = parser.parse_args()

    print(f"python {sys.version.split()[0]} at {sys.executable}; {os.cpu_count()} cpu(s)")
    print(f"hook command: {hook_command('bench')}")
    with tempfile.TemporaryDirectory(prefix="cb-bench-") as tmp:
        h = bench_hook(args.runs, os.path.join(tmp, "hook-home"))
        ratio = h["hook"] / h["bare"]
        print(f"\n[1] Stop hook, empty mailbox ({h['runs']:.0f} runs each, median wall)")
        print(f"    python -c pass          {h['bare'] * 1000:7.1f} ms")
        print(f"    inbox hook (empty)      {h['hook'] * 1000:7.1f} ms   "
              f"(p90 {h['hook_p90'] * 1000:.1f} ms)")
        print(f"    inbox hook (1 mail)     {h['with_mail'] * 1000:7.1f} ms   (for reference)")
        print(f"    ratio hook/bare         {ratio:7.2f}x   target <= 1.3x  "
              f"{'PASS' if ratio <= 1.3 else 'FAIL'}")

        t = bench_throughput(tmp, args.writers, args.per_writer, args.rounds)
        tratio = t["ours_per_s"] / t["raw_per_s"]
        print(f"\n[2] {args.writers} writers x {args.per_writer} mails "
              f"(median of {t['rounds']:.0f} rounds, process start-up included in both)")
        print(f"    raw appends, same lock  {t['raw_s']:6.2f} s   {t['raw_per_s']:8.0f} mails/s")
        print(f"    push + drain            {t['ours_s']:6.2f} s   {t['ours_per_s']:8.0f} mails/s")
        print(f"    ratio push+drain/raw    {tratio:7.2f}x   target >= 0.7x  "
              f"{'PASS' if tratio >= 0.7 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`bench/run`: run every bench, then print one table of ratios with their baselines.

Each bench measures codexbridge and its baseline in the same run (interleaved where
that makes sense), so machine noise hits both; this only collects the figures.
`--quick` uses fewer rounds (a smoke run; the README's numbers come from a full run).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


class Figure(NamedTuple):
    what: str
    script: str
    pattern: str  # its first group is the figure
    unit: str  # "x" (a ratio) or a unit
    baseline: str
    target: str


FIGURES = [
    Figure("Stop hook on an empty mailbox", "bench_inbox.py",
           r"ratio hook/bare\s+([\d.]+)x", "x", "`python -c pass`", "≤ 1.3×"),
    Figure("mailbox push + drain, 50 writers × 200 mails", "bench_inbox.py",
           r"ratio push\+drain/raw\s+([\d.]+)x", "x", "raw appends under the same lock",
           "≥ 0.7×"),
    Figure("one `talk say` turn, in-process", "bench_talk.py",
           r"in-process turn .*ratio ([\d.]+)x", "x", "a minimal raw `websockets` client",
           "≤ 1.15×"),
    Figure("the whole `codexbridge talk say` process", "bench_talk.py",
           r"whole process .*ratio ([\d.]+)x", "x", "the raw client run as a process",
           "≤ 1.15×"),
    Figure("notification reader throughput", "bench_reader.py",
           r"ratio ours / raw\s+([\d.]+)x", "x", "a raw `websockets` receive loop + json",
           "≥ 0.9×"),
    Figure("`codexbridge mcp --role claude` cold start to `initialize`", "bench_mcp.py",
           r"mcp --role claude cold\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)x",
           "x", "a bare MCP SDK server", "≤ 1.0×"),
    Figure("`codexbridge mcp --role claude` warm start to `initialize`", "bench_mcp.py",
           r"mcp --role claude warm\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)x",
           "x", "a bare MCP SDK server", "—"),
    Figure("the plugin's cost per `claude -p`", "bench_plugin.py",
           r"plugin cost: \+?(-?[\d.]+) ms", " ms", "`claude -p` without the plugin",
           "≤ +300 ms"),
    Figure("the plugin's cost per `claude -p`, a user's first session", "bench_plugin.py",
           r"plugin cost, first session: \+?(-?[\d.]+) ms", " ms",
           "`claude -p` without the plugin", "—"),
    Figure("the plugin's cost per `claude -p`, MCP server cold", "bench_plugin.py",
           r"plugin cost, cold MCP start: \+?(-?[\d.]+) ms", " ms",
           "`claude -p` without the plugin", "—"),
    Figure("`talk send` → receipt, median", "bench_send.py",
           r"talk send receipt: median ([\d.]+) ms", " ms", "—", "< 1000 ms"),
    Figure("a short turn by `talk send` → its reply in the mailbox", "bench_send.py",
           r"ratio send->delivered / say\s+([\d.]+)x", "x", "the same turn by `talk say`",
           "≤ 1.3×"),
    Figure("twelve `talk send`s at once → replies mailed, p95", "bench_send.py",
           r"ratio twelve sends / says p95\s+([\d.]+)x", "x",
           "twelve `talk say`s at once, p95", "≤ 1.5×"),
    Figure("Claude's send → the message in the Codex TUI, beyond its floor",
           "bench_journey.py", r"journey send→TUI beyond floor: ([+-]?[\d.]+) ms", " ms",
           "a joined client queueing it", "≤ 500 ms"),
    Figure("Codex's final message → Claude's next model request (live), beyond its floor",
           "bench_journey.py", r"journey Codex→Claude live beyond floor: ([+-]?[\d.]+) ms",
           " ms", "an in-process push of a mail that size", "≤ 300 ms"),
    Figure("Claude's final message → the reply turn in the Codex TUI, beyond its floor",
           "bench_journey.py", r"journey Claude→reply in TUI beyond floor: ([+-]?[\d.]+) ms",
           " ms", "a joined client queueing it", "≤ 1000 ms"),
    Figure("the human's Esc in the Codex TUI → Claude told", "bench_human.py",
           r"human Esc in Codex → Claude told: [\d.]+ ms, ratio ([\d.]+)x", "x",
           "Codex's answer carried to Claude, live", "≤ 1.5×"),
    Figure("the human's Esc in Claude's TUI → Codex told", "bench_human.py",
           r"human Esc in Claude → Codex told: [\d.]+ ms, ratio ([\d.]+)x", "x",
           "Claude's answer carried into the Codex thread", "≤ 1.5×"),
    Figure("an ask as an MCP task → its reply, against the blocking call", "bench_tasks.py",
           r"ratio task / blocking\s+([\d.]+)x", "x",
           "the same ask as a blocking `codex_message_send`", "≤ 1.3×"),
    Figure("`inbox push` → Claude's next model request, live", "bench_live.py",
           r"ratio live / watcher\s+([\d.]+)x", "x", "the asyncRewake watcher", "—"),
    Figure("handoff delta from a 20 MB transcript, time", "bench_handoff.py",
           r"delta vs one plain JSON-lines read: time ([\d.]+)×", "x",
           "one plain JSON-lines read", "—"),
    Figure("`talk say` peak RSS under a 100 MB reply", "bench_flood.py",
           r"ratio flood / small\s+([\d.]+)x", "x", "the same process on a small turn",
           "bounded"),
]

QUICK = {"bench_inbox.py": ["--runs", "30", "--rounds", "1"],
         "bench_talk.py": ["--turns", "10", "--procs", "8"],
         "bench_reader.py": ["--frames", "30000", "--rounds", "3"],
         "bench_mcp.py": ["--runs", "8", "--warmup", "1"],
         "bench_plugin.py": ["--runs", "3", "--warmup", "1"],
         "bench_send.py": ["--runs", "6", "--warmup", "1", "--twelve", "1"],
         "bench_journey.py": ["--runs", "3"],
         "bench_human.py": ["--runs", "2"],
         "bench_live.py": ["--rounds", "3"],
         "bench_tasks.py": ["--runs", "5"],
         "bench_handoff.py": ["--runs", "3"],
         "bench_flood.py": ["--mb", "20"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    ap.add_argument("--only", action="append", default=[], metavar="SCRIPT",
                    help="run only this bench (e.g. bench_reader.py); repeatable")
    args = ap.parse_args()
    scripts = list(dict.fromkeys(f.script for f in FIGURES))
    if args.only:
        scripts = [s for s in scripts if s in args.only]
    outputs: dict[str, str] = {}
    for script in scripts:
        argv = [sys.executable, str(ROOT / "bench" / script),
                *(QUICK.get(script, []) if args.quick else [])]
        print(f"==> {' '.join(argv[1:])}", flush=True)
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        outputs[script] = done.stdout
        print(done.stdout.rstrip())
        if done.returncode != 0:
            said = [line for line in done.stderr.splitlines()
                    if line.strip() and not line.startswith(("Task ", "task:"))]
            print(f"    ({script} exited {done.returncode}: {' | '.join(said[-6:])[-600:]})")
        print(f"    ({time.monotonic() - started:.0f} s)\n", flush=True)
    print("| what | figure | baseline (same run) | target |")
    print("|---|---|---|---|")
    for f in FIGURES:
        if f.script not in outputs:
            continue
        found = re.search(f.pattern, outputs[f.script])
        value = (f"{float(found.group(1)):.2f}×" if f.unit == "x" else
                 f"{float(found.group(1)):.0f}{f.unit}") if found else "(not measured)"
        print(f"| {f.what} (`bench/{f.script}`) | {value} | {f.baseline} | {f.target} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

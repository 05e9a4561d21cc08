#!/usr/bin/env python3
"""Building a handoff delta from a 20 MB Claude Code transcript, mostly tool output,
against one plain JSON-lines read of the same file; ratios measured in this one run.

    .venv/bin/python bench/bench_handoff.py [--mb 20] [--runs 9]

The transcript is written in the shape Claude Code 2.1.332 writes (prompts, tool calls,
tool results of ~24 KB, answers, bookkeeping records), about 95 % tool output. Each
measurement runs in a fresh interpreter, one after the other, alternating:

    baseline   for line in file: json.loads(line)                     (nothing kept)
    delta      claude_source.read_transcript + delta.build            (the whole delta:
               from the start, every message, the companion text)
    since      the same with a watermark near the end                 (a later handoff)

Time: the wall time of the work alone (imports excluded); the ratio is the median of the
per-round ratios. Memory: the peak of
Python allocations during the work (tracemalloc, in separate runs, so it does not slow
the timed ones), and the whole process's peak RSS (interpreter and imports included).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL_BYTES = 24_000

WORK = r"""
import json, resource, sys, time, tracemalloc
sys.path.insert(0, {root!r})
kind, path, mark, trace = sys.argv[1], sys.argv[2], sys.argv[3] or None, sys.argv[4] == "1"
if kind != "baseline":
    from codexbridge.handoff import claude_source, delta
    from codexbridge.handoff.note import parse_note
if trace:
    tracemalloc.start()
start = time.perf_counter()
if kind == "baseline":
    with open(path, "rb") as fh:
        for line in fh:
            json.loads(line)
    said = 0
else:
    read = claude_source.read_transcript(path, "bench", mark)
    built = delta.build(delta.DeltaInput("h_bench", "Claude Code", "Codex", "now",
                                         "/tmp/companion.txt",
                                         [delta.Block(read.label, read.messages)],
                                         parse_note("Next: carry on")))
    said = len(read.messages)
elapsed = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1] if trace else 0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
print(json.dumps({{"s": elapsed, "peak": peak, "said": said, "rss": rss}}))
"""


def rec(kind: str, parent: str | None, **fields: object) -> tuple[str, str]:
    uid = str(uuid.uuid4())
    data = {"parentUuid": parent, "isSidechain": False, "type": kind, "uuid": uid,
            "sessionId": "bench", "timestamp": "2026-12-01T10:00:00.000Z",
            "version": "2.1.332", "cwd": "/home/dev/project", **fields}
    return uid, json.dumps(data, separators=(",", ":"))


def write_transcript(path: Path, megabytes: float) -> tuple[int, str, dict[str, int]]:
    """The file, its exchange count, a mark three exchanges before the end, the byte mix."""
    target = int(megabytes * 1024 * 1024)
    size = exchanges = 0
    mix = {"tool": 0, "words": 0, "other": 0}
    parent: str | None = None
    marks: list[str] = []
    chunk = ("line of build output: compiling module and running the checks " * 6 + "\n")
    with open(path, "w", encoding="utf-8") as fh:
        while size < target:
            exchanges += 1
            out = (chunk * (TOOL_BYTES // len(chunk) + 1))[:TOOL_BYTES]
            rows = []
            parent, line = rec("user", parent, message={
                "role": "user", "content": f"request {exchanges}: " + "please look " * 15})
            rows.append(("words", line))
            parent, line = rec("attachment", parent, attachment={"type": "date"})
            rows.append(("other", line))
            parent, line = rec("assistant", parent, message={
                "role": "assistant", "model": "claude", "content": [
                    {"type": "tool_use", "id": f"t{exchanges}", "name": "Bash",
                     "input": {"command": "make check"}}]})
            rows.append(("other", line))
            parent, line = rec("user", parent, toolUseResult={"stdout": out}, message={
                "role": "user", "content": [{"tool_use_id": f"t{exchanges}",
                                             "type": "tool_result", "content": out}]})
            rows.append(("tool", line))
            parent, line = rec("assistant", parent, message={
                "role": "assistant", "model": "claude", "content": [
                    {"type": "text", "text": f"answer {exchanges}: " + "it passed " * 40}]})
            rows.append(("words", line))
            marks.append(parent)
            rows.append(("other", json.dumps({"type": "last-prompt", "sessionId": "bench"})))
            for what, line in rows:
                fh.write(line + "\n")
                size += len(line) + 1
                mix[what] += len(line) + 1
    return exchanges, marks[-4], mix


def measure(kind: str, path: Path, mark: str | None, trace: bool) -> dict[str, float]:
    code = WORK.format(root=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code, kind, str(path), mark or "",
                          "1" if trace else "0"], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert isinstance(data, dict)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cb-bench-handoff-") as tmp:
        path = Path(tmp) / "bench.jsonl"
        exchanges, mark, mix = write_transcript(path, args.mb)
        total = sum(mix.values())
        print(f"transcript: {total / 2**20:.1f} MiB, {exchanges} exchanges; "
              f"tool output {mix['tool'] / total:.0%}, words {mix['words'] / total:.1%}")
        kinds = {"baseline": None, "delta": None, "since": mark}
        for kind, since in kinds.items():  # warm the page cache and the .pyc files
            measure(kind, path, since, False)
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for _ in range(args.runs):
            for kind, since in kinds.items():
                times[kind].append(measure(kind, path, since, False)["s"])
        peaks = {kind: measure(kind, path, since, True) for kind, since in kinds.items()}
    t = {k: statistics.median(v) for k, v in times.items()}
    # Each round ran the three back to back: the ratio per round cancels machine drift.
    paired = {k: statistics.median(a / b for a, b in zip(times[k], times["baseline"], strict=True))
              for k in kinds}
    print(f"said: {peaks['delta']['said']:.0f} messages from the start, "
          f"{peaks['since']['said']:.0f} after the watermark")
    print(f"{'':10} {'time (median)':>14} {'peak Python memory':>20} {'peak RSS':>10}")
    for kind in kinds:
        print(f"{kind:10} {t[kind] * 1000:>11.0f} ms {peaks[kind]['peak'] / 2**20:>16.2f} MiB"
              f" {peaks[kind]['rss'] / 2**20:>6.1f} MiB")
    base = peaks["baseline"]
    for kind in ("delta", "since"):
        print(f"{kind} vs one plain JSON-lines read: time {paired[kind]:.2f}×, "
              f"peak Python memory {peaks[kind]['peak'] / max(base['peak'], 1):.2f}× "
              f"({peaks[kind]['peak'] / total:.1%} of the file), "
              f"peak RSS {peaks[kind]['rss'] / base['rss']:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The Claude Code plugin's cost per session: `claude -p "hello"` with and without it.

    .venv/bin/python bench/bench_plugin.py [--runs 9] [--warmup 2] [--parts] [--why]

The pinned Claude Code 2.1.332, offline against the mock Messages API, in one project
with a private CLAUDE_CONFIG_DIR and CODEX_BRIDGE_HOME. Each round runs, one after the
other (interleaved, so machine noise hits every variant alike):

    without      `claude -p hello` with no plugin — the floor
    plugin       the same with `--plugin-dir <codexbridge's plugin>`: its SessionStart
                 hooks, its MCP server (`codexbridge mcp --role claude`, which `-p` waits
                 for before the first model request) and its Stop hooks. The MCP server
                 answers its start-up from the record the warm-up rounds left
                 (mcp/startup_cache.py), as it does for every session after a user's
                 first (the bench's own, in a runtime dir of its own)
    plugin first the same with no record yet (a fresh runtime dir each round): a
                 user's first session, which writes one
    plugin cold  the same with CODEX_BRIDGE_MCP_WARM=0: every MCP server imports the SDK
                 before it answers, no record is read or written

`--before DIR` adds the plugin of another copy of the package (DIR holds a `codexbridge/`,
e.g. `git archive <commit> codexbridge | tar -x -C DIR`) running that copy's code:
before/after in one run.

`--parts` adds two copies of the plugin: `hooks only` (no MCP server) and `MCP only` (no
hooks), to say which part costs what. `--why` runs each plugin variant once more with
Claude's `--debug-file` and prints what Claude itself reports: how long the MCP server
took to connect and each hook's time (debug logging slows Claude a little, so these
runs are not in the medians).

Printed: the wall time of each whole `claude` process (median, min, max) and each
variant's cost over `without`: the median of the rounds' differences (both ran back to
back in each round, so the box's slow drift cancels) with their range. No assertions.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codexbridge.host.binaries import pinned_claude  # noqa: E402
from codexbridge.setup.where import plugin_dir  # noqa: E402
from tests.support.claude_env import offline_env  # noqa: E402
from tests.support.mock_claude import MockMessages  # noqa: E402
from tests.support.world import signal_naming  # noqa: E402

WITHOUT, PLUGIN, FIRST, COLD, HOOKS, MCP = ("without", "plugin", "plugin first",
                                            "plugin cold", "hooks only", "MCP only")
BEFORE = "plugin @before"
Variant = tuple[list[str], dict[str, str]]  # claude's extra arguments, extra environment


def _copy_plugin(root: Path, name: str, *, hooks: bool, mcp: bool) -> Path:
    """A copy of the plugin with its hooks or its MCP server taken out."""
    dest = root / name
    shutil.copytree(plugin_dir(), dest)
    manifest = dest / ".claude-plugin" / "plugin.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    if not mcp:
        data.pop("mcpServers", None)
    manifest.write_text(json.dumps(data), encoding="utf-8")
    if not hooks:
        (dest / "hooks" / "hooks.json").write_text('{"hooks": {}}', encoding="utf-8")
    return dest


def _before(root: Path, tree: Path) -> Variant:
    """The plugin of the copy in `tree`, running that copy's codexbridge (its launcher
    takes the command from CODEX_BRIDGE_BIN)."""
    if not (tree / "codexbridge" / "claude_plugin").is_dir():
        raise SystemExit(f"bench_plugin: --before {tree}: no codexbridge/claude_plugin there")
    compileall.compile_dir(tree / "codexbridge", quiet=1)
    wrapper = root / "before-codexbridge"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(tree))} exec '
                       f'{shlex.quote(sys.executable)} -m codexbridge "$@"\n')
    wrapper.chmod(0o755)
    return (["--plugin-dir", str(tree / "codexbridge" / "claude_plugin")],
            {"CODEX_BRIDGE_BIN": str(wrapper)})


def _variants(root: Path, parts: bool) -> dict[str, Variant]:
    plugin = ["--plugin-dir", plugin_dir()]
    variants: dict[str, Variant] = {WITHOUT: ([], {}), PLUGIN: (plugin, {}),
                                    FIRST: (plugin, {}),  # its runtime dir: each round's
                                    COLD: (plugin, {"CODEX_BRIDGE_MCP_WARM": "0"})}
    if parts:
        hooks = _copy_plugin(root, "hooks-only", hooks=True, mcp=False)
        mcp = _copy_plugin(root, "mcp-only", hooks=False, mcp=True)
        variants[HOOKS] = (["--plugin-dir", str(hooks)], {})
        variants[MCP] = (["--plugin-dir", str(mcp)], {})
    return variants


class Runner:
    def __init__(self, claude: str, root: Path, mock: MockMessages) -> None:
        self.claude = claude
        self.project = root / "project"
        self.project.mkdir()
        home, run = root / "home", root / "run"
        run.mkdir(mode=0o700)
        # a runtime dir of our own: our own start-up record (and --before's warm server)
        self.env = offline_env(home, home / ".claude", mock.url,
                               extra={"XDG_RUNTIME_DIR": str(run)})

    def run(self, variant: Variant, *more: str) -> float:
        extra, env = variant
        argv = [self.claude, "-p", "hello", "--output-format", "json",
                "--session-id", str(uuid.uuid4()), *extra, *more]
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=self.project, env={**self.env, **env},
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120, check=False)
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"bench_plugin: {' '.join(extra) or 'claude -p'} exited "
                             f"{done.returncode}: {done.stderr[-400:]}")
        return took


def _first(runner: Runner, variant: Variant, root: Path, round_no: int) -> float:
    """A session with no start-up record yet (it writes one)."""
    fresh = root / f"first-{round_no}"
    fresh.mkdir(mode=0o700)
    return runner.run((variant[0], {**variant[1], "XDG_RUNTIME_DIR": str(fresh)}))


def _why(runner: Runner, variants: dict[str, Variant], root: Path) -> None:
    print("\nwhat Claude's --debug-file says (one run each, not in the medians)")
    for name, variant in variants.items():
        if name in (WITHOUT, FIRST):  # (a first session is a cold one that starts a server)
            continue
        log = root / f"debug-{len(os.listdir(root))}.log"
        runner.run(variant, "--debug-file", str(log))
        text = log.read_text(encoding="utf-8", errors="replace")
        found = [f"MCP connected in {m.group(1)} ms" for m in re.finditer(
            r'MCP server "plugin:[^"]+": Successfully connected \(transport: \w+\) in (\d+)ms',
            text)]
        found += [f"{m.group(1)} {m.group(2)} {m.group(3)}" for m in re.finditer(
            r"Hooks: (\w+)(?::\w+)? \[sh \S+ (\w+(?: start)?)\] .*? \((\d+ms)\)", text)]
        print(f"    {name:12} " + ("; ".join(found) or "(nothing reported)"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9, help="rounds (each runs every variant)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--parts", action="store_true",
                    help="also time the plugin's hooks alone and its MCP server alone")
    ap.add_argument("--why", action="store_true",
                    help="also print Claude's own timings from --debug-file runs")
    ap.add_argument("--before", type=Path, default=None, metavar="DIR",
                    help="also the plugin of another copy of the package (DIR holds its "
                         "codexbridge/), e.g. the commit before a change")
    args = ap.parse_args()
    claude = os.environ.get("CODEX_BRIDGE_CLAUDE_BIN") or str(pinned_claude() or "")
    if not claude:
        print("bench_plugin: needs the pinned claude (scripts/install-binaries)",
              file=sys.stderr)
        return 3
    # An installed package has its .pyc files; an edit since the last run would make
    # every MCP server start compile from source instead.
    compileall.compile_dir(ROOT / "codexbridge", quiet=1)
    root = Path(tempfile.mkdtemp(prefix="cb-bench-plugin-", dir="/tmp"))
    os.environ["CODEX_BRIDGE_HOME"] = str(root / "state")
    runner = None
    try:
        with MockMessages() as mock:
            runner = Runner(claude, root, mock)
            variants = _variants(root, args.parts)
            if args.before is not None:
                variants[BEFORE] = _before(root, args.before.resolve())
            times: dict[str, list[float]] = {name: [] for name in variants}
            for i in range(args.warmup + args.runs):
                for name, variant in variants.items():
                    took = (_first(runner, variant, root, i) if name == FIRST
                            else runner.run(variant))
                    if i >= args.warmup:
                        times[name].append(took)
            _report(args.runs, times)
            if args.why:
                _why(runner, variants, root)
    finally:
        if runner is not None:  # --before's warm server, if the copy had one
            signal_naming(runner.env["XDG_RUNTIME_DIR"])
        shutil.rmtree(root, ignore_errors=True)
    return 0


def _cost(times: dict[str, list[float]], name: str) -> tuple[float, float, float]:
    """The cost of variant `name` over `without`, in ms: the median of the rounds'
    differences (each round runs both back to back, so slow drift cancels), and that
    difference's lowest and highest."""
    diffs = [(t - b) * 1000 for t, b in zip(times[name], times[WITHOUT], strict=True)]
    return statistics.median(diffs), min(diffs), max(diffs)


def _report(runs: int, times: dict[str, list[float]]) -> None:
    base = statistics.median(times[WITHOUT])
    print(f'claude -p "hello", whole process, {runs} rounds, interleaved '
          f"({os.cpu_count()} cpu(s))")
    print(f"    {'':14} {'median':>7} {'min':>7} {'max':>7}   cost over `without`: median "
          "of the rounds' differences [range]")
    for name, ts in times.items():
        med = statistics.median(ts)
        line = (f"    {name:14} {med * 1000:7.0f} {min(ts) * 1000:7.0f} "
                f"{max(ts) * 1000:7.0f} ms")
        if name != WITHOUT:
            cost, low, high = _cost(times, name)
            line += f"   {cost:+6.0f} ms [{low:+.0f} .. {high:+.0f}]  {med / base:.2f}x"
        print(line)
    cost, _, _ = _cost(times, PLUGIN)
    first, _, _ = _cost(times, FIRST)
    cold, _, _ = _cost(times, COLD)
    print(f"    plugin cost: {cost:+.0f} ms per `claude -p` "
          f"(ratio of medians plugin / without {statistics.median(times[PLUGIN]) / base:.2f}x)")
    print(f"    plugin cost, first session: {first:+.0f} ms")
    print(f"    plugin cost, cold MCP start: {cold:+.0f} ms")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark `codexbridge mcp` start-up; every ratio is measured within this one run.

Time from spawn to the `initialize` response (and, for reference, to the `tools/list`
response that follows it) for `python -m codexbridge mcp --role claude|codex`, vs a
BARE server on the same SDK and interpreter: `MCPServer("bare")` with one trivial tool,
`run("stdio")`. Codex and Claude Code start the server as a subprocess and ask for its
tools right away, so this is what decides whether the first model request has them
(`claude -p` waits for it: bench/bench_plugin.py).

Each role twice: `cold` (CODEX_BRIDGE_MCP_WARM=0: the SDK imported in the process, as a
user's first start) and `warm` (the default once a start has recorded its answers: the
start-up is answered from that record, mcp/startup_cache.py). The bench records its own
(one priming start per role, in a runtime dir of its own).

Each run spawns the process with stdio pipes, writes one raw JSON-RPC `initialize`
line (the handshake the SDK's `Client(mode="legacy")` sends), reads the answer, then
`notifications/initialized` + `tools/list`, reads that answer, and kills the process.
The commands alternate run by run; medians are compared. No assertions.

Wall time is what the agent waits for, but on a busy machine it is noisy; the child's
CPU time (user + sys, from wait4, up to the kill) is the same work measured without the
waiting for a CPU, so the ratios are shown for both. Where even CPU time drifts (a
shared VM), `--valgrind` also counts the instructions each cold command executes from
exec to exit with only the `initialize` line on stdin (the server answers it, then sees
EOF and exits): one run each under `valgrind --tool=cachegrind`, deterministic to ~0.1 %
with PYTHONHASHSEED fixed, ~30 s per command. `--runs 0` skips the timed runs.

`--tree DIR` (repeatable) adds both roles run cold from another copy of the package (DIR
holds a `codexbridge/` directory, e.g. `git archive HEAD codexbridge | tar -x -C DIR`):
the process starts in DIR, so `-m codexbridge` imports that copy — before/after in one
run. Rows are labelled with DIR's last component.

    .venv/bin/python bench/bench_mcp.py [--runs 30] [--tree /tmp/before ...] [--valgrind]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BARE = "bare MCPServer (1 tool)"

BARE_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


server.run("stdio")
'''


def _protocol_version() -> str:
    """The newest handshake-era revision: what `mcp.Client(..., mode="legacy")` offers."""
    try:
        from mcp_types.version import LATEST_HANDSHAKE_VERSION
    except ImportError:  # an SDK without the constant
        return "2025-06-18"
    return LATEST_HANDSHAKE_VERSION


def _line(obj: dict[str, object]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


PROTOCOL_VERSION = _protocol_version()
INITIALIZE = _line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
    "clientInfo": {"name": "bench_mcp", "version": "0"}}})
INITIALIZED = _line({"jsonrpc": "2.0", "method": "notifications/initialized"})
TOOLS_LIST = _line({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})


@dataclass
class Samples:
    init: list[float] = field(default_factory=list)
    listed: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    tools: int = -1


def _read_answer(proc: subprocess.Popen[bytes], want_id: int, cmd: list[str]) -> dict[str, object]:
    assert proc.stdout is not None
    while True:
        raw = proc.stdout.readline()
        if not raw:
            err = proc.stderr.read() if proc.stderr else b""
            raise SystemExit(f"{cmd} closed stdout before answering id {want_id}: "
                             f"{err[-400:]!r}")
        msg = json.loads(raw)
        if msg.get("id") == want_id:
            if "result" not in msg:
                raise SystemExit(f"{cmd} answered id {want_id} with {msg!r}")
            result = msg["result"]
            assert isinstance(result, dict)
            return result


def _run_once(cmd: list[str], env: dict[str, str], cwd: Path, into: Samples) -> None:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        assert proc.stdin is not None
        proc.stdin.write(INITIALIZE)
        proc.stdin.flush()
        _read_answer(proc, 1, cmd)
        initialized = time.perf_counter() - start
        proc.stdin.write(INITIALIZED + TOOLS_LIST)
        proc.stdin.flush()
        tools = _read_answer(proc, 2, cmd).get("tools")
        listed = time.perf_counter() - start
    finally:
        proc.kill()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    into.init.append(initialized)
    into.listed.append(listed)
    into.cpu.append(usage.ru_utime + usage.ru_stime)
    into.tools = len(tools) if isinstance(tools, list) else -1


def _instructions(cmd: list[str], env: dict[str, str], cwd: Path) -> int:
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", *cmd], input=INITIALIZE,
                          capture_output=True, env={**env, "PYTHONHASHSEED": "0"}, cwd=cwd,
                          check=False)
    answer = json.loads(done.stdout.splitlines()[0]) if done.stdout else {}
    found = re.search(rb"I\s+refs:\s+([\d,]+)", done.stderr)
    if answer.get("id") != 1 or "result" not in answer or found is None:
        raise SystemExit(f"{cmd} under valgrind: {done.stdout[:200]!r} {done.stderr[-400:]!r}")
    return int(found.group(1).replace(b",", b""))


# name → (argv, cwd, extra environment)
Commands = dict[str, tuple[list[str], Path, dict[str, str]]]
COLD = {"CODEX_BRIDGE_MCP_WARM": "0"}


def _setup(home: str, trees: list[Path]) -> tuple[dict[str, str], Commands]:
    env = {**os.environ, "CODEX_BRIDGE_HOME": home,
           "XDG_RUNTIME_DIR": os.path.join(home, "run")}  # a start-up record of our own
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    for name in ("CODEX_BRIDGE_MCP_ROLE", "CODEX_BRIDGE_INBOX_DIR", "PYTHONPATH",
                 "CODEX_BRIDGE_MCP_WARM"):
        env.pop(name, None)
    # An installed package has its .pyc files; with PYTHONDONTWRITEBYTECODE set (or an
    # edit since the last run) every start would compile from source instead.
    for root in {REPO, *trees}:
        compileall.compile_dir(root / "codexbridge", quiet=1)
    commands: Commands = {
        BARE: ([sys.executable, "-c", BARE_SERVER], REPO, {})}
    for role in ("claude", "codex"):
        cmd = [sys.executable, "-m", "codexbridge", "mcp", "--role", role]
        commands[f"mcp --role {role} cold"] = (cmd, REPO, COLD)
        commands[f"mcp --role {role} warm"] = (cmd, REPO, {})
        for tree in trees:
            commands[f"mcp --role {role} cold @{tree.name}"] = (cmd, tree, COLD)
    return env, commands


def _warm_up(env: dict[str, str]) -> bool:
    """One start per role records its start-up; whether the records are there."""
    for role in ("claude", "codex"):
        _run_once([sys.executable, "-m", "codexbridge", "mcp", "--role", role], env, REPO,
                  Samples())
    found = Path(env["XDG_RUNTIME_DIR"], "codexbridge").glob("mcp-start-*.json")
    return len(list(found)) == 2


def bench(runs: int, warmup: int, env: dict[str, str], commands: Commands
          ) -> dict[str, Samples]:
    samples = {name: Samples() for name in commands}
    for _ in range(warmup):  # warm the page cache
        for cmd, cwd, extra in commands.values():
            _run_once(cmd, {**env, **extra}, cwd, Samples())
    for _ in range(runs):
        for name, (cmd, cwd, extra) in commands.items():  # interleaved: drift hits all alike
            _run_once(cmd, {**env, **extra}, cwd, samples[name])
    return samples


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30, help="runs of each command")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="also time both roles from this copy of the package")
    parser.add_argument("--valgrind", action="store_true",
                        help="also count instructions to the initialize answer")
    args = parser.parse_args()
    if args.valgrind and not shutil.which("valgrind"):
        parser.error("--valgrind: no valgrind on PATH")
    trees = [t.resolve() for t in args.tree]
    for tree in trees:
        if not (tree / "codexbridge" / "__main__.py").is_file():
            parser.error(f"--tree {tree}: no codexbridge/ package there")

    print(f"python {sys.version.split()[0]} at {sys.executable}; {os.cpu_count()} cpu(s); "
          f"protocolVersion {PROTOCOL_VERSION}")
    with tempfile.TemporaryDirectory(prefix="cb-bench-mcp-", dir="/tmp") as home:
        env, commands = _setup(home, trees)
        for tree in trees:
            print(f"@{tree.name} = the package in {tree}")
        if args.runs > 0:
            if not _warm_up(env):
                print("(no start-up record was written: the warm rows started cold)")
            _report(args.runs, bench(args.runs, args.warmup, env, commands))
        if args.valgrind:
            counts = {name: _instructions(cmd, {**env, **extra}, cwd)
                      for name, (cmd, cwd, extra) in commands.items() if extra or name == BARE}
            print("\ninstructions from exec to exit, initialize answered (valgrind, 1 run each)")
            for name, n in counts.items():
                print(f"    {name:30} {n / 1e6:9.1f} M   {n / counts[BARE]:5.3f}x   "
                      f"{(n - counts[BARE]) / 1e6:+7.1f} M vs bare")
    return 0


def _report(runs: int, r: dict[str, Samples]) -> None:
    bare_init, bare_cpu = _ms(r[BARE].init), _ms(r[BARE].cpu)
    print(f"\nspawn -> response, ms ({runs} runs each, interleaved; median unless noted)")
    print(f"    {'':30} {'initialize':>10} {'min':>7} {'p90':>7} {'tools/list':>10} "
          f"{'cpu':>7}   {'wall/bare':>9} {'cpu/bare':>8}")
    for name, s in r.items():
        init, cpu = _ms(s.init), _ms(s.cpu)
        p90 = sorted(s.init)[int(len(s.init) * 0.9)] * 1000
        print(f"    {name:30} {init:10.1f} {min(s.init) * 1000:7.1f} {p90:7.1f} "
              f"{_ms(s.listed):10.1f} {cpu:7.1f}   {init / bare_init:8.2f}x "
              f"{cpu / bare_cpu:7.2f}x   ({s.tools} tools)")
    print("\nover bare, median ms")
    for name, s in r.items():
        if name != BARE:
            print(f"    {name:30} wall {_ms(s.init) - bare_init:+7.1f}   "
                  f"cpu {_ms(s.cpu) - bare_cpu:+7.1f}")


if __name__ == "__main__":
    sys.exit(main())

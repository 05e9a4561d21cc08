"""What an ask costs as an MCP task, against the same ask as a blocking call (issue 26).

    .venv/bin/python bench/bench_tasks.py [--runs 15]

One `codexbridge mcp --role claude` over stdio (as Claude Code starts it), against a real
codex app-server and mock model, asked the same short turn two ways, alternating:
  blocking call  a client without the tasks extension: `tools/call` → the reply
  task path      a client with it (tests/support/task_client.py, shaped after the pinned
                 Claude Code): `tools/call` → the task handle, `tasks/get` at once and
                 then at the server's `pollIntervalMs` → `completed` with the reply
Figure: the median of each pair's ratio task / blocking, and the median time beyond the
blocking call (for a short turn it is mostly the wait for the next poll). The task path
also answers at once: `tools/call` → handle, reported beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp_types import CallToolResult  # noqa: E402

from bench.common import MISSING_BINARY, codex_binary  # noqa: E402
from tests.support.mock_codex import OfflineStack  # noqa: E402
from tests.support.task_client import MODERN, TaskHandle, Tasks, ask, until  # noqa: E402


def _server(home: str, url: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_BRIDGE_", "CLAUDE_CODE_")) and k != "CODEX_THREAD_ID"}
    env.update({"CODEX_BRIDGE_HOME": home, "CODEX_BRIDGE_URL": url, "PYTHONPATH": str(ROOT),
                "CLAUDECODE": "1"})  # an agent's words: a record, as under Claude Code
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "codexbridge", "mcp", "--role", "claude"],
                                 env=env, cwd=str(ROOT))


async def measure(home: str, url: str, thread_id: str, runs: int
                  ) -> tuple[list[float], list[float], list[float]]:
    blocking, tasked, handles = [], [], []
    server = _server(home, url)
    async with Client(server, mode=MODERN) as plain, \
            Client(server, mode=MODERN, extensions=[Tasks()]) as client:
        for i in range(runs + 1):  # the first pair warms both servers up: not counted
            t0 = time.perf_counter()
            out = await ask(plain, {"text": f"bench blocking {i}", "threadId": thread_id})
            t1 = time.perf_counter()
            assert isinstance(out, CallToolResult) and not out.is_error, out
            handle = await ask(client, {"text": f"bench task {i}", "threadId": thread_id})
            t2 = time.perf_counter()
            assert isinstance(handle, TaskHandle), handle
            done = await until(client, handle.task_id, "completed")
            t3 = time.perf_counter()
            reply = done["result"]["structuredContent"]["data"]["reply"]
            assert reply == f"MOCK REPLY: bench task {i}", reply
            if i:
                blocking.append(t1 - t0)
                tasked.append(t3 - t1)
                handles.append(t2 - t1)
    return blocking, tasked, handles


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    codex = codex_binary("bench_tasks")
    if codex is None:
        return MISSING_BINARY
    with OfflineStack(codex) as stack, tempfile.TemporaryDirectory() as home:
        os.chmod(home, 0o700)
        thread_id, _ = asyncio.run(stack.human_thread("bench setup"))
        blocking, tasked, handles = asyncio.run(measure(home, stack.url, thread_id,
                                                        args.runs))
    pairs = sorted(t / b for b, t in zip(blocking, tasked, strict=True))
    beyond = statistics.median(t - b for b, t in zip(blocking, tasked, strict=True))
    print(f"blocking call   : median {statistics.median(blocking) * 1000:7.1f} ms")
    print(f"task path       : median {statistics.median(tasked) * 1000:7.1f} ms "
          f"(handle after {statistics.median(handles) * 1000:.1f} ms)")
    print(f"ratio task / blocking {statistics.median(pairs):.3f}x  (pairs {pairs[0]:.2f}-"
          f"{pairs[-1]:.2f}); beyond the blocking call: {beyond * 1000:+.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Load in the shape of seed 000's real example — one master directing about a dozen
sessions — on the real codex 0.169.0: 12 threads on one app-server, 12 concurrent
`talk send`s whose replies go into 12 mailboxes, drained by 12 concurrent Stop hooks.
Every reply must land in the right mailbox, once. Then memory under a reply over the caps."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.host.limits import mail_max
from tests.support.mock_codex import MockResponsesServer
from tests.support.raw_client import RawClient, start_user_thread

pytestmark = pytest.mark.real_codex

SESSIONS = 12
STOP = {"cwd": "/proj", "hook_event_name": "Stop", "stop_hook_active": False}


def hook(name: str, n: int) -> str:
    """One Stop of the session listening on `name`; the block reason it printed."""
    payload = {**STOP, "session_id": f"sess-{name}", "prompt_id": f"p{n}"}
    proc = subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "hook", "--as", name],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=60,
                          env={**os.environ, "CODEX_BRIDGE_LIVE": "0"}, check=False)
    assert proc.returncode == 0
    return str(json.loads(proc.stdout)["reason"]) if proc.stdout.strip() else ""


async def test_twelve_sessions_twelve_sends_every_reply_once_in_its_mailbox(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer) -> None:
    env = {**os.environ, "CODEX_BRIDGE_URL": app_server.url, "CODEX_BRIDGE_LIVE": "0"}
    async with RawClient(app_server.url) as peer:
        threads = [await start_user_thread(peer, workdir, f"session {i:02d} starts")
                   for i in range(SESSIONS)]
    ids = [t.thread_id for t in threads]
    assert len(set(ids)) == SESSIONS
    started: dict[int, float] = {}
    receipts: dict[int, dict[str, Any]] = {}

    async def send(i: int) -> None:
        started[i] = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "codexbridge", "talk", "send", "--json", "--thread", ids[i],
            "--reply-to", f"m{i:02d}", f"job {i:02d}: run the suite", env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        assert proc.returncode == 0, err
        receipts[i] = json.loads(out)

    await asyncio.gather(*(send(i) for i in range(SESSIONS)))
    got: dict[int, list[str]] = {i: [] for i in range(SESSIONS)}
    arrived: dict[int, float] = {}

    def drain(i: int) -> None:
        deadline = time.monotonic() + 120
        n = 0
        while time.monotonic() < deadline and i not in arrived:
            reason = hook(f"m{i:02d}", n)
            n += 1
            if reason:
                got[i].append(reason)
                arrived[i] = time.monotonic()
            else:
                time.sleep(0.05)  # a poll interval between two stops, not a wait

    workers = [threading.Thread(target=drain, args=(i,)) for i in range(SESSIONS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for i in range(SESSIONS):
        did = receipts[i]["delivery_id"]
        assert len(got[i]) == 1, (i, got[i])
        block = got[i][0]
        assert block.count("Reply from Codex") == 1 and did in block
        assert f"MOCK REPLY: job {i:02d}: run the suite" in block
        for j in range(SESSIONS):
            if j != i:
                assert f"job {j:02d}:" not in block  # nobody else's reply
    # a last round of stops finds nothing: nothing duplicated, nothing left behind
    assert all(hook(f"m{i:02d}", 99) == "" for i in range(SESSIONS))
    latencies = sorted(arrived[i] - started[i] for i in range(SESSIONS))
    p50 = statistics.median(latencies)
    p95 = latencies[max(0, round(0.95 * len(latencies)) - 1)]
    print(f"\n12 sends → reply delivered by the Stop hook: p50 {p50:.2f} s, p95 {p95:.2f} s")


def _rss_of_run(argv: list[str], env: dict[str, str]) -> tuple[int, int]:
    """(exit code, peak RSS in KiB) of one process."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss


# Over the mail cap and the reply's 10 MiB capture, under one frame's cap (16 MiB): the
# biggest reply codexbridge carries (a bigger frame is refused: tests/security); the
# 100 MB case is bench/bench_flood.py's (memory targets are the benchmarks' job).
BIG = 15_000_000


async def test_memory_stays_bounded_under_a_reply_over_the_caps(
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer) -> None:
    from codexbridge.codex.endpoint import Reach
    from codexbridge.codex.protocol.threads import ThreadInfo
    from codexbridge.host.mailboxes import inbox_dir
    from codexbridge.inbox import peek as reading
    from codexbridge.messages.records import DeliveryStore
    from codexbridge.messages.to_codex import prepare

    env = {**os.environ, "CODEX_BRIDGE_URL": app_server.url}
    async with RawClient(app_server.url) as peer:
        user = await start_user_thread(peer, workdir, "first")
        thread = ThreadInfo.from_wire(
            (await peer.request("thread/read", {"threadId": user.thread_id}))["thread"])
    say = [sys.executable, "-m", "codexbridge", "talk", "say", "-q"]
    code, small = await asyncio.to_thread(_rss_of_run, [*say, "a small turn"], env)
    assert code == 0
    code, flood = await asyncio.to_thread(_rss_of_run, [*say, f"BIG:{BIG}"], env)
    assert code == 0
    growth = (flood - small) / 1024
    print(f"\ntalk say peak RSS: small turn {small / 1024:.0f} MiB, {BIG // 10**6} MB reply "
          f"{flood / 1024:.0f} MiB (+{growth:.0f} MiB)")
    # codex sends the finished message as one frame: that frame (bytes, text, parsed) is
    # the floor, ~3x its size; the thousands of deltas before it add nothing beyond the
    # 10 MiB capture (measured: +99 MiB for 24 MB, +59 MiB for 15 MB; a copy per delta
    # would be gigabytes)
    assert growth < 3 * BIG / 2**20 + 10 + 40, growth
    # the courier carrying a `talk send`, run as our child so its peak is measurable (it
    # adopts the record on start; with no idle grace it leaves once the delivery is done)
    receipt = prepare(f"BIG:{BIG}", thread, "caller", reply_to="flood",
                      reach=Reach(app_server.url))
    code, courier = await asyncio.to_thread(_rss_of_run, [
        sys.executable, "-m", "codexbridge.messages.courier"],
        {**env, "CODEX_BRIDGE_COURIER_IDLE": "0"})
    assert code == 0
    record = DeliveryStore().get(receipt.delivery.id)
    assert record is not None and record.state.value == "delivered"
    assert record.reply_bytes == BIG
    [mail] = reading.peek(inbox_dir(), "flood").mails
    assert len(mail.text.encode()) < mail_max(os.environ)  # under the mail cap
    assert "were kept" in mail.text
    print(f"courier peak RSS with a {BIG // 10**6} MB reply: {courier / 1024:.0f} MiB "
          f"(+{(courier - small) / 1024:.0f} MiB over the small talk say)")
    assert (courier - small) / 1024 < 500

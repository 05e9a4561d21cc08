"""Speed of `talk send`, as ratios against baselines measured in the same run.

    .venv/bin/python bench/bench_send.py [--runs 20] [--warmup 2]

One private real codex app-server and mock model (OfflineStack), one user thread, a
private CODEX_BRIDGE_HOME. Each round runs, one after the other, so machine noise hits
every command alike:

    codexbridge --version      the floor: interpreter + CLI start, nothing else
    codexbridge talk list      + connect, initialize, thread/loaded/list, thread/read
    codexbridge talk send      + record, hop, codex's queue entry, hand-over to the
                               resident courier (its receipt; then, untimed, until the
                               record says `delivered`: the reply is in the mailbox)
    codexbridge talk say       the same turn done blocking in one process (the same
                               envelope-wrapped text, so the mock's reply is as long)

(a) receipt: `talk send` process wall time (target < 1 s), against --version and list.
(b) courier overhead: send start → `delivered` in the record (the courier's own clock,
    same wall clock as ours) against the `talk say` process of the same turn
    (target ≤ 1.3×).
(c) twelve at once: twelve sends started together, one per thread, each until its reply
    is in the mailbox, against twelve `talk say` processes started together on the same
    threads — p95 against p95 (target ≤ 1.5×).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import MISSING_BINARY, codex_binary  # noqa: E402
from codexbridge.host.procs import pid_alive  # noqa: E402
from codexbridge.messages import envelope  # noqa: E402
from codexbridge.messages.records import Delivery, DeliveryStore  # noqa: E402
from tests.support.mock_codex import OfflineStack  # noqa: E402

MAILBOX = "bench"
RECEIPT_TARGET_MS = 1000.0
DELIVERY_TIMEOUT = 30.0
CLI = [sys.executable, "-m", "codexbridge"]


def _env(home: str, url: str) -> dict[str, str]:
    """Our environment minus anything that would route a reply or pick a conversation
    outside this run (a calling Claude or Codex session's variables, the user's state)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_BRIDGE_", "CLAUDE_CODE_")) and k != "CODEX_THREAD_ID"}
    env.update({"CODEX_BRIDGE_HOME": home, "CODEX_BRIDGE_URL": url,
                "PYTHONPATH": str(ROOT)})
    return env


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall-clock start, seconds, stdout) of one CLI process; exits on failure."""
    started = time.time()
    t0 = time.perf_counter()
    proc = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True,
                          check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"bench_send: `codexbridge {' '.join(args)}` exited "
                         f"{proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return started, elapsed, proc.stdout


def _settled(store: DeliveryStore, delivery_id: str) -> Delivery:
    """The record once final (polled: this part is not timed). The courier is resident:
    it stays for the next send, as it does for a user."""
    end = time.monotonic() + DELIVERY_TIMEOUT
    while time.monotonic() < end:
        record = store.get(delivery_id)
        if record is not None and record.state.final:
            return record
        time.sleep(0.005)
    raise SystemExit(f"bench_send: delivery {delivery_id} not settled after "
                     f"{DELIVERY_TIMEOUT:g} s: {store.get(delivery_id)}")


def _at(record: Delivery, state: str) -> float | None:
    return next((h["at"] for h in record.history if h.get("state") == state), None)


def _say_text(i: int) -> str:
    """What the courier hands codex for send `i`, with a header of the same length."""
    env = envelope.Envelope(envelope.CLAUDE, envelope.request_token(),
                            envelope.conversation_id(), 1, 4,
                            f'mailbox "{MAILBOX}" (the Claude Code session that asked)')
    return env.wrap(f"send {i}")


class Samples:
    def __init__(self) -> None:
        self.version: list[float] = []
        self.listing: list[float] = []
        self.receipt: list[float] = []
        self.say: list[float] = []
        self.delivered: list[float] = []  # send start -> `delivered`
        self.recorded: list[float] = []  # send start -> record written (queued)
        self.started: list[float] = []  # send start -> turn started (delivering)
        self.answering: list[float] = []  # send start -> first delta (awaiting-reply)
        self.receipt_states: dict[str, int] = {}
        self.unconfirmed = 0


def bench(runs: int, warmup: int, env: dict[str, str], store: DeliveryStore) -> Samples:
    s = Samples()
    for i in range(warmup + runs):
        keep = i >= warmup
        _, version, _ = _run(["--version"], env)
        _, listing, out = _run(["talk", "list", "--json"], env)
        assert len(json.loads(out)["threads"]) == 1, out
        text = f"send {i}"
        sent_at, receipt, out = _run(["talk", "send", "--json", "--reply-to", MAILBOX,
                                      "--timeout", "60", text], env)
        data = json.loads(out)
        record = _settled(store, data["delivery_id"])
        if record.state.value != "delivered" or not record.reply_preview.endswith(text):
            raise SystemExit(f"bench_send: delivery {record.id} ended {record.state}: "
                             f"{record.reason} {record.reply_preview[-200:]!r}")
        _, say, out = _run(["talk", "say", "-q", _say_text(i)], env)
        assert out.rstrip().endswith(f"send {i}"), out[-200:]
        if not keep:
            continue
        s.version.append(version)
        s.listing.append(listing)
        s.receipt.append(receipt)
        s.say.append(say)
        s.receipt_states[data["state"]] = s.receipt_states.get(data["state"], 0) + 1
        # Still `queued` with no queue entry: the courier did not report within the wait.
        s.unconfirmed += data["state"] == "queued" and data["submission_id"] is None
        for sink, state in ((s.recorded, "queued"), (s.started, "delivering"),
                            (s.answering, "awaiting-reply"), (s.delivered, "delivered")):
            at = _at(record, state)
            if at is not None:
                sink.append(at - sent_at)
    return s


def _ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000 if xs else float("nan")


def _p90(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, int(len(xs) * 0.9))] * 1000 if xs else float("nan")


def report(s: Samples, runs: int) -> None:
    version, listing, receipt = _ms(s.version), _ms(s.listing), _ms(s.receipt)
    print(f"\n(a) process wall time to exit, ms ({runs} rounds, interleaved)")
    print(f"    {'':28} {'median':>8} {'min':>8} {'p90':>8} {'max':>8}   {'/--version':>10} "
          f"{'/talk list':>10}")
    for name, xs in (("codexbridge --version", s.version), ("codexbridge talk list", s.listing),
                     ("codexbridge talk send", s.receipt)):
        print(f"    {name:28} {_ms(xs):8.1f} {min(xs) * 1000:8.1f} {_p90(xs):8.1f} "
              f"{max(xs) * 1000:8.1f}   "
              f"{_ms(xs) / version:9.2f}x {_ms(xs) / listing:9.2f}x")
    verdict = "ok" if _p90(s.receipt) < RECEIPT_TARGET_MS else "OVER"
    print(f"    talk send receipt: median {receipt:.1f} ms, p90 {_p90(s.receipt):.1f} ms "
          f"(target < {RECEIPT_TARGET_MS:.0f} ms: {verdict}); over talk list "
          f"{receipt - listing:+.1f} ms")
    states = ", ".join(f"{k} {v}" for k, v in sorted(s.receipt_states.items()))
    print(f"    receipts said: {states}; without codex's queue entry: {s.unconfirmed}")

    delivered, say = _ms(s.delivered), _ms(s.say)
    print(f"\n(b) one short turn, ms ({runs} rounds): send start -> record `delivered` vs the "
          f"`talk say` process")
    print(f"    talk say (blocking, same turn)   median {say:8.1f}  p90 {_p90(s.say):8.1f}")
    print(f"    talk send -> delivered           median {delivered:8.1f}  "
          f"p90 {_p90(s.delivered):8.1f}")
    print(f"    ratio send->delivered / say      {delivered / say:.2f}x   "
          f"courier overhead {delivered - say:+.1f} ms per delivery")
    print("    where send's time goes (median, from send start):")
    for name, xs in (("record written (queued)", s.recorded),
                     ("receipt returned", s.receipt),
                     ("turn started (delivering)", s.started),
                     ("first delta (awaiting-reply)", s.answering),
                     ("reply routed (delivered)", s.delivered)):
        print(f"        {name:32} {_ms(xs):8.1f}")


TWELVE = 12


def twelve(env: dict[str, str], store: DeliveryStore, threads: list[str],
           rounds: int) -> tuple[list[float], list[float]]:
    """Per round: twelve `talk send`s started together (one per thread), each timed to
    its reply in the mailbox (record `delivered`); then twelve `talk say`s started
    together on the same threads, each timed to its exit. Returns the two samples."""
    sends: list[float] = []
    says: list[float] = []
    for r in range(rounds):
        started = time.time()
        procs = [subprocess.Popen([*CLI, "talk", "send", "--json", "--reply-to", MAILBOX,
                                   "--thread", t, "--timeout", "60", f"twelve {r}.{i}"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for i, t in enumerate(threads)]
        ids = []
        for proc in procs:
            out, err = proc.communicate(120)
            if proc.returncode != 0:
                raise SystemExit(f"bench_send: twelve: send exited {proc.returncode}: {err}")
            ids.append(json.loads(out)["delivery_id"])
        for delivery_id in ids:
            record = _settled(store, delivery_id)
            at = _at(record, "delivered")
            if at is None:
                raise SystemExit(f"bench_send: twelve: {delivery_id} ended {record.state}")
            sends.append(at - started)
        t0 = time.perf_counter()
        procs = [subprocess.Popen([*CLI, "talk", "say", "-q", "--thread", t,
                                   _say_text(i)], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
                 for i, t in enumerate(threads)]
        for proc in procs:
            proc.wait(120)
            says.append(time.perf_counter() - t0)  # the last to finish sets the pace
            if proc.returncode != 0:
                raise SystemExit(f"bench_send: twelve: say exited {proc.returncode}")
    return sends, says


def _p95(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, int(len(xs) * 0.95))] * 1000 if xs else float("nan")


def report_twelve(sends: list[float], says: list[float], rounds: int) -> None:
    print(f"\n(c) twelve at once, one thread each, ms ({rounds} rounds of {TWELVE})")
    print(f"    talk say x12 (to exit)           p50 {_ms(says):8.1f}  p95 {_p95(says):8.1f}")
    print(f"    talk send x12 (to reply mailed)  p50 {_ms(sends):8.1f}  p95 {_p95(sends):8.1f}")
    print(f"    ratio twelve sends / says p95    {_p95(sends) / _p95(says):.2f}x")


def _stop_stragglers(store: DeliveryStore) -> None:
    """A courier still alive at the end (only after a failure): ours, by its pid."""
    for record in store.recent(500):
        pid = record.courier_pid
        if pid is not None and not record.state.final and pid_alive(pid):
            os.kill(pid, signal.SIGTERM)


async def _more_threads(stack: OfflineStack, n: int) -> list[str]:
    """`n` user threads, each with its first turn (one per project directory)."""
    base = stack.workdir
    out = []
    for i in range(n):
        stack.workdir = base.parent / f"p{i}"
        stack.workdir.mkdir(exist_ok=True)
        thread_id, _ = await stack.human_thread(f"thread {i}")
        out.append(thread_id)
    stack.workdir = base
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20, help="measured rounds")
    ap.add_argument("--warmup", type=int, default=2, help="rounds not counted")
    ap.add_argument("--twelve", type=int, default=3, help="rounds of twelve at once")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    codex = codex_binary("bench_send")
    if codex is None:
        return MISSING_BINARY
    print(f"python {sys.version.split()[0]} at {sys.executable}; {os.cpu_count()} cpu(s)")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cb-bench-send-") as home, \
            OfflineStack(codex) as stack:
        asyncio.run(stack.human_thread("bench setup"))
        store = DeliveryStore(Path(home) / "deliveries")
        env = _env(home, stack.url)
        try:
            samples = bench(args.runs, args.warmup, env, store)
            threads = asyncio.run(_more_threads(stack, TWELVE))
            sends, says = twelve(env, store, threads, args.twelve)
        finally:
            _stop_stragglers(store)
    report(samples, args.runs)
    report_twelve(sends, says, args.twelve)
    print(f"\ntotal {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

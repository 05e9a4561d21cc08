"""The human's Esc, on the journeys' world (README's set-up, codex's own daemon, both real
TUIs in tmux, the mock models on loopback): how long until the asker is told, each beside
what carrying an answer the same way costs, measured in the same run, round by round:

    .venv/bin/python bench/bench_human.py [--runs 5]

(1) Esc in the Codex TUI while Claude's request runs → Claude told: the key press until
    Claude's mock Messages API receives the request carrying "INTERRUPTED: your request
    ID". Baseline: the same kind of request left alone — Codex's final message until
    Claude's request carries it (the answer routed live).
(2) Esc in Claude's TUI while it answers Codex's request → Codex told: the key press
    (Claude's words on screen, still streaming) until Codex's mock Responses API gets the
    turn saying the human interrupted. Baseline: the same kind of request left alone —
    Claude's final message until Codex's model gets the reply turn.

Each is printed in ms and as a ratio to its baseline: telling the asker of an Esc should
cost about what carrying an answer does (the courier looks at a watched session every
second, so (2) carries up to that much on top).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.tmux_tui import ClaudeTUI, CodexTUI  # noqa: E402
from tests.support.world import World  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from bench_journey import _fresh, both_tuis, on_screen, pinned_world, until  # noqa: E402


class Bench:
    def __init__(self, world: World, codex: CodexTUI, claude: ClaudeTUI, thread: str) -> None:
        self.world, self.codex, self.claude, self.thread = world, codex, claude, thread
        self.rows: dict[str, list[float]] = {k: [] for k in (
            "Esc in Codex → Claude told", "answer → Claude",
            "Esc in Claude → Codex told", "answer → Codex")}

    def _send(self, text: str) -> str:
        done = self.world.run("codexbridge", "talk", "send", "--json", "--reply-to",
                              self._mailbox(), text, cwd=self.world.projects["project"])
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["delivery_id"])

    def esc_in_codex(self, n: int) -> None:
        key = f"benchesc{n}"
        delivery = self._send(f"HOLD:{key} B1-{n} Claude asks for the status")
        self.world.codex_mock.wait_held(key, 60)
        until(lambda: on_screen(self.codex, "MOCK REP"))  # the human sees Codex at work
        t0 = time.time()
        self.codex.key("Escape")
        got = self.world.claude_mock.wait_for(
            lambda r: f"INTERRUPTED: your request {delivery}" in _fresh(r), 60)
        assert got is not None, ("Claude was never told of the Esc", delivery,
                                 [_fresh(r)[-300:] for r in self.world.claude_mock.requests[-3:]],
                                 self.world.run("codexbridge", "talk", "status", "--json",
                                                delivery).stdout[-1500:],
                                 (self.world.bridge_home / "logs" / "courier.log")
                                 .read_text()[-1500:])
        self.rows["Esc in Codex → Claude told"].append(got.at - t0)
        self.world.codex_mock.release(key)

    def answer_to_claude(self, n: int) -> None:
        text = f"B2-{n} Claude asks for the status"
        self._send(text)
        answer = self.world.codex_mock.wait_for_request(
            lambda r: r.is_model_call and text in (r.user_text or ""), 60)
        until(lambda: bool(answer.done))
        got = self.world.claude_mock.wait_for(lambda r: "MOCK REPLY: " in _fresh(r)
                                              and text in _fresh(r), 60)
        assert got is not None
        self.rows["answer → Claude"].append(got.at - answer.done[0])

    def esc_in_claude(self, n: int) -> None:
        question = f"B3-{n} Codex asks (bench Esc): which branch has the fix?"
        held, release = threading.Event(), threading.Event()

        def hold(req: object) -> None:
            if question in getattr(req, "tail_text", lambda: "")() and not release.is_set():
                held.set()
                release.wait(120)
        self.world.claude_mock.mid_stream = hold
        try:
            rid = self._push(question)
            assert held.wait(60), "Claude never started answering"
            until(lambda: on_screen(self.claude, f"CLAUDE ANSWER to {rid}"))
            t0 = time.monotonic()
            self.claude.key("Escape")
            call = self.world.codex_mock.wait_for_request(
                lambda c: bool(c.user_text) and rid in str(c.user_text)
                and "the human interrupted" in str(c.user_text), 60)
            assert call is not None, "Codex was never told of the Esc"
            self.rows["Esc in Claude → Codex told"].append(call.received_at - t0)
        finally:
            release.set()
            self.world.claude_mock.mid_stream = None

    def answer_to_codex(self, n: int) -> None:
        question = f"B4-{n} Codex asks: anything left?"
        rid = self._push(question)
        answered = self.world.claude_mock.wait_for(lambda r: question in _fresh(r), 60)
        assert answered is not None
        until(lambda: answered.done_at is not None)
        done_wall, done_mono = float(answered.done_at or 0), time.monotonic()
        offset = time.time() - done_mono  # the mock Responses API stamps monotonic time
        call = self.world.codex_mock.wait_for_request(
            lambda c: bool(c.user_text) and f"CLAUDE ANSWER to {rid}" in str(c.user_text), 60)
        assert call is not None
        self.rows["answer → Codex"].append(call.received_at + offset - done_wall)

    def _push(self, question: str) -> str:
        done = self.world.run("codexbridge", "inbox", "push", "--json", "--expect-reply",
                              "--thread", self.thread, question,
                              cwd=self.world.projects["project"])
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["request"])

    def _mailbox(self) -> str:
        for path in Path(self.world.bridge_home / "inbox").glob("*.session.json"):
            return path.name[: -len(".session.json")]
        raise SystemExit("bench_human: no Claude session listens")


def _ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000 if xs else float("nan")


def report(b: Bench, runs: int) -> None:
    print(f"\nthe human's Esc → the asker told, ms (median of {runs}, interleaved with "
          "an answer carried the same way)")
    for what, base in (("Esc in Codex → Claude told", "answer → Claude"),
                       ("Esc in Claude → Codex told", "answer → Codex")):
        ratio = _ms(b.rows[what]) / _ms(b.rows[base])
        print(f"    {what:28} {_ms(b.rows[what]):8.1f}   baseline ({base}) "
              f"{_ms(b.rows[base]):8.1f}")
        print(f"    human {what}: {_ms(b.rows[what]):.0f} ms, ratio {ratio:.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    world = pinned_world("bench_human")
    if world is None:
        return 3
    t0 = time.monotonic()
    with world:
        bench = Bench(world, *both_tuis(world))
        try:
            for n in range(args.runs + 1):
                sizes = {k: len(v) for k, v in bench.rows.items()}
                bench.answer_to_claude(n)
                bench.esc_in_codex(n)
                bench.answer_to_codex(n)
                bench.esc_in_claude(n)
                if n == 0:  # the first round warms everything up
                    for k, size in sizes.items():
                        del bench.rows[k][size:]
        except (AssertionError, SystemExit, TimeoutError) as exc:
            import traceback

            traceback.print_exc()
            print(f"bench_human: a round failed: {exc!r}", file=sys.stderr)
            return 1
    report(bench, args.runs)
    print(f"\ntotal {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The latencies a user feels, on the journeys' world (README's set-up, codex's own daemon,
both real TUIs in tmux, the mock models on loopback), each beside its floor measured in
the same run, interleaved round by round:

    .venv/bin/python bench/bench_journey.py [--runs 8]

(1) Claude's send → the message rendered in the Codex TUI: `codexbridge talk send`
    started (as Claude's Bash tool starts it) until its text shows on the TUI screen.
    Floor: a client already connected and joined queues the same kind of message
    (thread/queue/add) until it shows. Target ≤ 0.5 s beyond the floor.
(2) Codex's final message → Claude's next model request, live: the mock Responses API
    sending the last frame of Codex's answer until Claude's mock Messages API receives
    the request carrying it. Floor: this process pushes a mail of the same size into the
    session in-process (no courier, no Python start) until Claude's request carries it.
    Target ≤ 0.3 s beyond the floor.
(3) Claude's final message → the reply turn rendered in the TUI: Claude's mock sending
    the last event of its answer to Codex's request until the reply turn shows on the
    Codex TUI. Floor: as (1). Target ≤ 1.0 s beyond the floor.
(4) `talk send` → receipt: the process's wall time (no floor; target < 1 s).

Screens are read every 20 ms: a reading carries up to that much noise, both sides alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codexbridge.host.binaries import pinned_claude, pinned_codex  # noqa: E402
from tests.support.mock_claude import peer_answer  # noqa: E402
from tests.support.tmux_tui import ClaudeTUI, CodexTUI  # noqa: E402
from tests.support.world import World  # noqa: E402

POLL = 0.02
TARGETS = {"send→TUI": 0.5, "Codex→Claude live": 0.3, "Claude→reply in TUI": 1.0}


def until(probe: object, timeout: float = 60.0) -> float:
    """time.time() when `probe()` first holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():  # type: ignore[operator]
            return time.time()
        time.sleep(POLL)
    raise SystemExit(f"bench_journey: gave up waiting for {probe}")


def on_screen(tui: CodexTUI | ClaudeTUI, text: str) -> bool:
    return text in " ".join(tui.capture(scrollback=True).split())


class Bench:
    def __init__(self, world: World, codex: CodexTUI, claude: ClaudeTUI, thread: str) -> None:
        self.world, self.codex, self.claude, self.thread = world, codex, claude, thread
        self.rows: dict[str, list[float]] = {k: [] for k in (
            "send→TUI", "floor: queued→TUI", "Codex→Claude live", "floor: push→Claude",
            "Claude→reply in TUI", "receipt")}

    def send_to_tui(self, n: int) -> None:
        text = f"J1-{n} Claude asks for the status"
        t0 = time.time()
        done = self.world.run("codexbridge", "talk", "send", "--json", "--reply-to",
                              self._mailbox(), text, cwd=self.world.projects["project"])
        receipt = time.time() - t0
        assert done.returncode == 0, done.stderr
        seen = until(lambda: on_screen(self.codex, text))
        self.rows["send→TUI"].append(seen - t0)
        self.rows["receipt"].append(receipt)
        # (2): the courier routes Codex's answer into Claude, live
        # (the TUI shows the message before codex asks the model about it)
        answer = self.world.codex_mock.wait_for_request(
            lambda r: r.is_model_call and text in (r.user_text or ""), 60)
        until(lambda: bool(answer.done))
        got = self.world.claude_mock.wait_for(lambda r: "MOCK REPLY: " in _fresh(r)
                                              and text in _fresh(r), 60)
        assert got is not None
        self.rows["Codex→Claude live"].append(got.at - answer.done[0])

    async def floor_queue(self, client: object, n: int) -> None:
        from codexbridge.codex.turn import SayProgress, queue_message

        text = f"F1-{n} the floor"
        t0 = time.time()
        await queue_message(client, self.thread, text, SayProgress())  # type: ignore[arg-type]
        seen = await asyncio.to_thread(until, lambda: on_screen(self.codex, text))
        self.rows["floor: queued→TUI"].append(seen - t0)

    def floor_push(self, n: int) -> None:
        from codexbridge.messages import to_claude as service

        text = f"F2-{n} MOCK REPLY: a mail of about the size of Codex's answer"
        t0 = time.time()
        service.push(text, to=self._mailbox(), sender="codex", inbox=self._inbox())
        got = self.world.claude_mock.wait_for(lambda r: text in _fresh(r), 60)
        assert got is not None
        self.rows["floor: push→Claude"].append(got.at - t0)

    def claude_answers(self, n: int) -> None:
        question = f"J3-{n} Codex asks: anything left?"
        done = self.world.run("codexbridge", "inbox", "push", "--json", "--expect-reply",
                              "--thread", self.thread, question,
                              cwd=self.world.projects["project"])
        assert done.returncode == 0, done.stderr
        request = json.loads(done.stdout)["request"]
        answered = self.world.claude_mock.wait_for(lambda r: question in _fresh(r), 60)
        assert answered is not None
        until(lambda: answered.done_at is not None)
        seen = until(lambda: on_screen(self.codex, f"CLAUDE ANSWER to {request}"))
        self.rows["Claude→reply in TUI"].append(seen - float(answered.done_at or 0))

    def _inbox(self) -> str:
        return str(self.world.bridge_home / "inbox")

    def _mailbox(self) -> str:
        for path in Path(self._inbox()).glob("*.session.json"):
            return path.name[: -len(".session.json")]
        raise SystemExit("bench_journey: no Claude session listens")


def _fresh(req: object) -> str:
    from tests.journeys.conftest import fresh_text

    return fresh_text(req)  # type: ignore[arg-type]


def _ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000 if xs else float("nan")


def report(b: Bench, runs: int) -> None:
    print(f"\nlatencies a user feels, ms (median of {runs}, interleaved with their floors)")
    pairs = (("send→TUI", "floor: queued→TUI"), ("Codex→Claude live", "floor: push→Claude"),
             ("Claude→reply in TUI", "floor: queued→TUI"))
    for what, floor in pairs:
        beyond = (_ms(b.rows[what]) - _ms(b.rows[floor])) / 1000
        verdict = "ok" if beyond <= TARGETS[what] else "OVER"
        print(f"    {what:24} {_ms(b.rows[what]):8.1f}   floor ({floor}) "
              f"{_ms(b.rows[floor]):8.1f}   beyond {beyond * 1000:+8.1f}  "
              f"(target ≤ {TARGETS[what] * 1000:.0f}: {verdict})")
        print(f"    journey {what} beyond floor: {beyond * 1000:+.1f} ms")
    print(f"    talk send receipt        {_ms(b.rows['receipt']):8.1f}   (target < 1000)")


async def _floor_client(world: World, thread: str) -> object:
    from codexbridge.codex.client import AppServerClient
    from codexbridge.codex.threads import join

    client = AppServerClient(world.daemon_url, client_name="bench-floor")
    await client.__aenter__()
    await join(client, thread)
    return client


def pinned_world(name: str) -> World | None:
    """README's world on the pinned codex and Claude Code (None, said, when missing)."""
    codex, claude = pinned_codex(), pinned_claude()
    if codex is None or claude is None:
        print(f"{name}: pinned codex / Claude Code missing; run scripts/install-binaries",
              file=sys.stderr)
        return None
    return World(str(codex), str(claude), responder=peer_answer)


def both_tuis(world: World) -> tuple[CodexTUI, ClaudeTUI, str]:
    """README's set-up in `world`: the Codex TUI with the human's first message, Claude
    Code in the project listening; and the thread."""
    world.setup()
    tui = world.codex_tui("project")
    tui.wait_ready(60)
    tui.send("hello from the human")
    tui.wait_for_text("MOCK REPLY: hello from the human", 60)
    session = world.claude_tui("project")
    session.wait_ready(60)
    until(lambda: any(Path(world.bridge_home / "inbox").glob("*.session.json")))
    listed = json.loads(world.run("codexbridge", "talk", "list", "--json",
                                  cwd=world.projects["project"]).stdout)
    return tui, session, listed["threads"][0]["id"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=8)
    args = ap.parse_args()
    world = pinned_world("bench_journey")
    if world is None:
        return 3
    t0 = time.monotonic()
    with world:
        bench = Bench(world, *both_tuis(world))
        loop = asyncio.new_event_loop()
        client = loop.run_until_complete(_floor_client(world, bench.thread))
        try:
            for n in range(args.runs + 1):
                keep = n > 0  # the first round warms everything up
                sizes = {k: len(v) for k, v in bench.rows.items()}
                loop.run_until_complete(bench.floor_queue(client, n))
                bench.send_to_tui(n)
                bench.floor_push(n)
                bench.claude_answers(n)
                if not keep:
                    for k, size in sizes.items():
                        del bench.rows[k][size:]
        except (AssertionError, SystemExit) as exc:
            import traceback

            traceback.print_exc()
            print(f"bench_journey: a round failed: {exc!r}", file=sys.stderr)
            return 1
        finally:
            loop.run_until_complete(
                client.__aexit__(None, None, None))  # type: ignore[attr-defined]
            loop.close()
    report(bench, args.runs)
    print(f"\ntotal {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

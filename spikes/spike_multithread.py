"""Two threads in two projects on one app-server, driven at the same time.

Each thread keeps its own cwd, and bridge turns run concurrently on one connection (so
every subscription sees both threads' events) never pick up the other thread's reply.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.protocol.enums import ApprovalPolicy, TurnOutcome
from codexbridge.codex.protocol.generated import methods as m
from codexbridge.codex.turn import SayResult, say
from codexbridge.doctor.offline_stack import write_codex_home
from tests.support.mock_codex import OfflineStack

from .scoreboard import WAIT, Scoreboard, run_spike

# SLOW and a few deltas long, so the two turns really overlap on the wire.
TEXTS = ("SLOW alpha asks first " + "a" * 24, "SLOW beta asks second " + "b" * 24)


class TwoProjectStack(OfflineStack):
    """The offline stack with a second trusted project next to the first."""

    def __init__(self, codex_bin: str) -> None:
        super().__init__(codex_bin)
        self.second = self.base / "project-two"

    def prepare(self) -> TwoProjectStack:
        super().prepare()
        self.second.mkdir(parents=True, exist_ok=True)
        # An untrusted cwd changes codex's approval behaviour; trust both alike.
        write_codex_home(self.codex_home, self.mock.url, [self.workdir, self.second])
        return self


async def _user_thread(client: AppServerClient, cwd: Path, text: str) -> tuple[str, str, SayResult]:
    started = await client.request(m.THREAD_START, {"cwd": str(cwd), "threadSource": "user"})
    thread_id = str(started["thread"]["id"])
    first = await say(client, thread_id, text, join_first=False, timeout=WAIT)
    return thread_id, str(started["thread"]["cwd"]), first


async def body(board: Scoreboard, stack: OfflineStack) -> None:
    assert isinstance(stack, TwoProjectStack)
    dirs = (stack.workdir, stack.second)
    async with AppServerClient(stack.url, client_name="spike-human") as human:
        with board.section("two threads started concurrently"):
            made = await asyncio.gather(*(_user_thread(human, d, f"first in {d.name}")
                                          for d in dirs))
            ids = [t for t, _, _ in made]
            board.check("two distinct threads", len(set(ids)) == 2, f"ids={ids}")
            for (tid, cwd, first), d in zip(made, dirs, strict=True):
                board.check(f"first turn in {d.name} replies to its own text",
                            first.status is TurnOutcome.COMPLETED
                            and first.reply == f"MOCK REPLY: first in {d.name}",
                            f"status={first.status} reply={first.reply!r}")
                board.check(f"thread/start reports cwd {d.name}", cwd == str(d),
                            f"cwd={cwd} thread={tid}")

        async with AppServerClient(stack.url, client_name="spike-bridge") as bridge:
            with board.section("concurrent bridge turns"):
                results = await asyncio.gather(*(
                    say(bridge, tid, text, approvals=ApprovalPolicy.DECLINE, timeout=WAIT)
                    for tid, text in zip(ids, TEXTS, strict=True)))
                for result, tid, text, d in zip(results, ids, TEXTS, dirs, strict=True):
                    board.check(f"say() in {d.name} gets its own reply",
                                result.status is TurnOutcome.COMPLETED
                                and result.thread_id == tid
                                and result.reply == f"MOCK REPLY: {text}",
                                f"status={result.status} reply={result.reply!r}")
                calls = {c.user_text: c for c in stack.mock.model_calls}
                a, b = (calls.get(t) for t in TEXTS)
                board.check("the two model calls overlapped in time",
                            a is not None and b is not None
                            and abs(a.received_at - b.received_at) < 0.5,
                            "the turns ran one after the other: this spike proves nothing")
                for text, d, other in ((TEXTS[0], dirs[0], dirs[1]),
                                       (TEXTS[1], dirs[1], dirs[0])):
                    body_text = str(calls[text].body) if text in calls else ""
                    # The model learns the cwd from the <environment_context> of its input.
                    board.check(f"the model call for {d.name} names only its own cwd",
                                f"<cwd>{d}</cwd>" in body_text
                                and f"<cwd>{other}</cwd>" not in body_text,
                                f"no <cwd>{d}</cwd> in the request")

            with board.section("each thread reports its own cwd and turns"):
                for tid, d, result, other in zip(ids, dirs, results, reversed(results),
                                              strict=True):
                    read = await bridge.request(m.THREAD_READ, {"threadId": tid,
                                                                "includeTurns": True})
                    thread = read["thread"]
                    turns = [t["id"] for t in thread.get("turns") or []]
                    board.check(f"thread/read of {d.name} reports its cwd",
                                thread["cwd"] == str(d), f"cwd={thread['cwd']}")
                    board.check(f"thread/read of {d.name} holds its turn, not the other's",
                                result.turn_id in turns and other.turn_id not in turns,
                                f"turns={turns}")


def main() -> int:
    return run_spike("multithread", body, stack_type=TwoProjectStack)


if __name__ == "__main__":
    sys.exit(main())

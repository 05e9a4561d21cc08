"""Two clients on one thread: A starts it (the TUI's place), B joins it (the bridge's).

Both see the thread; B's turn streams to A item by item; a client that resumes while a
turn runs (A again, or a newcomer C) is told the thread is active and still gets the
whole turn.
"""

from __future__ import annotations

import sys
from typing import Any

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.protocol.enums import ApprovalPolicy, TurnOutcome
from codexbridge.codex.protocol.generated import methods as m
from codexbridge.codex.threads import join
from codexbridge.codex.turn import say
from tests.support.mock_codex import OfflineStack

from .scoreboard import WAIT, Event, Recorder, Scoreboard, run_spike, text_input, turn_id_of

SLOW_TEXT = "SLOW mid-turn " + "y" * 60  # about 3 s of deltas: time to resume mid-stream


def _item(event: Event) -> dict[str, Any]:
    item = event.params.get("item")
    return item if isinstance(item, dict) else {}


def _user_text(item: dict[str, Any]) -> str:
    return "".join(str(part.get("text", "")) for part in item.get("content") or []
                   if isinstance(part, dict))


def _of_turn(turn_id: str | None) -> Any:
    return lambda e: turn_id_of(e) == turn_id


async def body(board: Scoreboard, stack: OfflineStack) -> None:
    async with AppServerClient(stack.url, client_name="spike-a") as a, \
            AppServerClient(stack.url, client_name="spike-b") as b:
        rec_a = Recorder(a)
        started = await a.request(m.THREAD_START, {"cwd": str(stack.workdir),
                                                   "threadSource": "user"})
        thread_id = str(started["thread"]["id"])
        # thread/resume needs a rollout, which only the first turn writes.
        first = await say(a, thread_id, "first turn from A", join_first=False, timeout=WAIT)
        board.check("A's first turn completes", first.status is TurnOutcome.COMPLETED,
                    f"status={first.status} error={first.error}")

        with board.section("both clients see the thread"):
            await join(b, thread_id)
            for name, client in (("A", a), ("B", b)):
                loaded = await client.request(m.THREAD_LOADED_LIST, {})
                board.check(f"thread/loaded/list from {name} lists the thread",
                            thread_id in loaded["data"], f"data={loaded['data']}")
                read = await client.request(m.THREAD_READ, {"threadId": thread_id})
                board.check(f"thread/read from {name} reads the thread",
                            read["thread"]["id"] == thread_id
                            and read["thread"]["threadSource"] == "user",
                            f"thread={read['thread']}")

        with board.section("B's turn streams to A"):
            since = rec_a.mark()
            text = "hello from B"
            result = await say(b, thread_id, text, approvals=ApprovalPolicy.DECLINE,
                               timeout=WAIT)
            board.check("B's turn completes with the mock's reply",
                        result.status is TurnOutcome.COMPLETED
                        and result.reply == f"MOCK REPLY: {text}",
                        f"status={result.status} reply={result.reply!r}")
            mine = _of_turn(result.turn_id)
            done = await rec_a.wait(m.TURN_COMPLETED, since=since, where=mine)
            board.check("A gets turn/completed with B's turn id",
                        done.params["turn"]["status"] == "completed", f"{done.params}")
            board.check("A gets turn/started for B's turn",
                        len(rec_a.select(m.TURN_STARTED, since=since, where=mine)) == 1)
            completed = [_item(e) for e in rec_a.select(m.ITEM_COMPLETED, since=since,
                                                        where=mine)]
            users = [i for i in completed if i.get("type") == "userMessage"]
            board.check("A sees B's userMessage item",
                        [_user_text(i) for i in users] == [text], f"userMessages={users}")
            agents = [str(i.get("text")) for i in completed if i.get("type") == "agentMessage"]
            deltas = "".join(str(e.params.get("delta", "")) for e in rec_a.select(
                m.ITEM_AGENT_MESSAGE_DELTA, since=since, where=mine))
            board.check("A's agentMessage deltas concatenate to the final text",
                        agents == [result.reply] and deltas == result.reply,
                        f"deltas={deltas!r} final={agents!r}")
            started_ids = {_item(e).get("id") for e in rec_a.select(
                m.ITEM_STARTED, since=since, where=mine)}
            board.check("A gets item/completed for every item/started",
                        started_ids == {i.get("id") for i in completed},
                        f"started={started_ids} completed={[i.get('id') for i in completed]}")

        with board.section("resume mid-turn"):
            since = rec_a.mark()
            turn = await b.request(m.TURN_START, {"threadId": thread_id,
                                                  "input": text_input(SLOW_TEXT)})
            turn_id = str(turn["turn"]["id"])
            mine = _of_turn(turn_id)
            await rec_a.wait(m.ITEM_AGENT_MESSAGE_DELTA, since=since, where=mine)
            async with AppServerClient(stack.url, client_name="spike-c") as c:
                rec_c = Recorder(c)
                resumed_a = await join(a, thread_id)
                resumed_c = await join(c, thread_id)
                for name, resumed in (("A", resumed_a), ("C (new client)", resumed_c)):
                    board.check(f"{name}'s thread/resume mid-turn reports the thread active",
                                resumed.thread is not None and resumed.thread.busy,
                                "status=" + (resumed.thread.status_label
                                             if resumed.thread is not None else "no thread"))
                reply = f"MOCK REPLY: {SLOW_TEXT}"
                for name, rec, start in (("A", rec_a, since), ("C (new client)", rec_c, 0)):
                    done = await rec.wait(m.TURN_COMPLETED, since=start, where=mine)
                    finals = [str(_item(e).get("text")) for e in rec.select(
                        m.ITEM_COMPLETED, since=start, where=mine)
                        if _item(e).get("type") == "agentMessage"]
                    board.check(f"{name} gets the running turn's end and final text",
                                done.params["turn"]["status"] == "completed"
                                and finals == [reply],
                                f"status={done.params['turn']['status']} finals={finals!r}")
                rec_c.close()
            # A was subscribed all along: a second subscription must not double the stream.
            deltas = "".join(str(e.params.get("delta", "")) for e in rec_a.select(
                m.ITEM_AGENT_MESSAGE_DELTA, since=since, where=mine))
            board.check("A's re-resume neither doubles nor drops deltas",
                        deltas == reply
                        and len(rec_a.select(m.TURN_COMPLETED, since=since, where=mine)) == 1,
                        f"deltas={deltas!r}")
        rec_a.close()


def main() -> int:
    return run_spike("multiclient", body)


if __name__ == "__main__":
    sys.exit(main())

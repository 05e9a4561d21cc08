"""`turn/steer` and `turn/interrupt` on a running SLOW turn (REPORT sections 3-4).

A steer joins the running turn (same id, no new turn/started), cuts the stream and
resamples with the steered text as the last user message; an interrupt ends the turn as
"interrupted" at once. Both refuse a wrong turn id and an idle thread.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable
from typing import Any

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.protocol.enums import ApprovalPolicy, TurnOutcome
from codexbridge.codex.protocol.generated import methods as m
from codexbridge.codex.threads import join
from codexbridge.codex.turn import say
from codexbridge.errors import RpcError
from tests.support.mock_codex import MockRequest, OfflineStack

from .scoreboard import WAIT, Event, Recorder, Scoreboard, run_spike, text_input, turn_id_of

# 0.25 s per 8-character delta: about 7 s if nobody cuts it, so it is surely still
# streaming when the steer or the interrupt lands.
SLOW_TEXT = "SLOW " + "x" * 200
STEER_TEXT = "steered text S1"
BOGUS_TURN = "01a230aa-0000-7000-8000-000000000000"
INTERRUPT_LIMIT = 5.0


async def _refusal(call: Awaitable[Any]) -> RpcError | None:
    try:
        await call
    except RpcError as exc:
        return exc
    return None


def _refused(board: Scoreboard, name: str, error: RpcError | None, starts: str) -> None:
    board.check(name, error is not None and error.rpc_code == -32600
                and error.message.startswith(starts),
                "accepted" if error is None else f"{error.rpc_code} {error.message!r}")


def _items(rec: Recorder, method: str, since: int, turn_id: str, kind: str) -> list[Any]:
    return [e.params["item"] for e in rec.select(
        method, since=since, where=lambda e: turn_id_of(e) == turn_id)
        if e.params["item"].get("type") == kind]


def _user_texts(call: MockRequest) -> list[str]:
    return [str(part.get("text", "")) for item in call.body.get("input", [])
            if isinstance(item, dict) and item.get("role") == "user"
            for part in item.get("content") or [] if isinstance(part, dict)]


async def _start_slow(client: AppServerClient, rec: Recorder,
                      thread_id: str) -> tuple[str, int]:
    """Start a SLOW turn and return once it is streaming: (turn id, recorder mark)."""
    since = rec.mark()
    turn = await client.request(m.TURN_START, {"threadId": thread_id,
                                               "input": text_input(SLOW_TEXT)})
    turn_id = str(turn["turn"]["id"])
    await rec.wait(m.ITEM_AGENT_MESSAGE_DELTA, since=since,
                   where=lambda e: turn_id_of(e) == turn_id)
    return turn_id, since


async def _steer(board: Scoreboard, stack: OfflineStack, c: AppServerClient, rec: Recorder,
                 thread_id: str) -> None:
    turn_id, since = await _start_slow(c, rec, thread_id)
    wrong = await _refusal(c.request(m.TURN_STEER, {
        "threadId": thread_id, "input": text_input("never sent"),
        "expectedTurnId": BOGUS_TURN}))
    _refused(board, "steer with a wrong expectedTurnId is refused", wrong,
             "expected active turn id")

    steered = await c.request(m.TURN_STEER, {"threadId": thread_id,
                                             "input": text_input(STEER_TEXT),
                                             "expectedTurnId": turn_id})
    board.check("turn/steer returns the running turn's id", steered == {"turnId": turn_id},
                f"result={steered} running={turn_id}")
    call = await asyncio.to_thread(stack.mock.wait_for_request,
                                   lambda r: r.is_model_call and r.user_text == STEER_TEXT,
                                   WAIT)
    users = _user_texts(call)
    board.check("the next model request ends with the steered text, after the original",
                users[-2:] == [SLOW_TEXT, STEER_TEXT], f"user messages={users[-3:]}")

    done = await rec.wait(m.TURN_COMPLETED, since=since,
                          where=lambda e: turn_id_of(e) == turn_id)
    finals = [i.get("text") for i in _items(rec, m.ITEM_COMPLETED, since, turn_id,
                                            "agentMessage")]
    board.check("the turn completes under the same id with the steered reply",
                done.params["turn"]["status"] == "completed"
                and finals == [f"MOCK REPLY: {STEER_TEXT}"],
                f"status={done.params['turn']['status']} finals={finals}")
    started = rec.select(m.TURN_STARTED, since=since)
    board.check("a steer starts no new turn", [turn_id_of(e) for e in started] == [turn_id],
                f"turn/started for {[turn_id_of(e) for e in started]}")
    # What a relay must know: the cut message streamed deltas but is never completed.
    opened = {i["id"] for i in _items(rec, m.ITEM_STARTED, since, turn_id, "agentMessage")}
    closed = {i["id"] for i in _items(rec, m.ITEM_COMPLETED, since, turn_id, "agentMessage")}
    board.check("the cut agentMessage never gets item/completed", len(opened - closed) == 1,
                f"started={opened} completed={closed}")


async def _interrupt(board: Scoreboard, stack: OfflineStack, c: AppServerClient,
                     rec: Recorder, thread_id: str) -> None:
    turn_id, since = await _start_slow(c, rec, thread_id)
    wrong = await _refusal(c.request(m.TURN_INTERRUPT, {"threadId": thread_id,
                                                        "turnId": BOGUS_TURN}))
    _refused(board, "interrupt with a wrong turnId is refused", wrong, "expected active turn id")

    asked = time.monotonic()
    result = await c.request(m.TURN_INTERRUPT, {"threadId": thread_id, "turnId": turn_id})
    board.check("turn/interrupt returns {}", result == {}, f"result={result}")

    def mine(e: Event) -> bool:
        return turn_id_of(e) == turn_id

    done = await rec.wait(m.TURN_COMPLETED, since=since, where=mine, timeout=INTERRUPT_LIMIT)
    took = time.monotonic() - asked
    turn = done.params["turn"]
    board.check(f"the turn completes as interrupted, quickly ({took:.2f} s)",
                turn["status"] == "interrupted" and took < INTERRUPT_LIMIT,
                f"status={turn['status']} error={turn.get('error')}")

    idle = await _refusal(c.request(m.TURN_INTERRUPT, {"threadId": thread_id,
                                                       "turnId": turn_id}))
    _refused(board, "interrupt with no running turn is refused", idle,
             "no active turn to interrupt")

    after = await say(c, thread_id, "after the interrupt", approvals=ApprovalPolicy.DECLINE,
                      timeout=WAIT)
    call = await asyncio.to_thread(
        stack.mock.wait_for_request,
        lambda r: r.is_model_call and r.user_text == "after the interrupt", WAIT)
    board.check("the next turn works and the model is told of the abort",
                after.status is TurnOutcome.COMPLETED
                and any("<turn_aborted>" in u for u in _user_texts(call)),
                f"status={after.status} user messages={_user_texts(call)[-3:]}")


async def body(board: Scoreboard, stack: OfflineStack) -> None:
    thread_id, _ = await stack.human_thread("first turn")
    async with AppServerClient(stack.url, client_name="spike-steer") as c:
        rec = Recorder(c)
        await join(c, thread_id)
        with board.section("idle refusals"):
            idle = await _refusal(c.request(m.TURN_STEER, {
                "threadId": thread_id, "input": text_input("nothing runs"),
                "expectedTurnId": BOGUS_TURN}))
            _refused(board, "steer with no running turn is refused", idle,
                     "no active turn to steer")
        with board.section("steer"):
            await _steer(board, stack, c, rec, thread_id)
        with board.section("interrupt"):
            await _interrupt(board, stack, c, rec, thread_id)
        rec.close()


def main() -> int:
    return run_spike("steer_interrupt", body)


if __name__ == "__main__":
    sys.exit(main())

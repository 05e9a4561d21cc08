"""A command approval on a thread with two subscribed clients.

The mock's `RUN: <cmd>` asks for an escalated exec_command, so codex sends
`item/commandExecution/requestApproval`. Both clients get it; the first answer wins, the
silent client is told through `serverRequest/resolved` (with the id it was sent), and a
late answer changes nothing.

Measured on 0.169.0: request ids are not per-connection. One server-wide counter numbers
the requests, and a request fanned out to several connections has the same id on each
(a request only A saw moves B's next id too). A bridge must still answer with the id it
received, which is what the checks hold it to.
"""

from __future__ import annotations

import sys
from pathlib import Path

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.protocol.envelopes import ServerRequest
from codexbridge.codex.protocol.generated import methods as m
from codexbridge.codex.threads import join
from tests.support.mock_codex import OfflineStack

from .scoreboard import Recorder, Scoreboard, run_spike, text_input, turn_id_of

APPROVAL = m.ITEM_COMMAND_EXECUTION_REQUEST_APPROVAL


async def _round(board: Scoreboard, thread_id: str, target: Path, decision: str,
                 answering: tuple[str, AppServerClient, Recorder],
                 silent: tuple[str, AppServerClient, Recorder]) -> None:
    """One approval turn: `answering` answers `decision`, `silent` keeps quiet (then
    answers the opposite, too late)."""
    (who, client, rec), (quiet, quiet_client, quiet_rec) = answering, silent
    since = {who: rec.mark(), quiet: quiet_rec.mark()}
    turn = await client.request(m.TURN_START, {"threadId": thread_id,
                                               "input": text_input(f"RUN: touch {target}")})
    turn_id = str(turn["turn"]["id"])

    def mine(e: object) -> bool:
        return isinstance(e, ServerRequest) and turn_id_of(e) == turn_id

    asked = await rec.wait(APPROVAL, since=since[who], where=mine)
    quiet_asked = await quiet_rec.wait(APPROVAL, since=since[quiet], where=mine)
    assert isinstance(asked, ServerRequest) and isinstance(quiet_asked, ServerRequest)
    board.check(f"{decision}: the approval reaches both {who} and {quiet}, under one "
                f"server-wide id ({who}: {asked.id!r}, {quiet}: {quiet_asked.id!r})",
                asked.params == quiet_asked.params and asked.id == quiet_asked.id
                and str(target) in str(asked.params.get("command")),
                f"{who}={asked.id!r} {asked.params} {quiet}={quiet_asked.id!r} "
                f"{quiet_asked.params}")

    await client.respond(asked.id, {"decision": decision})
    resolved = await quiet_rec.wait(
        m.SERVER_REQUEST_RESOLVED, since=since[quiet],
        where=lambda e: e.params.get("requestId") == quiet_asked.id)
    board.check(f"{decision}: silent {quiet} gets serverRequest/resolved with its id",
                resolved.params.get("threadId") == thread_id,
                f"{resolved.params}")
    own = await rec.wait(m.SERVER_REQUEST_RESOLVED, since=since[who],
                         where=lambda e: e.params.get("requestId") == asked.id)
    board.check(f"{decision}: answering {who} gets serverRequest/resolved with its id",
                own.params.get("threadId") == thread_id, f"{own.params}")
    # Both clients may race to answer; the loser's answer must be ignored.
    await quiet_client.respond(quiet_asked.id,
                               {"decision": "accept" if decision == "decline" else "decline"})

    done = await rec.wait(m.TURN_COMPLETED, since=since[who],
                          where=lambda e: turn_id_of(e) == turn_id)
    await quiet_rec.wait(m.TURN_COMPLETED, since=since[quiet],
                         where=lambda e: turn_id_of(e) == turn_id)
    board.check(f"{decision}: the turn completes", done.params["turn"]["status"] == "completed",
                f"{done.params['turn']}")
    replies = [str(e.params["item"].get("text")) for e in rec.select(
        m.ITEM_COMPLETED, since=since[who],
        where=lambda e: turn_id_of(e) == turn_id and e.params["item"]["type"] == "agentMessage")]
    if decision == "decline":
        board.check("decline: the model is told the command was rejected, nothing ran",
                    any("rejected by user" in r for r in replies) and not target.exists(),
                    f"replies={replies} exists={target.exists()}")
    else:
        board.check("accept: the command ran outside the sandbox, the late decline ignored",
                    target.exists() and all("rejected" not in r for r in replies),
                    f"replies={replies} exists={target.exists()}")


async def body(board: Scoreboard, stack: OfflineStack) -> None:
    thread_id, _ = await stack.human_thread("first turn")
    async with AppServerClient(stack.url, client_name="spike-a") as a, \
            AppServerClient(stack.url, client_name="spike-b") as b:
        rec_a, rec_b = Recorder(a), Recorder(b)
        await join(a, thread_id)
        with board.section("warm-up"):
            # An approval only A sees: were ids per connection, A's would now run ahead
            # of B's; they do not (see the module docstring).
            since = rec_a.mark()
            turn = await a.request(m.TURN_START, {"threadId": thread_id, "input": text_input(
                f"RUN: touch {stack.workdir / 'warm-up'}")})
            turn_id = str(turn["turn"]["id"])
            asked = await rec_a.wait(APPROVAL, since=since)
            assert isinstance(asked, ServerRequest)
            await a.respond(asked.id, {"decision": "decline"})
            await rec_a.wait(m.TURN_COMPLETED, since=since,
                             where=lambda e: turn_id_of(e) == turn_id)
            board.check("an approval goes only to subscribed clients (not yet B)",
                        not rec_b.select(APPROVAL), f"B got {rec_b.select(APPROVAL)}")
        await join(b, thread_id)
        with board.section("decline"):
            await _round(board, thread_id, stack.workdir / "declined", "decline",
                         ("A", a, rec_a), ("B", b, rec_b))
        with board.section("accept"):
            await _round(board, thread_id, stack.workdir / "accepted", "accept",
                         ("B", b, rec_b), ("A", a, rec_a))
        with board.section("threadId everywhere"):
            for name, rec in (("A", rec_a), ("B", rec_b)):
                scoped = [e for e in rec.events
                          if e.method.startswith(("turn/", "item/", "serverRequest/"))]
                missing = [e.method for e in scoped if e.params.get("threadId") != thread_id]
                board.check(f"every turn/item notification {name} got carries threadId "
                            f"({len(scoped)} seen)", scoped and not missing,
                            f"without threadId: {sorted(set(missing))}")
        # One request per round and client: the late answers made codex ask nothing more.
        seen = [[e.method for e in rec.events if isinstance(e, ServerRequest)]
                for rec in (rec_a, rec_b)]
        board.check("each client got exactly its approvals (A 3, B 2), nothing else",
                    seen == [[APPROVAL] * 3, [APPROVAL] * 2], f"A={seen[0]} B={seen[1]}")
        rec_a.close()
        rec_b.close()


def main() -> int:
    return run_spike("approvals", body)


if __name__ == "__main__":
    sys.exit(main())

"""The typed calls (codex/protocol/generated/calls.py): snake_case keywords go out camelCase,
an optional parameter left None is not sent, and the answer comes back typed."""

from __future__ import annotations

import asyncio
from typing import Any

from codexbridge.codex.protocol.generated.calls import Calls
from codexbridge.codex.protocol.generated.results import ThreadQueueDeleteResponse
from tests.support import payloads


class Recorder:
    """A Requester that answers `answer` and keeps what it was asked."""

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.sent.append((method, params))
        return self.answer


def test_keywords_go_out_camel_case_and_none_is_not_sent() -> None:
    rpc = Recorder({"data": [], "nextCursor": None})
    asyncio.run(Calls(rpc).thread_turns_list(thread_id="t", limit=1, sort_direction="desc",
                                             items_view="notLoaded"))
    asyncio.run(Calls(rpc).thread_turns_list(thread_id="t", cursor=None))
    assert rpc.sent == [
        ("thread/turns/list", {"threadId": "t", "limit": 1, "sortDirection": "desc",
                               "itemsView": "notLoaded"}),
        ("thread/turns/list", {"threadId": "t"})]


def test_a_sequence_goes_out_as_a_list() -> None:
    rpc = Recorder({"turn": payloads.turn(payloads.TURN_2, status="inProgress")})
    started = asyncio.run(Calls(rpc).turn_start(
        thread_id="t", input=({"type": "text", "text": "hi", "text_elements": []},),
        client_user_message_id="cb_1"))
    (_, params), = rpc.sent
    assert params == {"threadId": "t", "clientUserMessageId": "cb_1",
                      "input": [{"type": "text", "text": "hi", "text_elements": []}]}
    assert started.turn is not None and started.turn.id == payloads.TURN_2


def test_the_answer_comes_back_typed_and_a_result_nobody_reads_as_none() -> None:
    rpc = Recorder({"deleted": True})
    deleted = asyncio.run(Calls(rpc).thread_queue_delete(thread_id="t",
                                                         queued_submission_id="s"))
    assert deleted == ThreadQueueDeleteResponse(deleted=True)
    assert asyncio.run(Calls(rpc).turn_interrupt(thread_id="t", turn_id="u")) is None
    assert rpc.sent[-1] == ("turn/interrupt", {"threadId": "t", "turnId": "u"})

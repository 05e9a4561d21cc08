"""Every message that carries a request id has a record (issue 24, item 8).

A blocking send — MCP `codex_message_send` with wait: true, `talk say` run by an agent —
names a request in its envelope ("request req_… (echo it)"); `talk status` must find
it. Before, only `talk send` wrote records: the id the blocking send named was
DELIVERY_NOT_FOUND."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from codexbridge.conversation.envelope import Sender, Speaker
from codexbridge.conversation.records import DeliveryState, DeliveryStore
from codexbridge.protocol.enums import TurnOutcome
from codexbridge.talk.follow import SayResult
from tests.unit.test_mcp_claude_tools import call, client_for, codex, runtime  # noqa: F401

pytestmark = pytest.mark.usefixtures("schema_guard")


def _status(delivery_id: str) -> str:
    from codexbridge.cli.talk_cmd import talk

    result = CliRunner().invoke(talk, ["status", delivery_id])
    assert result.exit_code == 0, result.output
    return result.output


async def test_a_blocking_mcp_send_names_a_request_talk_status_finds(
        tmp_path: Path, codex: object) -> None:  # noqa: F811
    async with client_for(runtime(tmp_path, codex)) as client:  # type: ignore[arg-type]
        sc = await call(client, "codex_message_send", {"text": "review it"})
    delivery_id = sc["data"]["deliveryId"]
    sent = codex.requests("thread/queue/add")[-1]["params"]  # type: ignore[attr-defined]
    named = re.search(r"request (req_\d+_[a-z0-9]+)", sent["input"][0]["text"])
    assert named is not None and named.group(1) == delivery_id
    assert sent["clientUserMessageId"] == delivery_id  # found in the thread by it, too
    record = DeliveryStore().get(delivery_id)
    assert record is not None and record.state is DeliveryState.DELIVERED
    assert record.blocking and not record.needs_courier  # the caller carried it
    assert record.reply_preview == "MOCK REPLY: review it" and record.turn_id
    assert [s["state"] for s in record.history] == ["queued", "delivering", "delivered"]
    out = _status(delivery_id)
    assert "delivered" in out and "MOCK REPLY: review it" in out


async def test_a_blocking_send_whose_turn_fails_says_so_on_its_record(
        tmp_path: Path, codex: object) -> None:  # noqa: F811
    async with client_for(runtime(tmp_path, codex)) as client:  # type: ignore[arg-type]
        result = await client.call_tool("codex_message_send", {"text": "FAIL_TURN now"})
    assert result.is_error
    sc = result.structured_content
    assert sc is not None
    delivery_id = sc["error"]["details"]["deliveryId"]
    record = DeliveryStore().get(delivery_id)
    assert record is not None and record.state is DeliveryState.FAILED
    assert record.reason and "failed" in record.reason


async def test_talk_say_by_an_agent_records_its_request() -> None:
    from codexbridge.cli.talk_cmd import _agent_says

    seen: list[str] = []

    async def run(words: str, progress: object) -> SayResult:
        seen.append(words)
        return SayResult("thr-1", "turn-7", TurnOutcome.COMPLETED, "the answer")

    result = await _agent_says(run, "a question", "thr-1",  # type: ignore[arg-type]
                               Sender(Speaker.CLAUDE_CODE, session="s1"), None, False)
    assert result.reply == "the answer"
    named = re.search(r"request (req_\d+_[a-z0-9]+)", seen[0])
    assert named is not None
    record = DeliveryStore().get(named.group(1))
    assert record is not None and record.state is DeliveryState.DELIVERED
    assert record.turn_id == "turn-7" and record.sender == "claude-code"
    assert "delivered" in _status(named.group(1))


def test_a_blocking_send_whose_caller_died_is_adopted_by_the_courier(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's Bash tool kills `talk say` after 120 s: the record would say
    `queued` for ever. `talk status` hands it to the courier, which finds the turn in
    the thread by the record's id (never resends)."""
    import subprocess
    import sys

    from codexbridge.conversation import courier_link
    from codexbridge.talk import deliveries

    sent = deliveries.blocking_request("a long question", "thr-1", env={"CLAUDECODE": "1"})
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    store = DeliveryStore()
    store.update(sent.record.id, lambda r: setattr(r, "courier_pid", gone.pid))
    started: list[list[str]] = []
    monkeypatch.setattr(courier_link, "running", lambda: False)
    monkeypatch.setattr(courier_link, "ensure", lambda ids: started.append(ids) or True)
    monkeypatch.setattr(deliveries, "RECOVER_WAIT", 0.0)
    record = deliveries.status(store, sent.record.id)
    assert not record.blocking and record.needs_courier
    assert started == [[sent.record.id]] and sent.record.id in store.pending()
    assert store.text_path(sent.record.id).read_text() == "a long question"
    assert "ended before the answer" in record.warnings[-1]

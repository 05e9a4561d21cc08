"""Every message that carries a request id has a record (issue 24, item 8).

A blocking send — MCP `codex_message_send` with wait: true, `talk say` run by an agent —
names a request in its envelope ("request req_… (echo it)"); `talk status` must find
it. Before, only `talk send` wrote records: the id the blocking send named was
DELIVERY_NOT_FOUND."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codexbridge.messages.records import DeliveryState, DeliveryStore
from tests.support.memory_appserver import MemoryAppServer
from tests.unit.mcp.test_claude_tools import call, client_for, codex, runtime  # noqa: F401

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


def _cli_say(server: MemoryAppServer, monkeypatch: pytest.MonkeyPatch, text: str
             ) -> tuple[dict[str, Any], str]:
    """`talk say --json TEXT` run by an agent (Claude Code's Bash tool) against `server`:
    its JSON (result or error) and the request id its envelope named."""
    from codexbridge.cli import talk_cmd
    from codexbridge.codex.client import AppServerClient

    monkeypatch.setattr(talk_cmd, "connect", lambda url, thread=None: AppServerClient(
        "ws://memory", connector=server.connector))
    result = CliRunner().invoke(talk_cmd.talk, ["say", "--json", text],
                                env={"CLAUDECODE": "1"})
    return json.loads(result.stdout), _named(server)


def _mcp_say(server: MemoryAppServer, tmp_path: Path, text: str
             ) -> tuple[dict[str, Any], str]:
    """MCP `codex_message_send` (wait=true) of TEXT against `server`: the same."""
    async def go() -> dict[str, Any]:
        async with client_for(runtime(tmp_path, server)) as client:
            result = await client.call_tool("codex_message_send", {"text": text})
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    return asyncio.run(go()), _named(server)


def _named(server: MemoryAppServer) -> str:
    sent = server.requests("thread/queue/add")[-1]["params"]["input"][0]["text"]
    named = re.search(r"request (req_\d+_[a-z0-9]+)", sent)
    assert named is not None
    return named.group(1)


FRONT_ENDS = {"cli": lambda server, tmp_path, mp, text: _cli_say(server, mp, text),
              "mcp": lambda server, tmp_path, mp, text: _mcp_say(server, tmp_path, text)}


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_an_agents_blocking_say_is_recorded_alike_by_cli_and_mcp(
        front_end: str, tmp_path: Path, codex: MemoryAppServer,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`talk say` run by an agent and MCP's blocking send are one request kind: the same
    record, ended the same way, with the same id in the result."""
    out, named = FRONT_ENDS[front_end](codex, tmp_path, monkeypatch, "a question")
    said = out["data"]["deliveryId"] if front_end == "mcp" else out["delivery_id"]
    assert said == named
    record = DeliveryStore().get(named)
    assert record is not None and record.state is DeliveryState.DELIVERED
    assert record.blocking and record.sender == "claude-code" and record.turn_id
    assert record.reply_preview == "MOCK REPLY: a question"
    assert [s["state"] for s in record.history] == ["queued", "delivering", "delivered"]
    assert "delivered" in _status(named)


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_codex_refusing_the_message_is_the_same_failure_from_cli_and_mcp(
        front_end: str, tmp_path: Path, codex: MemoryAppServer,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex refused the message: nothing ran, and both front ends say so with the same
    code (before, the CLI reported a plain RPC error, THREAD_READ_FAILED) and record."""
    codex.refuse["thread/queue/add"] = "no queue for you"
    out, named = FRONT_ENDS[front_end](codex, tmp_path, monkeypatch, "a question")
    assert out["ok"] is False
    assert out["error"]["code"] == "TURN_START_FAILED" and out["error"]["retryable"]
    record = DeliveryStore().get(named)
    assert record is not None and record.state is DeliveryState.FAILED
    assert record.reason == "no queue for you"


def test_a_blocking_send_whose_caller_died_is_adopted_by_the_courier(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's Bash tool kills `talk say` after 120 s: the record would say
    `queued` for ever. `talk status` hands it to the courier, which finds the turn in
    the thread by the record's id (never resends)."""
    import subprocess
    import sys

    from codexbridge.messages import courier_link
    from codexbridge.messages import to_codex as deliveries

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

"""Role codex over the SDK's in-memory transport, on real mailbox files."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from codexbridge.inbox import peek as reading
from codexbridge.inbox import store as mail_store
from codexbridge.inbox.lines import new_mail
from codexbridge.inbox.location import mail_path
from codexbridge.mcp.artifacts import ArtifactStore
from codexbridge.mcp.runtime import Runtime
from codexbridge.mcp.server import build_server
from codexbridge.mcp.settings import load
from codexbridge.messages.listeners import record_listener

ROLE_TOOLS = {"bridge_status", "bridge_output_read", "claude_mailboxes_list",
              "claude_mailbox_peek", "claude_message_send", "bridge_handoff"}


@pytest.fixture
def inbox(tmp_path: Path) -> str:
    return str(tmp_path / "inbox")


def runtime(tmp_path: Path, inbox: str, **settings: Any) -> Runtime:
    s = dataclasses.replace(load("codex", {}), **settings)
    return Runtime(settings=s, store=ArtifactStore(tmp_path / "artifacts", "codex", ttl=60,
                                                   max_bytes=1 << 20),
                   inbox=lambda: inbox)


@asynccontextmanager
async def client_for(rt: Runtime) -> AsyncIterator[Client]:
    async with Client(build_server(rt.settings, rt), mode="legacy") as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any] | None = None
               ) -> dict[str, Any]:
    result = await client.call_tool(tool, args or {})
    sc = result.structured_content
    assert isinstance(sc, dict) and sc["ok"] is (not result.is_error)
    return sc


def listen(inbox: str, name: str, cwd: str = "/proj") -> None:
    record_listener(inbox, name, {"cwd": cwd, "session_id": f"sess-{name}"}, "stop-hook")


async def test_exactly_the_codex_tools(tmp_path: Path, inbox: str) -> None:
    async with client_for(runtime(tmp_path, inbox)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == ROLE_TOOLS
    for name in ("claude_mailboxes_list", "claude_mailbox_peek"):
        ann = tools[name].annotations
        assert ann is not None and ann.read_only_hint and ann.idempotent_hint
    send = tools["claude_message_send"]
    assert send.annotations is not None and send.annotations.read_only_hint is False
    assert send.annotations.idempotent_hint is False
    assert set(send.input_schema["properties"]) == {"text", "mailbox", "from", "new",
                                                    "expectReply", "conversation",
                                                    "newConversation"}
    assert set(tools["claude_mailbox_peek"].input_schema["properties"]) == {"mailbox",
                                                                              "maxMessages"}
    assert set(tools["claude_mailboxes_list"].input_schema["properties"]) == {"limit"}


async def test_send_lands_a_line_the_stop_hook_can_take(tmp_path: Path, inbox: str,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    listen(inbox, "bridge")
    monkeypatch.setenv("CODEX_BRIDGE_MAILBOX", "bridge")
    async with client_for(runtime(tmp_path, inbox)) as client:
        sc = await call(client, "claude_message_send", {"text": "review auth.py 🙂"})
        sc2 = await call(client, "claude_message_send", {"text": "second", "from": "reviewer"})
    data = sc["data"]
    assert data["mailbox"] == "bridge" and data["from"] == "codex" and sc["warnings"] == []
    assert data["listener"]["session_id"] == "sess-bridge"
    assert data["mailboxFile"] == mail_path(inbox, "bridge")
    lines = [json.loads(x) for x in Path(mail_path(inbox, "bridge")).read_text().splitlines()]
    assert [(m["text"], m["from"], m["to"]) for m in lines] == [
        ("review auth.py 🙂", "codex", "bridge"), ("second", "reviewer", "bridge")]
    assert lines[0]["id"] == data["id"] and lines[1]["id"] == sc2["data"]["id"]
    assert os.stat(mail_path(inbox, "bridge")).st_mode & 0o777 == 0o600
    taken: list[str] = []
    mail_store.drain(inbox, "bridge", lambda b: taken.extend(m.text for m in b.mails))
    assert taken == ["review auth.py 🙂", "second"]


async def test_fresh_setup_stores_with_a_warning(tmp_path: Path, inbox: str) -> None:
    async with client_for(runtime(tmp_path, inbox)) as client:
        sc = await call(client, "claude_message_send", {"text": "hi", "mailbox": "newbox"})
    assert [w["code"] for w in sc["warnings"]] == ["NO_LISTENER"]
    assert "install-hook --as newbox" in sc["warnings"][0]["message"]
    assert [m.text for m in reading.peek(inbox, "newbox").mails] == ["hi"]


async def test_mistyped_mailbox_is_refused_when_others_listen(tmp_path: Path,
                                                              inbox: str) -> None:
    listen(inbox, "bridge")
    async with client_for(runtime(tmp_path, inbox)) as client:
        sc = await call(client, "claude_message_send", {"text": "hi", "mailbox": "brigde"})
        assert sc["error"]["code"] == "NO_MAILBOX" and sc["error"]["retryable"] is False
        assert sc["error"]["details"]["didYouMean"] == "bridge"
        assert 'did you mean "bridge"' in sc["error"]["message"]
        assert not os.path.exists(mail_path(inbox, "brigde"))
        # a name that already has mail (someone pushed with the CLI) is accepted
        mail_store.push(inbox, new_mail("earlier", to="other", sender="cli"))
        sc = await call(client, "claude_message_send", {"text": "hi", "mailbox": "other"})
        assert sc["ok"] and [w["code"] for w in sc["warnings"]] == ["NO_LISTENER"]
        sc = await call(client, "claude_mailbox_peek", {"mailbox": "nobody"})
        assert sc["error"]["code"] == "NO_MAILBOX"


async def test_invalid_names_and_text(tmp_path: Path, inbox: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_BRIDGE_MAIL_MAX", "20")  # the same cap as `inbox push`
    async with client_for(runtime(tmp_path, inbox)) as client:
        for args, needle in (({"text": "x", "mailbox": "../etc"}, "mailbox"),
                             ({"text": "x", "from": "a b"}, "from"),
                             ({"text": " \n"}, "empty"),
                             ({"text": "x" * 21}, "CODEX_BRIDGE_MAIL_MAX"),
                             ({"text": "x", "to": "bridge"}, "no parameter 'to'")):
            sc = await call(client, "claude_message_send", args)
            assert sc["error"]["code"] == "INVALID_ARGUMENT", args
            assert needle in sc["error"]["message"], (args, sc)
    assert not os.path.exists(inbox) or os.listdir(inbox) == []


async def test_write_failure_is_reported(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("file in the way")
    async with client_for(runtime(tmp_path, str(blocked))) as client:
        sc = await call(client, "claude_message_send", {"text": "hi"})
    assert sc["error"]["code"] in ("MAILBOX_WRITE_FAILED", "MAILBOX_READ_FAILED")
    assert sc["error"]["retryable"] is False


async def test_list_and_peek(tmp_path: Path, inbox: str) -> None:
    listen(inbox, "alpha", "/a")
    listen(inbox, "beta", "/b")
    async with client_for(runtime(tmp_path, inbox)) as client:
        for i in range(5):
            await call(client, "claude_message_send", {"text": f"m{i}" + "x" * (3000 * (i == 4)),
                                                       "mailbox": "beta"})
        sc = await call(client, "claude_mailboxes_list")
        rows = {r["name"]: r for r in sc["data"]["mailboxes"]}
        assert rows["alpha"]["pending"] == 0 and rows["beta"]["pending"] == 5
        assert rows["beta"]["listener"]["cwd"] == "/b" and sc["data"]["total"] == 2
        assert (await call(client, "claude_mailboxes_list", {"limit": 1}))["data"]["truncated"]
        peek = await call(client, "claude_mailbox_peek", {"mailbox": "beta", "maxMessages": 4})
        data = peek["data"]
        assert data["pending"] == 5 and data["truncated"] is True
        assert [m["text"] for m in data["messages"]] == ["m0", "m1", "m2", "m3"]
        last = (await call(client, "claude_mailbox_peek", {"mailbox": "beta"}))["data"][
            "messages"][-1]
        assert last["textTruncated"] is True and len(last["text"]) == 2000
        assert last["textChars"] == 3002
    # peeking consumed nothing
    assert len(reading.peek(inbox, "beta").mails) == 5


async def test_status_for_the_codex_role(tmp_path: Path, inbox: str) -> None:
    listen(inbox, "bridge")
    async with client_for(runtime(tmp_path, inbox)) as client:
        sc = await call(client, "bridge_status")
    data = sc["data"]
    assert data["role"] == "codex" and set(data["tools"]) == ROLE_TOOLS
    assert data["mailboxes"]["mailboxes"] == [{"name": "bridge", "pending": 0,
                                               "listening": True}]
    # no serve running in this test: reported, not an error
    assert data["appServer"]["reachable"] is False and "codexbridge serve" in \
        data["appServer"]["error"]


async def test_expect_reply_records_the_calling_thread_from_meta(
        tmp_path: Path, inbox: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex gives its MCP servers no CODEX_THREAD_ID; the thread is in each call's _meta."""
    from codexbridge.messages.records import DeliveryStore

    listen(inbox, "bridge")
    monkeypatch.delenv("CODEX_THREAD_ID", raising=False)
    async with client_for(runtime(tmp_path, inbox)) as client:
        result = await client.call_tool(
            "claude_message_send", {"text": "review it", "mailbox": "bridge",
                                    "expectReply": True},
            meta={"threadId": "thr-9", "x-codex-turn-metadata": {"thread_id": "thr-9"}})
        sc = result.structured_content
        assert sc is not None and sc["ok"], sc
        data = sc["data"]
        # claude-codex-bridge's result fields, then ours
        assert data["delivery"] == "queued" and data["delivered"] is False
        assert data["messageId"] == data["id"] and data["mailbox"] == "bridge"
        assert data["queuedAt"] == data["at"] and data["hop"] == 1
        assert data["expectReplyFrom"] == "thr-9"
        record = DeliveryStore().get(data["request"])
        assert record is not None and record.thread_id == "thr-9"
        [mail] = reading.peek(inbox, "bridge").mails
        assert mail.extra["expect_reply"] == {"thread": "thr-9"}
        # without a thread to answer into, expectReply is refused before anything is written
        sc = await call(client, "claude_message_send", {"text": "x", "mailbox": "bridge",
                                                        "expectReply": True})
        assert sc["error"]["code"] == "INVALID_ARGUMENT"
        assert len(reading.peek(inbox, "bridge").mails) == 1


async def test_the_fifth_hop_of_a_conversation_is_refused(tmp_path: Path, inbox: str,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    listen(inbox, "bridge")
    monkeypatch.setenv("CODEX_BRIDGE_MAX_HOPS", "4")
    async with client_for(runtime(tmp_path, inbox)) as client:
        first = await call(client, "claude_message_send", {"text": "1", "mailbox": "bridge"})
        conv = first["data"]["conversation"]
        for n in range(2, 5):
            sc = await call(client, "claude_message_send", {"text": str(n), "mailbox": "bridge",
                                                            "conversation": conv})
            assert sc["data"]["hop"] == n
        sc = await call(client, "claude_message_send", {"text": "5", "mailbox": "bridge",
                                                        "conversation": conv})
        assert sc["error"]["code"] == "HOP_LIMIT" and sc["error"]["retryable"] is False
    assert len(reading.peek(inbox, "bridge").mails) == 4

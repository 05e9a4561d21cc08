"""Who is speaking is decided once, from who really sends (issue 24, item 6).

`envelope.who_sends` — a Codex thread (CODEX_THREAD_ID, or an MCP call's _meta thread),
Claude Code (its session's environment, or the MCP role `claude`), or the human's own
shell — and every road uses it: `talk say`, `talk send`, `talk steer`, the MCP tools,
`inbox push`. Before, `talk send` said "from Claude Code" from any shell, and the MCP
send did too for a Codex thread driving another."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codexbridge.codex.protocol.threads import ThreadInfo
from codexbridge.messages.envelope import (
    CLAUDE,
    CODEX,
    HUMAN,
    Sender,
    Speaker,
    steer_text,
    who_sends,
)
from codexbridge.messages.frame import words_of
from codexbridge.messages.records import DeliveryStore, envelope_of
from codexbridge.messages.to_codex import blocking_request, prepare
from tests.unit.mcp.test_claude_tools import call, client_for, codex, runtime  # noqa: F401

pytestmark = pytest.mark.usefixtures("schema_guard")

THREAD = ThreadInfo(id="thr-1", name=None, cwd="/work/project", status="idle")
AGENT_ENV = ("CODEX_THREAD_ID", "CLAUDE_CODE_SESSION_ID", "CLAUDECODE",
             "CLAUDE_CODE_MESSAGING_SOCKET")


@pytest.fixture(autouse=True)
def _a_plain_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AGENT_ENV:
        monkeypatch.delenv(name, raising=False)


def test_who_sends_is_who_runs_it() -> None:
    assert who_sends({}) == Sender(Speaker.HUMAN)
    assert who_sends({"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s1"}) == \
        Sender(Speaker.CLAUDE_CODE, session="s1")
    assert who_sends({"CODEX_THREAD_ID": "t1"}) == Sender(Speaker.CODEX, thread="t1")
    # Codex running a command inside a Claude Code session's shell is still Codex
    assert who_sends({"CODEX_THREAD_ID": "t1", "CLAUDECODE": "1"}).speaker is Speaker.CODEX
    # MCP: codex gives its servers no CODEX_THREAD_ID; the call's _meta names the thread
    assert who_sends({}, mcp_role="claude", calling_thread="t2") == \
        Sender(Speaker.CODEX, thread="t2")
    assert who_sends({}, mcp_role="claude").speaker is Speaker.CLAUDE_CODE
    assert who_sends({}, mcp_role="codex").speaker is Speaker.CODEX
    assert not who_sends({}).is_agent and who_sends({"CLAUDECODE": "1"}).is_agent


def test_talk_send_from_the_humans_shell_does_not_say_claude_code() -> None:
    receipt = prepare("please look at the failing test", THREAD, "caller", env={})
    record = receipt.delivery
    assert record.sender == "human"
    header = envelope_of(record).wrap("x").split("\n\n")[0]
    assert CLAUDE not in header and f"from {HUMAN}" in header
    assert "peer AI agent" not in header  # it is the human: no agent is claimed


def test_talk_send_from_a_codex_command_says_codex() -> None:
    receipt = prepare("what does the other thread think?", THREAD, "caller",
                      env={"CODEX_THREAD_ID": "thr-other"})
    record = receipt.delivery
    assert (record.sender, record.sender_thread) == ("codex", "thr-other")
    header = envelope_of(record).wrap("x").split("\n\n")[0]
    assert re.search(r"\] from Codex — a peer AI agent, not the human user", header)


def test_a_codex_threads_blocking_send_says_codex_and_who_waits() -> None:
    sent = blocking_request("review it", "thr-1", env={"CODEX_THREAD_ID": "thr-other"})
    head = sent.words.split("\n\n")[0]
    assert f"from {CODEX} — a peer AI agent" in head and "the asking Codex waits" in head
    assert words_of(sent.words) == "review it"


def test_steer_from_the_humans_shell_is_not_a_peer_agent() -> None:
    assert "peer AI agent" not in steer_text(HUMAN, "also check tests").split("\n\n")[0]
    assert "peer AI agent" in steer_text(CLAUDE, "also check tests").split("\n\n")[0]


async def test_mcp_send_from_a_codex_thread_is_labelled_codex(
        tmp_path: Path, codex: object) -> None:  # noqa: F811
    async with client_for(runtime(tmp_path, codex)) as client:  # type: ignore[arg-type]
        result = await client.call_tool("codex_message_send", {"text": "hi from a thread"},
                                        meta={"threadId": "thr-caller"})
        assert not result.is_error, result.structured_content
        sc = result.structured_content
        assert sc is not None
        record = DeliveryStore().get(sc["data"]["deliveryId"])
        assert record is not None and record.sender == "codex"
        assert record.sender_thread == "thr-caller"
        plain = await call(client, "codex_message_send", {"text": "hi from claude"})
        record = DeliveryStore().get(plain["data"]["deliveryId"])
        assert record is not None and record.sender == "claude-code"


def test_mail_records_who_sent_it(tmp_path: Path) -> None:
    from codexbridge.messages import to_claude as service

    inbox = str(tmp_path / "inbox")
    sent = service.request("a question", to="web", inbox=inbox, new=True,
                           env={"CODEX_THREAD_ID": "thr-9"}, expect_reply=True)
    assert sent.push.mail.extra["sent_by"] == "codex"
    record = DeliveryStore().get(sent.request)
    assert record is not None and (record.sender, record.sender_thread) == ("codex", "thr-9")
    mine = service.request("from my shell", to="web", inbox=inbox, env={})
    assert mine.push.mail.extra["sent_by"] == "human"


def test_mail_a_claude_code_session_sends_is_not_named_codex(tmp_path: Path) -> None:
    from codexbridge.messages import to_claude as service

    sent = service.request("hello other session", to="web", inbox=str(tmp_path / "inbox"),
                           new=True, env={"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s1"})
    assert sent.push.mail.sender == "claude-code"
    assert sent.push.mail.extra["sent_by"] == "claude-code"


def test_codexbridges_own_notice_is_never_labelled_as_the_peers_answer() -> None:
    """A notice about a request (the human interrupted Claude's turn, the session ended)
    is codexbridge's, not Claude's words: its header says so, sealed, and says it is not
    an answer (before, it came "from Claude Code — a peer AI agent")."""
    from codexbridge.codex.endpoint import Reach
    from codexbridge.messages.records import new_reply

    store = DeliveryStore()
    notice = new_reply(store, "T1", "req_1_abcdef", "conv_1",
                       "codexbridge: the human interrupted Claude's turn", reach=Reach(),
                       reply_to=None, notice=True)
    answer = new_reply(store, "T1", "req_2_abcdef", "conv_1", "the answer", reach=Reach(),
                       reply_to=None)
    told = envelope_of(notice).wrap("codexbridge: the human interrupted Claude's turn")
    first = told.splitlines()[0]
    assert re.match(r"\[codexbridge [a-z0-9]+\] from codexbridge itself — a notice about "
                    r"req_1_abcdef, not an answer from the peer", first), first
    assert CLAUDE not in told
    assert envelope_of(answer).wrap("the answer").splitlines()[0].endswith(
        f"from {CLAUDE} — a peer AI agent, not the human user")

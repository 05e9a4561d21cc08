"""Both directions end to end in memory: the real AppServerClient against the scripted
app-server (`tests/support/memory_appserver.py`, plus `thread/inject_items`), real
listener records, transcripts, mailboxes and ledger files. Every message sent is
checked against schemas/ (the schema guard). The real binaries: tests/real/test_handoff_*.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from codexbridge.codex.client import AppServerClient
from codexbridge.errors import (
    AmbiguousSessionError,
    NoSessionError,
    RpcError,
    SelfSendError,
    UsageError,
)
from codexbridge.handoff import ledger, resume
from codexbridge.handoff.ledger import Pending, Stage, project_key
from codexbridge.handoff.note import parse_note
from codexbridge.handoff.resume import pending_path
from codexbridge.handoff.to_claude import handoff_to_claude
from codexbridge.handoff.to_codex import handoff_to_codex
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.setup.claude import install_hooks as install
from tests.support import payloads
from tests.support.handoff_fakes import (
    Server,
    claude_work,
    codex_items,
    dead_pid,
    hook_session,
)
from tests.support.schema_guard import (
    SchemaGuard,
    schema_guard_fixture,  # noqa: F401
)
from tests.support.transcripts import SESSION

Message = dict[str, Any]
THREAD = payloads.USER_THREAD
T1, T2 = payloads.TURN_1, payloads.TURN_2


@pytest.fixture
def project(tmp_path: Path) -> str:
    path = tmp_path / "project"
    path.mkdir()
    return str(path)


@pytest.fixture
def server(project: str, schema_guard: SchemaGuard) -> Server:
    return Server(threads=[payloads.thread(cwd=project)], page_size=50)


@asynccontextmanager
async def client(server: Server) -> AsyncIterator[AppServerClient]:
    async with AppServerClient("ws://memory", connector=server.connector) as c:
        yield c


ENV: dict[str, str] = {}


# --- Claude → Codex ----------------------------------------------------------------------

async def test_to_codex_injects_words_then_a_visible_turn_and_moves_marks_after(
        tmp_path: Path, project: str, server: Server) -> None:
    t = claude_work(tmp_path)
    hook_session(project, t.write(tmp_path / "s.jsonl"))
    async with client(server) as c:
        out = await handoff_to_codex(c, project=project, note=parse_note(
            "Decisions: strict mode\nNext: update the docs"), env=ENV)
    assert out.delivered and out.via == "inject" and out.prepared is not None
    (delta,) = server.injected()
    assert "make the parser strict" in delta and "rejects trailing commas" in delta
    assert "SECRET TOOL OUTPUT" not in delta and "check-all" not in delta
    assert "strict mode" in delta and "update the docs" in delta
    (queued,) = server.requests("thread/queue/add")
    assert queued["params"]["clientUserMessageId"] == out.handoff_id
    notice = queued["params"]["input"][0]["text"]
    assert re.match(r"\[codexbridge [a-z0-9]{6}\] from Claude Code — handoff", notice) and \
        "update the docs" in notice and out.prepared.full_path in notice
    # the inject came before the visible turn, after the thread was found idle
    methods = [m["method"] for m in server.received if "method" in m and "id" in m]
    assert methods.index("thread/inject_items") < methods.index("thread/queue/add")
    state = ledger.load(project_key(project), os.path.realpath(project))
    assert ledger.known_by(state, f"codex:{THREAD}") == {f"claude:{SESSION}": t.last}
    assert state.pending == {} and state.history[-1].state == "delivered"
    for path in (out.prepared.delta_path, out.prepared.full_path):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "SECRET TOOL OUTPUT" not in Path(out.prepared.full_path).read_text()
    # nothing new since: nothing is sent
    async with client(server) as c:
        again = await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV)
    assert again.nothing_new and len(server.injected()) == 1


async def test_only_new_words_cross_the_second_time(tmp_path: Path, project: str,
                                                    server: Server) -> None:
    t = claude_work(tmp_path)
    path = t.write(tmp_path / "s.jsonl")
    hook_session(project, path)
    async with client(server) as c:
        await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV)
    t.prompt("now the second thing")
    t.reply("second thing done")
    t.write(path)
    async with client(server) as c:
        out = await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV)
    second = server.injected()[1]
    assert "second thing done" in second and "make the parser strict" not in second
    assert out.prepared is not None and out.prepared.new_messages == 2


async def test_a_refused_inject_moves_nothing(tmp_path: Path, project: str,
                                              server: Server) -> None:
    hook_session(project, claude_work(tmp_path).write(tmp_path / "s.jsonl"))
    server.inject_error = "thread not found: x"
    async with client(server) as c:
        with pytest.raises(RpcError, match="thread not found"):
            await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV)
    state = ledger.load(project_key(project), os.path.realpath(project))
    assert state.known_by == {} and state.pending == {}
    assert str(state.history[-1].state).startswith("not delivered")


async def test_a_run_killed_before_delivery_is_sent_again_one_that_arrived_is_not(
        tmp_path: Path, project: str, server: Server) -> None:
    hook_session(project, claude_work(tmp_path).write(tmp_path / "s.jsonl"))
    real = os.path.realpath(project)
    key, target = project_key(project), f"codex:{THREAD}"
    with ledger.locked(key, real) as state:  # what `kill -9` mid-delivery leaves
        state.pending[target] = Pending(id="h_old", stage=Stage.SENDING, pid=dead_pid(),
                                        marks={f"claude:{SESSION}": "somewhere"})
    async with client(server) as c:
        out = await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV)
    assert out.settled == ["h_old: interrupted before it reached the thread; its material "
                           "is in this handoff"]
    assert "make the parser strict" in server.injected()[0]
    # the thread shows an earlier handoff's visible turn (its clientId): it arrived
    with ledger.locked(key, real) as state:
        state.pending[target] = Pending(id="h_seen", stage=Stage.SENDING, pid=dead_pid(),
                                        marks={f"claude:{SESSION}": "mark-from-h_seen"})
    server.items = [payloads.item_entry(T2, payloads.user_message("notice", "u9",
                                                                  client_id="h_seen"))]
    async with client(server) as c:
        again = await handoff_to_codex(c, project=project, note=parse_note("Next: x"),
                                       env=ENV)
    assert again.settled[0].startswith("h_seen: had arrived")
    state = ledger.load(key, real)
    assert any(h.id == "h_seen" and h.state == "delivered" for h in state.history)


async def test_another_live_handoff_to_the_same_thread_is_refused(
        tmp_path: Path, project: str, server: Server) -> None:
    hook_session(project, claude_work(tmp_path).write(tmp_path / "s.jsonl"))
    with ledger.locked(project_key(project), os.path.realpath(project)) as state:
        state.pending[f"codex:{THREAD}"] = Pending(id="h_live", stage=Stage.SENDING,
                                                   pid=os.getppid())
    async with client(server) as c:
        with pytest.raises(UsageError, match="is being delivered") as info:
            await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV)
    assert info.value.retryable and server.injected() == []


async def test_dry_run_sends_and_records_nothing(tmp_path: Path, project: str,
                                                 server: Server) -> None:
    hook_session(project, claude_work(tmp_path).write(tmp_path / "s.jsonl"))
    async with client(server) as c:
        out = await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV,
                                     dry_run=True)
    assert out.dry_run and out.prepared is not None and "make the parser" in \
        out.prepared.built.delta
    assert server.injected() == []
    assert ledger.load(project_key(project), os.path.realpath(project)).pending == {}


async def test_which_claude_session(tmp_path: Path, project: str, server: Server) -> None:
    async with client(server) as c:
        with pytest.raises(NoSessionError, match="setup claude --project"):
            await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV)
        t = claude_work(tmp_path)
        hook_session(project, t.write(tmp_path / "a.jsonl"), "a", "sess-a")
        hook_session(project, t.write(tmp_path / "b.jsonl"), "b", "sess-b")
        with pytest.raises(AmbiguousSessionError) as info:
            await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV)
        assert {s["session_id"] for s in info.value.candidates} == {"sess-a", "sess-b"}
        assert info.value.exit_code == 4 and "--from-session" in info.value.message
        # the session running the command, or the one named, is taken
        mine = await handoff_to_codex(c, project=project, note=parse_note(None),
                                      env={"CLAUDE_CODE_SESSION_ID": "sess-b"}, dry_run=True)
        named = await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV,
                                       from_session="sess-a", dry_run=True)
    assert mine.session.session_id == "sess-b"
    assert named.session.session_id == "sess-a"


async def test_from_inside_the_target_thread_is_refused(tmp_path: Path, project: str,
                                                        server: Server) -> None:
    hook_session(project, claude_work(tmp_path).write(tmp_path / "s.jsonl"))
    async with client(server) as c:
        with pytest.raises(SelfSendError):
            await handoff_to_codex(c, project=project, note=parse_note(None),
                                   env={"CODEX_THREAD_ID": THREAD})


# --- Codex → Claude ----------------------------------------------------------------------

async def test_to_a_running_claude_session_one_mail(tmp_path: Path, project: str,
                                                    server: Server) -> None:
    hook_session(project, tmp_path / "c.jsonl", pid=os.getpid())
    server.items = codex_items()
    async with client(server) as c:
        out = await handoff_to_claude(c, project=project, note=parse_note("Next: review"),
                                      env=ENV)
    # in its mailbox (the session has no inbox socket to push to): queued, not delivered
    assert out.via == "mail" and not out.delivered and out.state == "queued"
    (mail,) = reading.peek(inbox_dir(), "web").mails
    assert mail.extra["handoff"] == out.handoff_id and mail.sender == "codex"
    assert "human asks codex" in mail.text and "codex did it" in mail.text
    assert "CODEX TOOL OUTPUT" not in mail.text and "review" in mail.text
    state = ledger.load(project_key(project), os.path.realpath(project))
    assert ledger.known_by(state, f"claude:{SESSION}") == {f"codex:{THREAD}": f"{T1}:m1"}
    async with client(server) as c:
        again = await handoff_to_claude(c, project=project, note=parse_note(None), env=ENV)
    assert again.nothing_new and len(reading.peek(inbox_dir(), "web").mails) == 1


async def test_to_a_stopped_session_it_waits_for_resume_and_a_newer_one_supersedes(
        tmp_path: Path, project: str, server: Server) -> None:
    install(project, "web")  # the SessionStart hook is what makes `resume` possible
    hook_session(project, tmp_path / "c.jsonl")
    server.items = codex_items()
    key, real, target = project_key(project), os.path.realpath(project), f"claude:{SESSION}"
    async with client(server) as c:
        first = await handoff_to_claude(c, project=project, note=parse_note(None), env=ENV)
    assert first.via == "resume" and not first.delivered
    parked = resume.read_pending(SESSION)
    assert parked is not None and parked.handoff_id == first.handoff_id
    assert len(parked.text) <= resume.RESUME_CAP
    assert ledger.known_by(ledger.load(key, real), target) == {}  # not arrived yet
    server.items = [payloads.item_entry(T2, payloads.agent_message("more from codex", "m2")),
                    *codex_items()]
    async with client(server) as c:
        second = await handoff_to_claude(c, project=project, note=parse_note(None), env=ENV)
    assert second.settled[0].startswith(f"{first.handoff_id}: superseded")
    text = resume.read_pending(SESSION).text  # type: ignore[union-attr]
    assert "human asks codex" in text and "more from codex" in text  # carried again
    assert resume.on_session_start({"session_id": SESSION}, lambda _: None)
    state = ledger.load(key, real)
    assert ledger.known_by(state, target) == {f"codex:{THREAD}": f"{T2}:m2"}
    assert not os.path.exists(pending_path(SESSION))


async def test_a_stopped_session_without_a_session_start_hook_gets_mail(
        tmp_path: Path, project: str, server: Server) -> None:
    hook_session(project, tmp_path / "c.jsonl")
    server.items = codex_items()
    async with client(server) as c:
        out = await handoff_to_claude(c, project=project, note=parse_note(None), env=ENV)
        with pytest.raises(UsageError):
            await handoff_to_claude(c, project=project, note=parse_note(None), env=ENV,
                                    via="carrier-pigeon")
    assert out.via == "mail" and out.state == "parked"
    assert "no codexbridge SessionStart hook" in out.warnings[0]


async def test_to_claude_needs_a_listening_session(project: str, server: Server) -> None:
    async with client(server) as c:
        with pytest.raises(NoSessionError, match='mailbox "nobody"'):
            await handoff_to_claude(c, project=project, note=parse_note(None),
                                    mailbox="nobody", env=ENV)


async def test_a_chain_carries_what_the_last_target_never_saw_and_no_notice_echo(
        tmp_path: Path, project: str, server: Server) -> None:
    """Claude session A → Codex → Claude session B: B gets A's words (labelled) and the
    thread's, but not the visible notice the first handoff put into the thread."""
    a = claude_work(tmp_path)
    hook_session(project, a.write(tmp_path / "a.jsonl"), "a", "sess-a")
    async with client(server) as c:
        first = await handoff_to_codex(c, project=project, note=parse_note(None), env=ENV)
    server.items = list(reversed([
        payloads.item_entry(T1, payloads.user_message("human asks codex", "u1")),
        payloads.item_entry(T2, payloads.user_message("[codexbridge] from Claude Code — "
                                                      "handoff\n\nHandoff …", "u2",
                                                      client_id=first.handoff_id)),
        payloads.item_entry(T2, payloads.agent_message("codex carries on", "m2"))]))
    hook_session(project, tmp_path / "b.jsonl", "b", "sess-b", pid=os.getpid())
    async with client(server) as c:
        out = await handoff_to_claude(c, project=project, mailbox="b",
                                      note=parse_note(None), env=ENV)
    (mail,) = reading.peek(inbox_dir(), "b").mails
    assert "Claude Code session sess-a" in mail.text and "make the parser strict" in mail.text
    assert "human asks codex" in mail.text and "codex carries on" in mail.text
    assert "Handoff …" not in mail.text  # our own notice turn does not come back
    assert mail.text.index("sess-a") < mail.text.index("codex carries on")  # departing last
    assert {s["source"] for s in out.as_dict()["sources"]} == {
        "claude:sess-a", f"codex:{THREAD}"}

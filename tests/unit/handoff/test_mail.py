"""Handoff deltas and mail (issue 16, point 7).

* Claude → Codex: in real Claude Code 2.1.332 transcripts captured here
  (tests/support/handoff_claude_2_1_332_*.jsonl: a session set up with `setup claude`
  whose mail came by the watcher, live frames idle and busy, a courier-style reply, and
  a `-p` Stop-hook block; one set up with `install-hook` with an interactive Stop-hook
  block, a prompt typed while a turn ran, and a resume delta), only what the human typed
  crosses as "[the human]" — never a watcher's wake (a task-notification), a live
  frame or hook feedback.
* Codex → Claude: the turns Claude's own `talk send` started, whose reply the courier
  mailed it, and Claude's answers to Codex's requests, are not sent to it again.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from codexbridge.codex.client import AppServerClient
from codexbridge.handoff import claude_source, codex_source, delta
from codexbridge.handoff.claude_source import received_by
from codexbridge.handoff.delta import Received
from codexbridge.handoff.note import parse_note
from codexbridge.handoff.to_claude import handoff_to_claude
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox.lines import new_mail
from codexbridge.messages import to_claude as service
from codexbridge.messages.records import DeliveryState, DeliveryStore, ToCodex
from tests.support import payloads
from tests.support.handoff_fakes import Server, hook_session
from tests.support.schema_guard import (
    SchemaGuard,
    schema_guard_fixture,  # noqa: F401
)
from tests.support.transcripts import Transcript

CAPTURED = Path(__file__).resolve().parents[2] / "support"
PLUGIN_RUN = CAPTURED / "handoff_claude_2_1_332_plugin.jsonl"
HOOKS_RUN = CAPTURED / "handoff_claude_2_1_332_hooks.jsonl"
MAIL_WORDS = ("WAKE-MAIL", "LIVE-MAIL", "REPLY-MAIL", "BUSY-LIVE-MAIL", "BUSY-HOOK-MAIL",
              "STOPPED-MAIL", "STOPHOOK-MAIL", "RESUME-DELTA", "task-notification",
              "Stop hook", "Another Claude session")


def humans(path: Path) -> list[str]:
    read = claude_source.read_transcript(str(path), "s", None)
    return [m.text for m in read.messages if m.role == "user"]


def test_only_what_the_human_typed_crosses_as_the_human() -> None:
    assert humans(PLUGIN_RUN) == ["HUMAN-ONE please plan it", "HUMAN-TWO HOLD-ME",
                                  "HUMAN-THREE HOLD-ME", "HUMAN-FOUR in print mode"]
    assert humans(HOOKS_RUN) == ["HUMAN-ONE HOLD-ME", "HUMAN-TYPED-WHILE-BUSY",
                                 "HUMAN-AFTER-RESUME"]


def test_the_delta_never_labels_mail_as_the_human() -> None:
    read = claude_source.read_transcript(str(PLUGIN_RUN), "s", None, "Claude Code session s")
    built = delta.build(delta.DeltaInput("h_1", "Claude Code", "Codex", "now", "/c",
                                         [delta.Block(read.label, read.messages)],
                                         parse_note(None), "git: clean"), 24_000)
    for line in built.full.splitlines():
        if line.startswith("[the human]"):
            assert not any(w in line for w in MAIL_WORDS), line
    assert built.full.count("[the human]") == 4
    # Claude's own answers to the mail still cross, as Claude's
    assert built.full.count("[Claude]") == 10
    assert read.stats.verdict(claude_source.ROLES)[0].value == "readable"


@pytest.mark.parametrize("record", [
    {"origin": {"kind": "task-notification", "producer": "session-task"},
     "promptSource": "system", "turnOrigin": "task_notification"},
    {"origin": {"kind": "peer", "msg_id": "m"}, "isMeta": True},
    {"origin": {"kind": "some-future-kind"}},
    {"promptSource": "system"},
    {"turnOrigin": "task_notification"},
    {"turnOrigin": ["not", "a", "string"], "promptSource": {"x": 1},
     "text": "<task-notification>x"},
])
def test_records_not_from_the_human(record: dict[str, object]) -> None:
    t = Transcript()
    text = str(record.pop("text", "WAKE-MAIL words"))
    t.prompt(text, **record)
    t.reply("claude answers")
    read = claude_source.parse(t.lines(), None)
    assert [m.role for m in read.messages] == ["claude"]


def test_records_from_the_human() -> None:
    t = Transcript()
    t.prompt("typed", origin={"kind": "human"}, promptSource="typed", turnOrigin="human")
    t.prompt("queued", origin={"kind": "human"}, promptSource="queued", turnOrigin="human")
    t.prompt("print mode", promptSource="sdk", turnOrigin="sdk")
    t.prompt("an older record")
    read = claude_source.parse(t.lines(), None)
    assert [m.text for m in read.messages] == ["typed", "queued", "print mode",
                                               "an older record"]


# --- Codex → Claude: what the target already has -------------------------------------

THREAD = payloads.USER_THREAD
ASK, ANSWER = "req_1796000000000_abcdef", "req_1796000000001_ghijkl"
ASKED_BY_CODEX = "req_1795999999999_zzzzzz"


def talk_items() -> list[dict[str, object]]:
    """Newest first: the human's turn, Claude's request and Codex's reply, Claude's
    answer to a request of Codex's and Codex's reaction to it."""
    e = payloads.item_entry
    return list(reversed([
        e("t1", payloads.user_message("human asks codex", "u1")),
        e("t1", payloads.agent_message("codex did it", "m1")),
        e("t2", payloads.user_message("[codexbridge] from Claude Code — please review",
                                      "u2", client_id=ASK)),
        e("t2", payloads.agent_message("codex: looking at it", "m2")),
        e("t2", payloads.agent_message("CODEX REPLY the review is done", "m3")),
        e("t3", payloads.user_message("[codexbridge] from Claude Code — reply: 42",
                                      "u3", client_id=ANSWER)),
        e("t3", payloads.agent_message("codex: thanks for the 42", "m4")),
    ]))


def records(mail_id: str, mailbox: str = "web") -> None:
    store = DeliveryStore()
    store.save(ToCodex(id=ASK, thread_id=THREAD, state=DeliveryState.DELIVERED,
                       reply_to=mailbox, turn_id="t2", reply_mail_id=mail_id))
    store.save(ToCodex(id=ANSWER, thread_id=THREAD, state=DeliveryState.DELIVERED,
                       in_reply_to=ASKED_BY_CODEX, turn_id="t3"))


def test_parse_leaves_out_what_the_target_has() -> None:
    entries = list(reversed(talk_items()))
    everything = codex_source.parse(entries, None)
    assert len(everything.messages) == 7
    had = Received(frozenset({ASK, ANSWER}), frozenset({"t2"}))
    kept = codex_source.parse(entries, None, had)
    assert [m.text for m in kept.messages] == [
        "human asks codex", "codex did it", "codex: looking at it",
        "codex: thanks for the 42"]
    assert kept.mark == everything.mark  # the mark still moves past all of it


def test_received_by_needs_the_mail_in_the_target(tmp_path: Path) -> None:
    records("mail-0001")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"x": "nothing of it"}\n')
    assert received_by(str(transcript), "web", []) == {}
    assert received_by(str(transcript), "web", ["mail-0001"])[THREAD].reply_turns == {"t2"}
    transcript.write_text(f'{{"content": "· id mail-0001 --- request {ASKED_BY_CODEX}"}}\n')
    got = received_by(str(transcript), "web", [])[THREAD]
    assert got == Received(frozenset({ASK, ANSWER}), frozenset({"t2"}))
    assert received_by(str(transcript), "another-box", [])[THREAD].reply_turns == set()
    assert received_by(str(tmp_path / "gone.jsonl"), "web", []) == {}


# --- Claude → Codex: what the thread already has ---------------------------------------

def answer_record(rid: str, text: str, *, thread: str = THREAD,
                  state: DeliveryState = DeliveryState.DELIVERED, notice: bool = False) -> None:
    store = DeliveryStore()
    store.save(ToCodex(id=rid, thread_id=thread, state=state, in_reply_to=ASKED_BY_CODEX,
                       notice=notice))
    store.text_path(rid).write_bytes(text.encode("utf-8"))


def test_an_answer_the_thread_got_as_a_reply_turn_does_not_cross_again() -> None:
    answer_record(ANSWER, "the answer is 42\n")  # the hook's text, as it was sent
    answer_record("req_1796000000002_other0", "said to another thread", thread="thr_other")
    answer_record("req_1796000000003_failed", "never arrived", state=DeliveryState.FAILED)
    answer_record("req_1796000000004_notice", "a notice", notice=True)
    answered = claude_source.answers_into(THREAD)
    assert answered == {"the answer is 42"}
    t = Transcript()
    t.prompt("the human asks")
    t.reply("the answer is 42")
    t.prompt("the human again")
    last = t.reply("the answer is 42")  # the last one: the mark still moves past it
    everything = claude_source.parse(t.lines(), None)
    kept = claude_source.parse(t.lines(), None, answered)
    assert [m.text for m in kept.messages] == ["the human asks", "the human again"]
    assert kept.mark == everything.mark == last


@pytest.fixture
def project(tmp_path: Path) -> str:
    path = tmp_path / "project"
    path.mkdir()
    return str(path)


@asynccontextmanager
async def client(server: Server) -> AsyncIterator[AppServerClient]:
    async with AppServerClient("ws://memory", connector=server.connector) as c:
        yield c


async def test_handoff_to_claude_skips_the_reply_it_got_as_mail(
        tmp_path: Path, project: str, schema_guard: SchemaGuard) -> None:
    server = Server(threads=[payloads.thread(cwd=project)], page_size=50)
    server.items = talk_items()
    # the courier's reply mail, as Claude received it (the Stop hook's header)
    receipt = service.push("Reply from Codex … CODEX REPLY the review is done", to="web",
                           sender="codex", inbox=inbox_dir(), new=True,
                           fields={"in_reply_to": ASK, "delivery_id": ASK})
    records(receipt.mail.mail_id)
    t = Transcript()
    t.hook_feedback(f"[codexbridge k3x9qa] message 1 of 1 · from codex — a peer AI agent, not "
                    f"the human user · id {receipt.mail.mail_id}\nrequest {ASKED_BY_CODEX}")
    service.drain("web", lambda batch: None, inbox=inbox_dir())
    hook_session(project, t.write(tmp_path / "c.jsonl"), pid=os.getpid())
    async with client(server) as c:
        out = await handoff_to_claude(c, project=project, note=parse_note(None), env={},
                                      dry_run=True)
    assert out.prepared is not None
    text = out.prepared.built.full
    assert "human asks codex" in text and "codex did it" in text
    assert "codex: looking at it" in text and "codex: thanks for the 42" in text
    for gone in ("CODEX REPLY", "please review", "reply: 42"):
        assert gone not in text, gone


def test_mail_taken_first_by_the_watcher_is_on_its_way_not_waiting_for_a_stop() -> None:
    # The session's watcher can take the mail between the push and the live try: it is
    # being carried into the running session, which a handoff reports as delivered.
    mail = new_mail("delta", to="web", sender="codex")
    taken = service.PushReceipt(mail, "f", None, None, "taken")
    assert taken.in_flight and not taken.live
    assert service.PushReceipt(mail, "f", None, None, "live").in_flight
    assert not service.PushReceipt(mail, "f", None, None, "next-stop").in_flight

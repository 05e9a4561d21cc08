"""The conversation core: envelope, hop budget, delivery records, routing, context,
handling markers, text limits — pure decisions and small files, no binaries."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from pathlib import Path

import pytest

from codexbridge.errors import DeliveryNotFoundError, HopLimitError, UsageError
from codexbridge.host.limits import clip, max_hops, over_limit, text_max
from codexbridge.host.private import ensure_private_dir
from codexbridge.messages import answers, handling
from codexbridge.messages import to_codex as deliveries
from codexbridge.messages.conversations import Conversations, current_conversation, valid_id
from codexbridge.messages.envelope import CLAUDE, CODEX, Envelope, conversation_id, request_token
from codexbridge.messages.frame import words_of
from codexbridge.messages.records import (
    DeliveryStore,
    ToClaude,
    ToCodex,
    preview,
)
from codexbridge.messages.routing import reply_mailbox, sending_from_thread

# -- envelope ------------------------------------------------------------------------------

def _due(session: str, answer: str | None = None) -> tuple[list[dict[str, object]], str | None]:
    """What a stop answers (the interrupted ones are taken out all the same)."""
    settled = answers.settle(session, answer)
    return settled.answered, settled.conversation


def test_request_token_shape_and_uniqueness() -> None:
    token = request_token(now=1700000000.123)
    assert re.fullmatch(r"req_1700000000123_[a-z0-9]{6}", token)
    assert len({request_token() for _ in range(200)}) == 200
    assert re.fullmatch(r"conv_[0-9a-f]{12}", conversation_id())


def test_a_request_reads_the_same_to_codex_and_to_claude() -> None:
    """The preamble is written once (`envelope.who` / `peer` / `request_line`): the line
    naming a request's place in its conversation is the same in Codex's envelope and in
    the mail Claude is handed (the mail said `conversation conv_1 · …` without the echo)."""
    from codexbridge.inbox.lines import new_mail
    from codexbridge.messages.render import render_mail

    codex_side = Envelope(CODEX, "req_1_abcdef", "conv_1", 2, 4).wrap("hi", seal="k3x9qa")
    mail = new_mail("hi", to="web", sender="codex", extra={
        "conversation": "conv_1", "request": "req_1_abcdef", "hop": 2, "max_hops": 4})
    claude_side = render_mail("web", [mail], seal="k3x9qa")
    line = "conv_1 · hop 2/4 · request req_1_abcdef (echo it)"
    assert f"\n{line}\n" in codex_side  # (only the header's first line is tagged)
    assert f"\n[codexbridge k3x9qa] {line}\n" in claude_side
    assert "from Codex — a peer AI agent, not the human user" in codex_side
    assert "from codex — a peer AI agent, not the human user" in claude_side


def test_header_says_peer_agent_hop_and_token_in_three_lines() -> None:
    env = Envelope(CLAUDE, "req_1_abcdef", "conv_1", 2, 4, 'mailbox "m"')
    wrapped = env.wrap("hello", seal="k3x9qa")
    lines = wrapped.split("\n\n")[0].splitlines()
    assert len(lines) == 3 and all(len(line) < 80 for line in lines)
    assert lines[0] == "[codexbridge k3x9qa] from Claude Code — a peer AI agent, not the human user"
    assert "hop 2/4" in lines[1] and "req_1_abcdef" in lines[1] and "echo" in lines[1]
    assert 'mailbox "m"' in lines[2]
    assert wrapped.endswith("\n\nhello\n\n[codexbridge k3x9qa] end of the message from Claude Code")
    assert words_of(wrapped) == "hello"
    reply = Envelope(CLAUDE, "req_2_x", "conv_1", 0, 4, in_reply_to="req_1_abcdef")
    assert reply.is_reply and "reply to req_1_abcdef" in reply.header()[1]
    assert "hop" not in reply.wrap("x")


# -- hop budget ----------------------------------------------------------------------------

def test_budget_counts_requests_and_refuses_over_it(tmp_path: Path) -> None:
    convs = Conversations(tmp_path / "c")
    conv, n, _ = convs.spend_hop(None, {"direction": "claude→codex"}, 4)
    assert n == 1 and conv.startswith("conv_")
    for expected in (2, 3, 4):
        assert convs.spend_hop(conv, {"direction": "codex→claude"}, 4).n == expected
    with pytest.raises(HopLimitError) as err:
        convs.spend_hop(conv, {"direction": "claude→codex"}, 4)
    assert "used its 4 hops" in err.value.message and err.value.exit_code == 9
    data = convs.get(conv)
    assert data is not None and [h.n for h in data.hops] == [1, 2, 3, 4]
    mode = stat.S_IMODE(os.stat(convs.path(conv)).st_mode)
    assert mode == 0o600
    # the budget a conversation started with stays, whatever a later sender's limit is
    with pytest.raises(HopLimitError):
        convs.spend_hop(conv, {}, 10)


def test_budget_is_shared_by_concurrent_spenders(tmp_path: Path) -> None:
    convs = Conversations(tmp_path / "c")
    conv = convs.spend_hop(None, {}, 20).conversation
    results: list[int] = []
    errors: list[Exception] = []

    def spend() -> None:
        try:
            results.append(convs.spend_hop(conv, {}, 20).n)
        except HopLimitError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=spend) for _ in range(25)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(2, 21)) and len(errors) == 6


def test_damaged_budget_file_is_kept_aside_and_the_send_refused(tmp_path: Path) -> None:
    convs = Conversations(tmp_path / "c")
    conv = convs.spend_hop(None, {}, 4).conversation
    convs.path(conv).write_text("{not json")
    with pytest.raises(HopLimitError) as err:
        convs.spend_hop(conv, {}, 4)
    kept = Path(err.value.details["kept"])
    assert kept.read_text() == "{not json" and not convs.path(conv).exists()


def test_max_hops_and_ids_are_checked() -> None:
    assert max_hops({}) == 40 and max_hops({"CODEX_BRIDGE_MAX_HOPS": "7"}) == 7
    for bad in ("x", "0", "-1"):
        with pytest.raises(UsageError):
            max_hops({"CODEX_BRIDGE_MAX_HOPS": bad})
    for bad in ("conv_../x", "nope", "conv_" + "a" * 80):
        with pytest.raises(UsageError):
            valid_id(bad)


# -- delivery records ----------------------------------------------------------------------

def record(**kw: object) -> ToCodex:
    kw.setdefault("thread_id", "T0")
    d = ToCodex(id=str(kw.pop("id", "req_1_aaaaaa")), **kw)  # type: ignore[arg-type]
    d.queue()
    return d


def ask(**kw: object) -> ToClaude:
    kw.setdefault("thread_id", "T0")
    d = ToClaude(id=str(kw.pop("id", "req_2_b")), mailbox="box", **kw)  # type: ignore[arg-type]
    d.queue()
    return d


def test_records_walk_states_with_history_and_are_private(tmp_path: Path) -> None:
    store = DeliveryStore(tmp_path / "d")
    store.save(record(thread_id="t1"))

    def started(r: ToCodex) -> None:
        r.turn_id = "u1"
        r.take()

    store.update("req_1_aaaaaa", started, ToCodex)
    store.update("req_1_aaaaaa", lambda r: r.await_reply())
    got = store.update("req_1_aaaaaa", lambda r: r.fail("boom"))
    assert got is not None and got.state.final and got.turn_id == "u1"
    assert [h["state"] for h in got.history] == ["queued", "delivering", "awaiting-reply",
                                                "failed"]
    assert got.history[-1]["reason"] == "boom"
    assert stat.S_IMODE(os.stat(store.path(got.id)).st_mode) == 0o600
    assert store.update("req_9_missing", lambda r: None) is None
    with pytest.raises(ValueError):
        store.path("../etc")


def test_ttl_sweeps_records_their_texts_and_locks(tmp_path: Path) -> None:
    now = [1_000_000.0]
    store = DeliveryStore(tmp_path / "d", ttl=60, clock=lambda: now[0])
    store.save(record(id="req_1_old"))
    (store.root / "req_1_old.text").write_text("t")
    (store.root / "req_1_old.reply").write_text("r")
    for name in ("req_1_old.json", "req_1_old.text", "req_1_old.reply"):
        os.utime(store.root / name, (now[0] - 120, now[0] - 120))
    store.save(record(id="req_2_new"))
    assert sorted(p.name for p in store.root.iterdir() if not p.name.startswith(".")) == [
        "req_2_new.json"]


def test_unreadable_record_is_not_a_crash(tmp_path: Path) -> None:
    store = DeliveryStore(tmp_path / "d")
    store.save(record(id="req_1_good"))
    (store.root / "req_2_bad.json").write_text("{half")
    assert [r.id for r in store.recent()] == ["req_1_good"]
    assert store.get("req_2_bad") is None
    # `talk status` says the record is damaged, not that it was never made.
    with pytest.raises(DeliveryNotFoundError, match=r"req_2_bad\.json is damaged"):
        deliveries.get(store, "req_2_bad")
    with pytest.raises(DeliveryNotFoundError, match="never made here"):
        deliveries.get(store, "req_3_none")
    assert (store.root / "req_2_bad.json").read_text() == "{half"


# A message to Codex and a request to Claude as codexbridge wrote them before the file's
# version 2: flat, every field of both roads on each.
BEFORE_V2 = [json.loads(text) for text in (
    '{"id": "req_1700000000000_aaaaaa", "direction": "to-codex", "state": "delivered", '
    '"created_at": 1700000000.0, "updated_at": 1700000001.0, "conversation": '
    '"conv_0123456789ab", "hop": 1, "max_hops": 40, "in_reply_to": null, "thread_id": "T1", '
    '"chosen_by": "caller", "reply_to": "box", "reply_to_how": "--reply-to", "mailbox": null, '
    '"text_preview": "hello", "submission_id": "s1", "turn_id": "u1", "courier_pid": null, '
    '"app_server": null, "app_server_token_file": null, "app_server_ca_file": null, '
    '"app_server_ca_dir": null, "approvals": "tui", "approval_timeout": 300.0, '
    '"turn_timeout": 14400.0, "reply_preview": "hi back", "reply_bytes": 7, "reply_mail_id": '
    '"m1", "recovered": false, "reason": null, "session_id": null, "claude_pid": null, '
    '"answered_at": null, "server_lost_at": null, "notice": false, "sender": "claude-code", '
    '"sender_thread": null, "blocking": false, "unattended": false, "warnings": [], '
    '"history": [{"state": "queued", "at": 1700000000.0}, {"state": "delivered", "at": '
    '1700000001.0}]}',
    '{"id": "req_1700000000000_bbbbbb", "direction": "to-claude", "state": "awaiting-reply", '
    '"created_at": 1700000000.0, "updated_at": 1700000001.0, "conversation": '
    '"conv_0123456789ab", "hop": 2, "max_hops": 40, "in_reply_to": null, "thread_id": "T1", '
    '"chosen_by": null, "reply_to": null, "reply_to_how": null, "mailbox": "box", '
    '"text_preview": "a question", "submission_id": null, "turn_id": null, "courier_pid": '
    'null, "app_server": null, "app_server_token_file": null, "app_server_ca_file": null, '
    '"app_server_ca_dir": null, "approvals": "tui", "approval_timeout": 300.0, '
    '"turn_timeout": 14400.0, "reply_preview": "", "reply_bytes": 0, "reply_mail_id": null, '
    '"recovered": false, "reason": null, "session_id": "S1", "claude_pid": 4242, '
    '"answered_at": null, "server_lost_at": null, "notice": false, "sender": "codex", '
    '"sender_thread": "T1", "blocking": false, "unattended": false, "warnings": [], '
    '"history": [{"state": "queued", "at": 1700000000.0}, {"state": "awaiting-reply", "at": '
    '1700000001.0}]}')]


def test_a_record_written_before_version_2_reads_as_its_road(tmp_path: Path) -> None:
    """Each old file reads as its direction's record, the other road's fields ignored;
    `talk status --json` shows it exactly as before; written back it is version 2 and
    holds its own road's fields only."""
    store = DeliveryStore(tmp_path / "d")
    ensure_private_dir(store.root)
    for old in BEFORE_V2:
        (store.root / f"{old['id']}.json").write_text(json.dumps(old, indent=2))
    sent, asked = (store.get(str(old["id"])) for old in BEFORE_V2)
    assert isinstance(sent, ToCodex) and sent.state.value == "delivered"
    assert (sent.turn_id, sent.reply_to, sent.reply_mail_id) == ("u1", "box", "m1")
    assert isinstance(asked, ToClaude) and asked.state.value == "awaiting-reply"
    assert (asked.mailbox, asked.session_id, asked.claude_pid) == ("box", "S1", 4242)
    # (keys more: what each turn cost and where Claude's answer was written, not known
    # for a file of then; and an MCP task's fields, issue 26)
    shown = [sent.as_dict(), asked.as_dict()]
    assert [(d.pop("tokens"), d.pop("transcript")) for d in shown] == [(None, None)] * 2
    assert [(d.pop("task"), d.pop("task_status"), d.pop("approval_waiting"))
            for d in shown] == [(False, None, None)] * 2
    assert shown == BEFORE_V2
    assert asked.needs_courier and not sent.needs_courier  # its session is watched

    store.update(asked.id, lambda r: r.deliver())
    on_disk = json.loads(store.path(asked.id).read_text())
    assert on_disk["version"] == 2 and on_disk["mailbox"] == "box"
    assert not {"turn_id", "reply_to", "approvals", "notice"} & on_disk.keys()
    again = store.get(asked.id, ToClaude)
    assert again is not None and again.state.value == "delivered"
    assert (again.session_id, again.claude_pid, again.sender) == ("S1", 4242, "codex")


def test_a_record_of_an_unknown_shape_is_damaged_not_guessed(tmp_path: Path) -> None:
    store = DeliveryStore(tmp_path / "d")
    ensure_private_dir(store.root)
    for name, change in (("req_1_v", {"version": "two"}), ("req_2_d", {"direction": "up"}),
                         ("req_3_t", {"thread_id": None}), ("req_4_m", {"mailbox": 5})):
        old = {**BEFORE_V2[1], "id": name, **change}
        (store.root / f"{name}.json").write_text(json.dumps(old))
    assert store.recent() == []
    assert sorted(d.id for d in store.damaged()) == ["req_1_v", "req_2_d", "req_3_t",
                                                     "req_4_m"]
    # one road's record is not the other's
    (store.root / "req_5_ok.json").write_text(json.dumps({**BEFORE_V2[1], "id": "req_5_ok"}))
    assert store.get("req_5_ok", ToCodex) is None and store.get("req_5_ok", ToClaude)
    assert store.update("req_5_ok", lambda r: r.fail("x"), ToCodex) is None


def test_status_prints_a_record_whose_history_time_is_garbage(
        capsys: pytest.CaptureFixture[str]) -> None:
    from codexbridge.cli.talk_live_cmd import _print_record

    r = record(history=[{"state": "queued", "at": "noon"}, {"state": "failed", "at": 1e300}])
    _print_record(r)
    out = capsys.readouterr().out
    assert "?  queued" in out and "?  failed" in out


def test_preview_is_bounded() -> None:
    assert preview("x" * 10) == "x" * 10
    assert len(preview("x" * 5000)) == 2001


def test_what_needs_a_courier() -> None:
    # Codex-bound messages until their end; a Claude request only while a session that
    # was handed it has not answered (mail waiting for a session to start needs nobody).
    to_codex = record()
    assert to_codex.needs_courier
    to_codex.deliver()
    assert not to_codex.needs_courier
    asked = ask()
    assert not asked.needs_courier
    asked.claude_pid = os.getpid()
    asked.await_reply()
    assert asked.needs_courier
    asked.answered_at = 1.0
    assert not asked.needs_courier


def test_pending_markers_follow_what_needs_a_courier(tmp_path: Path) -> None:
    store = DeliveryStore(tmp_path)
    r = record()
    store.save(r)
    assert store.pending() == [r.id] and [x.id for x in store.unfinished()] == [r.id]
    store.update(r.id, lambda x: x.fail("x"))
    assert store.pending() == [] and store.unfinished() == []


# -- routing, context, handling ------------------------------------------------------------

def test_reply_mailbox_is_the_calling_session_never_a_guess() -> None:
    listeners = {"a": {"messaging_socket": "/s/1.sock", "session_id": "S1", "cwd": "/p"},
                 "b": {"session_id": "S2", "cwd": "/p"}}
    env = {"CLAUDE_CODE_MESSAGING_SOCKET": "/s/1.sock"}
    assert reply_mailbox(None, env, listeners) == ("a", "calling session")
    assert reply_mailbox(None, {"CLAUDE_CODE_SESSION_ID": "S2"}, listeners) == (
        "b", "calling session")
    assert reply_mailbox("x", env, listeners) == ("x", "--reply-to")
    assert reply_mailbox(None, {"CODEX_BRIDGE_MAILBOX": "m"}, listeners) == (
        "m", "$CODEX_BRIDGE_MAILBOX")
    # same directory, unknown session: nobody (not the mailbox that happens to share a cwd)
    assert reply_mailbox(None, {"CLAUDE_CODE_SESSION_ID": "S9", "PWD": "/p"}, listeners) == (
        None, "none")
    assert sending_from_thread({"CODEX_THREAD_ID": "t"}) == "t"
    assert sending_from_thread({}) is None


def test_current_conversation_order(tmp_path: Path) -> None:
    store = DeliveryStore(tmp_path / "d")
    running = record(id="req_1_run", thread_id="T", conversation="conv_aaa")
    running.take()
    store.save(running)
    assert current_conversation("conv_x1", {"CODEX_BRIDGE_CONVERSATION": "conv_y"},
                                store) == "conv_x1"
    assert current_conversation(None, {"CODEX_BRIDGE_CONVERSATION": "conv_y"}, store) == \
        "conv_y"
    assert current_conversation(None, {"CODEX_THREAD_ID": "T"}, store) == "conv_aaa"
    assert current_conversation(None, {"CODEX_THREAD_ID": "other"}, store) is None
    handling.note("sess-1", "box", [{"id": "m1", "conversation": "conv_bbb"}])
    assert current_conversation(None, {"CLAUDE_CODE_SESSION_ID": "sess-1"}, store) == \
        "conv_bbb"
    assert current_conversation(None, {}, store) is None


def test_mail_sent_live_but_not_yet_seen_taken_in_keeps_the_conversation(
        tmp_path: Path) -> None:
    """A frame queued behind Claude's running turn is taken in at its next tool result;
    the pusher stopped watching before that, so no handling marker says so yet. The turn
    that asks back from that tool call belongs to the mail's conversation."""
    store = DeliveryStore(tmp_path / "d")
    asked = ask(id="req_2_c", conversation="conv_ddd", thread_id="T")
    asked.await_reply()
    asked.session_id = "sess-9"
    store.save(asked)
    assert current_conversation(None, {"CLAUDE_CODE_SESSION_ID": "sess-9"}, store) == \
        "conv_ddd"
    assert current_conversation(None, {"CLAUDE_CODE_SESSION_ID": "other"}, store) is None
    asked.answered_at = 1.0
    store.save(asked)
    assert current_conversation(None, {"CLAUDE_CODE_SESSION_ID": "sess-9"}, store) is None


def test_a_turn_codex_started_before_its_sender_noted_the_submission_keeps_the_conversation(
        tmp_path: Path) -> None:
    """Codex runs a queued message at once and its tool call can come before the sender
    (descheduled on a loaded machine) writes codex's submission id: the request still
    belongs to the conversation of the message that started the turn."""
    store = DeliveryStore(tmp_path / "d")
    queued = record(id="req_1_q", thread_id="T", conversation="conv_ccc")
    queued.queue()
    assert not queued.submission_id
    store.save(queued)
    assert current_conversation(None, {"CODEX_THREAD_ID": "T"}, store) == "conv_ccc"


def test_handling_notes_each_request_once_and_answers_it_once(tmp_path: Path) -> None:
    ask = {"id": "m1", "request": "req_1_a", "conversation": "conv_c",
           "expect_reply": {"thread": "T1"}}
    assert handling.note("s", "box", [ask]) == ["req_1_a"]
    assert handling.note("s", "box", [ask]) == []  # the pusher and the hook both settle it
    handling.note("s", "box", [{"id": "m2", "request": "req_2_b", "conversation": "conv_c",
                                "expect_reply": {"thread": "T2"}}])
    handling.note("s", "box", [{"id": "m3"}])  # plain mail: nothing to remember
    due, conv = _due("s")  # no transcript to look at: all due
    assert [r["thread"] for r in due] == ["T1", "T2"] and conv == "conv_c"
    assert _due("s") == ([], None)
    assert os.path.basename(handling.path("../../evil")) == "evil.json"  # stays inside


def _transcript(path: Path, *records: dict[str, object]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")


def test_a_request_is_due_at_the_stop_of_the_turn_that_took_its_mail_in(
        tmp_path: Path) -> None:
    # Measured on 2.1.332 (docs/reverse-channel.md): mail queued behind a running turn is a
    # queue-operation record until Claude dequeues it after that turn's stop; then a user
    # record. The stop of the *earlier* turn must not answer it; the next stop does — even
    # before the answer itself reaches the file (an interactive transcript lags its hook).
    tr = tmp_path / "t.jsonl"
    _transcript(tr, {"type": "user", "message": {"role": "user", "content": "hi"}})
    offset = tr.stat().st_size
    handling.note("s2", "box", [{"id": "mail-7", "request": "req_7_a",
                                 "expect_reply": {"thread": "T"}}], str(tr), offset)
    _transcript(tr, {"type": "queue-operation", "content": "… id mail-7 …"},
                {"type": "assistant", "message": {"content": "about hi"}},
                {"type": "system", "subtype": "stop_hook_summary", "hookErrors": ["mail-7"]})
    assert _due("s2") == ([], None)  # the earlier turn's stop: not yet
    _transcript(tr, {"type": "user", "message": {"content": "… id mail-7 …"}})
    due, _ = _due("s2")
    assert [r["request"] for r in due] == ["req_7_a"]
    # mid-tool: an attachment beside the tool result, in the same turn
    handling.note("s2", "box", [{"id": "mail-8", "request": "req_8_a",
                                 "expect_reply": {"thread": "T"}}], str(tr),
                  tr.stat().st_size)
    _transcript(tr, {"type": "attachment", "attachment": {"prompt": "… id mail-8 …"}})
    assert [r["request"] for r in _due("s2")[0]] == ["req_8_a"]


def test_mail_handed_at_a_stop_keeps_its_conversation_for_the_turn_that_handles_it(
        tmp_path: Path) -> None:
    # The journeys caught it: the watcher handed Codex's hop-4 mail (no answer expected)
    # as the turn ended, the Stop hook of that same turn then found nothing to answer and
    # dropped the marker — Claude's next send started a new conversation, so hop 5 was
    # not refused.
    tr = tmp_path / "t.jsonl"
    _transcript(tr, {"type": "user", "message": {"role": "user", "content": "hi"}})
    handling.note("s5", "box", [{"id": "mail-11", "conversation": "conv_hops"}], str(tr),
                  tr.stat().st_size)
    assert _due("s5", "the turn that was ending") == ([], "conv_hops")
    assert current_conversation(None, {"CLAUDE_CODE_SESSION_ID": "s5"}) == "conv_hops"
    _transcript(tr, {"type": "user", "message": {"content": "… id mail-11 …"}})
    _due("s5", "the turn that handled it")  # its stop: done with it
    assert handling.current_marker("s5") is None


def test_a_stop_whose_answer_names_the_request_answers_it_before_the_transcript_shows_it(
        tmp_path: Path) -> None:
    # The journeys caught it: a live mail started the turn, Claude answered (echoing the
    # request token, as the envelope asks), and the Stop hook ran before Claude Code had
    # written the mail's record — the answer was never sent.
    tr = tmp_path / "t.jsonl"
    _transcript(tr, {"type": "user", "message": {"role": "user", "content": "hi"}})
    handling.note("s3", "box", [{"id": "mail-9", "request": "req_9_a",
                                 "expect_reply": {"thread": "T"}}], str(tr), tr.stat().st_size)
    assert _due("s3", "something else entirely") == ([], None)
    due, _ = _due("s3", "CLAUDE ANSWER to req_9_a: yes")
    assert [r["request"] for r in due] == ["req_9_a"]


# -- limits --------------------------------------------------------------------------------

def test_text_limits() -> None:
    assert text_max({}) == 200_000 and text_max({"CODEX_BRIDGE_TEXT_MAX": "10"}) == 10
    assert text_max({"CODEX_BRIDGE_TEXT_MAX": "junk"}) == 200_000
    assert over_limit("abc", 3) is None
    why = over_limit("abcd", 3)
    assert why is not None and "4 characters" in why and "CODEX_BRIDGE_TEXT_MAX" in why
    cut = clip("x" * 1000, 200, "in /tmp/f")
    assert len(cut) <= 200 and cut.endswith("the whole text: in /tmp/f]")
    assert clip("short", 200, "n/a") == "short"


def test_state_dirs_are_created_private_and_unsafe_ones_named(tmp_path: Path) -> None:
    from codexbridge.host.private import ensure_private_dir, unsafe_state_dir

    old = os.umask(0o022)
    try:
        ensure_private_dir(tmp_path / "fresh" / "home" / "inbox")
    finally:
        os.umask(old)
    for d in ("fresh", "fresh/home", "fresh/home/inbox"):
        assert stat.S_IMODE(os.stat(tmp_path / d).st_mode) == 0o700, d
    assert unsafe_state_dir("/") is not None
    assert unsafe_state_dir(os.path.expanduser("~")) is not None
    link = tmp_path / "sneaky"
    link.symlink_to(os.path.expanduser("~/.claude"))
    assert "another agent's own state" in (unsafe_state_dir(str(link / "x")) or "")
    assert unsafe_state_dir(str(tmp_path / "fresh")) is None


def test_mail_cap() -> None:
    from codexbridge.host.limits import mail_max, mail_over_limit

    assert mail_max({}) == 1024 * 1024 and mail_max({"CODEX_BRIDGE_MAIL_MAX": "9"}) == 9
    assert mail_over_limit("é" * 5, 9) is not None  # bytes, not characters
    assert mail_over_limit("abc", 9) is None


def test_what_reaching_the_app_server_took_travels_with_the_delivery(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23, item 11: the courier carries every sender's deliveries in the environment
    of whoever started it, so the URL, the token and the CA a send used are kept with the
    record — the token beside it (0600), never in the record `talk status` shows."""
    from codexbridge.codex.endpoint import Endpoint, Reach, reach_of, recorded_endpoint

    store = DeliveryStore(tmp_path / "d")
    record = ToCodex(id=request_token(), thread_id="T0")
    store.note_reach(record, Reach("wss://codex-box:8443", "tok-" + "x" * 20, None,
                                   "/etc/cb/cert.pem", None))
    store.save(record)
    kept = Path(str(record.app_server_token_file))
    assert kept == store.root / f"{record.id}.token"
    assert kept.read_text() == "tok-" + "x" * 20 and stat.S_IMODE(kept.stat().st_mode) == 0o600
    shown = json.dumps(record.as_dict())
    assert "tok-" not in shown and "/etc/cb/cert.pem" in shown
    again = store.get(record.id)
    assert again is not None
    ep = recorded_endpoint(again.app_server, again.app_server_token_file,
                           again.app_server_ca_file, again.app_server_ca_dir)
    assert (ep.url, ep.token, ep.ca_file) == ("wss://codex-box:8443", "tok-" + "x" * 20,
                                               "/etc/cb/cert.pem")
    # a token read from serve's file is kept by its path: a restarted serve's new token
    # is read there
    served = reach_of(Endpoint("ws://127.0.0.1:1", "t", "bridge.json", token_file="/s/ws-token"))
    assert served.token is None and served.token_file == "/s/ws-token"
    # the Stop hook's reply: what its environment names, a relative CA file made absolute
    monkeypatch.chdir(tmp_path)
    env = {"CODEX_BRIDGE_URL": "wss://codex-box:8443", "CODEX_BRIDGE_TOKEN": "t" * 16,
           "SSL_CERT_FILE": "cert.pem"}
    assert Reach.from_env(env) == Reach("wss://codex-box:8443", "t" * 16, None,
                                        str(tmp_path / "cert.pem"), None)
    assert Reach.from_env({"CODEX_BRIDGE_TOKEN": "t" * 16}) == Reach()
    # swept with its record
    old = store.clock() - store.ttl - 10
    os.utime(kept, (old, old))
    store.sweep()
    assert not kept.exists()


def test_a_handling_marker_from_before_versions_still_settles(tmp_path: Path) -> None:
    """An older codexbridge's marker (no version) is read as version 1; a stop settles
    it and writes it back with one."""
    ensure_private_dir(os.path.dirname(handling.path("old")))
    (tmp_path / "empty.jsonl").write_text("")
    Path(handling.path("old")).write_text(json.dumps({
        "mailbox": "web", "conversation": "conv_a",
        "requests": [{"request": "req_1", "thread": "t", "conversation": "conv_a",
                      "mail": "m1", "transcript": None, "offset": "x"},
                     {"request": "req_2", "thread": "t", "conversation": "conv_a",
                      "mail": "m2", "transcript": str(tmp_path / "empty.jsonl"), "offset": 0},
                     "junk"]}))
    settled = answers.settle("old", "an answer")
    assert [r["request"] for r in settled.answered] == ["req_1"]  # no transcript: due
    assert settled.conversation == "conv_a"
    kept = json.loads(Path(handling.path("old")).read_text())
    assert kept["version"] == handling.MARKER_VERSION
    assert [r["request"] for r in kept["requests"]] == ["req_2"]  # not taken in yet


@pytest.mark.parametrize("text", ["{torn", "[1]", '{"version": "one", "requests": []}'])
def test_a_damaged_handling_marker_names_its_file_and_holds_nothing(text: str) -> None:
    from codexbridge.errors import DamagedStateError

    ensure_private_dir(os.path.dirname(handling.path("bad")))
    Path(handling.path("bad")).write_text(text)
    with pytest.raises(DamagedStateError, match=re.escape("bad.json")):
        handling.load("bad")
    assert handling.current_marker("bad") is None
    assert answers.settle("bad", "x").answered == []
    assert not os.path.exists(handling.path("bad"))  # the stop cleared it, as before

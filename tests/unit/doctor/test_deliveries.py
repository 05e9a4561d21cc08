"""doctor's `deliveries` and `codex-shell` rows, judged from facts alone."""

from __future__ import annotations

import json
from typing import Any

from codexbridge.doctor.binaries import CodexShell, codex_shell_rows
from codexbridge.doctor.records import DeliveryFacts, Failed, delivery_rows
from codexbridge.doctor.report import INFO, OK, WARN
from codexbridge.messages.records import Delivery, DeliveryState, ToClaude, ToCodex

NOW = 1_800_000_000.0


def rec(id_: str, state: str, age: float, **kw: Any) -> ToCodex:
    return ToCodex(id=id_, thread_id="thr_1", state=DeliveryState(state),
                   updated_at=NOW - age, reply_to="web", **kw)


def facts(courier: bool, unfinished: list[Delivery], failed: list[Failed]) -> DeliveryFacts:
    return DeliveryFacts(NOW, courier, tuple(unfinished), tuple(failed))


def test_in_flight_with_a_courier_is_fine() -> None:
    [row] = delivery_rows(facts(True, [rec("req_1_a", "awaiting-reply", 600)], []))
    assert row.status == OK and "carried by the courier" in row.finding


def test_nothing_moves_without_a_courier_after_a_while() -> None:
    [row] = delivery_rows(facts(False, [rec("req_1_a", "queued", 5),
                                        rec("req_2_b", "delivering", 900)], []))
    assert row.status == WARN and "req_2_b" in row.finding and "req_1_a" not in row.finding
    assert row.fix and "talk status req_2_b" in row.fix


def test_a_failure_nobody_heard_of_is_said() -> None:
    told = Failed(rec("req_1_a", "failed", 60, reply_mail_id="m1"))
    lost = Failed(rec("req_2_b", "failed", 60, reason="the app-server went away"))
    unread = Failed(rec("req_3_c", "orphaned", 3600, reply_mail_id="m3"), notice_waiting=True)
    [row] = delivery_rows(facts(True, [], [told, lost, unread]))
    assert row.status == WARN
    assert "req_2_b" in row.finding and "req_3_c" in row.finding
    assert "req_1_a" not in row.finding
    [quiet] = delivery_rows(facts(True, [], [told]))
    assert quiet.status == OK and "told to its asker" in quiet.finding


def ask(id_: str, state: str, age: float, **kw: Any) -> ToClaude:
    """A request of Codex's to Claude (expect-reply), as its record keeps it."""
    return ToClaude(id=id_, state=DeliveryState(state), updated_at=NOW - age,
                    mailbox="web-1a2b3c", thread_id="thr_1", **kw)


def test_a_request_taken_in_that_no_session_answers_is_said() -> None:
    # break 1 of the journeys: the mail reached Claude, nothing noted the request, and
    # Codex waited forever while doctor was green
    taken = ask("req_1_a", "queued", 900)
    fresh = ask("req_2_b", "queued", 5)  # a live frame the transcript has not shown yet
    [row] = delivery_rows(DeliveryFacts(NOW, True, (), (), (taken, fresh)))
    assert row.status == WARN and "req_1_a" in row.finding and "req_2_b" not in row.finding
    assert row.fix and "talk send --in-reply-to req_1_a --thread thr_1" in row.fix


def test_the_facts_find_a_request_whose_mail_was_taken_with_nobody_noted() -> None:
    from click.testing import CliRunner

    from codexbridge.cli.app import cli
    from codexbridge.doctor.records import deliveries

    runner = CliRunner()
    pushed = runner.invoke(cli, ["inbox", "push", "--to", "web", "--new", "--expect-reply",
                                 "--thread", "thr_1", "--json", "q"])
    assert pushed.exit_code == 0, pushed.output
    assert deliveries().unheard == ()  # waiting in its mailbox: it will be heard
    assert runner.invoke(cli, ["inbox", "drain", "--as", "web"]).exit_code == 0
    assert [r.id for r in deliveries().unheard] == [json.loads(pushed.stdout)["request"]]


def test_a_request_a_running_session_holds_for_long_is_said() -> None:
    long = ask("req_1_a", "awaiting-reply", 3600, claude_pid=4242, session_id="s1")
    busy = ask("req_2_b", "awaiting-reply", 60, claude_pid=4242, session_id="s1")
    done = ask("req_3_c", "awaiting-reply", 3600, claude_pid=4242, answered_at=NOW - 10)
    [row] = delivery_rows(DeliveryFacts(NOW, True, (long, busy, done)))
    assert row.status == WARN and "req_1_a (session s1, 60 min)" in row.finding
    assert "req_2_b" not in row.finding and "req_3_c" not in row.finding
    [quiet] = delivery_rows(DeliveryFacts(NOW, True, (busy,)))
    assert quiet.status == OK


def test_codex_shell() -> None:
    found = codex_shell_rows(CodexShell("/bin/bash", "/usr/local/bin/codexbridge", None))
    assert found[0].status == OK
    told = codex_shell_rows(CodexShell("/bin/bash", None, "/home/u/.local/bin/codexbridge"))
    assert told[0].status == INFO and "/home/u/.local/bin/codexbridge" in told[0].finding
    lost = codex_shell_rows(CodexShell("/bin/bash", None, None))
    assert lost[0].status == WARN and lost[0].fix and "setup codex" in lost[0].fix

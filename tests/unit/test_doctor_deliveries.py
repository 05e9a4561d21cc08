"""doctor's `deliveries` and `codex-shell` rows, judged from facts alone."""

from __future__ import annotations

from typing import Any

from codexbridge.conversation.records import Delivery, DeliveryState, Direction
from codexbridge.doctor.binaries import CodexShell, codex_shell_rows
from codexbridge.doctor.records import DeliveryFacts, Failed, delivery_rows
from codexbridge.doctor.report import INFO, OK, WARN

NOW = 1_800_000_000.0


def rec(id_: str, state: str, age: float, **kw: Any) -> Delivery:
    return Delivery(id_, Direction.TO_CODEX, DeliveryState(state), updated_at=NOW - age,
                    reply_to="web", **kw)


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


def test_codex_shell() -> None:
    found = codex_shell_rows(CodexShell("/bin/bash", "/usr/local/bin/codexbridge", None))
    assert found[0].status == OK
    told = codex_shell_rows(CodexShell("/bin/bash", None, "/home/u/.local/bin/codexbridge"))
    assert told[0].status == INFO and "/home/u/.local/bin/codexbridge" in told[0].finding
    lost = codex_shell_rows(CodexShell("/bin/bash", None, None))
    assert lost[0].status == WARN and lost[0].fix and "setup codex" in lost[0].fix

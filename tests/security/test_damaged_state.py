"""Threat: damaged state that hides.

A record of codexbridge's own that cannot be read (a disk error, a crash, a hand edit)
must never read as "nothing there": a damaged delivery record once made `talk status`
say "no deliveries yet" and doctor "OK nothing in flight"; an unreadable hop-budget
file showed OK. Damage is shown, named, and its fix given — and left as it is for a
person to look at.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from codexbridge.messages.records import DeliveryStore, ToCodex
from tests.support.cli import run_cli


def a_record(store: DeliveryStore, delivery_id: str) -> ToCodex:
    record = ToCodex(id=delivery_id, conversation="conv_0123456789ab", hop=1, max_hops=8,
                     thread_id="thr", chosen_by="test", text_preview="hello")
    record.queue()
    store.save(record)
    return record


def test_a_damaged_delivery_record_is_shown_not_hidden() -> None:
    store = DeliveryStore()
    good = a_record(store, "req_good000000001")
    bad = store.path("req_bad0000000001")
    bad.write_text('{"id": "req_bad0000000001", "direction": ')  # cut off mid-write
    listed = run_cli("talk", "status")
    assert listed.code == 0
    assert good.id in listed.out and "no deliveries yet" not in listed.out
    assert f"damaged record {bad}" in listed.err and f"mv {bad} {bad}.damaged" in listed.err
    data = json.loads(run_cli("talk", "status", "--json").out)
    assert [d["path"] for d in data["damaged"]] == [str(bad)]
    one = run_cli("talk", "status", "req_bad0000000001")
    assert one.code == 2 and "is damaged" in one.err and "mv " in one.err
    doctor = json.loads(run_cli("doctor", "--json").out)
    rows = [r for r in doctor["checks"] if r["name"] == "deliveries"]
    assert any(r["status"] == "WARN" and str(bad) in r["finding"] for r in rows), rows
    assert bad.read_text() == '{"id": "req_bad0000000001", "direction": '  # left as it is


def test_only_a_damaged_record_is_not_no_deliveries() -> None:
    store = DeliveryStore()
    store.root.mkdir(parents=True, mode=0o700)
    store.path("req_bad0000000002").write_text("[1, 2, 3]")
    listed = run_cli("talk", "status")
    assert "no readable deliveries" in listed.out and "damaged record" in listed.err


def test_an_unreadable_hop_budget_is_named_by_doctor() -> None:
    home = Path(os.environ["CODEX_BRIDGE_HOME"])
    conversations = home / "conversations"
    conversations.mkdir(parents=True, mode=0o700)
    budget = conversations / "conv_0123456789ab.json"
    budget.write_bytes(b"\x00\x01 not json")
    budget.chmod(0o600)  # only its damage to find
    doctor = json.loads(run_cli("doctor", "--json").out)
    state = [r for r in doctor["checks"] if r["name"] == "state"]
    assert any(r["status"] == "WARN" and str(budget) in r["finding"] for r in state), state
    send = run_cli("inbox", "push", "--new", "--to", "web", "--conversation",
                   "conv_0123456789ab", "hi")
    assert send.code == 9 and "unreadable" in send.err  # refused, never a budget from zero

"""What a bridged turn cost (docs/tokens.md): `Tokens` on a delivery record and a
conversation's running total — written, read back, older files, damaged values."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from codexbridge.messages.conversations import Conversations
from codexbridge.messages.records import (
    Damaged,
    DeliveryStore,
    ToClaude,
    ToCodex,
    Tokens,
    add_tokens,
)


def test_tokens_add_up() -> None:
    assert Tokens(10, 4, 2) + Tokens(1, 0, 3) == Tokens(11, 4, 5)
    assert add_tokens(None, None) is None
    assert add_tokens(None, Tokens(1, 0, 1)) == Tokens(1, 0, 1)
    assert add_tokens(Tokens(1, 0, 1), None) == Tokens(1, 0, 1)


def test_a_record_keeps_its_tokens_and_an_older_file_has_none(tmp_path: Path) -> None:
    store = DeliveryStore(tmp_path)
    store.save(ToCodex(id="req_1_a", thread_id="t", tokens=Tokens(1234, 1000, 56)))
    store.save(ToClaude(id="req_2_b", thread_id="t", mailbox="m"))
    on_disk = json.loads((tmp_path / "req_1_a.json").read_text())
    assert on_disk["tokens"] == {"input": 1234, "cached": 1000, "output": 56}
    found = store.get("req_1_a", ToCodex)
    assert found is not None and found.tokens == Tokens(1234, 1000, 56)
    assert found.as_dict()["tokens"] == {"input": 1234, "cached": 1000, "output": 56}
    # a file written before tokens were kept
    data = json.loads((tmp_path / "req_2_b.json").read_text())
    del data["tokens"]
    (tmp_path / "req_2_b.json").write_text(json.dumps(data))
    older = store.get("req_2_b", ToClaude)
    assert older is not None and older.tokens is None


@pytest.mark.parametrize("value", [
    "12", 12, [1, 2, 3], {"input": 1, "cached": 0}, {"input": 1, "cached": 0, "output": -1},
    {"input": 1, "cached": True, "output": 1}, {"input": 1.5, "cached": 0, "output": 1},
    {"input": 1, "cached": 0, "output": 1, "extra": 2}])
def test_a_damaged_tokens_value_is_a_damaged_record(tmp_path: Path, value: object) -> None:
    store = DeliveryStore(tmp_path)
    store.save(ToCodex(id="req_1_a", thread_id="t"))
    data = json.loads((tmp_path / "req_1_a.json").read_text())
    data["tokens"] = value
    (tmp_path / "req_1_a.json").write_text(json.dumps(data))
    found = store.read("req_1_a")
    assert isinstance(found, Damaged) and "tokens" in found.reason


def test_a_conversation_keeps_a_running_total(tmp_path: Path) -> None:
    convs = Conversations(tmp_path)
    assert convs.add_tokens("conv_none", Tokens(1, 0, 1)) is None  # no record: not made
    assert not (tmp_path / "conv_none.json").exists()
    hop = convs.spend_hop(None, {"direction": "claude→codex"}, 10)
    assert convs.add_tokens(hop.conversation, Tokens(100, 80, 5)) == Tokens(100, 80, 5)

    def add() -> None:
        convs.add_tokens(hop.conversation, Tokens(10, 0, 1))
    workers = [threading.Thread(target=add) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    record = convs.get(hop.conversation)
    assert record is not None and record.tokens == Tokens(180, 80, 13)
    # spending a hop keeps the total
    convs.spend_hop(hop.conversation, {"direction": "codex→claude"}, 10)
    again = convs.get(hop.conversation)
    assert again is not None and again.tokens == Tokens(180, 80, 13)
    assert len(again.hops) == 2


def test_an_older_conversation_file_reads_without_a_total(tmp_path: Path) -> None:
    convs = Conversations(tmp_path)
    (tmp_path / "conv_old1.json").write_text(json.dumps(
        {"id": "conv_old1", "max_hops": 5, "hops": [{"n": 1, "at": 1.0}]}))
    record = convs.get("conv_old1")
    assert record is not None and record.tokens is None
    assert convs.add_tokens("conv_old1", Tokens(3, 1, 2)) == Tokens(3, 1, 2)
    (tmp_path / "conv_bad1.json").write_text(json.dumps(
        {"id": "conv_bad1", "hops": [], "tokens": {"input": "x", "cached": 0, "output": 0}}))
    assert convs.get("conv_bad1") is None  # damaged: as any other field's wrong type

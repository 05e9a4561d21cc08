"""State files on disk: delivery records, conversation budgets, the handoff ledger.

Each is ours, but a crash, a disk, a person's editor or another version may have left
anything in it. A damaged one is reported (a None, a clear BridgeError) or skipped in a
listing — never a traceback — and never deleted on the spot: a damaged budget is kept
aside, a damaged record or ledger is left where it is. Good ones read back as written.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from codexbridge.errors import DamagedStateError, HandoffStateError, HopLimitError, UsageError
from codexbridge.handoff import ledger
from codexbridge.host.limits import MAX_HOPS_ENV, max_hops
from codexbridge.messages.conversations import Conversation, Conversations, valid_id
from codexbridge.messages.records import (
    Delivery,
    DeliveryState,
    DeliveryStore,
    Direction,
    ToClaude,
    ToCodex,
    from_json,
)

from .strategies import deep_json, json_values, junk_bytes, lone_surrogate_json, nasty_text

lone = st.builds(json.loads, lone_surrogate_json)  # a str holding a lone surrogate
anything = json_values | nasty_text | lone
DEEP = b'{"id":' + b"[" * 50_000 + b"]" * 50_000 + b"}"


def _dump(value: Any, ascii_only: bool) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


def damaged(shaped: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """Bytes a file of this shape may hold: near-valid JSON, truncated, deep, junk."""
    return (st.builds(_dump, shaped, st.booleans())
            | st.builds(lambda v, cut: _dump(v, True)[:cut], shaped, st.integers(0, 80))
            | junk_bytes | st.builds(str.encode, deep_json()) | st.just(DEEP))


def private_tmp() -> tempfile.TemporaryDirectory[str]:
    tmp = tempfile.TemporaryDirectory()
    os.chmod(tmp.name, 0o700)
    return tmp


def files_under(root: str) -> dict[str, bytes]:
    out = {}
    for where, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(where, name), "rb") as fh:
                out[os.path.relpath(os.path.join(where, name), root)] = fh.read()
    return out


# --- delivery records -------------------------------------------------------------------

FIELDS = ["id", "direction", "state", "created_at", "hop", "conversation", "warnings",
          "history", "thread_id", "text_preview", "reply_preview", "version",
          "courier_pid", "recovered", "approval_timeout", "in_reply_to",  # to Codex
          "mailbox", "claude_pid", "answered_at"]  # to Claude
core = {
    "id": st.from_regex(r"req_[0-9]{1,13}_[a-z0-9]{6}", fullmatch=True),
    "thread_id": nasty_text, "state": st.sampled_from(DeliveryState),
    "created_at": st.floats(0, 2e9), "updated_at": st.floats(0, 2e9),
    "conversation": st.none() | st.from_regex(r"conv_[0-9a-f]{12}", fullmatch=True),
    "hop": st.integers(0, 9), "max_hops": st.integers(0, 9), "text_preview": nasty_text,
    "reply_preview": nasty_text | lone, "reason": st.none() | nasty_text,
    "warnings": st.lists(nasty_text, max_size=2),
    "history": st.lists(st.fixed_dictionaries({"state": st.sampled_from(
        [s.value for s in DeliveryState]), "at": st.floats(0, 2e9)}), max_size=3)}
pids = st.none() | st.integers(1, 2**22)
deliveries = st.builds(ToCodex, **core, recovered=st.booleans(), courier_pid=pids,
                       in_reply_to=st.none() | nasty_text) \
    | st.builds(ToClaude, **core, mailbox=nasty_text, claude_pid=pids,
                answered_at=st.none() | st.floats(0, 2e9))
# As a file holds it (version 2), as `talk status --json` shows it (every key of both
# roads, no version: also what a file of version 1 held), one key off.
shapes = st.sampled_from([lambda d: d.to_json(), lambda d: d.as_dict()])
off_records = st.builds(lambda d, shape, k, v: {**shape(d), k: v}, deliveries, shapes,
                        st.sampled_from([*FIELDS, "extra"]), anything)
# In a file, the record's id is its file's name (ID is replaced by it).
in_files = st.builds(lambda d, shape, k, v: {**shape(d), "id": "ID", k: v}, deliveries,
                     shapes, st.sampled_from([*FIELDS, "extra"]), anything)
record_bytes = damaged(in_files | anything)


def check_usable(record: Delivery) -> None:
    """What `talk status` and the courier do with a record must work on it."""
    assert isinstance(record.id, str) and isinstance(record.created_at, (int, float))
    assert isinstance(record.direction, Direction) and isinstance(record.state, DeliveryState)
    assert all(isinstance(h, dict) for h in record.history)
    json.dumps(record.as_dict())
    assert isinstance(record.needs_courier, bool)  # every listing asks it
    record.fail("checked")


@given(deliveries)
@example(ToCodex(id="req_1_aaaaaa", thread_id="T",
                 reply_preview="a\ud800"))  # was UnicodeEncodeError in save (the courier)
def test_a_record_round_trips_through_the_store(record: Delivery) -> None:
    with private_tmp() as tmp:
        store = DeliveryStore(Path(tmp) / "d", ttl=3600)
        store.save(record)
        assert store.get(record.id) == record
        assert store.recent() == [record]


@given(off_records | anything)
@example([1, 2])  # was AttributeError: 'list' object has no attribute 'items'
@example({"id": "req_1_aaaaaa", "direction": "to-codex", "thread_id": "T",
          "created_at": "yesterday"})
@example({"id": "req_1_aaaaaa", "direction": "to-codex", "thread_id": "T",
          "created_at": float("nan")})
@example({"id": "req_1_aaaaaa", "direction": "to-codex", "thread_id": "T",
          "courier_pid": 2**64})  # OverflowError
@example({"id": "req_1_aaaaaa", "direction": "to-claude", "thread_id": "T", "mailbox": "m",
          "version": True})
def test_from_json_gives_a_usable_record_or_a_clear_refusal(data: Any) -> None:
    try:
        record = from_json(data)
    except (KeyError, TypeError, ValueError):  # what DeliveryStore.get turns into None
        return
    check_usable(record)


@given(st.lists(deliveries, max_size=3, unique_by=lambda d: d.id),
       st.lists(record_bytes, min_size=1, max_size=3))
@example([], [b"[1, 2]"])  # was AttributeError out of recent()
@example([], [DEEP])  # was RecursionError out of recent()
@example([], [b'{"id":"req_9_bad0","direction":"to-codex","thread_id":"T","created_at":"x"}'])
@example([], [b'{"id":"req_1_other","direction":"to-codex","thread_id":"T"}'])  # was listed
#   under 2 names
def test_damaged_records_are_skipped_and_left_alone(good: list[Delivery],
                                                    raws: list[bytes]) -> None:
    with private_tmp() as tmp:
        store = DeliveryStore(Path(tmp) / "d", ttl=3600)
        os.makedirs(store.root, mode=0o700)
        for record in good:
            store.save(record)
        bad = {f"req_9_bad{i}": raw.replace(b'"ID"', f'"req_9_bad{i}"'.encode())
               for i, raw in enumerate(raws)}
        for name, raw in bad.items():
            with open(store.root / f"{name}.json", "wb") as fh:
                fh.write(raw)
        readable = {name for name in bad if store.get(name) is not None}
        listed = store.recent(100)
        assert sorted(r.id for r in listed) == sorted([r.id for r in good] + list(readable))
        assert [r.created_at for r in listed] == sorted((r.created_at for r in listed),
                                                        reverse=True)
        for name in bad.keys() - readable:
            assert store.update(name, check_usable) is None
        for name in readable:
            got = store.update(name, check_usable)
            assert got is not None and got.id == name and got.state is DeliveryState.FAILED
            assert store.get(name) == got
        assert store.sweep() == 0  # nothing is old: nothing, damaged or not, is deleted
        on_disk = files_under(str(store.root))
        for name in bad.keys() - readable:
            assert on_disk[f"{name}.json"] == bad[name]


@given(nasty_text | st.sampled_from(["", ".", "..", "a/b", "/../../evil", "x\x00y",
                                     "req_1_aaaaaa"]))
@example("/../../evil")  # was a lock file made two directories above the store
@example("a/b")  # was FileNotFoundError (the lock's directory .a/ does not exist)
def test_any_id_is_a_record_or_none(delivery_id: str) -> None:
    with private_tmp() as tmp:
        root = Path(tmp) / "a" / "b" / "d"
        store = DeliveryStore(root, ttl=3600)
        store.save(ToCodex(id="req_1_aaaaaa", thread_id="T"))
        before = {k for k in files_under(tmp) if not k.startswith("a/b/d/")}
        real = delivery_id == "req_1_aaaaaa"
        assert (store.get(delivery_id) is not None) is real
        assert (store.update(delivery_id, lambda r: None) is not None) is real
        assert {k for k in files_under(tmp) if not k.startswith("a/b/d/")} == before


# --- conversations and their hop budget -------------------------------------------------

conv_like = st.builds(lambda s: "conv_" + s, st.text(st.characters(
    categories=["Lu", "Ll", "Lo", "Nd", "Nl", "No", "Pc", "Pd"]), max_size=64))


@given(st.text() | conv_like)
@example("conv_" + "\U00020000" * 59)  # was OSError: file name too long (in spend)
@example("conv_\u0661\u0662")  # Arabic-Indic digits: isalnum(), but not letters/digits
def test_valid_id_returns_the_id_or_raises_usage_error(text: str) -> None:
    try:
        conv = valid_id(text)
    except UsageError as exc:
        assert exc.message
        return
    assert conv == text
    with private_tmp() as tmp:
        assert Conversations(Path(tmp) / "c").spend_hop(conv, {}, 4)[:2] == (conv, 1)


@given(st.text() | st.integers().map(str) | st.sampled_from(
    [" 7 ", "1_0", "+3", "\u0663", "9" * 5000, "inf", "nan", "0x10", "1e3", "-0"]))
def test_max_hops_is_a_positive_whole_number_or_usage_error(raw: str) -> None:
    try:
        value = max_hops({MAX_HOPS_ENV: raw})
    except UsageError as exc:
        assert MAX_HOPS_ENV in exc.message
        return
    assert isinstance(value, int) and value >= 1


CONV = "conv_0123456789ab"
budget_files = damaged(st.fixed_dictionaries(
    {"id": st.just(CONV) | anything, "hops": st.lists(st.fixed_dictionaries(
        {"direction": st.just("to-codex")}) | anything, max_size=3) | anything},
    optional={"max_hops": st.integers(0, 5) | anything, "created_at": anything}))


@given(budget_files, st.sampled_from([0, 30 * 24 * 3600]))
@example(DEEP, 0)  # was RecursionError out of get()
@example(b'{"id":"x","hops":[1]}', 0)  # was AttributeError: 'int' has no attribute 'get'
@example(b'{"id":"x","hops":[],"max_hops":"many"}', 0)  # was ValueError out of int()
@example(b'{"id":"\\ud800","hops":[]}', 0)  # was UnicodeEncodeError writing it back
@example(b"{not json", 30 * 24 * 3600)  # was swept at the next send, after "kept as"
def test_a_damaged_budget_is_kept_aside_and_the_send_refused(raw: bytes, age: int) -> None:
    with private_tmp() as tmp:
        convs = Conversations(Path(tmp) / "c")
        path = convs.path(CONV)
        os.makedirs(path.parent, mode=0o700)
        path.write_bytes(raw)
        os.utime(path, (time.time() - age, time.time() - age))
        before = convs.get(CONV)
        assert before is None or isinstance(before, Conversation)
        try:
            number = convs.spend_hop(CONV, {"direction": "to-claude"}, 4).n
        except HopLimitError as exc:
            if "kept" not in exc.details:  # a readable budget that is used up
                assert path.read_bytes() == raw
                return
            kept = Path(exc.details["kept"])
            assert kept.read_bytes() == raw and not path.exists()
            convs.spend_hop(None, {}, 4)  # another conversation's send sweeps old files
            assert kept.read_bytes() == raw
            assert convs.spend_hop(CONV, {}, 4)[:2] == (CONV, 1)  # starts again, on purpose
            return
        assert before is not None and number == len(before.hops) + 1
        again = convs.get(CONV)
        assert again is not None and len(again.hops) == number


def test_two_damaged_budgets_in_one_second_are_both_kept(tmp_path: Path) -> None:
    convs = Conversations(tmp_path / "c")
    kept = []
    for raw in (b"{first", b"{second"):
        convs.root.mkdir(mode=0o700, exist_ok=True)
        convs.path(CONV).write_bytes(raw)
        with pytest.raises(HopLimitError) as err:
            convs.spend_hop(CONV, {}, 4)
        kept.append(Path(err.value.details["kept"]))
    # was: the second replaced the first (same `.damaged-<second>` name)
    assert [k.read_bytes() for k in kept] == [b"{first", b"{second"]


# --- the handoff ledger -----------------------------------------------------------------

SECTIONS = ("agents", "knownBy", "git", "pending")
section = st.dictionaries(nasty_text | lone, anything | st.dictionaries(
    nasty_text, anything, max_size=2), max_size=2) | anything
ledger_files = damaged(st.fixed_dictionaries(
    {"version": st.sampled_from([1, 0, 2, True]) | anything},
    optional={**{k: section for k in SECTIONS}, "project": anything,
              "history": st.lists(anything, max_size=3) | anything}))
PENDING: dict[str, Any] = {"marks": {"codex:t": "t1:i1"}, "git": "c" * 40}


@given(ledger_files)
@example(DEEP)  # was RecursionError
@example(b'{"version":1,"knownBy":{"claude:s":{"codex:t":"\\udc00"}}}')  # was a
#   UnicodeEncodeError in save (it is written back as its escape)
@example(b'{"version":1,"knownBy":{"claude:s":5}}')  # was TypeError in commit
def test_a_ledger_is_a_usable_state_or_a_clear_refusal(raw: bytes) -> None:
    path = ledger.state_path("propkey")
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    Path(path).write_bytes(raw)
    try:
        state = ledger.load("propkey", "/p")
    except (HandoffStateError, DamagedStateError) as exc:
        assert path in exc.message
        exc.message.encode("utf-8")  # printable
        assert exc.details["path"] == path
        assert Path(path).read_bytes() == raw  # left as it is
        return
    assert isinstance(state, ledger.State)
    assert all(isinstance(m, dict) for m in state.known_by.values())
    ledger.save("propkey", state)
    assert ledger.load("propkey", "/p") == state
    for n, target in enumerate(["claude:s", *state.known_by][:3]):
        ledger.known_by(state, target)
        ledger.checkpoint(state, target)
        ledger.drop(state, target, ledger.Pending(id="h_0"), "superseded")
        ledger.commit(state, target, ledger.Pending(**PENDING, id=f"h_{n + 1}"))
        assert ledger.known_by(state, target)["codex:t"] == "t1:i1"
    ledger.files_in_use(state)
    ledger.save("propkey", state)


marks = st.dictionaries(st.text(max_size=8), st.dictionaries(
    st.text(max_size=8), st.text(max_size=12), max_size=2), max_size=2)


@given(marks, st.lists(st.fixed_dictionaries({"id": st.text(max_size=6),
                                               "state": st.just("delivered")}), max_size=3))
def test_a_ledger_round_trips(known: dict[str, dict[str, str]],
                              history: list[dict[str, Any]]) -> None:
    state = ledger.State("/p", known_by=known,
                         history=[ledger.Past(id=h["id"], state=h["state"]) for h in history])
    ledger.save("propkey", state)
    assert ledger.load("propkey", "/p") == state
    assert all(ledger.known_by(state, t) == m for t, m in known.items())

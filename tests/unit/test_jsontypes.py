"""jsontypes.py: the one typed reader of a JSON shape (`JsonRecord`, `read_fields`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from codexbridge.jsontypes import JsonRecord, read_fields

if TYPE_CHECKING:
    from codexbridge.jsontypes import JsonObject, JsonValue


class Inner(JsonRecord):
    kind: str | None = None


class Outer(JsonRecord, wire={"session_id": "sessionId"}):
    session_id: str | None
    flag: bool = False
    count: int | None = 7
    names: tuple[str, ...] = ()
    inner: Inner | None = None
    many: tuple[Inner, ...] = ()
    kept: JsonValue = None


def test_each_field_is_read_from_its_key_and_narrowed_by_its_type() -> None:
    rec = Outer.read({"sessionId": "s", "flag": True, "count": 3, "names": ["a", 2],
                      "inner": {"kind": "k"}, "many": [{"kind": "x"}, 5], "kept": [1],
                      "unknown": "ignored"})
    assert rec == Outer("s", flag=True, count=3, names=("a",), inner=Inner("k"),
                        many=(Inner("x"),), kept=[1])
    assert Outer.json_keys() == ("sessionId", "flag", "count", "names", "inner", "many",
                                 "kept")


def test_a_wrong_type_reads_as_absent() -> None:
    rec = Outer.read({"session_id": "s", "flag": 1, "count": True, "names": "a",
                      "inner": "k", "many": {}})
    assert rec == Outer(None)  # the key is sessionId; every other field its default
    assert rec.count == 7 and rec.flag is False


def test_given_fields_are_not_read() -> None:
    assert Outer.read({"sessionId": "s", "count": 1}, count=2).count == 2


def test_a_record_is_read_only_and_checks_its_arguments() -> None:
    rec = Outer("s")
    with pytest.raises(AttributeError):
        rec.flag = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        Outer()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Outer("s", nope=1)  # type: ignore[call-arg]
    assert hash(rec) == hash(Outer("s")) and "session_id='s'" in repr(rec)


def test_a_frozen_dataclass_reads_the_same_way() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Facts:
        ok: bool
        why: str | None
        raw: JsonObject

    data: JsonObject = {"ok": True, "why": 3}
    assert read_fields(Facts, data) == Facts(True, None, data)


def test_a_subclass_reads_its_own_fields() -> None:
    assert Inner.read({"kind": "k"}) == Inner("k")  # Inner's reader is written out

    class Sub(Inner):
        extra: int | None = None

    assert Sub.read({"kind": "k", "extra": 1}) == Sub("k", 1)
    assert Inner.read({"kind": "k", "extra": 1}) == Inner("k")
    with pytest.raises(TypeError):
        Inner.read({}, extra=1)

"""The one list of what codexbridge uses (the tables in scripts/gen-protocol, written to
codex/protocol/generated/uses.py) cannot rot: every method, field and value named is one
codexbridge's own code refers to and one the pinned schema has. (That the generated
file is what schemas/ makes now: tests/unit/test_layout.py runs gen-protocol --check.)"""

from __future__ import annotations

import enum
import importlib.machinery
import importlib.util
import re
from pathlib import Path

import pytest

from codexbridge.codex.protocol import enums as hand_enums
from codexbridge.codex.protocol.approvals import LEGACY_SERVER_REQUESTS, TABLE
from codexbridge.codex.protocol.generated import enums as gen_enums
from codexbridge.codex.protocol.generated import methods as m
from codexbridge.codex.protocol.generated import uses
from codexbridge.codex.protocol.generated.calls import Calls
from codexbridge.codex.protocol.shapes import SERVER_REQUEST
from codexbridge.doctor.compat import PINNED

ROOT = Path(__file__).resolve().parents[3]
# The code that reads and sends protocol messages: not the generated files, and not the
# tables themselves (a name there must be found somewhere else).
SOURCE = "\n".join(
    p.read_text(encoding="utf-8") for p in sorted((ROOT / "codexbridge").rglob("*.py"))
    if "generated" not in p.parts)


def _mentioned(name: str) -> bool:
    """As a string literal, as the attribute of a generated result, or as the keyword of
    a typed call (codex/protocol/generated/calls.py)."""
    snake = re.sub(r"(?<!^)([A-Z])", lambda g: "_" + g.group(1).lower(), name)
    return bool(re.search(rf"""["']{re.escape(name)}["']""", SOURCE)
                or re.search(rf"\.{re.escape(snake)}\b", SOURCE)
                or re.search(rf"\b{re.escape(snake)}=", SOURCE))


def _enum_member_used(value: str) -> bool:
    """A value the code names through an enum (ThreadItemType.AGENT_MESSAGE)."""
    for module in (gen_enums, hand_enums):
        for cls in vars(module).values():
            if isinstance(cls, type) and issubclass(cls, enum.Enum):
                for member in cls:
                    if member.value == value and re.search(
                            rf"\b{cls.__name__}\.{member.name}\b", SOURCE):
                        return True
    return False


def _fields_of(definition: str) -> set[str]:
    """Every field the pinned schema gives `definition`, at any place of it walked."""
    return {name for (defn, _path), shape in uses.SHAPES.items() if defn == definition
            for name in shape.fields or {}}


def _members_of(definition: str) -> set[str]:
    return {name for (defn, _path), shape in uses.SHAPES.items() if defn == definition
            for name in shape.members or ()}


TABLES = {"reads": uses.READS, "sends": uses.SENDS}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_field_named_is_in_the_code_and_in_the_schema(table: str) -> None:
    for definition, fields in TABLES[table].items():
        have = _fields_of(definition)
        assert have, f"{table}: the walk never reaches a definition {definition!r}"
        for field in sorted(fields):
            assert field in have, f"{table}: {definition} has no field {field!r}"
            assert _mentioned(field), f"{table}: nothing in codexbridge mentions {field!r}"


def test_every_value_named_is_in_the_code_and_in_the_schema() -> None:
    for definition, values in uses.VALUES.items():
        have = _members_of(definition)
        assert have, f"values: the walk never reaches a definition {definition!r}"
        for value in sorted(values):
            assert value in have, f"{definition} has no member {value!r}"
            assert _mentioned(value) or _enum_member_used(value), \
                f"nothing in codexbridge sends or branches on {definition} {value!r}"


def _referenced_methods() -> set[str]:
    """Named by a method constant (`m.THREAD_READ`), or sent as a typed call
    (`Calls(rpc).thread_read(...)`)."""
    names = set(re.findall(r"\bm\.([A-Z][A-Z0-9_]+)\b", SOURCE))
    called = set(re.findall(r"\.([a-z_]+)\(", SOURCE))
    typed = {method for method in vars(m).values() if isinstance(method, str)
             and method.replace("/", "_") in called and hasattr(Calls, method.replace("/", "_"))}
    return {getattr(m, n) for n in names if isinstance(getattr(m, n, None), str)} | typed


def test_the_methods_are_the_ones_the_code_uses() -> None:
    listed = {method for methods in uses.METHODS.values() for method in methods}
    wire = {m.INITIALIZED}  # a client notification: nothing to judge
    assert _referenced_methods() - wire - LEGACY_SERVER_REQUESTS == listed
    # the approval table answers every server request, the legacy ones too
    assert set(uses.METHODS[SERVER_REQUEST]) | LEGACY_SERVER_REQUESTS == set(TABLE)


def test_every_method_we_use_has_its_messages_in_the_pinned_schema() -> None:
    for kind, methods in uses.METHODS.items():
        for method in methods:
            assert PINNED[kind][method][1], (kind, method)  # (sent, read)
    assert PINNED["client request"]["thread/resume"][1] == "ThreadResumeResponse"


def test_a_result_field_the_code_reads_is_judged() -> None:
    """gen-protocol's RESULTS (the fields a generated result record keeps) and READS (the
    fields the doctor judges) are two lists in one file: a kept field the code goes on to
    read must be judged too, or a codex that drops it would pass."""
    loader = importlib.machinery.SourceFileLoader("gen_protocol",
                                                  str(ROOT / "scripts" / "gen-protocol"))
    spec = importlib.util.spec_from_loader("gen_protocol", loader)
    assert spec is not None
    gen = importlib.util.module_from_spec(spec)
    loader.exec_module(gen)
    unjudged = [f"{model}.{field}" for model, (fields, _mixin) in gen.RESULTS.items()
                for field in fields
                if field not in uses.READS.get(model, ()) and _mentioned(field)]
    assert unjudged == []

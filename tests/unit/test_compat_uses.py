"""The tables the protocol judge reads (doctor/uses.py) and the surface it reads them
against (protocol/surface.json) cannot rot: every method, field and value named is one
codexbridge's own code refers to, every definition named exists, and the shipped
surface is what scripts/gen-surface makes from schemas/ now."""

from __future__ import annotations

import enum
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codexbridge.doctor.surface import CLIENT_REQUEST, SERVER_REQUEST, prune
from codexbridge.doctor.uses import USES
from codexbridge.host.schemas import shipped_surface
from codexbridge.protocol import enums as hand_enums
from codexbridge.protocol.approvals import TABLE
from codexbridge.protocol.generated import enums as gen_enums
from codexbridge.protocol.generated import methods as m
from codexbridge.protocol.generated.calls import Calls

ROOT = Path(__file__).resolve().parents[2]
# The code that reads and sends protocol messages: not the generated files, and not the
# tables themselves (a name there must be found somewhere else).
SOURCE = "\n".join(
    p.read_text(encoding="utf-8") for p in sorted((ROOT / "codexbridge").rglob("*.py"))
    if "generated" not in p.parts and p.name != "uses.py")


def _mentioned(name: str) -> bool:
    """As a string literal, as the attribute of a generated result, or as the keyword of
    a typed call (protocol/generated/calls.py)."""
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


def _properties(node: Any, out: set[str]) -> set[str]:
    """Every property name in a definition's own (inline) structure."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                out |= set(value)
                _properties(list(value.values()), out)
            elif key in ("oneOf", "anyOf", "allOf", "items", "additionalProperties"):
                _properties(value, out)
    elif isinstance(node, list):
        for value in node:
            _properties(value, out)
    return out


TABLES = {"reads": USES.reads, "sends": USES.sends}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_field_named_is_in_the_code_and_in_the_schema(table: str) -> None:
    definitions = shipped_surface()["definitions"]
    for definition, fields in TABLES[table].items():
        assert definition in definitions, f"{table}: no definition {definition!r}"
        have = _properties(definitions[definition], set())
        for field in sorted(fields):
            assert field in have, f"{table}: {definition} has no field {field!r}"
            assert _mentioned(field), f"{table}: nothing in codexbridge mentions {field!r}"


def test_every_value_named_is_in_the_code_and_in_the_schema() -> None:
    definitions = shipped_surface()["definitions"]
    for definition, values in USES.values.items():
        assert definition in definitions, f"values: no definition {definition!r}"
        text = str(definitions[definition])
        for value in sorted(values):
            assert repr(value) in text, f"{definition} has no member {value!r}"
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
    listed = {method for methods in USES.methods.values() for method in methods}
    wire = {m.INITIALIZED}  # a client notification: nothing to judge
    assert _referenced_methods() - wire - USES.legacy == listed - USES.legacy
    # the approval table answers every server request, the legacy ones too
    assert set(USES.methods[SERVER_REQUEST]) | USES.legacy == set(TABLE)
    assert USES.no_result == {r.method for r in TABLE.values()
                              if r.fail_closed is None and r.accept is None}


def test_the_shipped_surface_holds_every_method_we_use_and_no_legacy_one() -> None:
    surface = shipped_surface()
    for kind, methods in USES.methods.items():
        for method in methods:
            held = method in surface["methods"][kind]
            assert held is (method not in USES.legacy), (kind, method)
    assert surface["methods"][CLIENT_REQUEST]["thread/resume"]["read"] == {
        "$ref": "#/definitions/ThreadResumeResponse"}


def test_the_shipped_surface_is_what_schemas_generate() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen-surface"), "--check"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_prose_is_dropped_but_a_field_named_like_a_keyword_stays() -> None:
    schema = {"title": "T", "description": "d", "properties": {
        "title": {"type": "string", "description": "the thread's title"},
        "default": {"enum": ["description"]}}}
    assert prune(schema) == {"properties": {"title": {"type": "string"},
                                            "default": {"enum": ["description"]}}}


def test_a_name_two_files_define_differently_is_kept_twice() -> None:
    """codex's bundle repeats definitions in every file; should two ever differ, each
    method is judged against its own file's, not whichever came first."""
    from codexbridge.doctor.surface import extract

    files: dict[str, Any] = {
        "ClientRequest.json": {
            "oneOf": [{"properties": {"method": {"enum": ["thing/make"]},
                                      "params": {"$ref": "#/definitions/MakeParams"}}}],
            "definitions": {"MakeParams": {"properties": {"t": {"$ref": "#/definitions/T"}}},
                            "T": {"type": "string", "description": "prose"}}},
        "v2/MakeResponse.json": {
            "properties": {"t": {"$ref": "#/definitions/T"}},
            "definitions": {"T": {"type": "integer"}}},
    }
    surface = extract(files.get, {CLIENT_REQUEST: ["thing/make"]}, "codex-cli 1.0.0")
    assert surface["methods"][CLIENT_REQUEST]["thing/make"] == {
        "send": {"$ref": "#/definitions/MakeParams"},
        "read": {"$ref": "#/definitions/MakeResponse"}}
    defs = surface["definitions"]
    assert defs["T"] == {"type": "string"}
    assert defs["T@v2/MakeResponse.json"] == {"type": "integer"}
    assert defs["MakeResponse"] == {
        "properties": {"t": {"$ref": "#/definitions/T@v2/MakeResponse.json"}}}

"""codex/protocol/shapes.py, pure: the walk both sides of doctor's protocol judge are read
with (the pinned schema by scripts/gen-protocol, the installed codex's by the doctor)."""

from __future__ import annotations

from typing import Any

from codexbridge.codex.protocol.shapes import Field, Shape, Uses, walk

REF = "#/definitions/"


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF + name}


DEFS: dict[str, Any] = {
    "Thing": {"type": "object", "required": ["id"], "properties": {
        "id": {"type": "string", "description": "prose is not a shape"},
        "parent": {"anyOf": [ref("Thing"), {"type": "null"}]},  # a cycle, nullable
        "kind": {"allOf": [ref("Kind")], "default": "a"},  # serde's annotated ref
        "size": {"type": ["integer", "null"], "format": "int64"},
    }},
    "Kind": {"type": "string", "enum": ["a", "b"]},
    "Event": {"oneOf": [
        {"type": "object", "properties": {"type": {"enum": ["made"]}, "thing": ref("Thing")}},
        {"type": "object", "additionalProperties": False,
         "properties": {"denied": {"type": "object"}}},
        {"type": "string"},
    ]},
}
READ_ALL = Uses(reads={"Thing": {"id", "parent", "kind"}, "Event": {"thing"}}, sends={},
                values={})


def test_a_walk_follows_the_fields_we_use_and_ends_at_a_cycle() -> None:
    places = walk(ref("Event"), DEFS, send=False, uses=READ_ALL)
    assert places[("Event", "")].members == ("made", "denied", "~string")
    thing = places[("Thing", "")]
    assert thing.fields == {
        "id": Field("string", False, True, ""),
        "parent": Field("object", True, False, "Thing"),
        "kind": Field("string", False, False, "Kind"),
        "size": Field("integer", True, False, ""),
    }
    assert places[("Kind", "")] == Shape(None, ("a", "b"))
    assert list(places)[:3] == [("Event", ""), ("Event", "<made>"), ("Thing", "")]


def test_a_send_walks_required_fields_and_only_the_members_we_send() -> None:
    sends = Uses(reads={}, sends={}, values={"Event": {"denied"}})
    places = walk(ref("Event"), DEFS, send=True, uses=sends)
    assert ("Event", "<denied>") in places and ("Event", "<made>") not in places
    thing = walk(ref("Thing"), DEFS, send=True, uses=sends)
    assert ("Kind", "") not in thing  # optional and not sent: not walked


def test_a_members_tag_is_no_place_of_its_own() -> None:
    """`<made>.type` (enum ["made"]) can say nothing the member `<made>` does not."""
    reads = Uses(reads={"Event": {"type", "thing"}}, sends={}, values={})
    places = walk(ref("Event"), DEFS, send=False, uses=reads)
    assert places[("Event", "<made>")].fields is not None
    assert ("Event", "<made>.type") not in places

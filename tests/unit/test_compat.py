"""The protocol judge (doctor/compat.py), pure: synthetic schema pairs for each rule,
then the real surface against edited copies of itself, and the rows it makes."""

from __future__ import annotations

import copy
from typing import Any

from codexbridge.doctor.codex_side import ProtocolFacts, protocol_rows
from codexbridge.doctor.compat import Change, Direction, Finding, Verdict, incompatible, judge
from codexbridge.doctor.records import StateFacts, state_rows
from codexbridge.doctor.surface import CLIENT_REQUEST, NOTIFICATION, SERVER_REQUEST
from codexbridge.doctor.uses import Uses
from codexbridge.host.binaries import CODEX_OLDEST, CODEX_VERSION, supported_range
from codexbridge.host.schemas import shipped_surface

REF = "#/definitions/"
USES = Uses(
    methods={CLIENT_REQUEST: {"thing/make": "talk cannot make things"},
             NOTIFICATION: {"thing/made": "talk never hears of a made thing"},
             SERVER_REQUEST: {"thing/approve": "a thing approval is not answered",
                              "old/ask": "an old question is not answered"}},
    reads={"ThingMade": frozenset({"thing"}), "Thing": frozenset({"id", "color", "size"}),
           "MakeResult": frozenset({"thing"})},
    sends={"MakeParams": frozenset({"note"})},
    values={"Color": frozenset({"red"}), "Decision": frozenset({"accept", "decline"})},
    no_result=frozenset(), legacy=frozenset({"old/ask"}))


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF + name}


def obj(required: list[str] | None = None, **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or []}


def base() -> dict[str, Any]:
    """A small surface: one request, one notification, one server request."""
    definitions = {
        "MakeParams": obj(["name"], name={"type": "string"}, note={"type": ["string", "null"]},
                          color={"anyOf": [ref("Color"), {"type": "null"}]}),
        "MakeResult": obj(["thing"], thing=ref("Thing")),
        "ThingMade": obj(["thing"], thing=ref("Thing"), origin={"type": "string"}),
        "Thing": obj(["id"], id={"type": "string"}, color=ref("Color"),
                     size={"type": "integer"}, parts={"items": ref("Thing"),
                                                      "type": "array"}),
        "Color": {"type": "string", "enum": ["red", "green"]},
        "ApproveParams": obj(["threadId"], threadId={"type": "string"}),
        "ApproveAnswer": obj(["decision"], decision=ref("Decision")),
        "Decision": {"oneOf": [{"type": "string", "enum": ["accept"]},
                               {"type": "string", "enum": ["decline"]},
                               {"type": "object", "additionalProperties": False,
                                "required": ["amend"], "properties": {"amend": obj()}}]},
    }
    return {"codex": "codex-cli 1.0.0",
            "catalog": {CLIENT_REQUEST: ["thing/make"], NOTIFICATION: ["thing/made"],
                        SERVER_REQUEST: ["thing/approve"]},
            "methods": {
                CLIENT_REQUEST: {"thing/make": {"send": ref("MakeParams"),
                                                "read": ref("MakeResult")}},
                NOTIFICATION: {"thing/made": {"send": None, "read": ref("ThingMade")}},
                SERVER_REQUEST: {"thing/approve": {"send": ref("ApproveAnswer"),
                                                   "read": ref("ApproveParams")}}},
            "definitions": definitions}


def edited(edit: Any) -> list[Finding]:
    ours = base()
    theirs = copy.deepcopy(ours)
    edit(theirs["definitions"], theirs)
    return judge(ours, theirs, USES)


def only_bad(findings: list[Finding]) -> Finding:
    [bad] = incompatible(findings)
    return bad


def row(findings: list[Finding], version: str = "9.9.9") -> Any:
    [check] = protocol_rows(ProtocolFacts(version=version, built_on="codex-cli 1.0.0",
                                          findings=tuple(findings)))
    return check


def test_an_identical_codex_has_nothing_to_say() -> None:
    assert judge(base(), base(), USES) == []
    assert row([]).status == "OK" and "no differences" in row([]).finding


def test_a_renamed_field_we_read_is_incompatible_and_named() -> None:
    def rename(d: dict[str, Any], _s: Any) -> None:
        d["Thing"]["properties"]["colour"] = d["Thing"]["properties"].pop("color")

    found = edited(rename)
    bad = only_bad(found)
    assert (bad.change, bad.direction, bad.where) == (
        Change.FIELD_GONE, Direction.READ, "Thing.color")
    assert "renamed to colour?" in bad.detail
    # Thing is read by the notification and by the result: reported once, under both
    assert {bad.method, *bad.also} == {"thing/made", "thing/make"}
    assert bad.consequence and "talk never hears of a made thing" in bad.consequence
    check = row(found)
    assert check.status == "WARN"
    assert "thing/made (read): Thing.color is gone" in check.finding
    assert "talk never hears of a made thing" in check.finding


def test_a_field_that_became_required_in_what_we_send_is_incompatible() -> None:
    def require(d: dict[str, Any], _s: Any) -> None:
        d["MakeParams"]["properties"]["size"] = {"type": "integer"}
        d["MakeParams"]["required"].append("size")

    bad = only_bad(edited(require))
    assert (bad.change, bad.where, bad.method) == (
        Change.FIELD_ADDED, "MakeParams.size", "thing/make")
    assert bad.detail == "is new and required"

    def tighten(d: dict[str, Any], _s: Any) -> None:
        d["MakeParams"]["properties"]["extra"] = {"type": "string"}
        d["MakeParams"]["required"].append("color")  # we never send color

    [bad] = incompatible(edited(tighten))
    assert (bad.change, bad.where) == (Change.NOW_REQUIRED, "MakeParams.color")
    assert bad.consequence == "talk cannot make things"


def test_additions_are_compatible_and_listed() -> None:
    def grow(d: dict[str, Any], s: dict[str, Any]) -> None:
        d["MakeParams"]["properties"]["priority"] = {"type": "integer"}  # optional
        d["Thing"]["properties"]["weight"] = {"type": "number"}
        d["Color"]["enum"].append("blue")
        s["catalog"][CLIENT_REQUEST].append("thing/unmake")
        d["ThingMade"]["required"].append("origin")  # read: optional → required is fine

    found = edited(grow)
    assert incompatible(found) == []
    kinds = {(f.change, f.where) for f in found}
    assert (Change.FIELD_ADDED, "MakeParams.priority") in kinds
    assert (Change.FIELD_ADDED, "Thing.weight") in kinds
    assert (Change.MEMBER_ADDED, "Color") in kinds
    assert (Change.METHOD_ADDED, "thing/unmake") in kinds
    assert (Change.NOW_REQUIRED, "ThingMade.origin") in kinds
    check = row(found)
    assert check.status == "OK" and check.fix is None
    assert "1 new method(s)" in check.finding and "Thing.weight is new" in check.finding
    assert supported_range(CODEX_OLDEST, CODEX_VERSION) in check.finding


def test_a_changed_type_is_incompatible_where_we_look() -> None:
    def retype(d: dict[str, Any], _s: Any) -> None:
        d["Thing"]["properties"]["id"] = {"type": "integer"}

    bad = only_bad(edited(retype))
    assert (bad.change, bad.where, bad.detail) == (
        Change.TYPE_CHANGED, "Thing.id", "was string, is now integer")
    assert row(edited(retype)).status == "WARN"

    def nullable(d: dict[str, Any], _s: Any) -> None:
        d["Thing"]["properties"]["size"] = {"type": ["integer", "null"]}

    bad = only_bad(edited(nullable))
    assert (bad.where, bad.detail) == ("Thing.size", "may now be null")


def test_a_removed_method_we_use_says_what_breaks() -> None:
    def drop(_d: dict[str, Any], s: dict[str, Any]) -> None:
        del s["methods"][NOTIFICATION]["thing/made"]
        s["catalog"][NOTIFICATION].remove("thing/made")

    bad = only_bad(edited(drop))
    assert bad.change is Change.METHOD_GONE and bad.method == "thing/made"
    assert bad.consequence == "thing/made is gone: talk never hears of a made thing"
    check = row(edited(drop))
    assert check.status == "WARN" and "thing/made is gone" in check.finding


def test_a_removed_field_we_do_not_read_is_compatible_and_listed() -> None:
    def drop(d: dict[str, Any], _s: Any) -> None:
        del d["ThingMade"]["properties"]["origin"]

    [f] = edited(drop)
    assert (f.verdict, f.change, f.where) == (Verdict.COMPATIBLE, Change.FIELD_GONE,
                                              "ThingMade.origin")
    assert "does not read it" in f.detail
    check = row([f])
    assert check.status == "OK" and "ThingMade.origin is gone" in check.finding


def test_enum_members_we_send_or_branch_on() -> None:
    def drop_accept(d: dict[str, Any], _s: Any) -> None:
        d["Decision"]["oneOf"].pop(0)

    bad = only_bad(edited(drop_accept))
    assert (bad.change, bad.where, bad.direction) == (
        Change.MEMBER_GONE, "Decision", Direction.SEND)
    assert bad.method == "thing/approve" and "'accept'" in bad.detail

    def drop_amend(d: dict[str, Any], _s: Any) -> None:
        d["Decision"]["oneOf"].pop(2)  # a member we never send

    assert incompatible(edited(drop_amend)) == []

    def drop_green(d: dict[str, Any], _s: Any) -> None:
        d["Color"]["enum"].remove("green")  # read: not one we branch on

    assert [f.change for f in edited(drop_green)] == [Change.MEMBER_GONE]
    assert incompatible(edited(drop_green)) == []

    def drop_red(d: dict[str, Any], _s: Any) -> None:
        d["Color"]["enum"].remove("red")

    assert {f.direction for f in incompatible(edited(drop_red))} == {Direction.READ}


def test_a_cycle_ends_and_a_legacy_method_is_not_missed() -> None:
    """Thing.parts refers to Thing; `old/ask` (legacy) is in neither surface."""
    def deep(d: dict[str, Any], _s: Any) -> None:
        d["Thing"]["properties"]["size"] = {"type": "string"}

    bad = only_bad(edited(deep))
    assert bad.where == "Thing.size"
    assert all(f.method != "old/ask" for f in edited(deep))

    def legacy(_d: dict[str, Any], s: dict[str, Any]) -> None:
        s["catalog"][SERVER_REQUEST].append("old/ask")  # an older codex still sends it

    assert edited(legacy) == []


def test_the_fix_never_says_downgrade_and_names_the_pin_only_for_an_older_codex() -> None:
    def drop(_d: dict[str, Any], s: dict[str, Any]) -> None:
        del s["methods"][NOTIFICATION]["thing/made"]

    newer = row(edited(drop), version="99.0.0")
    assert newer.fix and newer.fix.startswith("update codexbridge")
    assert "99.0.0" in newer.fix and "npm install" not in newer.fix
    older = row(edited(drop), version="0.0.1")
    assert older.fix and f"@openai/codex@{CODEX_VERSION}" in older.fix
    assert f"older than {CODEX_OLDEST}" in older.fix


# --- the real surface ------------------------------------------------------------------

def real_pair(edit: Any) -> list[Finding]:
    ours = shipped_surface()
    theirs = copy.deepcopy(ours)
    edit(theirs["definitions"], theirs)
    return judge(ours, theirs)


def variant(union: dict[str, Any], tag: str) -> dict[str, Any]:
    return next(v for v in union["oneOf"]
                if (v.get("properties") or {}).get("type", {}).get("enum") == [tag])


def test_the_real_surface_against_itself_and_edited_copies() -> None:
    assert real_pair(lambda d, s: None) == []

    def reply_renamed(d: dict[str, Any], _s: Any) -> None:
        props = variant(d["ThreadItem"], "agentMessage")["properties"]
        props["body"] = props.pop("text")

    bad = only_bad(real_pair(reply_renamed))
    assert bad.where == "ThreadItem.<agentMessage>.text" and bad.method == "item/completed"
    assert bad.consequence and bad.consequence.startswith("talk cannot read codex's reply")

    def steer_renamed(d: dict[str, Any], _s: Any) -> None:
        props = d["TurnSteerParams"]["properties"]
        props["expectedTurn"] = props.pop("expectedTurnId")

    bad = only_bad(real_pair(steer_renamed))
    assert (bad.method, bad.direction, bad.where) == (
        "turn/steer", Direction.SEND, "TurnSteerParams.expectedTurnId")

    def queue_gone(_d: dict[str, Any], s: dict[str, Any]) -> None:
        del s["methods"][CLIENT_REQUEST]["thread/queue/add"]

    bad = only_bad(real_pair(queue_gone))
    assert bad.consequence == "thread/queue/add is gone: talk send cannot queue turns"

    def unread_field_gone(d: dict[str, Any], _s: Any) -> None:
        del variant(d["ThreadItem"], "agentMessage")["properties"]["phase"]

    assert incompatible(real_pair(unread_field_gone)) == []


def test_state_rows() -> None:
    assert state_rows(StateFacts("/", "CODEX_BRIDGE_HOME resolves to /"))[0].status == "FAIL"
    loose = state_rows(StateFacts("/h", exists=True, loose=("/h/x (0o644)",)))[0]
    assert loose.status == "WARN" and loose.fix == "chmod -R go-rwx /h"
    assert state_rows(StateFacts("/h", exists=True))[0].status == "OK"

"""What a codex schema bundle says about the part of the protocol codexbridge uses. Pure:
a loader (path relative to the bundle → parsed JSON, None when absent) in, flat records out.

`scripts/gen-protocol` runs `read_bundle` on `schemas/experimental` and writes the result
into `generated/uses.py` (what codexbridge was built on); the doctor runs it on the bundle
the installed codex generates and `doctor/compat.py` compares the two. So both sides are
read by the same code, and only what codexbridge uses is read at all: for each method
(`generated/uses.METHODS`), what we send (a client request's params, our answer to a
server request) and what we read (notification and server-request params, a client
request's result), walked through the fields we use (`READS`, `SENDS`; on the send side
every required field too) into the definitions they name.

A walk records, at each place it reaches — `(definition, path)`, the path inside a
definition: `<agentMessage>.text` is the `text` of the union member `agentMessage` —

    Shape(fields, members)   fields: name → Field(types, nullable, required, ref) for
                             every property there; members: a union's or enum's member
                             names (a union member by its `type` value or its one key,
                             `{"denied": {…}}` is "denied"; a reference by its name)

`$ref`s resolve in each file's own definitions; a definition is walked once per method
(cycles end there); `allOf` is merged; `"null"` in a type list, or a null member, is
nullability.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, NamedTuple

from ...jsontypes import arr, obj, objs

if TYPE_CHECKING:
    from ...jsontypes import JsonArray, JsonObject, JsonValue

    Loader = Callable[[str], JsonObject | None]

CLIENT_REQUEST = "client request"
NOTIFICATION = "notification"
SERVER_REQUEST = "server request"
KINDS = (CLIENT_REQUEST, NOTIFICATION, SERVER_REQUEST)
BUNDLE_FILES = {CLIENT_REQUEST: "ClientRequest.json", NOTIFICATION: "ServerNotification.json",
                SERVER_REQUEST: "ServerRequest.json"}
# Where the generator writes a method's result schema (`FooResponse.json`).
RESULT_DIRS = ("", "v2/", "v1/")
SEND, READ = "send", "read"
REF = "#/definitions/"
_UNIONS = ("oneOf", "anyOf")
# Keys that say nothing about what a value may be (prose, and `format`, which codex's
# generator adds to integers and jsonschema does not check).
_PROSE = frozenset({"description", "title", "default", "examples", "$schema", "format"})
Key = tuple[str, str]  # (definition, path inside it)


class Field(NamedTuple):
    types: str  # the JSON types besides null, "|"-joined; "" is any
    nullable: bool = False
    required: bool = False
    ref: str = ""  # the definition it names ("" inline)


class Shape(NamedTuple):
    fields: dict[str, Field] | None
    members: tuple[str, ...] | None


class Uses(NamedTuple):
    """What codexbridge uses: the walk goes only where these lead."""

    reads: Mapping[str, Collection[str]]  # definition → fields we read
    sends: Mapping[str, Collection[str]]  # definition → optional fields we send
    values: Mapping[str, Collection[str]]  # definition → members we send or branch on


# --- a schema node's keywords, narrowed (a keyword of the wrong type reads as absent) ----

def ref_name(node: JsonValue) -> str | None:
    match node:
        case {"$ref": str(ref)} if ref.startswith(REF):
            return ref[len(REF):]
    return None


def _props(node: JsonObject) -> JsonObject:
    """`properties`: name → the property's schema."""
    return obj(node.get("properties"))


def _required(node: JsonObject) -> set[str]:
    return {v for v in arr(node.get("required")) if isinstance(v, str)}


def _all_of(node: JsonObject) -> JsonArray:
    return arr(node.get("allOf"))


def _type(node: JsonValue) -> JsonValue:
    """`type`: a name, a list of names, or (absent) None."""
    return node.get("type") if isinstance(node, dict) else None


def _enum(node: JsonObject) -> JsonArray:
    return arr(node.get("enum"))


def definitions(doc: JsonObject | None) -> JsonObject:
    """A schema file's `definitions` (what its `#/definitions/…` references name)."""
    return obj((doc or {}).get("definitions"))


def _union_alts(node: JsonObject) -> tuple[str, JsonArray] | None:
    """(`oneOf` or `anyOf`, its alternatives), if `node` is a union."""
    for key in _UNIONS:
        alts = node.get(key)
        if isinstance(alts, list):
            return key, alts
    return None


# --- one schema ---------------------------------------------------------------------------


def _resolve(node: JsonValue, defs: JsonObject) -> tuple[JsonObject, str]:
    """Follow `$ref`s (and a one-element `allOf`, serde's way of annotating a ref);
    merge a longer `allOf`. Returns the schema and the last definition name passed."""
    name, current = "", {}
    for _ in range(64):  # a chain of refs, never a cycle of them
        if not isinstance(node, dict):
            return {}, name
        current, ref = node, ref_name(node)
        parts = _all_of(current)
        if ref is not None:
            name, node = ref, defs.get(ref, {})
        elif len(parts) == 1 and all(k == "allOf" or k in _PROSE for k in current):
            node = parts[0]
        else:
            break
    if len(_all_of(current)) > 1:
        merged = {k: v for k, v in current.items() if k != "allOf"}
        props, required = dict(_props(merged)), _required(merged)
        for part in _all_of(current):
            resolved, _ = _resolve(part, defs)
            props.update(_props(resolved))
            required |= _required(resolved)
        names: list[JsonValue] = [*sorted(required)]
        merged["properties"], merged["required"] = props, names
        current = merged
    return current, name


def _nullable(node: JsonValue) -> tuple[JsonValue, bool]:
    """`node` without its null alternative, and whether it had one: `[T, null]` type
    lists and `anyOf: [T, {type: null}]` both say "T, or null"."""
    if not isinstance(node, dict):
        return node, False
    raw = _type(node)
    if isinstance(raw, list) and "null" in raw and len(raw) > 1:
        rest = [t for t in raw if t != "null"]
        return {**node, "type": rest[0] if len(rest) == 1 else rest}, True
    union = _union_alts(node)
    if union is None or "properties" in node:
        return node, False
    key, alts = union
    rest = [a for a in alts if _type(a) != "null"]
    if len(rest) == len(alts) or not rest:
        return node, False
    if len(rest) == 1 and all(k == key or k in _PROSE for k in node):
        return rest[0], True
    return {**node, key: rest}, True


def open_schema(node: JsonValue, defs: JsonObject) -> tuple[JsonObject, str, bool]:
    """(the schema, null split off and refs followed; the definition it names; nullable)."""
    value, outer = _nullable(node)
    resolved, name = _resolve(value, defs)
    value, inner = _nullable(resolved)
    if inner:
        resolved, deeper = _resolve(value, defs)
        name = deeper or name
    return resolved, name, outer or inner


def types(node: JsonObject) -> str:
    raw = _type(node)
    named = {v for v in (raw if isinstance(raw, list) else [raw]) if isinstance(v, str)}
    named.discard("null")
    if not named and ("properties" in node or "additionalProperties" in node):
        named.add("object")
    elif not named and "items" in node:
        named.add("array")
    return "|".join(sorted(named))


def _tag(alt: JsonObject) -> str | None:
    """A union member's name: its `type` (or other single-valued) property, or the one
    key of an externally tagged member (`{"denied": {…}}`, additionalProperties false)."""
    props = _props(alt)
    for name in sorted(props, key=lambda n: (n != "type", n)):
        prop = obj(props[name])
        if len(_enum(prop)) == 1:
            return str(_enum(prop)[0])
        if "const" in prop:
            return str(prop["const"])
    match alt:
        case {"additionalProperties": False} if len(props) == 1:
            return str(next(iter(props)))
    return None


def members(node: JsonObject) -> dict[str, JsonValue] | None:
    """A union's (oneOf/anyOf) or enum's members by name, else None. A member without a
    name is named `~` and its types (`~object`): a shape, not a value."""
    union = _union_alts(node)
    if union is None:
        values = _enum(node) or ([node["const"]] if "const" in node else [])
        return {str(v): {} for v in values} or None
    out: dict[str, JsonValue] = {}
    for alt in objs(union[1]):
        inner = members(alt) if not _props(alt) and "$ref" not in alt else None
        if _type(alt) == "null":
            continue
        if inner is not None:
            out.update(inner)
        else:
            out[ref_name(alt) or _tag(alt) or f"~{types(alt)}"] = alt
    return out


# --- the walk -----------------------------------------------------------------------------

def _names_member(prop: JsonValue, path: str) -> bool:
    """Whether `prop` is the tag of the union member `path` ends at (`<text>.type`, an
    inline `enum: ["text"]`): the member's own place says all it could."""
    match prop:
        case {"enum": [value]} | {"const": value}:
            return path.endswith(f"<{value}>")
    return False


class _Walk:
    """One direction of one method: every place reached, in the order reached."""

    def __init__(self, defs: JsonObject, send: bool, uses: Uses) -> None:
        self.defs, self.send, self.uses = defs, send, uses
        self.fields = uses.sends if send else uses.reads
        self.out: dict[Key, Shape] = {}

    def node(self, schema: JsonValue, defn: str, path: str) -> None:
        node, name, _null = open_schema(schema, self.defs)
        if name:
            if (name, "") in self.out:
                return  # walked already (or being walked: a cycle)
            defn, path = name, ""
        union = members(node)  # (beside properties too: ThreadItem has both)
        props, required = _props(node), _required(node)
        fields = {n: self.field(p, n in required) for n, p in props.items()} if props else None
        if fields is not None or union is not None or not path:  # a leaf: its Field says
            self.out[(defn, path)] = Shape(fields, tuple(union) if union is not None else None)
        for n, prop in props.items():
            wanted = n in self.fields.get(defn, ()) or (self.send and n in required)
            if wanted and not _names_member(prop, path):
                self.node(prop, defn, f"{path}.{n}" if path else n)
        for key, step in (("items", "[]"), ("additionalProperties", "{}")):
            if isinstance(node.get(key), dict):
                self.node(node[key], defn, path + step)
        used = self.uses.values.get(defn)
        for member, alt in (union or {}).items():
            if isinstance(alt, dict) and alt and (
                    not self.send or member.startswith("~") or ref_name(alt)
                    or used is None or member in used):
                self.node(alt, defn, path if ref_name(alt) else f"{path}<{member}>")

    def field(self, prop: JsonValue, required: bool) -> Field:
        node, name, nullable = open_schema(prop, self.defs)
        return Field(types(node), nullable, required, name)


def walk(root: JsonValue, defs: JsonObject, send: bool, uses: Uses,
         name: str = "") -> dict[Key, Shape]:
    """The places one message reaches; `name` names a root that is a whole file."""
    w = _Walk(defs, send, uses)
    w.node(root, name, "")
    return w.out


def branches(bundle: JsonObject | None) -> dict[str, JsonObject]:
    """method → its `oneOf` branch, in a bundle file that is a oneOf over methods."""
    out: dict[str, JsonObject] = {}
    for branch in objs((bundle or {}).get("oneOf")):
        match branch:
            case {"properties": {"method": {"enum": [str(method)]}}}:
                out[method] = branch
    return out


def params_of(branch: JsonObject) -> JsonValue:
    """A method branch's `params` schema (None: the method takes none)."""
    return _props(branch).get("params")


class Bundle(NamedTuple):
    catalog: dict[str, frozenset[str]]  # kind → every method of that kind
    # (kind, method, direction) → the places walked, the root first (absent: the bundle
    # has no schema for it)
    walks: dict[tuple[str, str, str], dict[Key, Shape]]


class _Message(NamedTuple):
    schema: JsonValue
    defs: JsonObject
    name: str = ""


def _result(load: Loader, params: JsonValue) -> _Message | None:
    """The result schema the generator names after the params (`ThreadResumeParams` →
    `ThreadResumeResponse.json`), with its file's definitions."""
    name = ref_name(params) or ""
    if not name.endswith("Params"):
        return None
    name = name[:-len("Params")] + "Response"
    for folder in RESULT_DIRS:
        doc = load(f"{folder}{name}.json")
        if doc is not None:
            return _Message({k: v for k, v in doc.items() if k != "definitions"},
                            definitions(doc), name)
    return None


def read_bundle(load: Loader, methods: Mapping[str, Collection[str]], uses: Uses) -> Bundle:
    """The methods codexbridge uses (kind → methods), walked in the bundle `load` reads.
    A method the bundle lacks is in no walk (the judge says what that breaks)."""
    catalog, walks = {}, {}
    for kind in KINDS:
        bundle = load(BUNDLE_FILES[kind])
        found = branches(bundle)
        catalog[kind] = frozenset(found)
        defs = definitions(bundle)
        for method in sorted(set(methods.get(kind, ())) & set(found)):
            params = params_of(found[method])
            message = _Message(params, defs) if params is not None else None
            result = _result(load, params)
            send, read = ((message, result) if kind == CLIENT_REQUEST else
                          (result, message) if kind == SERVER_REQUEST else (None, message))
            for direction, m in ((SEND, send), (READ, read)):
                if m is not None:
                    walks[(kind, method, direction)] = walk(m.schema, m.defs, direction == SEND,
                                                            uses, m.name)
    return Bundle(catalog, walks)


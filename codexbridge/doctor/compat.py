"""Does an installed codex speak what codexbridge uses? The judge, pure.

Two surfaces (`doctor/surface.py`) in — ours, shipped in the package, and the one cut
from the bundle the installed codex generates — and for each method codexbridge uses
(`doctor/uses.py`) the two schemas are walked side by side, per direction:

  send   what we send (a client request's params, our answer to a server request):
         codex must accept it. A new optional field or a new enum member on their side
         is fine; a field that became required (and we do not send), a field we send
         that is gone, a narrowed type or a removed member we send is not.
  read   what we read (notification and server-request params, client-request
         results): new fields, new members, optional → required are fine; a field we
         read that is gone, became optional or changed type is not — and a field we do
         not read may do anything (listed, compatible).

`$ref`s resolve through each side's own definitions (a definition pair is walked once:
cycles end there), `anyOf`/`oneOf` members are paired by their `type` value, their one
key, their `$ref` name or their enum value, `allOf` is merged, `"null"` in a type list
is nullability. Prose (descriptions, titles) is not in a surface at all.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..errors import SchemaViolation
from ..host.schemas import bundle_loader
from ..jsontypes import arr, obj
from ..protocol.approvals import TABLE
from ..protocol.schema import SchemaSet
from .surface import (
    CLIENT_REQUEST,
    NOTIFICATION,
    SERVER_REQUEST,
    canon,
    ref_name,
)
from .uses import USES, Uses

if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue
    from .surface import Surface

Defs = Mapping[str, "JsonValue"]
Member = tuple[str, str]  # ("ref" | "value" | PLAIN | NULL's first, a name)


class Verdict(enum.Enum):
    COMPATIBLE = "compatible"
    INCOMPATIBLE = "incompatible"


class Change(enum.Enum):
    METHOD_GONE = "method gone"
    METHOD_ADDED = "method added"
    NO_SCHEMA = "schema missing"
    FIELD_GONE = "field gone"
    FIELD_ADDED = "field added"
    NOW_REQUIRED = "now required"
    NOW_OPTIONAL = "now optional"
    TYPE_CHANGED = "type changed"
    MEMBER_GONE = "member gone"
    MEMBER_ADDED = "member added"
    UNUSED_CHANGED = "changed where codexbridge does not look"


class Direction(enum.Enum):
    SEND = "send"
    READ = "read"


class Finding(NamedTuple):
    verdict: Verdict
    change: Change
    kind: str  # client request | notification | server request
    method: str
    direction: Direction | None  # None: about the method itself
    definition: str | None  # the schema definition the change is in
    path: str  # the field path inside it ("" for the definition itself)
    detail: str  # what changed, in words
    consequence: str | None  # incompatible: what stops working
    also: tuple[str, ...] = ()  # other methods with the same finding

    @property
    def where(self) -> str:
        if not self.definition:
            return self.path or self.method
        return f"{self.definition}.{self.path}" if self.path else self.definition

    def as_dict(self) -> JsonObject:
        return {"verdict": self.verdict.value, "change": self.change.value,
                "kind": self.kind, "method": self.method,
                "direction": self.direction.value if self.direction else None,
                "definition": self.definition, "path": self.path, "where": self.where,
                "detail": self.detail, "consequence": self.consequence,
                "also": list(self.also)}


class _Raw(NamedTuple):
    verdict: Verdict
    change: Change
    definition: str | None
    path: str
    detail: str


NULL = ("null", "")
PLAIN = "plain"
OK, BAD = Verdict.COMPATIBLE, Verdict.INCOMPATIBLE
_UNIONS = ("oneOf", "anyOf")
# Notifications first: a definition many methods share (ThreadItem, Turn) is reported
# under the first, and what breaks is plainest there ("talk cannot read codex's reply").
ORDER = (NOTIFICATION, CLIENT_REQUEST, SERVER_REQUEST)


# --- schema shapes ----------------------------------------------------------------------

def _resolve(node: JsonValue, defs: JsonObject) -> tuple[JsonObject, str | None]:
    """Follow `$ref`s (and a one-element `allOf`, serde's way of annotating a ref);
    merge a longer `allOf`. Returns the schema and the last definition name passed."""
    name = None
    current: JsonObject = {}
    for _ in range(64):  # a chain of refs, never a cycle of them
        if not isinstance(node, dict):
            return {}, name
        current = node
        ref = ref_name(current)
        if ref is not None:
            name, node = ref, defs.get(ref, {})
            continue
        parts = current.get("allOf")
        if isinstance(parts, list) and len(parts) == 1 and not _structure(current, "allOf"):
            node = parts[0]
            continue
        break
    if isinstance(current.get("allOf"), list):
        current = _merge(current, defs)
    return current, name


def _strs(value: JsonValue) -> list[str]:
    """The strings in a JSON array (`required`, a `type` list)."""
    return [v for v in arr(value) if isinstance(v, str)]


def _structure(node: JsonObject, besides: str) -> bool:
    return any(k not in (besides, "format") for k in node)


def _merge(node: JsonObject, defs: JsonObject) -> JsonObject:
    out = {k: v for k, v in node.items() if k != "allOf"}
    props = dict(obj(out.get("properties")))
    required = set(_strs(out.get("required")))
    for part in arr(node["allOf"]):
        resolved, _ = _resolve(part, defs)
        props.update(obj(resolved.get("properties")))
        required |= set(_strs(resolved.get("required")))
        for key, value in resolved.items():
            out.setdefault(key, value)
    if props:
        out["properties"], out["required"] = props, list(sorted(required))
    return out


def _types(node: JsonObject) -> frozenset[str]:
    """The JSON types a schema allows besides null; empty means any."""
    raw = node.get("type")
    named = set(_strs(raw) if isinstance(raw, list) else [raw] if isinstance(raw, str) else [])
    named.discard("null")
    if not named:
        if "properties" in node or "additionalProperties" in node:
            named.add("object")
        elif "items" in node:
            named.add("array")
    return frozenset(named)


def _covers(wide: frozenset[str], narrow: frozenset[str]) -> bool:
    if not wide:
        return True
    if not narrow:
        return False
    return all(t in wide or (t == "integer" and "number" in wide) for t in narrow)


def _show(types: frozenset[str]) -> str:
    return "|".join(sorted(types)) or "any"


def _discriminator(alt: JsonObject) -> str | None:
    """A union member's name: its `type` (or other single-valued) property, or the one
    key of an externally tagged member (`{"denied": {…}}`, additionalProperties false)."""
    props = obj(alt.get("properties"))
    for name in sorted(props, key=lambda n: (n != "type", n)):
        prop = obj(props[name])
        enum_ = prop.get("enum")
        if isinstance(enum_, list) and len(enum_) == 1:
            return str(enum_[0])
        if "const" in prop:
            return str(prop["const"])
    if alt.get("additionalProperties") is False and len(props) == 1:
        return str(next(iter(props)))
    return None


def _members(alt: JsonValue, index: int) -> Iterator[tuple[Member, JsonValue]]:
    if not isinstance(alt, dict):
        return
    ref = ref_name(alt)
    if ref is not None:
        yield ("ref", ref), alt
    elif alt.get("type") == "null":
        yield NULL, alt
    elif isinstance(alt.get("enum"), list):
        for value in arr(alt["enum"]):
            yield ("value", str(value)), {**alt, "enum": [value]}
    elif "const" in alt:
        yield ("value", str(alt["const"])), alt
    elif any(k in alt for k in _UNIONS) and "properties" not in alt:
        for i, inner in enumerate(arr(alt.get("oneOf")) or arr(alt.get("anyOf"))):
            yield from _members(inner, index * 100 + i)
    else:
        tag = _discriminator(alt)
        yield (("value", tag) if tag else (PLAIN, f"{_show(_types(alt))}#{index}")), alt


def _union(node: JsonObject) -> dict[Member, JsonValue] | None:
    """The members of a union (oneOf/anyOf, an enum), else None; null was split off
    before (`_nullable`). A schema with properties beside its `anyOf` is an object
    first (`_Walk.shape` compares the union after the properties)."""
    alts = next((arr(node[k]) for k in _UNIONS if isinstance(node.get(k), list)), None)
    if alts is not None and "properties" not in node:
        return dict(kv for i, alt in enumerate(alts) for kv in _members(alt, i))
    if alts is None and ("enum" in node or "const" in node):
        return dict(_members(node, 0))
    return None


def _is_null(node: JsonValue) -> bool:
    return isinstance(node, dict) and node.get("type") == "null"


def _nullable(node: JsonValue) -> tuple[JsonValue, bool]:
    """`node` without its null alternative, and whether it had one: `[T, null]` type
    lists and `anyOf: [T, {type: null}]` both say "T, or null"."""
    if not isinstance(node, dict):
        return node, False
    raw = node.get("type")
    if isinstance(raw, list) and "null" in raw and len(raw) > 1:
        rest = [t for t in raw if t != "null"]
        return {**node, "type": rest[0] if len(rest) == 1 else rest}, True
    key = next((k for k in _UNIONS if isinstance(node.get(k), list)), None)
    if key is None or "properties" in node:
        return node, False
    alts = arr(node[key])
    rest = [alt for alt in alts if not _is_null(alt)]
    if len(rest) == len(alts) or not rest:
        return node, False
    if len(rest) == 1 and not _structure(node, key):
        return rest[0], True
    return {**node, key: rest}, True


def _open(node: JsonValue, defs: JsonObject) -> tuple[JsonObject, str | None, bool]:
    """A schema ready to compare: null split off, refs followed (a definition may be
    nullable itself), with the definition name passed."""
    value, outer = _nullable(node)
    resolved, name = _resolve(value, defs)
    value, inner = _nullable(resolved)
    if inner:
        resolved, deeper = _resolve(value, defs)
        name = deeper or name
    return resolved, name, outer or inner


def _structured(a: JsonValue, b: JsonValue) -> bool:
    """Whether a union member has more to compare than its name (an enum value has not)."""
    keys = ("properties", "items", "additionalProperties", "$ref", "allOf", *_UNIONS)
    return any(isinstance(n, dict) and any(k in n for k in keys) for n in (a, b))


# --- the walk -----------------------------------------------------------------------------

class _Walk:
    """One direction of one method: ours and theirs side by side."""

    def __init__(self, ours: JsonObject, theirs: JsonObject, direction: Direction,
                 uses: Uses) -> None:
        self.ours, self.theirs, self.direction, self.uses = ours, theirs, direction, uses
        self.fields = uses.sends if direction is Direction.SEND else uses.reads
        self.seen: set[tuple[str | None, str | None]] = set()
        self.out: list[_Raw] = []

    @property
    def send(self) -> bool:
        return self.direction is Direction.SEND

    def note(self, verdict: Verdict, change: Change, defn: str | None, path: str,
             detail: str) -> None:
        self.out.append(_Raw(verdict, change, defn, path, detail))

    def node(self, a: JsonValue, b: JsonValue, defn: str | None, path: str) -> None:
        a, name_a, null_a = _open(a, self.ours)
        b, name_b, null_b = _open(b, self.theirs)
        self.nullability(null_a, null_b, defn, path)
        if name_a is not None or name_b is not None:
            if (name_a, name_b) in self.seen:
                return  # walked already (or being walked: a cycle)
            self.seen.add((name_a, name_b))
            # `Name@file`: a name codex defined twice (surface.py); the tables know `Name`
            defn, path = str(name_a or name_b).split("@")[0], ""
        ua, ub = _union(a), _union(b)
        if ua is None and ub is None:
            self.shape(a, b, defn, path)
        else:
            self.union(ua or {(PLAIN, "#0"): a}, ub or {(PLAIN, "#0"): b}, defn, path)

    def shape(self, a: JsonObject, b: JsonObject, defn: str | None,
              path: str) -> None:
        ta, tb = _types(a), _types(b)
        if ta != tb:
            fine = _covers(tb, ta) if self.send else _covers(ta, tb)
            self.note(OK if fine else BAD, Change.TYPE_CHANGED, defn, path,
                      f"was {_show(ta)}, is now {_show(tb)}")
            if not fine:
                return
        if "properties" in a or "properties" in b:
            self.properties(a, b, defn, path)
        for key, step in (("items", "[]"), ("additionalProperties", "{}")):
            if isinstance(a.get(key), dict) and isinstance(b.get(key), dict):
                self.node(a[key], b[key], defn, path + step)
        if any(k in a or k in b for k in _UNIONS):  # a union beside the properties
            strip = {"properties", "required", "type", "additionalProperties"}
            self.node({k: v for k, v in a.items() if k not in strip},
                      {k: v for k, v in b.items() if k not in strip}, defn, path)

    def properties(self, a: JsonObject, b: JsonObject, defn: str | None,
                   path: str) -> None:
        pa, pb = obj(a.get("properties")), obj(b.get("properties"))
        ra, rb = set(_strs(a.get("required"))), set(_strs(b.get("required")))
        listed = self.fields.get(defn or "", frozenset())
        added = {n: pb[n] for n in pb if n not in pa}
        for name in sorted(set(pa) | set(pb)):
            where = f"{path}.{name}" if path else name
            used = name in listed or (self.send and name in ra)
            if name not in pb:
                self.gone(name, pa[name], added, used, defn, where)
            elif name not in pa:
                new_required = self.send and name in rb
                self.note(BAD if new_required else OK, Change.FIELD_ADDED, defn, where,
                          "is new and required" if new_required else "is new")
            else:
                self.requirement(name in ra, name in rb, name in listed, used, defn, where)
                if used:
                    self.node(pa[name], pb[name], defn, where)
                elif canon(pa[name]) != canon(pb[name]):
                    self.note(OK, Change.UNUSED_CHANGED, defn, where,
                              f"changed (codexbridge does not {self.direction.value} it)")

    def gone(self, name: str, schema: JsonValue, added: JsonObject, used: bool,
             defn: str | None, where: str) -> None:
        twins = [n for n, s in added.items() if canon(s) == canon(schema)]
        renamed = f" (renamed to {twins[0]}?)" if len(twins) == 1 else ""
        unused = "" if used else f" (codexbridge does not {self.direction.value} it)"
        self.note(BAD if used else OK, Change.FIELD_GONE, defn, where,
                  f"is gone{renamed}{unused}")

    def requirement(self, was: bool, now: bool, listed: bool, used: bool,
                    defn: str | None, where: str) -> None:
        if was == now:
            return
        if now:  # optional → required
            bad = self.send and not listed
            self.note(BAD if bad else OK, Change.NOW_REQUIRED, defn, where,
                      "is now required" + (" (codexbridge does not send it)" if bad else ""))
        else:  # required → optional: a reader may find it missing
            bad = used and not self.send
            self.note(BAD if bad else OK, Change.NOW_OPTIONAL, defn, where,
                      "is now optional" + (" (codexbridge reads it)" if bad else ""))

    def union(self, ua: dict[Member, JsonValue], ub: dict[Member, JsonValue],
              defn: str | None, path: str) -> None:
        ua, ub = {k: v for k, v in ua.items() if k != NULL}, \
            {k: v for k, v in ub.items() if k != NULL}
        pa = [k for k in ua if k[0] == PLAIN]
        pb = [k for k in ub if k[0] == PLAIN]
        if len(pa) == 1 and len(pb) == 1:  # the one non-member alternative: a shape
            self.node(ua.pop(pa[0]), ub.pop(pb[0]), defn, path)
        elif self.enum_or_free(ua, ub, defn, path):
            return
        for key in sorted(set(ua) | set(ub)):
            if key not in ub:
                self.member_gone(key, defn, path)
            elif key not in ua:
                self.note(OK, Change.MEMBER_ADDED, defn, path, f"has a new member {key[1]!r}")
            elif self.walks_member(key, defn) and _structured(ua[key], ub[key]):
                label = f"<{key[1]}>" if key[0] == "value" else ""
                self.node(ua[key], ub[key], defn, path + label)

    def enum_or_free(self, ua: dict[Member, JsonValue], ub: dict[Member, JsonValue],
                     defn: str | None, path: str) -> bool:
        """An enum on one side, a free value (a plain string) on the other."""
        def values_only(u: dict[Member, JsonValue]) -> bool:
            return bool(u) and all(k[0] == "value" for k in u)

        def one_plain(u: dict[Member, JsonValue]) -> bool:
            return len(u) == 1 and next(iter(u))[0] == PLAIN

        if values_only(ua) and one_plain(ub):  # any value now: fine both ways
            self.note(OK, Change.TYPE_CHANGED, defn, path,
                      f"was one of {len(ua)} values, is now any value")
            return True
        if one_plain(ua) and values_only(ub):  # restricted: what we send may be refused
            self.note(BAD if self.send else OK, Change.TYPE_CHANGED, defn, path,
                      f"was any value, is now one of {sorted(k[1] for k in ub)}")
            return True
        return False

    def nullability(self, was: bool, now: bool, defn: str | None, path: str) -> None:
        if was == now:
            return
        if now:
            bad = not self.send
            self.note(BAD if bad else OK, Change.TYPE_CHANGED, defn, path, "may now be null")
        else:  # codexbridge never sends null: it leaves an optional field out
            self.note(OK, Change.TYPE_CHANGED, defn, path, "can no longer be null")

    def values(self, defn: str | None) -> frozenset[str] | None:
        return self.uses.values.get(defn or "")

    def member_used(self, key: tuple[str, str], defn: str | None) -> bool:
        values = self.values(defn)
        if self.send:  # a definition without a VALUES entry: any member may be sent
            return values is None or key[1] in values
        return values is not None and key[1] in values

    def walks_member(self, key: tuple[str, str], defn: str | None) -> bool:
        return not self.send or key[0] != "value" or self.member_used(key, defn)

    def member_gone(self, key: tuple[str, str], defn: str | None, path: str) -> None:
        used = self.member_used(key, defn)
        verb = "sends" if self.send else "reads"
        self.note(BAD if used else OK, Change.MEMBER_GONE, defn, path,
                  f"lost member {key[1]!r}" + (f" (codexbridge {verb} it)" if used else ""))


# --- methods --------------------------------------------------------------------------------

def _finding(kind: str, method: str, direction: Direction | None, raw: _Raw,
             breaks: str | None) -> Finding:
    consequence = breaks if raw.verdict is BAD else None
    return Finding(raw.verdict, raw.change, kind, method, direction, raw.definition,
                   raw.path, raw.detail, consequence)


def _method(kind: str, method: str, breaks: str, mine: JsonObject,
            fresh: JsonObject | None, ours: Surface, theirs: Surface,
            uses: Uses) -> Iterator[Finding]:
    if fresh is None:
        yield Finding(BAD, Change.METHOD_GONE, kind, method, None, None, "", "is gone",
                      f"{method} is gone: {breaks}")
        return
    for direction in Direction:
        if direction is Direction.SEND and kind == SERVER_REQUEST and method in uses.no_result:
            continue  # answered with a JSON-RPC error: its result schema is never sent
        a, b = mine.get(direction.value), fresh.get(direction.value)
        if a is None:
            continue
        if b is None:
            raw = _Raw(BAD, Change.NO_SCHEMA, None, "",
                       f"codex's bundle has no schema for what we {direction.value}")
            yield _finding(kind, method, direction, raw, f"cannot tell whether {breaks}")
            continue
        walk = _Walk(obj(ours.get("definitions")), obj(theirs.get("definitions")), direction,
                     uses)
        walk.node(a, b, None, "")
        for raw in walk.out:
            yield _finding(kind, method, direction, raw, breaks)


def _catalog(kind: str, ours: Surface, theirs: Surface, used: set[str],
             legacy: frozenset[str]) -> Iterator[Finding]:
    """Methods codexbridge does not use, new or gone: compatible, listed. A legacy
    method (one an older codex of the range sends, answered all the same) is neither."""
    mine = set(_strs(obj(ours.get("catalog")).get(kind))) | legacy
    fresh = set(_strs(obj(theirs.get("catalog")).get(kind))) | legacy
    for method in sorted(fresh - mine):
        yield Finding(OK, Change.METHOD_ADDED, kind, method, None, None, "", "is new", None)
    for method in sorted(mine - fresh - used):
        yield Finding(OK, Change.METHOD_GONE, kind, method, None, None, "",
                      "is gone (codexbridge does not use it)", None)


# What makes two findings one: the same change at the same place (a method's own finding
# is its method's alone).
_Key = tuple[Verdict, Change, "Direction | None", "str | None", str, str, "str | None"]


def _merged(findings: list[Finding]) -> list[Finding]:
    """One finding per change: a definition shared by several methods (ThreadItem)
    is reported once, naming the others in `also`."""
    out: dict[_Key, Finding] = {}
    said: dict[_Key, list[str]] = {}
    for f in findings:
        key = (f.verdict, f.change, f.direction, f.definition, f.path, f.detail,
               f.method if f.definition is None else None)
        have = out.get(key)
        if have is None:
            out[key] = f
        elif f.method != have.method and f.method not in have.also:
            out[key] = have._replace(also=(*have.also, f.method))
            if f.consequence:
                said.setdefault(key, [have.consequence or ""])
                if f.consequence not in said[key]:
                    said[key].append(f.consequence)
    for key, consequences in said.items():
        more = len(consequences) - 2
        text = "; ".join(consequences[:2]) + (f" (and {more} more)" if more > 0 else "")
        out[key] = out[key]._replace(consequence=text)
    return list(out.values())


def judge(ours: Surface, theirs: Surface, uses: Uses = USES) -> list[Finding]:
    """Every difference that matters between our surface and theirs, judged."""
    found: list[Finding] = []
    for kind in ORDER:
        mine = obj(obj(ours.get("methods")).get(kind))
        fresh = obj(obj(theirs.get("methods")).get(kind))
        used = set(uses.methods.get(kind) or {})
        for method in sorted(used - uses.legacy):
            if method in mine:  # our bundle lacks it only if the tables are wrong (tested)
                theirs_method = fresh.get(method)
                found.extend(_method(kind, method, uses.methods[kind][method], obj(mine[method]),
                                     theirs_method if isinstance(theirs_method, dict) else None,
                                     ours, theirs, uses))
        found.extend(_catalog(kind, ours, theirs, used, uses.legacy))
    return _merged(found)


def incompatible(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.verdict is Verdict.INCOMPATIBLE]


# --- the answers codexbridge gives codex's server requests ---------------------------------
# codexbridge answers every approval and server request codex sends during a bridge turn
# (`protocol/approvals.TABLE`: the fail-closed refusal when no human answers in time, and
# the accept of `--approvals accept`). codex waits for a valid answer: one it cannot parse
# leaves the turn hanging. So each of those answers is validated with jsonschema against
# the `*Response.json` the installed codex just generated — the answers as the code
# builds them today, not a description of them.

class AnswerProblem(NamedTuple):
    method: str
    answer: str  # "fail-closed" | "accept"
    errors: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"method": self.method, "answer": self.answer, "errors": list(self.errors)}


def check_answers(directory: Path) -> tuple[int, list[AnswerProblem]]:
    """(answers checked, problems) for the bundle a codex wrote into `directory`. A server
    request that codex no longer sends is not checked (it cannot ask it)."""
    read = bundle_loader(directory)

    def load(name: str) -> JsonObject:
        doc = read(name)
        if doc is None:  # an empty schema would let any answer pass
            raise FileNotFoundError(f"{name} is missing from the schema codex generated")
        return doc

    schemas = SchemaSet(load)
    sends = schemas.server_request_responses()
    checked, problems = 0, []
    for method, rule in sorted(TABLE.items()):
        if method not in sends:
            continue
        for how, build in (("fail-closed", rule.fail_closed), ("accept", rule.accept)):
            if build is None:
                continue  # refused as a JSON-RPC error: no result to check
            checked += 1
            try:
                schemas.validate_server_request_answer(method, build({}))
            except SchemaViolation as exc:
                problems.append(AnswerProblem(method, how, tuple(
                    f"{p}: {m}" for p, m in exc.errors[:3])))
            except (OSError, ValueError) as exc:  # its schema file is missing or damaged
                problems.append(AnswerProblem(method, how, (str(exc),)))
    return checked, problems

"""Does an installed codex speak what codexbridge uses? The judge, pure.

What codexbridge uses is one list, `codex/protocol/generated/uses.py` (written by
scripts/gen-protocol from its tables, with what the pinned schema says at each place we
use); `protocol/shapes.read_bundle` reads the same places in the bundle the installed
codex generates, and the two are compared place by place, per direction:

  send   what we send (a client request's params, our answer to a server request):
         codex must accept it. A new optional field or a new enum member on their side
         is fine; a field that became required (and we do not send), a field we send
         that is gone, a narrowed type or a removed member we send is not.
  read   what we read (notification and server-request params, client-request
         results): new fields, new members, optional → required are fine; a field we
         read that is gone, became optional or changed type is not — and a field we do
         not read may do anything (listed, compatible).

The answers codexbridge gives codex's server requests are validated with jsonschema
against the installed codex's own `*Response.json` (`check_answers`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from ..codex.protocol import schema, shapes
from ..codex.protocol.approvals import LEGACY_SERVER_REQUESTS, TABLE
from ..codex.protocol.generated import notifications, requests
from ..codex.protocol.generated import uses as pinned
from ..codex.protocol.shapes import CLIENT_REQUEST, NOTIFICATION, SERVER_REQUEST, Field, Key, Shape
from ..errors import SchemaViolation
from ..host.jsonfile import read_object


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

    def as_dict(self) -> dict[str, object]:
        return {**self._asdict(), "verdict": self.verdict.value, "change": self.change.value,
                "direction": self.direction.value if self.direction else None,
                "where": self.where, "also": list(self.also)}


OK, BAD = Verdict.COMPATIBLE, Verdict.INCOMPATIBLE
USES = shapes.Uses(pinned.READS, pinned.SENDS, pinned.VALUES)
# Notifications first: a definition many methods share (ThreadItem, Turn) is reported
# under the first, and what breaks is plainest there ("talk cannot read codex's reply").
ORDER = (NOTIFICATION, CLIENT_REQUEST, SERVER_REQUEST)
# The pinned codex's methods, every one (what is new or gone in another codex): kind →
# method → the definitions its messages start at (what we send, what we read; None: none).
PINNED: dict[str, dict[str, tuple[str | None, str | None]]] = {
    CLIENT_REQUEST: requests.CLIENT_REQUESTS,
    NOTIFICATION: {m: (None, p) for m, p in notifications.SERVER_NOTIFICATIONS.items()},
    SERVER_REQUEST: {m: (r, p) for m, (p, r) in requests.SERVER_REQUESTS.items()}}
# Server requests answered with a JSON-RPC error only: their result schema is never sent.
NO_RESULT = frozenset(r.method for r in TABLE.values()
                      if r.fail_closed is None and r.accept is None)


# (verdict, change, path inside the definition, what changed in words)
_Raw = tuple[Verdict, Change, str, str]


class _Place(NamedTuple):
    """One place of one method's walk, ours against theirs."""

    send: bool
    defn: str
    path: str

    def at(self, name: str) -> str:
        """The path of field `name` here."""
        return f"{self.path}.{name}" if self.path else name

    @property
    def verb(self) -> str:
        return "send" if self.send else "read"


def _covers(wide: str, narrow: str) -> bool:
    """Whether every JSON type of `narrow` is one `wide` allows ("" is any)."""
    if not wide:
        return True
    allowed = set(wide.split("|"))
    return bool(narrow) and all(t in allowed or (t == "integer" and "number" in allowed)
                                for t in narrow.split("|"))


def _fields(p: _Place, ours: dict[str, Field], theirs: dict[str, Field]) -> Iterator[_Raw]:
    """(verdict, change, path, detail) for the fields of one place."""
    listed = (USES.sends if p.send else USES.reads).get(p.defn, ())
    added = {n: f for n, f in theirs.items() if n not in ours}
    for name in sorted(set(ours) | set(theirs)):
        path = p.at(name)
        a, b = ours.get(name), theirs.get(name)
        used = name in listed or (p.send and a is not None and a.required)
        if b is None and a is not None:
            twins = [n for n, f in added.items() if f[:2] + f[3:] == a[:2] + a[3:]]
            renamed = f" (renamed to {twins[0]}?)" if len(twins) == 1 else ""
            unused = "" if used else f" (codexbridge does not {p.verb} it)"
            yield BAD if used else OK, Change.FIELD_GONE, path, f"is gone{renamed}{unused}"
        elif a is None and b is not None:
            new_required = p.send and b.required
            yield (BAD if new_required else OK, Change.FIELD_ADDED, path,
                   "is new and required" if new_required else "is new")
        elif a is not None and b is not None:
            yield from _field(p, path, a, b, name in listed, used)


def _field(p: _Place, path: str, a: Field, b: Field, listed: bool,
           used: bool) -> Iterator[_Raw]:
    if a.required != b.required:
        if b.required:  # optional → required
            bad = p.send and not listed
            yield (BAD if bad else OK, Change.NOW_REQUIRED, path, "is now required"
                   + (" (codexbridge does not send it)" if bad else ""))
        else:  # required → optional: a reader may find it missing
            bad = used and not p.send
            yield (BAD if bad else OK, Change.NOW_OPTIONAL, path, "is now optional"
                   + (" (codexbridge reads it)" if bad else ""))
    if not used:
        if (a.types, a.nullable, a.ref) != (b.types, b.nullable, b.ref):
            yield (OK, Change.UNUSED_CHANGED, path,
                   f"changed (codexbridge does not {p.verb} it)")
        return
    if a.nullable != b.nullable:
        yield ((BAD if b.nullable and not p.send else OK), Change.TYPE_CHANGED, path,
               "may now be null" if b.nullable else "can no longer be null")
    if a.types != b.types:
        fine = _covers(b.types, a.types) if p.send else _covers(a.types, b.types)
        yield (OK if fine else BAD, Change.TYPE_CHANGED, path,
               f"was {a.types or 'any'}, is now {b.types or 'any'}")


def _members(p: _Place, ours: tuple[str, ...] | None,
             theirs: tuple[str, ...] | None) -> Iterator[_Raw]:
    if ours is None or theirs is None:  # an enum on one side, a free value on the other
        values = [m for m in ours or theirs or () if not m.startswith("~")]
        if ours is not None and theirs is None:
            yield OK, Change.TYPE_CHANGED, p.path, f"was one of {len(values)} values, " \
                "is now any value"
        elif theirs is not None and ours is None:
            yield (BAD if p.send else OK, Change.TYPE_CHANGED, p.path,
                   f"was any value, is now one of {sorted(values)}")
        return
    used = USES.values.get(p.defn)
    for member in sorted(set(ours) | set(theirs)):
        if member not in theirs:
            # a send to a definition without a VALUES entry may use any member
            mine = (used is None or member in used) if p.send else (
                used is not None and member in used)
            verb = "sends" if p.send else "reads"
            yield (BAD if mine else OK, Change.MEMBER_GONE, p.path, f"lost member "
                   f"{member!r}" + (f" (codexbridge {verb} it)" if mine else ""))
        elif member not in ours:
            yield OK, Change.MEMBER_ADDED, p.path, f"has a new member {member!r}"


def _compare(p: _Place, ours: Shape, theirs: Shape) -> Iterator[_Raw]:
    if ours.fields is not None or theirs.fields is not None:
        yield from _fields(p, ours.fields or {}, theirs.fields or {})
    if ours.members is not None or theirs.members is not None:
        yield from _members(p, ours.members, theirs.members)


def _method(kind: str, method: str, breaks: str,
            fresh: shapes.Bundle) -> Iterator[Finding]:
    if method not in fresh.catalog[kind]:
        yield Finding(BAD, Change.METHOD_GONE, kind, method, None, None, "", "is gone",
                      f"{method} is gone: {breaks}")
        return
    for direction, root in zip(Direction, PINNED[kind][method], strict=True):
        if root is None or (direction is Direction.SEND and method in NO_RESULT):
            continue  # no such message (or answered with an error: never sent)
        walked = fresh.walks.get((kind, method, direction.value))
        if walked is None:
            yield Finding(BAD, Change.NO_SCHEMA, kind, method, direction, None, "",
                          f"codex's bundle has no schema for what we {direction.value}",
                          f"cannot tell whether {breaks}")
            continue
        for i, (key, theirs) in enumerate(walked.items()):
            mine: Key = (root, "") if i == 0 else key  # the root, whatever codex now calls it
            ours = pinned.SHAPES.get(mine)
            if ours is None:
                continue  # reached only through a change already reported above it
            place = _Place(direction is Direction.SEND, *mine)
            for verdict, change, path, detail in _compare(place, ours, theirs):
                yield Finding(verdict, change, kind, method, direction, mine[0], path, detail,
                              breaks if verdict is BAD else None)


def _catalog(kind: str, fresh: shapes.Bundle) -> Iterator[Finding]:
    """Methods codexbridge does not use, new or gone: compatible, listed. A legacy
    method (one an older codex of the range sends, answered all the same) is neither."""
    mine, theirs = set(PINNED[kind]) | LEGACY_SERVER_REQUESTS, \
        fresh.catalog[kind] | LEGACY_SERVER_REQUESTS
    for method in sorted(theirs - mine):
        yield Finding(OK, Change.METHOD_ADDED, kind, method, None, None, "", "is new", None)
    for method in sorted(mine - theirs - set(pinned.METHODS[kind])):
        yield Finding(OK, Change.METHOD_GONE, kind, method, None, None, "",
                      "is gone (codexbridge does not use it)", None)


def judge(directory: Path) -> list[Finding]:
    """Every difference that matters between the pinned schema and the bundle a codex
    wrote into `directory`, judged (ValueError: the bundle holds no methods)."""
    fresh = shapes.read_bundle(_loader(directory), pinned.METHODS, USES)
    if not any(fresh.catalog.values()):
        raise ValueError("codex app-server generate-json-schema wrote no method schemas")
    found: list[Finding] = []
    for kind in ORDER:
        for method, breaks in sorted(pinned.METHODS[kind].items()):
            if method not in LEGACY_SERVER_REQUESTS:
                found.extend(_method(kind, method, breaks, fresh))
        found.extend(_catalog(kind, fresh))
    return _merged(found)


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
        return {**self._asdict(), "errors": list(self.errors)}


def check_answers(directory: Path) -> tuple[int, list[AnswerProblem]]:
    """(answers checked, problems) for the bundle a codex wrote into `directory`. A server
    request that codex no longer sends is not checked (it cannot ask it)."""
    load = _loader(directory)
    asked = load(shapes.BUNDLE_FILES[SERVER_REQUEST])
    if asked is None:
        raise FileNotFoundError(f"{shapes.BUNDLE_FILES[SERVER_REQUEST]} is missing from the "
                                "schema codex generated")
    params = {method: shapes.ref_name(shapes.params_of(branch)) or ""
              for method, branch in shapes.branches(asked).items()}
    checked, problems = 0, []
    for method, rule in sorted(TABLE.items()):
        if not params.get(method, "").endswith("Params"):
            continue  # codex no longer asks it (or names no result schema for it)
        name = f"{params[method].removesuffix('Params')}Response.json"
        doc = load(name)
        for how, build in (("fail-closed", rule.fail_closed), ("accept", rule.accept)):
            if build is None:
                continue  # refused as a JSON-RPC error: no result to check
            checked += 1
            if doc is None:  # an empty schema would let any answer pass
                problems.append(AnswerProblem(method, how, (
                    f"{name} is missing from the schema codex generated",)))
                continue
            try:
                schema.check(schema.validator(doc), build({}), f"answer to {method!r}",
                             "$.result")
            except SchemaViolation as exc:
                problems.append(AnswerProblem(method, how, tuple(
                    f"{p}: {m}" for p, m in exc.errors[:3])))
    return checked, problems


def _loader(directory: Path) -> shapes.Loader:
    """Relative path in the bundle → its parsed object (None: absent or unreadable)."""
    return lambda name: read_object(str(directory / name))

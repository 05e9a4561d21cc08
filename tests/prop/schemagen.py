"""Hypothesis strategies for protocol messages, drawn straight from `schemas/`.

Two generators over the same files:

* `hypothesis_jsonschema.from_schema` for the small schemas (the JSON-RPC envelopes,
  the light notifications): the reference generator.
* `Compiler`, a small compiler of the JSON-schema subset codex's generator writes
  (type, enum, properties/required, additionalProperties, items, anyOf/oneOf, allOf,
  $ref, minimum, minLength, the integer formats), for the heavy messages. Measured on
  this machine: hypothesis-jsonschema 0.23.1 takes ~3 s per example of `turn/completed`
  or `item/completed` (it re-canonicalises and re-checks the merged `ThreadItem` union
  at every draw), so 50 examples would be minutes; this takes milliseconds.

Every message a `Compiler` draws is validated against the exact schema branch with
jsonschema (`Schemas.valid`), so "valid" means what the schema says, not what this file
thinks. `near_valid` mutates a valid message one step away (a required key gone, a
value of another type, an unknown field, a method nobody knows).
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from jsonschema import Draft7Validator

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas" / "experimental"  # what codexbridge speaks (experimental API)

# Integer formats → (min, max); codex writes Rust integer types.
_INT_FORMATS = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1),
                "uint": (0, 2**64 - 1), "uint64": (0, 2**64 - 1), "uint32": (0, 2**32 - 1),
                "uint16": (0, 2**16 - 1)}
# Below this depth only required properties are drawn and arrays stay short, so a
# recursive definition (a thread item holding items) ends.
_DEEP = 4
_GIVE_UP = 12

json_scalars = (st.none() | st.booleans() | st.integers(-(2**64), 2**64)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
json_values = st.recursive(json_scalars,
                           lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=12)


@functools.cache
def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return doc


_ENVELOPE = {"id", "method", "params", "result", "error"}
_NOTES = ("description", "title", "default", "$schema")


def _merge(a: dict[str, Any], b: Any) -> Any:
    """Both schemas at once (the subset used here: properties and required add up;
    refs are resolved by the caller first)."""
    if not a:
        return b
    if not isinstance(b, dict):
        return b
    out = {**a, **b}
    if "properties" in a or "properties" in b:
        out["properties"] = {**a.get("properties", {}), **b.get("properties", {})}
    if "required" in a or "required" in b:
        out["required"] = sorted({*a.get("required", []), *b.get("required", [])})
    return out


class Compiler:
    """JSON schema (with `#/definitions/…` refs into `definitions`) → strategy."""

    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions
        self._refs: dict[tuple[str, int], st.SearchStrategy[Any]] = {}

    def _resolved(self, node: Any) -> Any:
        """A `{"$ref": …}` replaced by its definition (one level), for merging."""
        if isinstance(node, dict) and "$ref" in node:
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return _merge(rest, self.definitions[node["$ref"].rsplit("/", 1)[-1]])
        return node

    def strategy(self, node: Any, depth: int = 0) -> st.SearchStrategy[Any]:
        if node is True or node == {}:
            return json_values
        if node is False:
            return st.nothing()
        if "$ref" in node:
            if depth > _GIVE_UP:
                # Only a reference can recurse: giving up here (not on a scalar such as
                # a union's `type` tag) keeps every shallower object drawable.
                return st.nothing()
            name = node["$ref"].rsplit("/", 1)[-1]
            key = (name, min(depth, _DEEP + 1))
            if key not in self._refs:
                self._refs[key] = st.deferred(
                    lambda: self.strategy(self.definitions[name], depth + 1))
            return self._refs[key]
        if "allOf" in node:
            merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
            for part in node["allOf"]:
                merged = _merge(merged, self._resolved(part))
            return self.strategy(merged, depth)
        for key in ("anyOf", "oneOf"):
            if key in node:
                # Keywords beside the union (shared properties) hold in every branch.
                shared = {k: v for k, v in node.items() if k not in (key, *_NOTES)}
                if not shared:
                    return st.one_of([self.strategy(b, depth) for b in node[key]])
                return st.one_of([self.strategy(_merge(shared, self._resolved(b)), depth)
                                  for b in node[key]])
        if "enum" in node:
            return st.sampled_from(node["enum"])
        if "const" in node:
            return st.just(node["const"])
        kinds = node.get("type")
        if kinds is None:
            return json_values
        if isinstance(kinds, list):
            return st.one_of([self.strategy({**node, "type": k}, depth) for k in kinds])
        return self._typed(kinds, node, depth)

    def _typed(self, kind: str, node: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        if kind == "null":
            return st.none()
        if kind == "boolean":
            return st.booleans()
        if kind == "string":
            return st.text(min_size=node.get("minLength", 0), max_size=30)
        if kind == "integer":
            low, high = _INT_FORMATS.get(node.get("format", ""), (-(2**63), 2**63 - 1))
            if "minimum" in node:
                low = max(low, int(node["minimum"]))
            return st.integers(low, high)
        if kind == "number":
            low_f = node.get("minimum")
            return st.floats(min_value=low_f, allow_nan=False, allow_infinity=False)
        if kind == "array":
            top = 3 if depth < _DEEP else 0
            if top == 0 and not node.get("minItems"):
                return st.just([])
            items = self.strategy(node.get("items", True), depth + 1)
            if items.is_empty:  # hypothesis refuses lists of what cannot be drawn
                return st.just([]) if not node.get("minItems") else st.nothing()
            return st.lists(items, min_size=node.get("minItems", 0), max_size=top)
        if kind == "object":
            return self._object(node, depth)
        raise ValueError(f"schema type {kind!r} is not handled")

    def _object(self, node: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        props = node.get("properties", {})
        required = set(node.get("required", []))
        fixed = {k: self.strategy(v, depth + 1) for k, v in props.items() if k in required}
        optional = ({k: self.strategy(v, depth + 1) for k, v in props.items()
                     if k not in required} if depth < _DEEP else {})
        base = st.fixed_dictionaries(fixed, optional=optional)
        extra = node.get("additionalProperties", True)
        if extra is False or depth >= _DEEP:
            return base
        values = json_values if extra is True else self.strategy(extra, depth + 1)
        # At the top, an unknown `id` / `result` / `error` would make it another kind of
        # JSON-RPC message: unknown fields there are everything else.
        taken = set(props) | (_ENVELOPE if depth == 0 else set())
        names = st.text(min_size=1, max_size=10).filter(lambda k: k not in taken)
        return st.tuples(base, st.dictionaries(names, values, max_size=2)).map(
            lambda pair: {**pair[1], **pair[0]})


class Schemas:
    """The methods of one `oneOf`-over-methods file (ServerNotification, ServerRequest)."""

    def __init__(self, name: str) -> None:
        doc = load(name)
        self.compiler = Compiler(doc["definitions"])
        self._doc = doc
        self.branches: dict[str, dict[str, Any]] = {}
        for branch in doc["oneOf"]:
            method = branch["properties"]["method"]["enum"][0]
            # Root-level properties (ServerNotification's emittedAtMs) go with every branch.
            props = {**doc.get("properties", {}), **branch["properties"]}
            self.branches[method] = {**branch, "properties": props}
        self.methods = sorted(self.branches)

    @functools.cache  # noqa: B019 - one instance per schema file, kept for the session
    def validator(self, method: str) -> Draft7Validator:
        return Draft7Validator({**self.branches[method],
                                "definitions": self._doc["definitions"]})

    def valid(self, method: str, message: Any) -> bool:
        return bool(self.validator(method).is_valid(message))

    @functools.cache  # noqa: B019
    def message(self, method: str) -> st.SearchStrategy[dict[str, Any]]:
        """Schema-valid messages of one method (validated, not trusted)."""
        strategy: st.SearchStrategy[dict[str, Any]] = self.compiler.strategy(
            self.branches[method])
        return strategy.filter(lambda msg: self.valid(method, msg))

    def any_message(self, methods: list[str] | None = None) -> st.SearchStrategy[Any]:
        return st.sampled_from(methods or self.methods).flatmap(self.message)


@functools.cache
def notifications() -> Schemas:
    return Schemas("ServerNotification.json")


@functools.cache
def server_requests() -> Schemas:
    return Schemas("ServerRequest.json")


@functools.cache
def definition(file: str, name: str | None = None) -> st.SearchStrategy[Any]:
    """Valid instances of a whole schema file, or of one of its definitions."""
    doc = load(file)
    defs = doc.get("definitions", {})
    schema = defs[name] if name else doc
    validator = Draft7Validator({**schema, "definitions": defs})
    return Compiler(defs).strategy(schema).filter(validator.is_valid)


# --- one step away from valid -------------------------------------------------------

def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _set(root: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    node = root
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = new
    return root


def _delete(root: Any, path: tuple[Any, ...]) -> Any:
    node = root
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return root


@st.composite
def near_valid(draw: st.DrawFn, valid: st.SearchStrategy[Any]) -> Any:
    """A valid message with one thing wrong with it."""
    message = copy.deepcopy(draw(valid))
    paths = _paths(message)
    how = draw(st.sampled_from(["retype", "delete", "extra", "method", "params", "id"]))
    if how == "retype":
        return _set(message, draw(st.sampled_from(paths)), draw(json_values))
    if how == "delete" and len(paths) > 1:
        return _delete(message, draw(st.sampled_from(paths[1:])))
    if how == "method" and isinstance(message, dict):
        message["method"] = draw(st.text(max_size=30) | json_values)
        return message
    if how == "params" and isinstance(message, dict):
        message["params"] = draw(json_values)
        return message
    if how == "id" and isinstance(message, dict):
        message["id"] = draw(json_values)
        return message
    if isinstance(message, dict):
        message[draw(st.text(max_size=10))] = draw(json_values)
    return message

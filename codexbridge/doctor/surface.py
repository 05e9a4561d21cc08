"""The protocol surface codexbridge uses, cut out of a codex schema bundle.

`codex app-server generate-json-schema --experimental` writes ~450 files (11 MB). What
the doctor needs to judge a codex is much less: for each method codexbridge uses
(`doctor/uses.py`) what we send (a client request's params, our answer to a server
request) and what we read (a notification's or server request's params, a client
request's result), and every definition those refer to. `extract` cuts that out of a
bundle. `scripts/gen-surface` runs it on `schemas/experimental` to write the package's
`protocol/surface.json` (so an installed wheel can judge too); the doctor runs it on the
bundle the installed codex generates, and `doctor/compat.py` compares the two.

A surface:

    {"codex": "codex-cli X.Y.Z",
     "catalog": {kind: [every method name of that kind in the bundle]},
     "methods": {kind: {method: {"send": schema | null, "read": schema | null}}},
     "definitions": {name: schema}}

Schemas keep only what is protocol: descriptions, titles, defaults and examples are
prose and are dropped. Each file's `#/definitions/…` references resolve in that file;
the surface merges them into one namespace: one name, one schema — where two files
define a name differently, the later one is kept as `Name@file`, never silently lost.

Pure: a loader (path relative to the bundle → parsed JSON, None when absent) in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ..jsontypes import obj, objs

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..jsontypes import JsonObject, JsonValue

    Loader: TypeAlias = Callable[[str], JsonObject | None]
    Surface: TypeAlias = JsonObject

CLIENT_REQUEST = "client request"
NOTIFICATION = "notification"
SERVER_REQUEST = "server request"
KINDS = (CLIENT_REQUEST, NOTIFICATION, SERVER_REQUEST)
BUNDLE_FILES = {CLIENT_REQUEST: "ClientRequest.json", NOTIFICATION: "ServerNotification.json",
                SERVER_REQUEST: "ServerRequest.json"}
# Where the generator writes a method's result schema (`FooResponse.json`).
RESULT_DIRS = ("", "v2/", "v1/")
PROSE = frozenset({"description", "title", "default", "examples", "$schema"})
# Keywords whose value maps names to schemas (the names are data, not keywords).
NAME_MAPS = frozenset({"properties", "definitions", "patternProperties"})
REF = "#/definitions/"


def prune(node: JsonValue) -> JsonValue:
    """`node` without prose; property and definition names are kept whatever they are."""
    if isinstance(node, list):
        return [prune(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: JsonObject = {}
    for key, value in node.items():
        if key in PROSE:
            continue
        if key in NAME_MAPS and isinstance(value, dict):
            out[key] = {name: prune(schema) for name, schema in value.items()}
        elif key in ("enum", "const"):
            out[key] = value  # values, not schemas
        else:
            out[key] = prune(value)
    return out


def canon(node: JsonValue) -> str:
    return json.dumps(node, sort_keys=True, separators=(",", ":"))


def ref_name(node: JsonValue) -> str | None:
    ref = node.get("$ref") if isinstance(node, dict) else None
    return ref[len(REF):] if isinstance(ref, str) and ref.startswith(REF) else None


def branches(bundle: JsonObject | None) -> dict[str, JsonObject]:
    """method → its `oneOf` branch, in a bundle file that is a oneOf over methods."""
    out: dict[str, JsonObject] = {}
    for branch in objs((bundle or {}).get("oneOf")):
        enum = obj(obj(branch.get("properties")).get("method")).get("enum")
        if isinstance(enum, list) and len(enum) == 1 and isinstance(enum[0], str):
            out[enum[0]] = branch
    return out


def _refs(node: JsonValue) -> Iterable[str]:
    if isinstance(node, dict):
        name = ref_name(node)
        if name is not None:
            yield name
        for key, value in node.items():
            if key not in ("enum", "const"):
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def closure(node: JsonValue, definitions: Mapping[str, JsonValue]) -> JsonObject:
    """Every definition `node` refers to, transitively: name → its (pruned) schema.
    A reference to a name the file does not define is left out (it resolves to
    nothing on the judge's side too)."""
    found: JsonObject = {}
    stack = list(_refs(node))
    while stack:
        name = stack.pop()
        if name in found or name not in definitions:
            continue
        found[name] = prune(definitions[name])
        stack.extend(_refs(found[name]))
    return found


def _renamed(node: JsonValue, names: Mapping[str, str]) -> JsonValue:
    """`node` with its references to `names` pointed at their new names."""
    if isinstance(node, list):
        return [_renamed(x, names) for x in node]
    if not isinstance(node, dict):
        return node
    ref = ref_name(node)
    out: JsonObject = {k: (v if k in ("enum", "const") else _renamed(v, names))
                       for k, v in node.items()}
    if ref is not None and ref in names:
        out["$ref"] = REF + names[ref]
    return out


class _Builder:
    """Collects the message schemas and the definitions they refer to, file by file."""

    def __init__(self, load: Loader) -> None:
        self.load = load
        self.definitions: JsonObject = {}

    def take(self, node: JsonValue, file_definitions: Mapping[str, JsonValue],
             file: str) -> JsonValue:
        """`node` (pruned) with its closure defined. Where this file's definition of a
        name differs from the one already taken (codex generated two), this file's — and
        every one of its definitions that leads to it — is kept as `Name@file`."""
        found = closure(node, file_definitions)
        renamed = {n for n, schema in found.items()
                   if n in self.definitions and canon(self.definitions[n]) != canon(schema)}
        grew = bool(renamed)
        while grew:
            more = {n for n, schema in found.items()
                    if n not in renamed and any(r in renamed for r in _refs(schema))}
            renamed |= more
            grew = bool(more)
        names = {n: f"{n}@{file}" for n in renamed}
        for name, schema in found.items():
            self.definitions[names.get(name, name)] = _renamed(schema, names)
        return _renamed(prune(node), names)

    def define(self, name: str, schema: JsonValue, file: str) -> str:
        have = self.definitions.get(name)
        if have is not None and canon(have) != canon(schema):
            name = f"{name}@{file}"
        self.definitions[name] = schema
        return name

    def result_file(self, name: str) -> JsonValue:
        """`{"$ref": name}` to a whole result file's schema, defined under its own name."""
        for folder in RESULT_DIRS:
            file = f"{folder}{name}.json"
            doc = self.load(file)
            if doc is not None:
                root = {k: v for k, v in doc.items() if k != "definitions"}
                taken = self.take(root, obj(doc.get("definitions")), file)
                return {"$ref": REF + self.define(name, taken, file)}
        return None


def _stem(params: JsonValue) -> str | None:
    """`#/definitions/ThreadResumeParams` → "ThreadResume": the generator names the
    result file after the params (`ThreadResumeResponse.json`)."""
    name = ref_name(params)
    return name[: -len("Params")] if name and name.endswith("Params") else None


def _method(build: _Builder, kind: str, branch: JsonObject,
            file_definitions: Mapping[str, JsonValue], file: str) -> JsonObject:
    params = obj(branch.get("properties")).get("params")
    message = build.take(params, file_definitions, file) if params is not None else None
    stem = _stem(params)
    result = build.result_file(f"{stem}Response") if stem else None
    if kind == CLIENT_REQUEST:
        return {"send": message, "read": result}
    if kind == SERVER_REQUEST:
        return {"send": result, "read": message}
    return {"send": None, "read": message}


def extract(load: Loader, used: Mapping[str, Iterable[str]], codex: str) -> Surface:
    """The surface of `used` (kind → methods) in the bundle `load` reads. A method the
    bundle lacks is simply absent from `methods` (the judge says what that breaks)."""
    build = _Builder(load)
    catalog: JsonObject = {}
    methods: JsonObject = {}
    for kind in KINDS:
        bundle = load(BUNDLE_FILES[kind])
        found = branches(bundle)
        catalog[kind] = list(sorted(found))
        defs = obj((bundle or {}).get("definitions"))
        methods[kind] = {m: _method(build, kind, found[m], defs, BUNDLE_FILES[kind])
                         for m in sorted(used.get(kind, ())) if m in found}
    return {"codex": codex, "catalog": catalog, "methods": methods,
            "definitions": dict(sorted(build.definitions.items()))}


def dumps(surface: Surface) -> str:
    """The file form: stable (sorted keys) so a regenerated file diffs only where the
    protocol moved."""
    return json.dumps(surface, sort_keys=True, indent=1) + "\n"

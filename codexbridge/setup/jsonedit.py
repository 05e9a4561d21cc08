"""Adding and taking out keys of a JSON settings file without disturbing the rest. Pure.

An `Entry` is one thing setup puts in a file: a value at a key path (`("enabledPlugins",
"codexbridge@codexbridge")`), or a string in a list (`("permissions", "allow")` holding
`"mcp__…"`). `add` returns the new document and which entries it really added (those
already there, with the same value, are not "ours" to take out later); `remove` takes
out exactly the given entries when they still hold our value, and the objects and lists
`add` created for them once they are empty again.

The text is re-rendered in the style it came in (indent width or tabs, a trailing
newline or not), so a file Claude Code wrote keeps its exact bytes outside our keys.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import UsageError
from ..host.jsonfile import loads_json
from ..jsontypes import arr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue

Path_ = tuple[str, ...]


@dataclass(frozen=True)
class Entry:
    path: Path_
    value: JsonValue
    in_list: bool = False  # value is one item of the list at `path`

    def describe(self) -> str:
        where = ".".join(self.path)
        shown = json.dumps(self.value, ensure_ascii=False)
        return f"{where} += {shown}" if self.in_list else f"{where} = {shown}"

    def as_json(self) -> JsonObject:
        return {"path": [*self.path], "value": self.value, "in_list": self.in_list}

    @staticmethod
    def from_json(data: JsonObject) -> Entry:
        return Entry(tuple(str(p) for p in arr(data["path"])), data["value"],
                     bool(data.get("in_list")))


@dataclass(frozen=True)
class Style:
    indent: int | str | None
    newline: bool


def parse(text: str, where: str) -> JsonObject:
    """The settings object; empty text is `{}`. UsageError (nothing changed) otherwise."""
    if not text.strip():
        return {}
    try:
        data = loads_json(text)
    except ValueError as exc:
        raise UsageError(f"{where} is not valid JSON ({exc}); fix it first (nothing was "
                         "changed)", details={"file": where}) from exc
    if not isinstance(data, dict):
        raise UsageError(f"{where} does not hold a JSON object; fix it first (nothing was "
                         "changed)", details={"file": where})
    return data


def style_of(text: str) -> Style:
    indent: int | str | None = 2 if not text.strip() else None
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            indent = "\t" if lead.startswith("\t") else len(lead)
            break
    return Style(indent, text.endswith("\n") or not text.strip())


def render(data: JsonObject, style: Style) -> str:
    text = json.dumps(data, indent=style.indent, ensure_ascii=False)
    return text + "\n" if style.newline else text


def _container(doc: JsonObject, path: Path_, where: str, create: bool,
               created: list[Path_] | None = None) -> JsonValue:
    node: JsonValue = doc
    for i, key in enumerate(path):
        if not isinstance(node, dict):
            shown = ".".join(path[:i])
            raise UsageError(f'"{shown}" in {where} is not a JSON object; fix it by hand '
                             "first (nothing was changed)", details={"file": where})
        if key not in node:
            if not create:
                return None
            node[key] = {}
            if created is not None:
                created.append(path[:i + 1])
        node = node[key]
    return node


class Added(NamedTuple):
    doc: JsonObject
    entries: list[Entry]  # what was not there already: ours to take out again
    created: list[Path_]  # objects and lists made for them


def add(doc: JsonObject, entries: list[Entry], where: str) -> Added:
    """`doc` with every entry in it, the entries that were not there already, and the
    containers made for them.

    A key that holds something else than our value is left alone and refused: setup never
    overwrites a choice the user made (UsageError names it).
    """
    out = copy.deepcopy(doc)
    added: list[Entry] = []
    created: list[Path_] = []
    for entry in entries:
        parent_path, key = entry.path[:-1], entry.path[-1]
        parent = _container(out, parent_path, where, create=True, created=created)
        if not isinstance(parent, dict):
            raise UsageError(f'"{".".join(parent_path)}" in {where} is not a JSON object; '
                             "fix it by hand first (nothing was changed)")
        if entry.in_list:
            if key not in parent:
                parent[key] = []
                created.append(entry.path)
            items = parent[key]
            if not isinstance(items, list):
                raise UsageError(f'"{".".join(entry.path)}" in {where} is not a list; fix it '
                                 "by hand first (nothing was changed)")
            if entry.value not in items:
                items.append(entry.value)
                added.append(entry)
            continue
        if key in parent:
            if parent[key] != entry.value:
                raise UsageError(
                    f'{where} already sets "{".".join(entry.path)}" to '
                    f"{json.dumps(parent[key], ensure_ascii=False)}; setup would set "
                    f"{json.dumps(entry.value, ensure_ascii=False)}. Change or remove it by "
                    "hand, then run setup again (nothing was changed)",
                    details={"file": where, "key": list(entry.path)})
            continue
        parent[key] = copy.deepcopy(entry.value)
        added.append(entry)
    return Added(out, added, created)


def remove(doc: JsonObject, entries: list[Entry], created: list[Path_]
           ) -> tuple[JsonObject, list[Entry]]:
    """`doc` without the entries that still hold our value, and those taken out; then the
    containers `add` created, deepest first, when nothing else went into them."""
    out = copy.deepcopy(doc)
    removed: list[Entry] = []
    for entry in entries:
        parent = _container(out, entry.path[:-1], "", create=False)
        key = entry.path[-1]
        if not isinstance(parent, dict) or key not in parent:
            continue
        if entry.in_list:
            items = parent[key]
            if isinstance(items, list) and entry.value in items:
                items.remove(entry.value)
                removed.append(entry)
        elif parent[key] == entry.value:
            del parent[key]
            removed.append(entry)
    for path in sorted(created, key=len, reverse=True):
        parent = _container(out, path[:-1], "", create=False)
        if isinstance(parent, dict) and parent.get(path[-1]) in ({}, []):
            del parent[path[-1]]
    return out, removed

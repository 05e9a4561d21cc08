"""Adding and taking out keys of a JSON settings file without disturbing the rest. Pure.

An `Entry` is one thing setup puts in a file: a value at a key path (`("enabledPlugins",
"codexbridge@codexbridge")`), or a string in a list (`("permissions", "allow")` holding
`"mcp__…"`). `add` returns the new document and which entries it really added (those
already there, with the same value, are not "ours" to take out later); `remove` takes
out exactly the given entries when they still hold our value, and the objects and lists
`add` created for them once they are empty again.

`patch` writes the new document back as a minimal edit of the old text: a small
scanner records where each member and item of the file starts and ends, the old and new
documents are compared structurally, and only the members and items that differ are
spliced — a new one rendered in the file's own style at its depth (indent, `": "`,
inline or one per line, `\u00e9` escapes), a removed one taking its comma with it.
Every other byte (spacing, compact arrays, escapes, key order) stays as the user or
Claude Code wrote it, so adding and then removing the same members gives the file's
bytes back.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections import Counter
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


# --- writing the new document back as a minimal edit of the old text ---------------------

_WS = " \t\n\r"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
# Only run on text json.loads accepted, so a permissive token is enough (Python's json
# also reads NaN and ±Infinity).
_SCALAR = re.compile(r"-?Infinity|NaN|true|false|null|[-+0-9.eE]+")


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _string_end(text: str, i: int) -> int:
    found = _STRING.match(text, i)
    if found is None:
        raise ValueError(f"no JSON string at {i}")
    return found.end()


def _value_end(text: str, i: int) -> int:
    """Where the JSON value starting at `i` ends (iterative: any depth json reads)."""
    if text[i] == '"':
        return _string_end(text, i)
    if text[i] not in "{[":
        found = _SCALAR.match(text, i)
        if found is None:
            raise ValueError(f"no JSON value at {i}")
        return found.end()
    depth = 0
    while True:
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1


class Part(NamedTuple):
    """One member of an object (`key` set; `start` is its key's quote) or one item of a
    list (`key` None; `start` is the value's); the value is text[value:end]."""
    key: str | None
    start: int
    value: int
    end: int


def scan(text: str, start: int) -> tuple[list[Part], int]:
    """The members (or items) of the object (or list) opening at `start`, one level
    deep, and where it ends."""
    parts: list[Part] = []
    is_object = text[start] == "{"
    i = _ws(text, start + 1)
    if text[i] in "}]":
        return parts, i + 1
    while True:
        key = None
        first = i
        if is_object:
            end = _string_end(text, i)
            key = json.loads(text[i:end])
            i = _ws(text, _ws(text, end) + 1)  # past the colon
        end = _value_end(text, i)
        parts.append(Part(key, first, i, end))
        i = _ws(text, end)
        if text[i] in "}]":
            return parts, i + 1
        i = _ws(text, i + 1)  # past the comma


@dataclass(frozen=True)
class Layout:
    """How the file writes what it holds, learnt from the file itself."""
    unit: str | None  # one indent step of one-per-line containers; None: all inline
    colon: str  # between a key and its value: the file's most common (`": "`, `":"`)
    comma: str  # between the items of an inline container (`", "`, `","`)
    ascii: bool  # non-ASCII written as \uXXXX

    @staticmethod
    def of(text: str) -> Layout:
        top = _ws(text, 0)
        colons: Counter[str] = Counter()
        commas: Counter[str] = Counter()
        todo = [top]
        seen = 0
        while todo and seen < 500:  # enough to learn from; a huge file is not read whole
            start = todo.pop()
            seen += 1
            if text[start] not in "{[":
                continue
            parts, _ = scan(text, start)
            for n, part in enumerate(parts):
                if part.key is not None:
                    colons[text[_string_end(text, part.start):part.value]] += 1
                if n + 1 < len(parts) and "\n" not in text[part.end:parts[n + 1].start]:
                    commas[text[part.end:parts[n + 1].start]] += 1
                todo.append(part.value)
        unit: str | None = "  "  # nothing to learn from (`{}`): as json.dumps(indent=2)
        parts, _ = scan(text, top)
        if parts:
            lead = text[top + 1:parts[0].start]
            if "\n" not in lead:
                unit = None
            else:
                child, parent = lead.rsplit("\n", 1)[1], _indent_at(text, top)
                unit = child[len(parent):] if child.startswith(parent) else child
        return Layout(unit, _most(colons, ": "), _most(commas, ", "),
                      text.isascii() and "\\u" in text)

    def render(self, value: JsonValue, indent: str | None) -> str:
        """`value` as this file writes it, its first line at `indent` (None: inline)."""
        if indent is None or self.unit is None:
            return json.dumps(value, ensure_ascii=self.ascii,
                              separators=(self.comma, self.colon))
        step: int | str = len(self.unit) if not self.unit.strip(" ") else self.unit
        text = json.dumps(value, indent=step, ensure_ascii=self.ascii,
                          separators=(",", self.colon))
        return text.replace("\n", "\n" + indent)


def _most(seen: Counter[str], default: str) -> str:
    return seen.most_common(1)[0][0] if seen else default


def _indent_at(text: str, i: int) -> str:
    """The whitespace the line holding index `i` starts with."""
    line = text[text.rfind("\n", 0, i) + 1:i]
    return line[:len(line) - len(line.lstrip(" \t"))]


def _canon(value: JsonValue) -> str:
    # Stricter than ==: 1, 1.0 and true differ, NaN equals itself, key order is ignored.
    return json.dumps(value, sort_keys=True, ensure_ascii=True)


def patch(text: str, new: JsonObject) -> str:
    """`text` (a settings file json.loads reads) changed into `new` by touching only the
    members and items that differ; an empty text is written whole."""
    if not text.strip():
        return json.dumps(new, indent=2, ensure_ascii=False) + "\n"
    old = loads_json(text)
    start = _ws(text, 0)
    end = _value_end(text, start)
    body = _Patcher(text, Layout.of(text)).value(start, end, old, new,
                                                 _indent_at(text, start))
    return text[:start] + body + text[end:]


def _pair(old: list[JsonValue], new: list[JsonValue], olds: range, news: range
          ) -> dict[int, int]:
    """In a stretch of a list that changed, which old item became which new one: the
    order-keeping pairing of containers of the same kind that keeps the most of the old
    items — so a change inside an item edits that item instead of writing it anew."""
    def alike(i: int, k: int) -> float:
        """1 + how much of old[i] is still in new[k] (so any pairing beats none);
        -1: not the same kind."""
        was, now = old[i], new[k]
        if isinstance(was, dict) and isinstance(now, dict):
            kept = sum(1.0 if _canon(v) == _canon(now[key]) else 0.5
                       for key, v in was.items() if key in now)
        elif isinstance(was, list) and isinstance(now, list):
            theirs = {_canon(v) for v in now}
            kept = sum(1.0 for v in was if _canon(v) in theirs)
        else:
            return -1.0
        # kept out of the larger of the two: a small item that shares one value with a
        # big one is not more alike than the big one it came from (measured on
        # [[null], [[], null, false, true]] → [[null, false, true]]: the small one was
        # edited into the big one, and its neighbour's bytes were rewritten)
        size = max(len(was), len(now))
        return 1 + (kept / size if size else 0.0)

    if len(olds) * len(news) > 400:  # a long stretch: the same kinds, in order
        pairs: dict[int, int] = {}
        k = news.start
        for i in olds:
            while k < news.stop and alike(i, k) < 0:
                k += 1
            if k < news.stop:
                pairs[i] = k
                k += 1
        return pairs
    # best[a][b]: the best total for olds[a:] against news[b:]
    n, m = len(olds), len(news)
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for a in range(n - 1, -1, -1):
        for b in range(m - 1, -1, -1):
            score = alike(olds[a], news[b])
            best[a][b] = max(best[a + 1][b], best[a][b + 1],
                             score + best[a + 1][b + 1] if score >= 0 else -1.0)
    pairs = {}
    a = b = 0
    while a < n and b < m:
        score = alike(olds[a], news[b])
        if score >= 0 and best[a][b] == score + best[a + 1][b + 1]:
            pairs[olds[a]] = news[b]
            a, b = a + 1, b + 1
        elif best[a][b] == best[a][b + 1]:
            b += 1  # new[b] is inserted: old[a] may still pair with a later one
        else:
            a += 1
    return pairs


class _Frame(NamedTuple):
    """A container's own whitespace: after its opener, before its closer, between two
    parts, and the indent of a part on its own line (None: an inline container)."""
    lead: str
    trail: str
    comma: str
    indent: str | None


class _Patcher:
    def __init__(self, text: str, layout: Layout) -> None:
        self.text = text
        self.layout = layout

    def value(self, start: int, end: int, old: JsonValue, new: JsonValue,
              indent: str | None) -> str:
        """The new text of the value at text[start:end]; `indent`: its line's (None:
        it sits in an inline container)."""
        if _canon(old) == _canon(new):
            return self.text[start:end]
        if isinstance(old, dict) and isinstance(new, dict):
            return self._object(start, end, old, new)
        if isinstance(old, list) and isinstance(new, list):
            return self._list(start, end, old, new)
        return self.layout.render(new, indent)

    def _frame(self, start: int, end: int, parts: list[Part]) -> _Frame:
        text, layout = self.text, self.layout
        if parts:
            lead, trail = text[start + 1:parts[0].start], text[parts[-1].end:end - 1]
            if len(parts) > 1:
                comma = text[parts[-2].end:parts[-1].start]
            else:
                comma = "," + lead if lead else layout.comma
        elif layout.unit is None:
            lead = trail = ""
            comma = layout.comma
        else:
            base = _indent_at(text, start)
            lead, trail = "\n" + base + layout.unit, "\n" + base
            comma = "," + lead
        indent = comma.rsplit("\n", 1)[1] if "\n" in comma else None
        return _Frame(lead, trail, comma, indent)

    def _object(self, start: int, end: int, old: JsonObject, new: JsonObject) -> str:
        parts, _ = scan(self.text, start)
        frame = self._frame(start, end, parts)
        last = {p.key: n for n, p in enumerate(parts)}  # a repeated key: the last counts
        items: list[tuple[int | None, str]] = []
        for n, part in enumerate(parts):
            key = str(part.key)
            if key not in new:
                continue  # taken out, every copy of it
            body = self.text[part.start:part.end]
            if last[key] == n:
                body = self.text[part.start:part.value] + self.value(
                    part.value, part.end, old[key], new[key], frame.indent)
            items.append((n, body))
        for key, value in new.items():
            if key not in old:
                items.append((None, json.dumps(key, ensure_ascii=self.layout.ascii)
                              + self.layout.colon + self.layout.render(value, frame.indent)))
        return self._join(start, end, parts, frame, items)

    def _list(self, start: int, end: int, old: list[JsonValue], new: list[JsonValue]
              ) -> str:
        parts, _ = scan(self.text, start)
        frame = self._frame(start, end, parts)
        matcher = difflib.SequenceMatcher(None, [_canon(v) for v in old],
                                          [_canon(v) for v in new], autojunk=False)
        items: list[tuple[int | None, str]] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            pairs = dict(zip(range(i1, i2), range(j1, j2), strict=True)) \
                if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1) \
                else _pair(old, new, range(i1, i2), range(j1, j2))
            j = j1
            for i in range(i1, i2):
                if i not in pairs:
                    continue  # taken out
                items += [(None, self.layout.render(v, frame.indent))
                          for v in new[j:pairs[i]]]
                items.append((i, self.value(parts[i].start, parts[i].end, old[i],
                                            new[pairs[i]], frame.indent)))
                j = pairs[i] + 1
            items += [(None, self.layout.render(v, frame.indent)) for v in new[j:j2]]
        return self._join(start, end, parts, frame, items)

    def _join(self, start: int, end: int, parts: list[Part], frame: _Frame,
              items: list[tuple[int | None, str]]) -> str:
        """The container again: each kept part (index into `parts`) followed by the
        separator that followed it in the file, a new part (None) by the container's
        own; its opening and closing whitespace kept. A removed part thus takes its
        comma with it, and one added and removed again leaves the bytes as they were."""
        text = self.text
        opener, closer = text[start], text[end - 1]
        if not items:
            return opener + closer
        out = [opener, frame.lead]
        for pos, (n, body) in enumerate(items):
            out.append(body)
            if pos + 1 < len(items):
                out.append(text[parts[n].end:parts[n + 1].start]
                           if n is not None and n + 1 < len(parts) else frame.comma)
        out += [frame.trail, closer]
        return "".join(out)

"""`jsonedit.patch`: a settings file someone formatted by hand (any indent, inline or one
per line container by container, odd spacing around `:` and `,`, `\\u00e9` escapes) is
changed into a new document by touching only the members and items that differ.

For random documents written in random hand styles, and random adds, removes and
changes at any depth:
* the patched text reads back as exactly the new document;
* every member or item that no change reaches keeps its exact bytes, in order;
* adding members and taking them out again gives the file's bytes back;
* one member taken out removes exactly its own text, one comma and whitespace.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from codexbridge.setup import jsonedit

Path = tuple[Any, ...]

keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6) \
    | st.sampled_from(["env", "permissions", "allow", "é", 'q"uote', "back\\slash"])
scalars = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))


def _unique(items: list[Any]) -> bool:
    canon = [json.dumps(i, sort_keys=True) for i in items]
    return len(set(canon)) == len(canon)


# Lists hold distinct items: with duplicates, which copy an edit touched is a matter of
# choice, and "the untouched one kept its bytes" would not be well defined.
documents: st.SearchStrategy[Any] = st.dictionaries(keys, st.recursive(
    scalars, lambda inner: st.dictionaries(keys, inner, max_size=4)
    | st.lists(inner, max_size=4).filter(_unique), max_leaves=14), max_size=5)


class Hand:
    """Writes a document as a person might, recording where each member/item is."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.unit = rnd.choice(["  ", "    ", "\t", " ", ""])
        self.ascii = rnd.random() < 0.3
        self.spans: dict[Path, tuple[int, int]] = {}
        self.out: list[str] = []
        self.pos = 0

    def put(self, text: str) -> None:
        self.out.append(text)
        self.pos += len(text)

    def text(self, doc: Any) -> str:
        self.put(self.rnd.choice(["", "", "\n", " "]))
        self.value(doc, (), 0, multi=self.rnd.random() < 0.8)
        self.put(self.rnd.choice(["\n", "", "\n\n", "  \n"]))
        return "".join(self.out)

    def value(self, v: Any, path: Path, depth: int, multi: bool) -> None:
        if isinstance(v, dict):
            self.container("{", "}", list(v.items()), path, depth, multi)
        elif isinstance(v, list):
            self.container("[", "]", list(enumerate(v)), path, depth, multi)
        else:
            self.put(json.dumps(v, ensure_ascii=self.ascii or self.rnd.random() < 0.2))

    def container(self, opener: str, closer: str, parts: list[tuple[Any, Any]],
                  path: Path, depth: int, multi: bool) -> None:
        self.put(opener)
        if not parts:
            self.put(closer)
            return
        inner = self.unit * (depth + 1)
        for n, (key, v) in enumerate(parts):
            self.put("\n" + inner if multi else self.rnd.choice(["", " "]))
            start = self.pos
            if opener == "{":
                self.put(json.dumps(key, ensure_ascii=self.ascii))
                self.put(self.rnd.choice([": ", ":", " : ", ":   "]))
            self.value(v, (*path, key), depth + 1, multi and self.rnd.random() < 0.7)
            self.spans[(*path, key)] = (start, self.pos)
            if n + 1 < len(parts):
                self.put(self.rnd.choice([",", ",", " ,"]))
        self.put("\n" + self.unit * depth if multi else self.rnd.choice(["", " "]))
        self.put(closer)


@st.composite
def hand_written(draw: st.DrawFn) -> tuple[Any, str, dict[Path, tuple[int, int]]]:
    doc = draw(documents)
    hand = Hand(draw(st.randoms(use_true_random=False)))
    text = hand.text(doc)
    assert json.loads(text) == doc
    return doc, text, hand.spans


def containers(doc: Any, path: Path = ()) -> list[Path]:
    found = [path] if isinstance(doc, (dict, list)) else []
    children = doc.items() if isinstance(doc, dict) else enumerate(doc) \
        if isinstance(doc, list) else []
    for key, v in children:
        found += containers(v, (*path, key))
    return found


def at(doc: Any, path: Path) -> Any:
    for key in path:
        doc = doc[key]
    return doc


class Edited:
    """A changed copy of a document, and what the changes reach: `touched` (a container
    something was added to, removed from or changed in), `replaced` (a member or item
    removed or given a new value: everything below it goes) and `shifted` lists (an
    item added or taken out: their indices no longer name the original items)."""

    def __init__(self, doc: Any) -> None:
        self.doc = copy.deepcopy(doc)
        self.touched: list[Path] = []
        self.replaced: list[Path] = []
        self.shifted: list[Path] = []

    def __repr__(self) -> str:
        return f"Edited({self.doc!r}, touched={self.touched!r})"

    def untouched(self, spans: dict[Path, tuple[int, int]]) -> list[tuple[int, int]]:
        """The spans of the members and items no change reaches, outermost first, in
        the file's order."""
        def below(p: Path, top: Path, strictly: bool = False) -> bool:
            return p[:len(top)] == top and (len(p) > len(top) or not strictly)

        keep = [p for p in spans
                if not any(below(t, p) for t in self.touched)
                and not any(below(p, r) for r in self.replaced)
                and not any(below(p, w, strictly=True) for w in self.shifted)]
        outer = [p for p in keep if not any(q != p and q == p[:len(q)] for q in keep)]
        return sorted(spans[p] for p in outer)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@st.composite
def edits(draw: st.DrawFn, doc: Any, adds_only: bool = False) -> Edited:
    edited = Edited(doc)
    new = edited.doc
    # An item changed in place beside an inserted copy of what it was reads two ways
    # (which one is new?): inserted containers are none the document had.
    had = {_canon(at(doc, p)) for p in containers(doc)}
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(containers(new)))
        node = at(new, path)
        ops = ["add"] if adds_only else ["add", "remove", "change"]
        op = draw(st.sampled_from(ops if node else ["add"]))
        value = draw(st.recursive(scalars, lambda i: st.dictionaries(keys, i, max_size=2)
                                  | st.lists(i, max_size=2).filter(_unique), max_leaves=4))
        if isinstance(node, list) and op != "remove" \
                and any(_canon(value) == _canon(x) for x in node):
            continue  # lists stay free of duplicates
        if op == "add" and isinstance(node, dict):
            key = draw(keys)
            if key in node:
                continue
            node[key] = value
            edited.touched.append(path)
            continue
        if op == "add":
            if _canon(value) in had:
                continue
            node.insert(draw(st.integers(0, len(node))), value)
            edited.touched.append(path)
            edited.shifted.append(path)
            continue
        key = draw(st.sampled_from(list(node) if isinstance(node, dict)
                                   else list(range(len(node)))))
        if op == "remove":
            del node[key]
            if isinstance(node, list):
                edited.shifted.append(path)
        else:
            node[key] = value
        edited.touched.append(path)
        edited.replaced.append((*path, key))
    # A change inside an item can make it equal to another one: lists stay distinct.
    assume(all(_unique(at(new, p)) for p in containers(new) if isinstance(at(new, p), list)))
    return edited


def contains_in_order(text: str, pieces: list[str]) -> bool:
    pos = 0
    for piece in pieces:
        found = text.find(piece, pos)
        if found < 0:
            return False
        pos = found + len(piece)
    return True


Written = tuple[Any, str, dict[Path, tuple[int, int]]]


@given(st.data(), hand_written())
def test_patch_reads_back_as_the_new_document_and_keeps_untouched_bytes(
        data: st.DataObject, written: Written) -> None:
    doc, text, spans = written
    edited = data.draw(edits(doc))
    patched = jsonedit.patch(text, edited.doc)
    assert json.loads(patched) == edited.doc
    kept = [text[a:b] for a, b in edited.untouched(spans)]
    assert contains_in_order(patched, kept), (text, patched, kept)
    assert patched.startswith(text[:text.index(text.lstrip()[:1])])  # the file's lead
    assert jsonedit.patch(patched, edited.doc) == patched  # nothing left to do


@given(st.data(), hand_written())
def test_added_members_taken_out_again_give_the_bytes_back(
        data: st.DataObject, written: Written) -> None:
    doc, text, _ = written
    edited = data.draw(edits(doc, adds_only=True))
    assert jsonedit.patch(jsonedit.patch(text, edited.doc), doc) == text


@given(st.data(), hand_written())
def test_one_member_out_takes_its_own_text_and_one_comma(
        data: st.DataObject, written: Written) -> None:
    doc, text, spans = written
    members = [p for p in spans if isinstance(at(doc, p[:-1]), dict)]
    if not members:
        return
    path = data.draw(st.sampled_from(members))
    new = copy.deepcopy(doc)
    parent = at(new, path[:-1])
    del parent[path[-1]]
    patched = jsonedit.patch(text, new)
    start, end = spans[path]
    cut = len(text) - len(patched)
    # patched is text with one stretch cut out, and that stretch is the member plus
    # whitespace and the one comma that separated it (none when it was alone)
    fits = [lo for lo in range(start + 1)
            if lo + cut >= end and text[:lo] + text[lo + cut:] == patched]
    around = [text[lo:start] + text[end:lo + cut] for lo in fits]
    assert any(a.strip(" \t\n\r,") == "" and a.count(",") == (1 if parent else 0)
               for a in around), (text, patched, around)

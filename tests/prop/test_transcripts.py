"""Handoff sources: a Claude Code transcript's lines and a Codex thread's items.

A transcript is a file Claude Code (or a crash, or a person) wrote; thread items come
from the app-server's JSON. Either may hold anything: every line or entry is a message,
counted as noise in the stats, or skipped — never a traceback — and what comes out is
text that can be written (UTF-8). The watermark moves so that reading again since it
gives nothing new.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from codexbridge.errors import RpcError
from codexbridge.handoff import claude_source, codex_source
from codexbridge.handoff.delta import CLAUDE, CODEX, PEER, Parsed, Said
from codexbridge.messages.frame import is_framed, words_of

from .strategies import deep_json, json_values, junk_bytes, lone_surrogate_json, nasty_text

lone = st.builds(json.loads, lone_surrogate_json)  # a str holding a lone surrogate
anything = json_values | nasty_text | lone


def encodable(text: object) -> bool:
    if not isinstance(text, str):
        return False
    text.encode("utf-8")
    return True


def check_said(messages: list[Said], roles: tuple[str, ...]) -> None:
    for m in messages:
        assert m.role in roles
        assert encodable(m.text) and m.text == m.text.strip() and m.text
        assert encodable(m.mark)
        assert m.at is None or encodable(m.at)


# --- Claude: transcript lines -----------------------------------------------------------

uuids = st.sampled_from(["u1", "u2", "u3", "u4"]) | anything
block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "image"]) | anything},
    optional={"text": anything, "name": st.sampled_from(sorted(claude_source.EDIT_TOOLS))
              | anything, "input": st.fixed_dictionaries(
                  {}, optional={"file_path": anything, "notebook_path": anything}) | anything})
content = nasty_text | lone | st.lists(block | anything, max_size=4) | anything
message = st.fixed_dictionaries({}, optional={
    "content": content, "model": st.just(claude_source.SYNTHETIC_MODEL) | anything,
    "role": anything}) | anything
claude_record = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "system", "renamed"]) | anything},
    optional={"uuid": uuids, "parentUuid": uuids, "logicalParentUuid": uuids,
              "message": message, "isSidechain": anything, "isMeta": anything,
              "toolUseResult": anything, "timestamp": anything,
              "origin": st.fixed_dictionaries({"msg_id": anything}) | anything})


def _dump(rec: Any, ascii_only: bool) -> bytes:
    # Not ASCII-only, a lone surrogate goes out as its raw three bytes (json.loads of
    # bytes decodes with surrogatepass, so those come back as a lone surrogate too).
    return json.dumps(rec, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


claude_line = (st.builds(_dump, claude_record, st.booleans())
               | st.builds(lambda rec, cut: _dump(rec, True)[:cut], claude_record,
                           st.integers(0, 60))
               | junk_bytes | st.builds(str.encode, deep_json())
               | st.sampled_from([b"", b"  ", b"\r", b"null", b"[]"]))
claude_since = st.none() | st.sampled_from(["u1", "u3", "no-such-uuid"]) | nasty_text

DEEP = ('{"type":"user","uuid":"u1","message":{"content":' + "[" * 50_000 + "]" * 50_000
        + "}}").encode()
UNHASHABLE_TOOL = json.dumps({"type": "assistant", "uuid": "u1", "message": {
    "content": [{"type": "tool_use", "name": ["Edit"], "input": {}}]}}).encode()
LONE = b'{"type":"user","uuid":"u\\udc00","timestamp":"\\ud800","message":{"content":"a\\ud800"}}'
RAW_LONE = (b'{"type":"assistant","uuid":"u1","message":{"content":[{"type":"text",'
            b'"text":"\xed\xa0\x80"}]}}')  # a surrogate's raw bytes (json: surrogatepass)


def check_claude(parsed: Parsed, lines: list[bytes]) -> None:
    check_said(parsed.messages, ("user", CLAUDE))
    assert all(encodable(f) for f in parsed.files)
    assert len(set(parsed.files)) == len(parsed.files)
    assert parsed.mark is None or encodable(parsed.mark)
    stats = parsed.stats
    assert stats.records == sum(1 for ln in lines if ln.strip())
    assert stats.bad_rows <= stats.records and stats.said <= stats.records
    assert len(parsed.messages) <= stats.said
    assert all(encodable(k) for k in stats.kinds)
    stats.verdict(claude_source.ROLES)  # the canary can always judge it


@given(st.lists(claude_line, max_size=10), claude_since)
@example([DEEP], None)  # was RecursionError out of json.loads
@example([UNHASHABLE_TOOL], None)  # was TypeError: unhashable type: 'list'
@example([LONE], None)  # was a text, mark and timestamp no one could write (UTF-8)
@example([RAW_LONE], "u1")
@example([b'{"type":"user","uuid":"a","parentUuid":"b","message":{"content":"x"}}',
          b'{"type":"user","uuid":"b","parentUuid":"a","message":{"content":"y"}}'], None)
def test_any_transcript_parses_and_its_mark_holds(lines: list[bytes],
                                                  since: str | None) -> None:
    lines = [ln.replace(b"\n", b" ") for ln in lines]
    parsed = claude_source.parse(lines, since)
    check_claude(parsed, lines)
    if not parsed.messages:
        assert parsed.mark == since
        return
    assert parsed.mark == parsed.messages[-1].mark
    again = claude_source.parse(lines, parsed.mark)
    assert again.found and again.messages == [] and again.mark == parsed.mark


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]],
                                          list[str]]:
    """A well-formed session: a chain of prompts and replies with tool noise in it and,
    maybe, a branch the human rewound away from. Returns (records, the (role, text,
    uuid) that must cross, in order, the edited files)."""
    records: list[dict[str, Any]] = []
    expected: list[tuple[str, str, str]] = []
    files: list[str] = []
    parent: str | None = None
    n = draw(st.integers(0, 7))
    rewind_at = draw(st.integers(1, n)) if n and draw(st.booleans()) else None
    for i in range(n + 1):
        if i == rewind_at:  # an abandoned branch off the previous record
            branch_parent = parent
            for j in range(draw(st.integers(1, 3))):
                uid = f"b{i}-{j}"
                records.append({"type": "assistant", "uuid": uid, "parentUuid": branch_parent,
                                "message": {"content": [{"type": "text",
                                                         "text": "ABANDONED " + uid}]}})
                branch_parent = uid
        uid = f"m{i}"
        kind = "assistant" if i == n else draw(st.sampled_from(["user", "assistant"]))
        text = draw(nasty_text) + ("." if i == n else "")  # the last always says something
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if kind == "assistant" and draw(st.booleans()):
            path = "/p/" + draw(nasty_text)
            blocks.append({"type": "tool_use", "name": "Edit", "input": {"file_path": path}})
            files += [] if path in files else [path]
        body: Any = text if kind == "user" and draw(st.booleans()) else blocks
        records.append({"type": kind, "uuid": uid, "parentUuid": parent,
                        "timestamp": f"2026-01-01T00:00:{i:02d}Z",
                        "message": {"role": kind, "content": body}})
        parent = uid
        want = text.strip()
        if want and not (kind == "user" and want.startswith(claude_source.WRAPPERS)):
            expected.append(("user" if kind == "user" else CLAUDE, want, uid))
        if draw(st.booleans()):  # a tool's output, in the chain: never crosses
            noise = f"t{i}"
            records.append({"type": "user", "uuid": noise, "parentUuid": parent,
                            "toolUseResult": {"stdout": "TOOL"}, "message": {"content": [
                                {"type": "tool_result", "content": "TOOL OUTPUT"}]}})
            parent = noise
    return records, expected, files


@given(transcripts(), st.booleans(), st.booleans())
def test_a_well_formed_transcript_round_trips_its_words(
        session: tuple[list[dict[str, Any]], list[tuple[str, str, str]], list[str]],
        ascii_only: bool, crlf: bool) -> None:
    records, expected, files = session
    data = (b"\r\n" if crlf else b"\n").join(_dump(r, ascii_only) for r in records) + b"\n"
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o700)
        path = os.path.join(tmp, "session.jsonl")
        with open(path, "wb") as fh:
            fh.write(data)
        read = claude_source.read_transcript(path, "sid", None)
        assert read.problem is None and read.found
        assert [(m.role, m.text, m.mark) for m in read.messages] == expected
        assert read.files == files
        assert read.mark == expected[-1][2]
        for k, (_, _, mark) in enumerate(expected):  # since any mark: exactly the rest
            tail = claude_source.read_transcript(path, "sid", mark)
            assert tail.found and [m.mark for m in tail.messages] == [
                e[2] for e in expected[k + 1:]]
        gone = claude_source.read_transcript(os.path.join(tmp, "nope.jsonl"), "sid", "m0")
        assert gone.problem and gone.messages == [] and gone.mark == "m0"
        assert claude_source.read_transcript(tmp, "sid", None).problem  # a directory


# --- Codex: thread items ----------------------------------------------------------------

item = st.fixed_dictionaries(
    {"type": st.sampled_from(["userMessage", "agentMessage", "fileChange", "reasoning",
                              "commandExecution", "renamed"]) | anything},
    optional={"id": st.sampled_from(["i1", "i2", "i3"]) | anything, "text": anything,
              "content": st.lists(st.fixed_dictionaries(
                  {"type": st.just("text") | anything}, optional={"text": anything})
                  | anything, max_size=3) | anything,
              "changes": st.lists(st.fixed_dictionaries({}, optional={"path": anything})
                                  | anything, max_size=3) | anything,
              "clientId": st.just("h_20260101T000000_abcdef") | anything,
              "completedAtMs": st.none() | st.just(1) | anything})
entry = st.fixed_dictionaries(
    {"item": item | anything},
    optional={"turnId": st.sampled_from(["t1", "t2"]) | anything,
              "completedAtMs": st.none() | st.just(1) | anything}) | anything
codex_since = st.none() | st.sampled_from(["t1:i1", "t2:i3", "no:such"]) | nasty_text


def check_codex(parsed: Parsed, entries: list[Any]) -> None:
    check_said(parsed.messages, ("user", CODEX, PEER))
    assert all(encodable(f) for f in parsed.files)
    assert len(set(parsed.files)) == len(parsed.files)
    assert parsed.mark is None or encodable(parsed.mark)
    assert parsed.stats.records <= len(entries)
    assert len(parsed.messages) <= parsed.stats.said <= parsed.stats.records
    assert all(encodable(k) for k in parsed.stats.kinds)
    parsed.stats.verdict(codex_source.ROLES)


@given(st.lists(entry, max_size=10), codex_since)
@example([{"turnId": "t", "completedAtMs": 1,
           "item": {"type": "fileChange", "id": "i", "changes": 5}}], None)  # was TypeError
@example([{"turnId": "t\ud800", "completedAtMs": 1, "item": {
    "type": "agentMessage", "id": "i", "text": "a\udfff", "completedAtMs": 1}}],
    None)  # was a text and a mark no one could write (UTF-8)
def test_any_thread_items_parse_and_the_mark_holds(entries: list[Any],
                                                   since: str | None) -> None:
    parsed = codex_source.parse(entries, since)
    check_codex(parsed, entries)
    for e in entries:
        mark = codex_source.entry_mark(e) if isinstance(e, dict) else None
        assert mark is None or encodable(mark)
    if parsed.mark is None or parsed.mark == since:
        return
    again = codex_source.parse(entries, parsed.mark)
    assert again.found and again.messages == [] and again.mark == parsed.mark


@st.composite
def threads(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    entries: list[dict[str, Any]] = []
    expected: list[tuple[str, str, str]] = []
    for i in range(draw(st.integers(0, 8))):
        turn, iid = f"t{i // 3}", f"i{i}"
        kind = draw(st.sampled_from(["userMessage", "agentMessage", "reasoning"]))
        text = draw(nasty_text)
        it: dict[str, Any] = {"type": kind, "id": iid}
        if kind == "userMessage":
            it["content"] = [{"type": "text", "text": text}]
        else:
            it["text"] = text
        entries.append({"turnId": turn, "item": it, "completedAtMs": 1})
        role = CODEX if kind == "agentMessage" else (PEER if is_framed(text) else "user")
        said = words_of(text) if role == PEER else text  # a peer's words, not our frame
        if kind != "reasoning" and said.strip():
            expected.append((role, said.strip(), f"{turn}:{iid}"))
    return entries, expected


@given(threads())
def test_well_formed_items_round_trip_their_words(
        thread: tuple[list[dict[str, Any]], list[tuple[str, str, str]]]) -> None:
    entries, expected = thread
    parsed = codex_source.parse(entries, None)
    assert [(m.role, m.text, m.mark) for m in parsed.messages] == expected
    for k, (_, _, mark) in enumerate(expected):
        tail = codex_source.parse(entries, mark)
        assert tail.found and [m.mark for m in tail.messages] == [e[2] for e in expected[k + 1:]]


class PagedRpc:
    """An app-server whose `thread/items/list` answers are whatever it was handed."""

    def __init__(self, pages: list[Any]) -> None:
        self.pages, self.calls = pages, 0

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None) -> Any:
        self.calls += 1
        return self.pages[min(self.calls, len(self.pages)) - 1]


page = st.fixed_dictionaries({}, optional={
    "data": st.lists(entry, max_size=4) | anything,
    "nextCursor": st.just("more") | anything}) | anything


@given(st.lists(page, min_size=1, max_size=4), codex_since, st.integers(1, 5))
@example([None], None, 3)  # was AttributeError: 'NoneType' object has no attribute 'get'
@example([{"data": 7}], None, 3)  # was TypeError: 'int' object is not iterable
@example([{"data": [], "nextCursor": "c"}], None, 3)  # a cursor that never ends
def test_paging_is_bounded_and_junk_answers_are_clear_errors(
        pages: list[Any], since: str | None, max_pages: int) -> None:
    rpc = PagedRpc(pages)
    try:
        got = asyncio.run(codex_source.recent_entries(rpc, "thr", since, max_pages))
    except RpcError as exc:
        assert exc.message and "thr" in exc.message
        return
    assert rpc.calls <= max_pages
    assert all(isinstance(e, dict) for e in got)
    check_codex(codex_source.parse(got, since), got)

"""Mailbox lines and the store: every line is a Mail or a Rejected keeping its bytes.

A line is whatever a writer put in NAME.jsonl — ours, claude-codex-bridge's
`inbox.mjs`, or a person's editor — so the bytes here are arbitrary, written raw.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from codexbridge.inbox import store
from codexbridge.inbox.lines import (
    Mail,
    Rejected,
    encode_line,
    new_mail,
    parse_file,
    parse_line,
    split_lines,
)
from codexbridge.inbox.location import mail_path, rejected_path

from .strategies import deep_json, json_values, lone_surrogate_json, nasty_text

# Lines that look like mail, lines one step off, and plain junk.
mail_objects = st.fixed_dictionaries(
    {"text": nasty_text},
    optional={"id": st.text(max_size=12) | st.integers(), "at": json_values,
              "from": json_values, "to": json_values, "extra": json_values})
mailish_lines = st.builds(lambda o: json.dumps(o, ensure_ascii=False).encode(), mail_objects)
off_lines = st.builds(lambda o, k, v: json.dumps({**o, k: v}).encode(), mail_objects,
                      st.sampled_from(["text", "id"]), json_values)
any_line = (mailish_lines | off_lines | st.binary(max_size=200)
            | st.builds(str.encode, deep_json()) | st.builds(
                lambda t: ('{"text":' + t + "}").encode(), lone_surrogate_json))


def _raw_of(record: dict[str, Any]) -> bytes:
    """The exact line bytes a rejected record keeps."""
    if "line_base64" in record:
        return base64.b64decode(record["line_base64"])
    return str(record["line"]).encode("utf-8")


@given(any_line)
@example(b'{"text":"a\\ud800b"}')  # a lone surrogate: was a Mail no one could deliver
@example(b'{"text":' + b"[" * 100_000 + b"]" * 100_000 + b"}")  # was RecursionError
@example(b"\xff\xfe")
@example(b'{"text":"x","id":true}')
def test_a_line_is_mail_rejected_or_blank(raw: bytes) -> None:
    parsed = parse_line(raw, 7, "box.jsonl")
    if not raw.strip():
        assert parsed is None
        return
    assert isinstance(parsed, (Mail, Rejected))
    if isinstance(parsed, Rejected):
        assert parsed.raw == raw and parsed.reason and parsed.lineno == 7
        record = parsed.to_record("2026-01-01T00:00:00Z")
        assert _raw_of(json.loads(json.dumps(record, ensure_ascii=False))) == raw
        assert isinstance(parsed.preview, str)
        return
    # A readable mail can always be written back and read again as the same mail.
    line = encode_line(parsed)
    assert line.count(b"\n") == 1
    again = parse_line(line.rstrip(b"\n"))
    assert isinstance(again, Mail) and again.text == parsed.text
    assert again.mail_id == parsed.mail_id and again.sender == parsed.sender
    assert parsed.sender  # never empty: UNKNOWN_SENDER stands in


@given(st.lists(any_line | st.sampled_from([b"", b"   ", b"\r"]), max_size=8),
       st.booleans(), st.booleans())
def test_a_file_loses_no_line(lines: list[bytes], crlf: bool, final_newline: bool) -> None:
    lines = [ln.replace(b"\n", b" ") for ln in lines]
    sep = b"\r\n" if crlf else b"\n"
    data = sep.join(lines) + (sep if final_newline and lines else b"")
    split = split_lines(data)
    assert b"\n".join(split) + (b"\n" if data.endswith(b"\n") else b"") == data
    mails, rejected = parse_file(data, "box.jsonl")
    non_blank = [ln for ln in split if ln.strip()]
    assert len(mails) + len(rejected) == len(non_blank)
    assert all(split[r.lineno - 1] == r.raw for r in rejected)


@given(st.binary(max_size=2000))
def test_split_lines_joins_back(data: bytes) -> None:
    split = split_lines(data)
    assert b"\n".join(split) + (b"\n" if data.endswith(b"\n") else b"") == data


# --- the store, round trip -----------------------------------------------------------

pushable = st.lists(st.tuples(nasty_text, st.dictionaries(
    st.text(max_size=6).filter(lambda k: k not in ("id", "at", "from", "to", "text")),
    json_values, max_size=2)), min_size=1, max_size=5)


@given(pushable)
def test_push_take_commit_gives_back_every_mail(items: list[tuple[str, dict[str, Any]]]
                                                ) -> None:
    with tempfile.TemporaryDirectory() as inbox:
        sent = [new_mail(text, to="box", sender="codex", extra=extra) for text, extra in items]
        for mail in sent:
            store.push(inbox, mail)
        with store.take(inbox, "box") as batch:
            assert [m.text for m in batch.mails] == [m.text for m in sent]
            assert [m.mail_id for m in batch.mails] == [m.mail_id for m in sent]
            assert [m.extra for m in batch.mails] == [m.extra for m in sent]
            assert not batch.rejected
            batch.commit()
        with store.take(inbox, "box") as batch:
            assert batch.empty
        assert not os.path.exists(mail_path(inbox, "box"))


@given(st.lists(any_line, min_size=1, max_size=6))
def test_raw_bytes_in_the_mailbox_are_delivered_or_set_aside(lines: list[bytes]) -> None:
    lines = [ln.replace(b"\n", b" ") for ln in lines]
    with tempfile.TemporaryDirectory() as inbox:
        os.chmod(inbox, 0o700)
        with open(mail_path(inbox, "box"), "wb") as fh:
            fh.write(b"\n".join(lines) + b"\n")
        with store.take(inbox, "box") as batch:
            mails, rejected = list(batch.mails), list(batch.rejected)
            batch.commit()
        non_blank = [ln for ln in lines if ln.strip()]
        # (a repeated id is delivered once: the store de-duplicates by id)
        assert len(mails) + len(rejected) + batch.duplicates == len(non_blank)
        kept: list[bytes] = []
        if rejected:
            with open(rejected_path(inbox, "box"), "rb") as fh:
                kept = [_raw_of(json.loads(r)) for r in fh.read().splitlines()]
        assert kept == [r.raw for r in rejected]
        assert not os.path.exists(mail_path(inbox, "box"))

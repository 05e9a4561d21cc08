"""The mail line format: encode, parse, tolerate, reject."""

from __future__ import annotations

import json

from codexbridge.inbox.lines import (
    Mail,
    Rejected,
    encode_line,
    new_mail,
    parse_file,
    parse_line,
)

# Exactly what claude-codex-bridge's `inbox.mjs push` appends (JSON.stringify + "\n").
INTEROP_LINE = (b'{"id":"m4x9k2a1-q7w3e9","at":"2026-05-01T09:30:12.345Z","from":"codex",'
                b'"to":"bridge","text":"\xe9\xa0\x86\xe4\xbe\xbf\xe5\xb9\xab\xe6\x88\x91'
                b'\xe7\x9c\x8b auth"}\n')


def test_roundtrip_keeps_every_field() -> None:
    mail = new_mail("line one\nline two \"quoted\" ünïcode", to="bridge", sender="codex")
    raw = encode_line(mail)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1  # one line, newlines escaped
    parsed = parse_line(raw.rstrip(b"\n"))
    assert parsed == mail


def test_new_mail_has_uuid_and_iso_time() -> None:
    mail = new_mail("x", to="b", sender="codex")
    assert mail.mail_id is not None and len(mail.mail_id) == 36
    assert mail.at is not None and mail.at.endswith("Z") and "T" in mail.at
    assert json.loads(encode_line(mail))["from"] == "codex"


def test_interop_line_is_read() -> None:
    parsed = parse_line(INTEROP_LINE)
    assert isinstance(parsed, Mail)
    assert parsed.mail_id == "m4x9k2a1-q7w3e9"
    assert parsed.sender == "codex" and parsed.to == "bridge"
    assert parsed.at == "2026-05-01T09:30:12.345Z"
    assert parsed.text == "順便幫我看 auth"


def test_extra_fields_kept_and_optional_ones_defaulted() -> None:
    parsed = parse_line(b'{"text":"hi","priority":"high","thread":{"id":1}}')
    assert isinstance(parsed, Mail)
    assert parsed.sender == "unknown" and parsed.mail_id is None and parsed.at is None
    assert parsed.extra == {"priority": "high", "thread": {"id": 1}}
    assert parsed.to_json()["priority"] == "high"


def test_numeric_id_and_odd_types_are_tolerated() -> None:
    parsed = parse_line(b'{"id":42,"text":"t","from":7,"at":1714555812}')
    assert isinstance(parsed, Mail)
    assert parsed.mail_id == "42" and parsed.sender == "7" and parsed.at == "1714555812"


def test_blank_lines_are_not_mail() -> None:
    assert parse_line(b"") is None
    assert parse_line(b"   \r") is None


def test_bad_lines_are_rejected_with_reason() -> None:
    cases = {
        b"not json at all": "not JSON",
        b"[1,2]": "not a JSON object",
        b'"str"': "not a JSON object",
        b'{"from":"codex"}': 'no "text" field',
        b'{"text":5}': '"text" is not a string',
        b'{"text":"x","id":{"a":1}}': '"id" is not a string',
        b'{"text":"x","id":true}': '"id" is not a string',
        b'{"text":"\xff\xfe"}': "not valid UTF-8",
    }
    for raw, why in cases.items():
        parsed = parse_line(raw, lineno=3, source="box.jsonl")
        assert isinstance(parsed, Rejected), raw
        assert why in parsed.reason
        assert parsed.lineno == 3 and parsed.source == "box.jsonl" and parsed.raw == raw


def test_rejected_record_keeps_raw_bytes() -> None:
    bad = parse_line(b'{"text":"\xff"}')
    assert isinstance(bad, Rejected)
    record = bad.to_record("2026-01-01T00:00:00.000Z")
    assert "line_base64" in record  # not UTF-8: the exact bytes survive
    good_text = parse_line(b"oops")
    assert isinstance(good_text, Rejected)
    assert good_text.to_record("t")["line"] == "oops"


def test_parse_file_keeps_order_and_unterminated_last_line() -> None:
    data = (encode_line(new_mail("one", to="b", sender="c")) + b"garbage\n\n"
            + b'{"text":"last"}')
    mails, rejected = parse_file(data, source="f")
    assert [m.text for m in mails] == ["one", "last"]
    assert [(r.lineno, r.source) for r in rejected] == [(2, "f")]

"""One mail line: `{"id", "at", "from", "to", "text", ...}` as JSON on one line.

This is the format claude-codex-bridge writes (`inbox.mjs push`), so its mailboxes can be
read as they are: unknown fields are kept, missing optional ones get sensible values.
Only `text` is required. A line that cannot be read becomes a `Rejected` record — it is
never silently dropped (the store writes it to `<name>.rejected.jsonl`).

Pure: bytes in, objects out.
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple

from ..host.clock import iso_utc
from ..host.jsonfile import loads_json
from ..jsontypes import JsonRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..jsontypes import JsonObject, JsonValue

UNKNOWN_SENDER = "unknown"
KNOWN_FIELDS = ("id", "at", "from", "to", "text")
# How much of a rejected line's text is quoted back to a reader (the full line is kept
# in the rejected file).
PREVIEW_CHARS = 200


# NamedTuples, not dataclasses: importing `dataclasses` costs ~20 ms in every process
# that pushes or delivers mail (the Stop hook, 50 writers at once: bench/bench_inbox.py).


class Mail(NamedTuple):
    """A readable mail line. `mail_id` is None only for lines written without an id."""

    text: str
    sender: str = UNKNOWN_SENDER
    to: str | None = None
    mail_id: str | None = None
    at: str | None = None
    extra: JsonObject = {}  # noqa: RUF012 - never mutated; new_mail passes its own

    def to_json(self) -> JsonObject:
        """The wire object: known fields in their usual order, then any extras."""
        data: JsonObject = {"id": self.mail_id, "at": self.at, "from": self.sender,
                                "to": self.to, "text": self.text}
        for key, value in self.extra.items():
            data.setdefault(key, value)
        return data


class Rejected(NamedTuple):
    """A line that could not be read as mail, and why."""

    reason: str
    raw: bytes
    lineno: int
    source: str = ""

    @property
    def preview(self) -> str:
        text = self.raw.decode("utf-8", errors="replace").strip()
        return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"

    def to_record(self, rejected_at: str) -> JsonObject:
        """The line written to `<name>.rejected.jsonl`; keeps the raw bytes exactly."""
        record: JsonObject = {"at": rejected_at, "reason": self.reason,
                                  "source": self.source, "lineno": self.lineno}
        try:
            record["line"] = self.raw.decode("utf-8")
        except UnicodeDecodeError:
            import base64

            record["line"] = self.raw.decode("utf-8", errors="replace")
            record["line_base64"] = base64.b64encode(self.raw).decode("ascii")
        return record


def uuid4() -> str:
    """A random (version 4) UUID string, without importing `uuid` (~3 ms per process)."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_mail(text: str, *, to: str, sender: str, at: str | None = None,
             mail_id: str | None = None, extra: Mapping[str, JsonValue] | None = None) -> Mail:
    """A fresh mail with a uuid4 id and the current time; `extra` are more fields
    (conversation, request, expect_reply, in_reply_to …) kept on the line."""
    return Mail(text=text, sender=sender, to=to, mail_id=mail_id or uuid4(),
                at=at or iso_utc(), extra=dict(extra or {}))


def encode_line(mail: Mail) -> bytes:
    """One JSON object and a newline. Non-ASCII stays readable; newlines are escaped."""
    return (json.dumps(mail.to_json(), ensure_ascii=False, separators=(",", ":"))
            + "\n").encode("utf-8")


def _optional_str(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


class MailLine(JsonRecord, wire={"mail_id": "id", "sender": "from"},
               read_with={"sender": _optional_str, "to": _optional_str, "at": _optional_str}):
    """A mail line's own fields (`KNOWN_FIELDS` but its text, which `parse_line` checks
    first): the id kept as found (`parse_line` refuses one that is no string), the
    others as text (a number or other JSON as written)."""

    mail_id: JsonValue = None
    sender: str | None = None
    to: str | None = None
    at: str | None = None


def parse_line(raw: bytes, lineno: int = 0, source: str = "") -> Mail | Rejected | None:
    """Read one line. None for a blank line (not mail, nothing to keep)."""
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(f"not valid UTF-8 ({exc.reason} at byte {exc.start})", raw, lineno,
                        source)
    try:
        obj = loads_json(text)
    except ValueError as exc:
        return Rejected(f"not JSON ({exc})", raw, lineno, source)
    if not isinstance(obj, dict):
        return Rejected(f"not a JSON object (got {type(obj).__name__})", raw, lineno, source)
    if "text" not in obj:
        return Rejected('no "text" field', raw, lineno, source)
    body = obj["text"]
    if not isinstance(body, str):
        return Rejected(f'"text" is not a string (got {type(body).__name__})', raw, lineno,
                        source)
    line = MailLine.read(obj)
    raw_id = line.mail_id
    if raw_id is not None and not (isinstance(raw_id, (str, int)) and
                                   not isinstance(raw_id, bool)):
        return Rejected(f'"id" is not a string (got {type(raw_id).__name__})', raw, lineno,
                        source)
    mail_id = str(raw_id) if raw_id is not None and str(raw_id) != "" else None
    extra = {k: v for k, v in obj.items() if k not in KNOWN_FIELDS}
    mail = Mail(text=body, sender=line.sender or UNKNOWN_SENDER, to=line.to, mail_id=mail_id,
                at=line.at, extra=extra)
    if b"\\u" in raw and _lone_surrogate(mail):
        # A `\ud800` escape with no partner (a JS writer cutting an emoji in half) is
        # valid JSON but not text: such a mail could never be written back or handed
        # to Claude, and would stop every later mail in the mailbox.
        return Rejected("a string holds a lone UTF-16 surrogate (\\ud800-\\udfff)", raw,
                        lineno, source)
    return mail


def _lone_surrogate(mail: Mail) -> bool:
    try:
        json.dumps(mail.to_json(), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def split_lines(data: bytes) -> list[bytes]:
    """Lines of a mailbox file; a last line without its newline still counts."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def parse_file(data: bytes, source: str = "") -> tuple[list[Mail], list[Rejected]]:
    """Every mail and every rejected line in a mailbox file's bytes, in file order."""
    mails: list[Mail] = []
    rejected: list[Rejected] = []
    for lineno, raw in enumerate(split_lines(data), start=1):
        parsed = parse_line(raw, lineno, source)
        if isinstance(parsed, Mail):
            mails.append(parsed)
        elif isinstance(parsed, Rejected):
            rejected.append(parsed)
    return mails, rejected

"""Looking into mailboxes without consuming anything: peek, counts, names, rejected lines.

A taken batch whose owner is alive is "in flight" (being delivered right now); one whose
owner died is pending again — the next take recovers it (see `store.py`). Reads of
NAME.jsonl happen under the writers' lock, so a push is never seen half-written.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from ..host.jsonfile import loads_json
from ..host.locking import FileLock
from ..host.mailboxes import name_problem
from .lines import Mail, Rejected, parse_file, split_lines
from .location import (
    MAIL_SUFFIX,
    REJECTED_SUFFIX,
    TAKEN_MARK,
    held,
    lock_path,
    mail_path,
    rejected_path,
    taken_files,
)
from .store import delivered_ids

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..jsontypes import JsonObject


class Peek(NamedTuple):
    """What a mailbox holds right now, without consuming anything."""

    name: str
    mails: list[Mail]
    unreadable: list[Rejected]  # lines that the next take will reject
    rejected_count: int  # lines already in NAME.rejected.jsonl
    in_flight: int  # mails in batches a live taker is delivering right now


def _owner_alive(path: str) -> bool:
    return held(path) is not False  # (gone: someone committed it)


def count_lines(path: str) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    except FileNotFoundError:
        return 0


def peek(inbox: str, name: str) -> Peek:
    """Pending mail (orphaned taken batches first, then NAME.jsonl), without taking it."""
    mails: list[Mail] = []
    unreadable: list[Rejected] = []
    in_flight = 0
    delivered: set[str] | None = None
    for path in taken_files(inbox, name):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            continue
        if _owner_alive(path):
            in_flight += len([line for line in split_lines(data) if line.strip()])
            continue
        found, bad = parse_file(data, source=os.path.basename(path))
        if delivered is None:
            delivered = delivered_ids(inbox, name)
        # A dead taker may have delivered these already; the next take skips them too.
        mails.extend(m for m in found if m.mail_id is None or m.mail_id not in delivered)
        unreadable.extend(bad)
    # Under the writers' lock so a push is never seen half-written.
    path = mail_path(inbox, name)
    data = b""
    if os.path.exists(path):
        with FileLock(lock_path(inbox, name)):
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except FileNotFoundError:
                data = b""
    found, bad = parse_file(data, source=os.path.basename(path))
    mails.extend(found)
    unreadable.extend(bad)
    return Peek(name, mails, unreadable, count_lines(rejected_path(inbox, name)), in_flight)


def read_rejected(inbox: str, name: str) -> list[JsonObject]:
    """The records in NAME.rejected.jsonl (a broken record is shown as-is)."""
    records: list[JsonObject] = []
    try:
        with open(rejected_path(inbox, name), "rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    obj = loads_json(line)
                except ValueError:
                    obj = {"line": line.decode("utf-8", "replace"), "reason": "unreadable"}
                records.append(obj if isinstance(obj, dict) else {"line": obj})
    except FileNotFoundError:
        pass
    return records


class MailboxSummary(NamedTuple):
    name: str
    pending: int
    rejected: int
    in_flight: int
    listener: JsonObject | None


def mailbox_names(inbox: str) -> list[str]:
    """Every name that has mail, rejected lines or taken batches (the engine adds the
    names listened on: `summarize`'s `listeners`)."""
    names: set[str] = set()
    try:
        entries = os.listdir(inbox)
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.endswith(".tmp"):
            continue
        if entry.endswith(REJECTED_SUFFIX):
            names.add(entry[: -len(REJECTED_SUFFIX)])
        elif entry.endswith(MAIL_SUFFIX):
            names.add(entry[: -len(MAIL_SUFFIX)])
        elif TAKEN_MARK in entry:
            names.add(entry.split(TAKEN_MARK, 1)[0])
    return sorted(n for n in names if name_problem(n) is None)


def summarize(inbox: str, listeners: Mapping[str, JsonObject]) -> list[MailboxSummary]:
    """One summary per known mailbox (see `mailbox_names`), sorted by name."""
    out = []
    for name in sorted(set(mailbox_names(inbox)) | set(listeners)):
        pending = count_lines(mail_path(inbox, name))
        in_flight = 0
        for path in taken_files(inbox, name):
            n = count_lines(path)
            if _owner_alive(path):
                in_flight += n
            else:
                pending += n
        out.append(MailboxSummary(name, pending, count_lines(rejected_path(inbox, name)),
                                  in_flight, listeners.get(name)))
    return out



"""Doctor rows for handoff: the parser canaries over each linked session, and deltas
still waiting. Pure: the facts of `handoff/canary.py` in, `Check`s out.

A transcript whose rows parse into nothing recognisable is FAIL (every handoff from it
would be empty); one where part of the conversation no longer parses is WARN; an empty
session is INFO (a fresh project is neutral, never red).
"""

from __future__ import annotations

from typing import Any

from .report import FAIL, INFO, OK, WARN, Check
from .rows import Facts

FIX = ("the session format moved: update codexbridge (its parsers are in "
       "codexbridge/handoff/*_source.py), and report the file's first lines")


def _status(entry: Facts) -> str:
    verdict = entry.get("verdict")
    if verdict == "readable":
        return OK
    if verdict == "empty":
        return INFO
    if verdict == "drifted":
        return FAIL if not entry.get("said") else WARN
    return WARN


def _row(name: str, what: str, entry: Facts) -> Check:
    status = _status(entry)
    where = entry.get("where") or entry.get("transcript") or entry.get("thread_id")
    finding = f"{what} {where}: {entry.get('verdict')} ({entry.get('why')})"
    fix = FIX if entry.get("verdict") == "drifted" else (
        "a handoff from it carries nothing until it is readable again"
        if status == WARN else None)
    return Check(name, status, finding, fix, dict(entry))


def handoff_rows(f: Facts) -> list[Check]:
    """f: `project`, `claude` [{session_id, mailbox, transcript, verdict, why, said, …}],
    `codex` [{thread_id, verdict, …}], `codex_error`, `codex_threads`, `pending`,
    `state_error`."""
    rows: list[Check] = []
    if f.get("state_error"):
        rows.append(Check("handoff-ledger", WARN, str(f["state_error"]),
                          "move the ledger aside (its watermarks are lost) or upgrade",
                          {"state_file": f.get("state_file")}))
    for entry in f.get("claude") or []:
        label = entry.get("mailbox") or str(entry.get("session_id"))[:8]
        rows.append(_row(f"handoff-claude:{label}", "transcript", entry))
    for entry in f.get("codex") or []:
        rows.append(_row(f"handoff-codex:{str(entry.get('thread_id'))[:8]}", "thread", entry))
    if f.get("codex_error"):
        threads: list[Any] = list(f.get("codex_threads") or [])
        rows.append(Check("handoff-codex", INFO,
                          f"{len(threads)} linked thread(s) not checked: {f['codex_error']}",
                          None, {"threads": threads}))
    for p in f.get("pending") or []:
        where = (f"lands when Claude session {p.get('session_id')} is resumed"
                 if p.get("via") == "resume" else f"stage {p.get('stage')}")
        rows.append(Check("handoff-pending", INFO,
                          f"handoff {p.get('id')} to {p.get('target')} via {p.get('via')}: "
                          f"{where}", None, dict(p)))
    if not rows:
        rows.append(Check("handoff", INFO, f"no session linked for handoff in "
                                           f"{f.get('project')} yet", None, {}))
    return rows

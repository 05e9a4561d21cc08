"""The conversation's records: the state home that holds them, the deliveries still on
their way, and handoff's reading of each linked session. Facts, how they are gathered
(files only), and rows.

    state          the state home: where, 0700, not pointing at / ~ ~/.codex ~/.claude
    deliveries     messages still on their way: carried (the courier runs), stuck (it does
                   not: nothing moves until something starts one), and failures the asker
                   may not have heard of (the mail saying so could not be left, or still
                   waits unread)
    handoff-*      the parser canaries over each linked session (handoff/canary.py), and
                   handoffs still waiting. A transcript whose rows parse into nothing
                   recognisable is FAIL (every handoff from it would be empty); one where
                   part of the conversation no longer parses is WARN; an empty session is
                   INFO (a fresh project is neutral, never red)
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..handoff import canary
from ..host.jsonfile import read_object
from ..host.mailboxes import inbox_dir
from ..host.private import HOME_ENV, dir_problem, state_home, unsafe_state_dir
from ..inbox import peek as reading
from ..jsontypes import read_fields
from ..messages import courier_link
from ..messages.records import Damaged, Delivery, DeliveryState, DeliveryStore, ToClaude, ToCodex
from .report import FAIL, INFO, OK, WARN, Check, Status

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

# --- state ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class StateFacts:
    """`problem`: why the home is refused; `refused`: (what, fix) for each directory or
    symlink in it that codexbridge refuses to use (and never repairs itself); `loose`:
    files others can read."""

    home: str
    problem: str | None = None
    exists: bool = False
    loose: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    damaged: tuple[str, ...] = ()  # JSON state files that do not read as an object


def _walk(home: str) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """What a write would refuse (a foreign, loose or symlinked directory, a symlink),
    the loose files, and the JSON state files that cannot be read (a hop budget, a
    listener, a ledger: each is otherwise taken for "not there") — read with lstat
    only, a symlink never followed."""
    refused: list[tuple[str, str]] = []
    loose: list[str] = []
    damaged: list[str] = []
    try:
        found = dir_problem(home, os.stat(home))  # the home itself may be a chosen link
    except OSError as exc:
        return [(f"{home} cannot be read: {exc.strerror}", f"ls -ld {home}")], [], []
    if found:
        refused.append(found)
    for root, dirs, files in os.walk(home):
        for name in [*dirs, *files]:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if name in dirs or stat.S_ISLNK(st.st_mode):
                found = dir_problem(path, st)
                if found:
                    refused.append(found)
                continue
            if st.st_mode & 0o077:
                loose.append(f"{path} ({oct(stat.S_IMODE(st.st_mode))})")
            if name.endswith(".json") and not name.startswith(".") \
                    and read_object(path) is None and len(damaged) < 20:
                damaged.append(path)
        if len(loose) + len(refused) > 20:
            break
    return refused, loose, damaged


def state() -> StateFacts:
    """Read only: nothing is made, chmodded or followed."""
    home = state_home()
    problem = unsafe_state_dir(home, HOME_ENV)
    exists = os.path.isdir(home)
    refused, loose, damaged = _walk(home) if exists and not problem else ([], [], [])
    return StateFacts(home, problem, exists, tuple(loose), tuple(refused), tuple(damaged))


def state_rows(s: StateFacts) -> list[Check]:
    home = s.home
    if s.problem:
        return [Check("state", FAIL, f"refusing the state home: {s.problem}",
                      "set CODEX_BRIDGE_HOME to a directory of its own (default "
                      "~/.codex-bridge)", {"home": home})]
    if not s.exists:
        return [Check("state", OK, f"{home} does not exist yet (created 0700 on first use)",
                      None, {"home": home})]
    if s.refused:
        what = "; ".join(problem for problem, _ in s.refused[:3])
        more = " …" if len(s.refused) > 3 else ""
        return [Check("state", FAIL, f"codexbridge refuses to write there: {what}{more}",
                      "; ".join(fix for _, fix in s.refused[:3]),
                      {"home": home, "refused": [p for p, _ in s.refused]})]
    rows = []
    if s.damaged:
        rows.append(Check("state", WARN, f"{len(s.damaged)} state file(s) under {home} cannot "
                          f"be read and are taken for missing: {', '.join(s.damaged[:3])}"
                          + (" …" if len(s.damaged) > 3 else ""),
                          "move each aside (mv FILE FILE.damaged) or delete it",
                          {"home": home, "damaged": list(s.damaged)}))
    loose = s.loose
    if loose:
        return [*rows, Check("state", WARN, f"{len(loose)} entries under {home} are readable by "
                      f"others: {', '.join(loose[:3])}" + (" …" if len(loose) > 3 else ""),
                      f"chmod -R go-rwx {home}", {"home": home, "loose": list(loose)})]
    return rows or [Check("state", OK, f"{home}: private (0700 / 0600)", None,
                          {"home": home})]


# --- deliveries ---------------------------------------------------------------------------

STUCK_AFTER = 120.0  # s without a courier before an unfinished delivery counts as stuck
UNREAD_AFTER = 600.0  # s a failure notice may wait unread before doctor says so
# s a running Claude session may hold a request of Codex's before doctor asks after it
# (a long task is normal; a request no stop ever answers leaves Codex waiting silently)
UNANSWERED_AFTER = 1800.0


@dataclass(frozen=True, slots=True)
class Failed:
    """A recent failed or orphaned delivery; `notice_waiting`: the mail telling its asker
    still waits unread in the asker's mailbox."""

    record: Delivery
    notice_waiting: bool = False


@dataclass(frozen=True, slots=True)
class DeliveryFacts:
    now: float
    courier: bool
    unfinished: tuple[Delivery, ...] = ()
    failed: tuple[Failed, ...] = ()
    # requests to Claude still `queued` whose mail is no longer in their mailbox: taken
    # in, yet no session was noted as handling them, so no answer goes back by itself
    unheard: tuple[ToClaude, ...] = ()
    damaged: tuple[Damaged, ...] = ()  # record files that cannot be read


def _waiting(names: set[str]) -> dict[str, set[str]]:
    """mailbox → the mail ids and request tokens still waiting in it."""
    out: dict[str, set[str]] = {}
    for name in names:
        try:
            mails = reading.peek(inbox_dir(), name).mails
        except OSError:
            mails = []
        out[name] = ({m.mail_id for m in mails if m.mail_id}
                     | {str(token) for m in mails if (token := m.extra.get("request"))})
    return out


def deliveries() -> DeliveryFacts:
    store = DeliveryStore()
    recent = store.recent(200)
    asks = [r for r in recent if isinstance(r, ToClaude) and r.mailbox
            and r.state is DeliveryState.QUEUED and r.claude_pid is None]
    waiting = _waiting({r.reply_to for r in recent if isinstance(r, ToCodex) and r.reply_to}
                       | {r.mailbox for r in asks})
    bad = (DeliveryState.FAILED, DeliveryState.ORPHANED)
    return DeliveryFacts(
        time.time(), courier_link.running(), tuple(store.unfinished()),
        tuple(Failed(r, isinstance(r, ToCodex) and bool(
            r.reply_mail_id and r.reply_mail_id in waiting.get(r.reply_to or "", set())))
            for r in recent if r.state in bad),
        tuple(r for r in asks if r.id not in waiting.get(r.mailbox, set())),
        tuple(store.damaged()))


def _age(now: float, at: float) -> str:
    secs = max(0, int(now - at))
    return f"{secs} s" if secs < 120 else f"{secs // 60} min"


def _unseen(f: DeliveryFacts, failed: Failed) -> bool:
    r = failed.record
    return isinstance(r, ToCodex) and bool(
        (r.reply_to and not r.reply_mail_id)
        or (failed.notice_waiting and f.now - r.updated_at > UNREAD_AFTER))


def _answer_by_hand(r: Delivery) -> str:
    return (f"`codexbridge talk status {r.id}` shows it; if Claude's answer is there, send "
            f"it yourself: `codexbridge talk send --in-reply-to {r.id} --thread "
            f"{r.thread_id or 'THREAD'} \"…\"` (or ask again)")


def _claude_rows(f: DeliveryFacts) -> list[Check]:
    """Requests of Codex's that Claude has and no answer will follow by itself."""
    rows = []
    unheard = [r for r in f.unheard if f.now - r.updated_at > STUCK_AFTER]
    if unheard:
        ids = ", ".join(f"{r.id} (mailbox {r.mailbox}, {_age(f.now, r.updated_at)})"
                        for r in unheard[:5])
        rows.append(Check("deliveries", WARN, f"{len(unheard)} request(s) from Codex taken "
                          f"in by Claude with no session noted answering them, so no answer "
                          f"goes back by itself: {ids}", _answer_by_hand(unheard[0]),
                          {"unheard": [r.id for r in unheard]}))
    held = [r for r in f.unfinished if isinstance(r, ToClaude)
            and r.claude_pid is not None and r.answered_at is None
            and f.now - r.updated_at > UNANSWERED_AFTER]
    if held:
        ids = ", ".join(f"{r.id} (session {r.session_id or '?'}, "
                        f"{_age(f.now, r.updated_at)})" for r in held[:5])
        rows.append(Check("deliveries", WARN, f"{len(held)} request(s) from Codex held by a "
                          f"running Claude session with no answer yet: {ids}",
                          _answer_by_hand(held[0]), {"unanswered": [r.id for r in held]}))
    return rows


def delivery_rows(f: DeliveryFacts) -> list[Check]:
    now = f.now
    stuck = [r for r in f.unfinished if not f.courier and now - r.updated_at > STUCK_AFTER]
    unseen = [x.record for x in f.failed if _unseen(f, x)]
    rows = _claude_rows(f)
    if f.damaged:
        shown = "; ".join(f"{d.path} ({d.reason})" for d in f.damaged[:3])
        rows.append(Check("deliveries", WARN, f"{len(f.damaged)} delivery record(s) cannot be "
                          f"read, so what they carried is not shown anywhere: {shown}",
                          f.damaged[0].fix, {"damaged": [d.path for d in f.damaged]}))
    if stuck:
        ids = ", ".join(f"{r.id} ({r.state.value}, {_age(now, r.updated_at)})"
                        for r in stuck[:5])
        rows.append(Check("deliveries", WARN, f"{len(stuck)} delivery(ies) stuck with no "
                          f"courier to carry them: {ids}",
                          f"`codexbridge talk status {stuck[0].id}` starts a courier, "
                          "which finds the message in the thread or codex's queue",
                          {"stuck": [r.id for r in stuck]}))
    if unseen:
        ids = ", ".join(f"{r.id} ({r.state.value}: {r.reason or '?'})" for r in unseen[:5])
        rows.append(Check("deliveries", WARN, f"{len(unseen)} failed delivery(ies) whose "
                          f"asker may not know: {ids}",
                          "`codexbridge talk status ID` shows each; the Claude session "
                          "that asked gets the notice at its next stop if it waits unread",
                          {"unseen": [r.id for r in unseen]}))
    if rows:
        return rows
    moving = len(f.unfinished)
    finding = (f"{moving} in flight, carried by the courier" if moving and f.courier
               else f"{moving} in flight" if moving else "nothing in flight")
    if f.failed:
        finding += f"; {len(f.failed)} recent failure(s), each told to its asker"
    return [Check("deliveries", OK, finding)]


# --- handoff --------------------------------------------------------------------------------

HANDOFF_FIX = ("the session format moved: update codexbridge (its parsers are in "
               "codexbridge/handoff/*_source.py), and report the file's first lines")


def handoff_facts(project: str, url: str | None, timeout: float) -> JsonObject:
    """handoff/canary.py `facts` (the parser canaries, docs/handoff.md): plain JSON,
    read here as `HandoffFacts`."""
    return canary.facts(project, url, timeout)


@dataclass(frozen=True, slots=True)
class CanaryEntry:
    """One session the canary read (handoff/canary.py `_facts`): a Claude transcript
    (`session_id`, `mailbox`, `transcript`) or a Codex thread (`thread_id`); `records`
    read, `said` messages recognised, `unknown` record kinds → count; `raw` as handed
    over (a row's details)."""

    session_id: str | None
    mailbox: str | None
    transcript: str | None
    thread_id: str | None
    where: str | None
    verdict: str | None
    why: str | None
    said: int | None
    records: int | None
    unknown: JsonObject
    raw: JsonObject


@dataclass(frozen=True, slots=True)
class PendingHandoff:
    """A handoff still waiting (the ledger's pending entry, as the canary lists it)."""

    id: str | None
    target: str | None
    via: str | None
    stage: str | None
    session_id: str | None
    raw: JsonObject


@dataclass(frozen=True, slots=True)
class HandoffFacts:
    """handoff/canary.py `facts`, typed (`read_fields`); each list read on use."""

    project: str | None
    state_file: str | None
    state_error: str | None
    claude: tuple[JsonObject, ...]
    codex: tuple[JsonObject, ...]
    codex_error: str | None
    codex_threads: tuple[str, ...]
    pending: tuple[JsonObject, ...]

    @staticmethod
    def read(data: Mapping[str, object]) -> HandoffFacts:
        return read_fields(HandoffFacts, data)


def canary_entries(raw: Sequence[Mapping[str, object]]) -> list[CanaryEntry]:
    return [read_fields(CanaryEntry, e) for e in raw]


def _canary_status(entry: CanaryEntry) -> Status:
    verdict = entry.verdict
    if verdict == "readable":
        return OK
    if verdict == "empty":
        return INFO
    if verdict == "drifted":
        return FAIL if not entry.said else WARN
    return WARN


def _canary_row(name: str, what: str, entry: CanaryEntry) -> Check:
    status = _canary_status(entry)
    where = entry.where or entry.transcript or entry.thread_id
    finding = f"{what} {where}: {entry.verdict} ({entry.why})"
    fix = HANDOFF_FIX if entry.verdict == "drifted" else (
        "a handoff from it carries nothing until it is readable again"
        if status == WARN else None)
    return Check(name, status, finding, fix, entry.raw)


def handoff_rows(raw: Mapping[str, object]) -> list[Check]:
    f = HandoffFacts.read(raw)
    rows: list[Check] = []
    if f.state_error:
        rows.append(Check("handoff-ledger", WARN, f.state_error,
                          "move the ledger aside (its watermarks are lost) or upgrade",
                          {"state_file": f.state_file}))
    for entry in canary_entries(f.claude):
        label = entry.mailbox or str(entry.session_id)[:8]
        rows.append(_canary_row(f"handoff-claude:{label}", "transcript", entry))
    for entry in canary_entries(f.codex):
        rows.append(_canary_row(f"handoff-codex:{str(entry.thread_id)[:8]}", "thread",
                                entry))
    if f.codex_error:
        listed = list(f.codex_threads)
        rows.append(Check("handoff-codex", INFO,
                          f"{len(listed)} linked thread(s) not checked: {f.codex_error}",
                          None, {"threads": listed}))
    for p in (read_fields(PendingHandoff, p) for p in f.pending):
        where = (f"lands when Claude session {p.session_id} is resumed"
                 if p.via == "resume" else f"stage {p.stage}")
        rows.append(Check("handoff-pending", INFO,
                          f"handoff {p.id} to {p.target} via {p.via}: {where}", None, p.raw))
    if not rows:
        rows.append(Check("handoff", INFO, f"no session linked for handoff in "
                                           f"{f.project} yet", None, {}))
    return rows

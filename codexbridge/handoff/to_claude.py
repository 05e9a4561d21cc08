"""`handoff --to claude`: the Codex thread's new material into a Claude Code session.

The road is chosen before anything is sent, and recorded (`via`):

    mail     the session runs: one mail in its mailbox, handed over exactly once by its
             Stop hook or watcher (or live, when the mailbox can). The mailbox keeps it
             until then, so the push is the delivery and the marks move with it.
    resume   the session is not running (its recorded CLAUDE_PID is gone) and something
             runs our hook when it starts — codexbridge's Claude Code plugin (what
             `codexbridge setup claude` enables) or a SessionStart hook `install-hook`
             wrote: a pending file that hook consumes by rename when the session is
             resumed. The marks move only when it is consumed; a later handoff to the
             same session takes an unconsumed one back (supersedes it) and carries its
             material again.

What comes back says where the delta is (`Outcome.state`): delivered only when the
session has it (a live push); else queued in a running session's mailbox, parked in a
stopped one's, or waiting for the resume — with the command that brings it in.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

from ..conversation.routing import sending_from_thread
from ..errors import BridgeError, UsageError
from ..inbox import service
from ..inbox.location import inbox_dir
from ..talk.client import Rpc
from ..talk.threads import find_target
from . import codex_source, flow, gather, ledger, resume
from .messages import CLAUDE, CODEX, SourceRead, short, source_key
from .note import Note
from .paths import project_dir, project_key
from .received import Received, received_by
from .sessions import ClaudeSession, session_start_hook, target_session

VIAS = ("auto", "mail", "resume")
SENDER = "codex"


def choose_via(via: str, session: ClaudeSession, project: str) -> tuple[str, str | None]:
    """The road, and a warning when it cannot bring the delta in by itself."""
    if via not in VIAS:
        raise UsageError(f"--via {via!r}: one of {', '.join(VIAS)}")
    if via == "mail" or (via == "auto" and session.running):
        return "mail", None
    if session_start_hook(project, session) is not None:
        return "resume", None
    nothing = (f"nothing runs codexbridge's hook when session {session.session_id} starts "
               f"(the codexbridge plugin is not enabled for {project}, and its settings "
               "have no codexbridge SessionStart hook; `codexbridge setup claude --project "
               f"{project}` enables the plugin)")
    if via == "resume":
        return "resume", nothing + ": the delta waits until a hook consumes it"
    return "mail", nothing + ": the handoff waits as mail for the session's first stop"


def resume_command(session: ClaudeSession, project: str) -> str:
    """What the human runs to bring a stopped session (and what waits for it) back:
    `claude --resume` finds a session by the directory it ran in."""
    where = session.cwd or project
    return f"cd {shlex.quote(where)} && claude --resume {session.session_id}"


def already_received(session: ClaudeSession, inbox: str) -> dict[str, Received]:
    """thread id → what the session has from it already (received.py): its own
    requests and answers, and the replies mailed to it — read or still in its mailbox."""
    waiting: list[str] = []
    if session.mailbox:
        try:
            _, peeked = service.peek(session.mailbox, inbox=inbox)
        except BridgeError:
            peeked = None
        waiting = [m.mail_id for m in peeked.mails if m.mail_id] if peeked else []
    return received_by(session.transcript, session.mailbox, waiting)


def settle_old(old: dict[str, Any], session_id: str, inbox: str) -> str:
    """Did an earlier run's handoff to this session arrive? Takes an unconsumed resume
    delta back (a re-issued handoff supersedes it)."""
    if old.get("stage") == flow.PREPARING:
        return "interrupted before anything was sent"
    hid = str(old.get("id"))
    if old.get("via") == "resume":
        found = resume.settle(session_id, hid)
        if found in ("consumed", "delivering"):
            return "delivered"
        return ("superseded by this handoff before the session was resumed"
                if found == "superseded" else "lost before the session was resumed")
    mailbox = old.get("mailbox")
    if isinstance(mailbox, str):
        try:
            _, peeked = service.peek(mailbox, inbox=inbox)
        except BridgeError:
            peeked = None
        if peeked is not None and any(m.extra.get("handoff") == hid for m in peeked.mails):
            return "delivered"  # in the mailbox: it will arrive
    return "interrupted before it reached the mailbox"


async def handoff_to_claude(rpc: Rpc, *, project: str, note: Note, mailbox: str | None = None,
                            thread: str | None = None, via: str = "auto",
                            inbox: str | None = None, env: Mapping[str, str] | None = None,
                            dry_run: bool = False, handoff_id: str | None = None
                            ) -> flow.Outcome:
    env = os.environ if env is None else env
    project = project_dir(project)
    key = project_key(project)
    inbox = inbox or inbox_dir()
    ledger.load(key, project)  # a bad ledger is refused before anything else
    session = target_session(project, inbox, mailbox)
    road, why = choose_via(via, session, project)
    info = await find_target(rpc, thread or sending_from_thread(env))
    target, src = source_key(CLAUDE, session.session_id), source_key(CODEX, info.id)
    hid = handoff_id or gather.new_id()
    label = f"Codex thread {info.name or short(info.id)}"
    links = {src: {"kind": CODEX, "id": info.id, "name": info.name, "label": label},
             target: {"kind": CLAUDE, "id": session.session_id, "where": session.transcript,
                      "mailbox": session.mailbox,
                      "label": f"Claude Code session {short(session.session_id)}"}}
    settled: list[str] = []
    with ledger.locked(key, project) as state:
        old = state["pending"].get(target)
        if isinstance(old, dict) and not dry_run:
            if flow.busy_elsewhere(old):
                raise flow.refuse_busy(target, old)
            flow.apply_verdict(state, target, old, settle_old(old, session.session_id, inbox),
                               settled)
        marks = (ledger.known_by(state, target) if dry_run
                 else flow.claim(state, target, hid, links))
        snapshot = {**state, "agents": {**state["agents"], **links}}
    try:
        had = already_received(session, inbox)

        async def departing(since: str | None) -> SourceRead:
            return await codex_source.read_thread(rpc, info.id, since, label,
                                                  received=had.get(info.id))

        reads = await gather.read_all(marks, (src, departing),
                                      gather.linked_readers(snapshot, {src, target}, rpc,
                                                            had))
        cap = gather.cap_for(resume.RESUME_CAP if road == "resume" else None)
        prepared = gather.prepare(key, project, snapshot, target, "Claude Code", CODEX,
                                  reads, note, cap, hid)
    except BaseException:
        if not dry_run:
            with ledger.locked(key, project) as state:
                flow.unclaim(state, target, hid)
        raise
    where = {"threadId": info.id, "thread": info.as_dict(), "session": session.as_dict(),
             "mailbox": session.mailbox}
    outcome = flow.Outcome(hid, target, "claude", road, False, prepared, where=where,
                           settled=settled, warnings=[why] if why else [])
    if dry_run or (prepared.new_messages == 0 and note.empty):
        outcome.dry_run, outcome.nothing_new, outcome.via = dry_run, not dry_run, "none"
        if not dry_run:
            with ledger.locked(key, project) as state:
                flow.unclaim(state, target, hid)
        return outcome
    if road == "resume":
        return _pend(key, project, target, session, prepared, outcome)
    return _mail(key, project, target, session, prepared, outcome, inbox)


def _mail(key: str, project: str, target: str, session: ClaudeSession,
          prepared: gather.Prepared, outcome: flow.Outcome, inbox: str) -> flow.Outcome:
    hid = prepared.handoff_id
    record = prepared.pending("mail", mailbox=session.mailbox, session_id=session.session_id)
    with ledger.locked(key, project) as state:
        flow.set_pending(state, target, record)
    try:
        receipt = service.push(prepared.built.delta, to=session.mailbox, sender=SENDER,
                               inbox=inbox, fields={"handoff": hid})
    except BridgeError as exc:  # refused or not written: provably not delivered
        with ledger.locked(key, project) as state:
            ledger.drop(state, target, record, f"not delivered: {exc.message}")
        raise
    with ledger.locked(key, project) as state:
        record["mail_id"] = receipt.mail.mail_id
        ledger.commit(state, target, record, "handoff (mail)")  # the mailbox keeps it
    outcome.where["mailId"] = receipt.mail.mail_id
    if receipt.delivery == "live":
        outcome.arrived()
    elif session.running:
        outcome.state = flow.QUEUED
    else:
        outcome.state = flow.PARKED
        outcome.action = resume_command(session, project)
    if receipt.warning:
        outcome.warnings.append(receipt.warning)
    return outcome


def _pend(key: str, project: str, target: str, session: ClaudeSession,
          prepared: gather.Prepared, outcome: flow.Outcome) -> flow.Outcome:
    record = prepared.pending("resume", session_id=session.session_id,
                              mailbox=session.mailbox)
    record["stage"] = flow.WAITING
    with ledger.locked(key, project) as state:
        flow.set_pending(state, target, record)
    path = resume.write_pending(session.session_id, {
        **record, "key": key, "project": project, "target": target,
        "text": prepared.built.delta})
    outcome.where["pendingFile"] = path
    outcome.state = flow.WAITING_FOR_RESUME
    outcome.action = resume_command(session, project)
    return outcome

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

import shlex
from collections.abc import Mapping

from ..codex.client import Rpc
from ..codex.threads import find_target
from ..errors import BridgeError, UsageError
from ..host.mailboxes import inbox_dir
from ..inbox.lines import Mail
from ..messages import to_claude as service
from ..messages.records import DeliveryState
from ..messages.routing import sending_from_thread
from . import codex_source, flow, ledger, resume
from .claude_source import ClaudeSession, received_by, session_start_hooked, target_session
from .delta import CODEX, Received, SourceRead
from .flow import Handoff, Outcome, Prepared, Waiting
from .ledger import Pending, Stage, Via
from .note import Note

AUTO = "auto"  # --via: mail if the session runs, else resume
VIAS = (AUTO, Via.MAIL.value, Via.RESUME.value)
SENDER = "codex"
MAIL_FIELD = "handoff"  # the mail's extra field naming its handoff (how a later run finds it)


def choose_via(via: str, session: ClaudeSession, project: str) -> tuple[Via, str | None]:
    """The road, and a warning when it cannot bring the delta in by itself."""
    if via not in VIAS:
        raise UsageError(f"--via {via!r}: one of {', '.join(VIAS)}")
    if via == Via.MAIL or (via == AUTO and session.running):
        return Via.MAIL, None
    if session_start_hooked(project, session):
        return Via.RESUME, None
    nothing = (f"nothing runs codexbridge's hook when session {session.session_id} starts "
               f"(the codexbridge plugin is not enabled for {project}, and its settings "
               "have no codexbridge SessionStart hook; `codexbridge setup claude --project "
               f"{project}` enables the plugin)")
    if via == Via.RESUME:
        return Via.RESUME, nothing + ": the delta waits until a hook consumes it"
    return Via.MAIL, nothing + ": the handoff waits as mail for the session's first stop"


def resume_command(session: ClaudeSession, project: str) -> str:
    """What the human runs to bring a stopped session (and what waits for it) back:
    `claude --resume` finds a session by the directory it ran in."""
    where = session.cwd or project
    return f"cd {shlex.quote(where)} && claude --resume {session.session_id}"


def _waiting_mail(mailbox: str, inbox: str) -> list[Mail]:
    """The mail still in `mailbox` (none when it cannot be read)."""
    try:
        _, peeked = service.peek(mailbox, inbox=inbox)
    except BridgeError:
        return []
    return list(peeked.mails) if peeked else []


def already_received(session: ClaudeSession, inbox: str) -> dict[str, Received]:
    """thread id → what the session has from it already (`claude_source.received_by`):
    its own requests and answers, and the replies mailed to it — read or still in its
    mailbox."""
    waiting = ([m.mail_id for m in _waiting_mail(session.mailbox, inbox) if m.mail_id]
               if session.mailbox else [])
    return received_by(session.transcript, session.mailbox, waiting)


def settle_old(old: Pending, session_id: str, inbox: str) -> str | None:
    """Did an earlier run's handoff to this session arrive? None if it did, else why not.
    Takes an unconsumed resume delta back (a re-issued handoff supersedes it)."""
    if old.stage is Stage.PREPARING:
        return "interrupted before anything was sent"
    hid = old.id
    if old.via is Via.RESUME:
        fate = resume.settle(session_id, hid)
        if fate in (resume.Fate.CONSUMED, resume.Fate.DELIVERING):
            return None
        return ("superseded by this handoff before the session was resumed"
                if fate is resume.Fate.SUPERSEDED else "lost before the session was resumed")
    if old.mailbox is not None and any(m.extra.get(MAIL_FIELD) == hid
                                       for m in _waiting_mail(old.mailbox, inbox)):
        return None  # in the mailbox: it will arrive
    return "interrupted before it reached the mailbox"


async def handoff_to_claude(rpc: Rpc, *, project: str, note: Note, mailbox: str | None = None,
                            thread: str | None = None, via: str = AUTO,
                            inbox: str | None = None, env: Mapping[str, str] | None = None,
                            dry_run: bool = False, handoff_id: str | None = None
                            ) -> Outcome:
    project, key, env = flow.start(project, env)
    inbox = inbox or inbox_dir()
    state = ledger.load(key, project)  # a bad ledger is refused before anything else
    session = target_session(project, inbox, mailbox)
    road, why = choose_via(via, session, project)
    info = await find_target(rpc, thread or sending_from_thread(env))
    source = flow.codex_link(info)
    h = Handoff.between(key, project, handoff_id, flow.claude_link(session), source, dry_run)
    old = h.to_settle(state)
    earlier = (old, settle_old(old, session.session_id, inbox)) if old is not None else None
    had = already_received(session, inbox)

    async def departing(since: str | None) -> SourceRead:
        return await codex_source.read_thread(rpc, info.id, since, source.label,
                                              received=had.get(info.id))

    prepared = await h.gather(
        earlier, departing, rpc, names=("Claude Code", CODEX), note=note, received=had,
        cap=flow.cap_for(resume.RESUME_CAP if road is Via.RESUME else None))
    outcome = Outcome(h.hid, h.target, "claude", road, prepared, info, session,
                      settled=h.settled, warnings=[why] if why else [])
    if h.nothing_to_send(outcome, note):
        return outcome
    if road is Via.RESUME:
        return _pend(h, session, prepared, outcome)
    return _mail(h, session, prepared, outcome, inbox)


def _mail(h: Handoff, session: ClaudeSession, prepared: Prepared, outcome: Outcome,
          inbox: str) -> Outcome:
    record = prepared.pending(Via.MAIL, mailbox=session.mailbox,
                              session_id=session.session_id)
    h.set_pending(record)
    try:
        receipt = service.push(prepared.built.delta, to=session.mailbox, sender=SENDER,
                               inbox=inbox, fields={MAIL_FIELD: h.hid})
    except BridgeError as exc:  # refused or not written: provably not delivered
        with ledger.locked(h.key, h.project) as state:
            ledger.drop(state, h.target, record, f"not delivered: {exc.message}")
        raise
    with ledger.locked(h.key, h.project) as state:
        record.mail_id = receipt.mail.mail_id
        ledger.commit(state, h.target, record, "handoff (mail)")  # the mailbox keeps it
    outcome.mail_id = receipt.mail.mail_id
    if receipt.in_flight:  # the watcher can take it between the push and the live try
        outcome.arrived()
    elif session.running:
        outcome.state = DeliveryState.QUEUED
    else:
        outcome.state = Waiting.PARKED
        outcome.action = resume_command(session, h.project)
    if receipt.warning:
        outcome.warnings.append(receipt.warning)
    return outcome


def _pend(h: Handoff, session: ClaudeSession, prepared: Prepared,
          outcome: Outcome) -> Outcome:
    record = prepared.pending(Via.RESUME, session_id=session.session_id,
                              mailbox=session.mailbox)
    record.stage = Stage.WAITING
    h.set_pending(record)
    path = resume.write_pending(session.session_id, resume.Parked(
        h.hid, h.key, h.project, h.target, prepared.built.delta, ledger.as_json(record)))
    outcome.pending_file = path
    outcome.state = Waiting.FOR_RESUME
    outcome.action = resume_command(session, h.project)
    return outcome

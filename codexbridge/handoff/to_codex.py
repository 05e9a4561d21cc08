"""`handoff --to codex`: the Claude session's new material into the live Codex thread.

    the source   the departing Claude session (sessions.source_session) and every other
                 agent linked to the project that the thread has not heard from yet
    the road     thread/inject_items + a short visible turn (deliver.into_thread)
    exactly once the pending record carries the handoff id, which is also the visible
                 turn's clientUserMessageId: a later run asks the thread whether it went
                 in (a userMessage with that clientId, or still in codex's queue).
                 Stage `injected` means the inject was answered, so it arrived even if
                 the visible turn never ran. A run killed before the inject leaves its
                 marks unmoved: the next handoff carries the same material again.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..codex.client import Rpc
from ..codex.protocol.enums import ApprovalPolicy
from ..codex.recover import still_queued, turn_of
from ..codex.threads import find_target
from ..errors import BridgeError, NoSessionError, QueueTimeoutError, RpcError
from ..host.mailboxes import inbox_dir
from ..messages.to_codex import refuse_self_send
from . import claude_source, deliver, ledger
from .claude_source import source_session
from .delta import CLAUDE, SourceRead
from .flow import Handoff, Outcome, Prepared, cap_for, claude_link, codex_link, start
from .ledger import Pending, Stage, Via
from .note import Note


async def settle_old(rpc: Rpc, thread_id: str, old: Pending) -> str | None:
    """Did an earlier run's handoff into `thread_id` arrive? None if it did, else why not."""
    if old.stage is Stage.INJECTED:
        return None
    if old.stage is Stage.PREPARING:
        return "interrupted before anything was sent"
    hid = old.id
    if await turn_of(rpc, thread_id, hid) or await still_queued(rpc, thread_id, None, hid):
        return None
    return "interrupted before it reached the thread"


async def handoff_to_codex(rpc: Rpc, *, project: str, note: Note, thread: str | None = None,
                           from_session: str | None = None, inbox: str | None = None,
                           env: Mapping[str, str] | None = None, wait: bool = False,
                           busy_timeout: float = 300.0, timeout: float = 900.0,
                           approvals: ApprovalPolicy = ApprovalPolicy.TUI,
                           approval_timeout: float = 300.0, dry_run: bool = False,
                           handoff_id: str | None = None) -> Outcome:
    project, key, env = start(project, env)
    inbox = inbox or inbox_dir()
    state = ledger.load(key, project)
    session = source_session(project, inbox, from_session, env, state.agents)
    transcript = session.transcript
    if not transcript:
        raise NoSessionError(f"Claude Code session {session.session_id} has no transcript "
                             "path recorded (its hook predates this codexbridge: let it "
                             "stop once)", details={"session": session.as_dict()})
    info = await find_target(rpc, thread)
    refuse_self_send(info.id, env)
    source = claude_link(session)
    h = Handoff.between(key, project, handoff_id, codex_link(info), source, dry_run)
    old = h.to_settle(state)
    earlier = (old, await settle_old(rpc, info.id, old)) if old is not None else None

    answered = claude_source.answers_into(info.id)  # the thread has them as reply turns

    async def departing(since: str | None) -> SourceRead:
        return claude_source.read_transcript(transcript, session.session_id, since,
                                             source.label, answered)

    prepared = await h.gather(earlier, departing, rpc, names=("Codex", CLAUDE), note=note,
                              cap=cap_for(), answered=answered)
    outcome = Outcome(h.hid, h.target, "codex", Via.INJECT, prepared, info, session,
                      settled=h.settled)
    if h.nothing_to_send(outcome, note):
        return outcome
    return await _deliver(rpc, h, info.id, prepared, note, outcome, wait=wait,
                          busy_timeout=busy_timeout, timeout=timeout, approvals=approvals,
                          approval_timeout=approval_timeout)


async def _deliver(rpc: Rpc, h: Handoff, thread_id: str, prepared: Prepared, note: Note,
                   outcome: Outcome, *, wait: bool, busy_timeout: float, timeout: float,
                   approvals: ApprovalPolicy, approval_timeout: float) -> Outcome:
    h.set_pending(prepared.pending(Via.INJECT, thread_id=thread_id))

    def on_injected() -> None:
        with ledger.locked(h.key, h.project) as state:
            ledger.stage(state, h.target, h.hid, Stage.INJECTED)

    text = deliver.notice("Claude Code", h.hid, prepared.built.messages, prepared.full_path,
                          note.next)
    try:
        into = await deliver.into_thread(rpc, thread_id, prepared.built.delta, text, h.hid,
                                         busy_timeout=busy_timeout, wait=wait,
                                         timeout=timeout, approvals=approvals,
                                         approval_timeout=approval_timeout,
                                         on_injected=on_injected)
    except (QueueTimeoutError, RpcError) as exc:
        # Refused or never sent: provably not delivered (unless the inject got through).
        with ledger.locked(h.key, h.project) as state:
            current = ledger.pending(state, h.target, h.hid)
            if current is not None and current.stage is Stage.INJECTED:
                ledger.commit(state, h.target, current, "handoff (visible turn failed)")
                outcome.arrived()
                outcome.warnings.append(f"the context is in the thread, but the visible "
                                        f"turn failed: {exc.message}")
                return outcome
            if current is not None:
                ledger.drop(state, h.target, current, f"not delivered: {exc.message}")
        raise
    except BridgeError:
        raise  # unsure (a lost connection): the pending record lets the next run decide
    with ledger.locked(h.key, h.project) as state:
        record = (ledger.pending(state, h.target, h.hid)
                  or prepared.pending(Via.INJECT, thread_id=thread_id))
        record.turn_id = into.turn_id
        ledger.commit(state, h.target, record, "handoff")
    outcome.arrived()
    outcome.turn = into
    if not deliver.completed(into.status):
        outcome.warnings.append(f"the context is in the thread; the visible turn ended "
                                f"{into.status}")
    return outcome

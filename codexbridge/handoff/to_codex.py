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

import os
from collections.abc import Mapping
from typing import Any

from ..errors import BridgeError, NoSessionError, QueueTimeoutError, RpcError
from ..inbox.location import inbox_dir
from ..protocol.enums import ApprovalPolicy
from ..talk.client import Rpc
from ..talk.deliveries import refuse_self_send
from ..talk.recover import still_queued, turn_of
from ..talk.threads import find_target
from . import claude_source, deliver, flow, gather, ledger
from .messages import CLAUDE, CODEX, SourceRead, short, source_key
from .note import Note
from .paths import project_dir, project_key
from .sessions import source_session


async def settle_old(rpc: Rpc, thread_id: str, old: dict[str, Any]) -> str:
    """Did an earlier run's handoff into `thread_id` arrive?"""
    stage = old.get("stage")
    if stage == flow.INJECTED:
        return "delivered"
    if stage == flow.PREPARING:
        return "interrupted before anything was sent"
    hid = str(old.get("id"))
    if await turn_of(rpc, thread_id, hid) or await still_queued(rpc, thread_id, None, hid):
        return "delivered"
    return "interrupted before it reached the thread"


async def handoff_to_codex(rpc: Rpc, *, project: str, note: Note, thread: str | None = None,
                           from_session: str | None = None, inbox: str | None = None,
                           env: Mapping[str, str] | None = None, wait: bool = False,
                           busy_timeout: float = 300.0, timeout: float = 900.0,
                           approvals: ApprovalPolicy = ApprovalPolicy.TUI,
                           approval_timeout: float = 300.0, dry_run: bool = False,
                           handoff_id: str | None = None) -> flow.Outcome:
    env = os.environ if env is None else env
    project = project_dir(project)
    key = project_key(project)
    inbox = inbox or inbox_dir()
    state = ledger.load(key, project)
    session = source_session(project, inbox, from_session, env, state["agents"])
    if not session.transcript:
        raise NoSessionError(f"Claude Code session {session.session_id} has no transcript "
                             "path recorded (its hook predates this codexbridge: let it "
                             "stop once)", details={"session": session.as_dict()})
    info = await find_target(rpc, thread)
    refuse_self_send(info.id, env)
    target, src = source_key(CODEX, info.id), source_key(CLAUDE, session.session_id)
    hid = handoff_id or gather.new_id()
    settled: list[str] = []
    old = state["pending"].get(target)
    verdict = None
    if isinstance(old, dict) and not flow.busy_elsewhere(old) and not dry_run:
        verdict = await settle_old(rpc, info.id, old)
    label = f"Claude Code session {short(session.session_id)}"
    links = {src: {"kind": CLAUDE, "id": session.session_id, "where": session.transcript,
                   "mailbox": session.mailbox, "label": label},
             target: {"kind": CODEX, "id": info.id, "name": info.name,
                      "label": f"Codex thread {info.name or short(info.id)}"}}
    with ledger.locked(key, project) as state:
        if verdict is not None and isinstance(old, dict):
            flow.apply_verdict(state, target, old, verdict, settled)
        marks = (ledger.known_by(state, target) if dry_run
                 else flow.claim(state, target, hid, links))
        snapshot = {**state, "agents": {**state["agents"], **links}}
    try:
        transcript = session.transcript

        async def departing(since: str | None) -> SourceRead:
            return claude_source.read_transcript(transcript, session.session_id, since, label)

        reads = await gather.read_all(marks, (src, departing),
                                      gather.linked_readers(snapshot, {src, target}, rpc))
        prepared = gather.prepare(key, project, snapshot, target, "Codex", CLAUDE, reads,
                                  note, gather.cap_for(), hid)
    except BaseException:
        if not dry_run:
            with ledger.locked(key, project) as state:
                flow.unclaim(state, target, hid)
        raise
    where = {"threadId": info.id, "thread": info.as_dict(), "session": session.as_dict()}
    outcome = flow.Outcome(hid, target, "codex", "inject", False, prepared, where=where,
                           settled=settled)
    if dry_run or (prepared.new_messages == 0 and note.empty):
        outcome.dry_run, outcome.nothing_new = dry_run, not dry_run
        outcome.via = "none"
        if not dry_run:
            with ledger.locked(key, project) as state:
                flow.unclaim(state, target, hid)
        return outcome
    return await _deliver(rpc, key, project, info.id, target, prepared, note, outcome,
                          wait=wait, busy_timeout=busy_timeout, timeout=timeout,
                          approvals=approvals, approval_timeout=approval_timeout)


async def _deliver(rpc: Rpc, key: str, project: str, thread_id: str, target: str,
                   prepared: gather.Prepared, note: Note, outcome: flow.Outcome, *,
                   wait: bool, busy_timeout: float, timeout: float,
                   approvals: ApprovalPolicy, approval_timeout: float) -> flow.Outcome:
    hid = prepared.handoff_id
    with ledger.locked(key, project) as state:
        flow.set_pending(state, target, prepared.pending("inject", thread_id=thread_id))

    def on_stage(value: str) -> None:
        if value == "injected":
            with ledger.locked(key, project) as state:
                flow.stage(state, target, hid, flow.INJECTED)

    text = deliver.notice("Claude Code", hid, prepared.built.messages, prepared.full_path,
                          note.next)
    try:
        into = await deliver.into_thread(rpc, thread_id, prepared.built.delta, text, hid,
                                         busy_timeout=busy_timeout, wait=wait,
                                         timeout=timeout, approvals=approvals,
                                         approval_timeout=approval_timeout,
                                         on_stage=on_stage)
    except (QueueTimeoutError, RpcError) as exc:
        # Refused or never sent: provably not delivered (unless the inject got through).
        with ledger.locked(key, project) as state:
            current = state["pending"].get(target) or {}
            if current.get("id") == hid and current.get("stage") == flow.INJECTED:
                ledger.commit(state, target, current, "handoff (visible turn failed)")
                outcome.arrived()
                outcome.warnings.append(f"the context is in the thread, but the visible "
                                        f"turn failed: {exc.message}")
                return outcome
            if current.get("id") == hid:
                ledger.drop(state, target, current, f"not delivered: {exc.message}")
        raise
    except BridgeError:
        raise  # unsure (a lost connection): the pending record lets the next run decide
    with ledger.locked(key, project) as state:
        current = state["pending"].get(target)
        record = current if isinstance(current, dict) and current.get("id") == hid \
            else prepared.pending("inject", thread_id=thread_id)
        record["turn_id"] = into.turn_id
        ledger.commit(state, target, record, "handoff")
    outcome.arrived()
    outcome.turn = {"turnId": into.turn_id, "status": into.status, "reply": into.reply}
    if not deliver.completed(into.status):
        outcome.warnings.append(f"the context is in the thread; the visible turn ended "
                                f"{into.status}")
    return outcome

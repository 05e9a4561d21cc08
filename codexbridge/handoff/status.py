"""`handoff status`: the project's ledger, and where each pending handoff stands.

Reading only — except that a delta a SessionStart hook consumed but could not record
(it died between printing and writing the ledger) is recorded here: its `.consumed`
file proves it arrived, and its watermarks would otherwise never move.
"""

from __future__ import annotations

import os
from typing import Any

from . import ledger, resume
from .paths import pending_path, project_dir, project_key, state_path

HISTORY_SHOWN = 10


def _pending_view(rec: dict[str, Any]) -> dict[str, Any]:
    view = {k: rec.get(k) for k in ("id", "via", "stage", "created", "chars", "messages",
                                    "cut_messages", "delta", "full", "mailbox",
                                    "session_id", "thread_id", "pid")}
    sid = rec.get("session_id")
    if rec.get("via") == "resume" and isinstance(sid, str):
        hid = str(rec.get("id"))
        view["waiting_file"] = (pending_path(sid)
                                if os.path.exists(pending_path(sid)) else None)
        view["consumed"] = os.path.exists(resume.consumed_path(sid, hid))
    return view


def status(project: str) -> dict[str, Any]:
    project = project_dir(project)
    key = project_key(project)
    state = ledger.load(key, project)
    consumed = [t for t, rec in state["pending"].items() if isinstance(rec, dict)
                and rec.get("via") == "resume" and isinstance(rec.get("session_id"), str)
                and os.path.exists(resume.consumed_path(rec["session_id"], str(rec.get("id"))))]
    if consumed:
        with ledger.locked(key, project) as locked_state:
            for target in consumed:
                rec = locked_state["pending"].get(target)
                if isinstance(rec, dict):
                    ledger.commit(locked_state, target, rec, "handoff status (consumed)")
            state = locked_state
    targets = sorted(set(state["knownBy"]) | set(state["pending"]) | set(state["git"]))
    return {
        "ok": True, "project": project, "stateFile": state_path(key),
        "agents": state["agents"],
        "targets": [{"target": t, "knownBy": ledger.known_by(state, t),
                     "checkpoint": ledger.checkpoint(state, t),
                     "pending": _pending_view(state["pending"][t])
                     if isinstance(state["pending"].get(t), dict) else None}
                    for t in targets],
        "history": state["history"][-HISTORY_SHOWN:],
    }


def render(data: dict[str, Any]) -> str:
    """`handoff status` for a person."""
    lines = [f"project {data['project']}  (ledger {data['stateFile']})"]
    agents = data.get("agents") or {}
    if not agents:
        lines.append("no handoff yet in this project")
    for key, agent in sorted(agents.items()):
        lines.append(f"  agent {key}: {agent.get('label') or ''} (seen {agent.get('seen')})")
    for t in data["targets"]:
        lines.append(f"to {t['target']}:")
        for source, mark in sorted(t["knownBy"].items()):
            lines.append(f"  knows {source} up to {mark}")
        if t["checkpoint"]:
            lines.append(f"  git checkpoint {t['checkpoint'][:12]}")
        p = t["pending"]
        if p:
            where = (f", waiting in {p['waiting_file']}" if p.get("waiting_file") else "")
            lines.append(f"  PENDING {p['id']} via {p['via']} ({p['stage']}{where})")
    for h in data["history"][-5:]:
        lines.append(f"  {h.get('id')} → {h.get('target')}: {h.get('state')} via "
                     f"{h.get('via')} ({h.get('messages')} messages, {h.get('chars')} chars)")
    return "\n".join(lines)

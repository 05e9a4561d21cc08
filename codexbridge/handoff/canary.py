"""The parser canaries `doctor` runs: each source's own parse path over the linked
sessions, so a vendor format change turns a row red instead of producing empty deltas
silently (docs/handoff.md, "Canaries").

    Claude   every session hooked in the project (listener records) and every Claude
             session the ledger links: its transcript through `claude_source.parse`
    Codex    every thread the ledger links, through `codex_source.parse` over its
             newest items (one connection to the configured app-server)

Only reads. Returns plain facts (`doctor/records.py` judges them).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ..codex.client import AppServerClient
from ..codex.endpoint import resolve_endpoint
from ..errors import BridgeError
from ..host.mailboxes import inbox_dir
from . import claude_source, codex_source, ledger
from .claude_source import in_project
from .delta import CLAUDE, CODEX, SourceRead, Verdict

if TYPE_CHECKING:
    from ..jsontypes import JsonArray, JsonObject

CANARY_PAGES = 2  # of 100 items: enough to see what the thread's rows look like


def _facts(read: SourceRead, roles: tuple[str, str], started: float) -> JsonObject:
    s = read.stats
    verdict, why = s.verdict(roles)
    if read.problem:
        verdict, why = Verdict.MISSING, read.problem
    unknown: JsonObject = {**s.unknown}
    return {"verdict": verdict.value, "why": why, "where": read.where, "said": s.said,
            "records": s.records, "unknown": unknown, "unreadable": s.unreadable,
            "bad_rows": s.bad_rows, "ms": round((time.monotonic() - started) * 1000, 1)}


def claude_facts(project: str, state: ledger.State, inbox: str) -> JsonArray:
    seen: dict[str, tuple[str | None, str | None]] = {}  # session → mailbox, transcript
    for s in in_project(project, inbox):
        seen[s.session_id] = (s.mailbox, s.transcript)
    for _, agent in ledger.agents_of(state, CLAUDE):
        seen.setdefault(agent.id, (agent.mailbox, agent.where))
    out: JsonArray = []
    for sid, (mailbox, path) in seen.items():
        entry: JsonObject = {"session_id": sid, "mailbox": mailbox, "transcript": path}
        if path is None:
            out.append({**entry, "verdict": Verdict.MISSING.value,
                        "why": "no transcript path recorded"})
            continue
        started = time.monotonic()
        read = claude_source.read_transcript(path, sid, None)
        out.append({**entry, **_facts(read, claude_source.ROLES, started)})
    return out


async def _codex(url: str | None, threads: list[str], timeout: float) -> JsonArray:
    ep = resolve_endpoint(url)
    out: JsonArray = []
    async with AppServerClient(ep.url, token=ep.token, client_name="codexbridge-doctor",
                               request_timeout=timeout) as client:
        for tid in threads:
            started = time.monotonic()
            read = await codex_source.read_thread(client, tid, None, max_pages=CANARY_PAGES)
            out.append({"thread_id": tid, **_facts(read, codex_source.ROLES, started)})
    return out


def facts(project: str, url: str | None = None, timeout: float = 3.0,
          inbox: str | None = None) -> JsonObject:
    project = ledger.project_dir(project)
    key = ledger.project_key(project)
    out: JsonObject = {"project": project, "state_file": ledger.state_path(key),
                       "claude": [], "codex": [], "codex_error": None, "pending": []}
    try:
        state = ledger.load(key, project)
    except BridgeError as exc:
        out["state_error"] = exc.message
        state = ledger.empty(project)
    out["claude"] = claude_facts(project, state, inbox or inbox_dir())
    threads = [a.id for _, a in ledger.agents_of(state, CODEX)]
    if threads:
        try:
            out["codex"] = asyncio.run(asyncio.wait_for(_codex(url, threads, timeout),
                                                        timeout * (1 + len(threads))))
        except (TimeoutError, BridgeError, OSError) as exc:
            out["codex_error"] = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            out["codex_threads"] = [*threads]
    pending: JsonArray = [{"target": t, "id": p.id, "via": p.via and p.via.value,
                           "stage": p.stage and p.stage.value, "created": p.created,
                           "session_id": p.session_id} for t, p in state.pending.items()]
    out["pending"] = pending
    return out

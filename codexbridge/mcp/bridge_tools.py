"""The `bridge_*` tools, which every role has: `bridge_status`, `bridge_output_read`, and
`bridge_handoff` in the role's own direction.

`bridge_handoff`: the departing agent hands the work to the other one and writes the note
itself (what was decided, what was rejected and why, what is next). Role claude (inside
Claude Code) hands to the live Codex thread; role codex (inside Codex) hands to a Claude
Code session — the same service as `codexbridge handoff` (`codexbridge/handoff/`,
docs/handoff.md). The calling thread of a codex-role call is taken from the call's
`_meta` (codex gives its MCP servers no CODEX_THREAD_ID).

What only the tool bodies need (the handoff service, the mailbox service, version
parsing, package metadata) is imported in them, not at start-up.
"""

from __future__ import annotations

import asyncio
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from .. import __version__
from ..errors import BridgeError
from .results import CODES, Data, Outcome, guarded, warning
from .runtime import Runtime, calling_thread

if TYPE_CHECKING:
    from ..codex.protocol.generated.results import InitializeResponse
    from ..handoff.flow import Outcome as HandoffOutcome

PROBE_TIMEOUT = 3.0


class BridgeTools:
    """`bridge_status` and `bridge_output_read`, bound to one server's runtime and the
    names of the tools it serves (`server.py` wires them up)."""

    def __init__(self, rt: Runtime, tools: Sequence[str]) -> None:
        self.rt = rt
        self.tools = list(tools)

    async def bridge_status(self) -> CallToolResult:
        """Show this bridge server's role, versions, the Codex app-server it uses (and
        whether it answers), the Claude mailboxes, and the settings in force."""
        return await guarded("bridge_status", status(self.rt, self.tools))

    async def bridge_output_read(
        self,
        artifactId: Annotated[str, Field(description="The artifact id a tool returned "
                                                     "(artifact.artifactId).")],
        cursor: Annotated[str | None, Field(description=(
            "Where to continue: the nextCursor of the previous page. Leave it out for the "
            "first page."))] = None,
        maxBytes: Annotated[int | None, Field(ge=64, description=(
            "Page size in bytes (default $CODEX_BRIDGE_PAGE_BYTES, 16 KiB; at most "
            "$CODEX_BRIDGE_INLINE_MAX). Pages end on a character boundary."))] = None,
    ) -> CallToolResult:
        """Read a stored large output (an artifact) one page at a time. Pass each page's
        nextCursor to get the next; nextCursor is null on the last page. The pages,
        joined in order, are the output exactly."""
        return await guarded("bridge_output_read",
                             read_output(self.rt, artifactId, cursor, maxBytes))


# -- bridge_status -------------------------------------------------------------------------

def _mcp_version() -> str | None:
    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return None


@dataclass
class AppServerSeen:
    """What `bridge_status` shows of the app-server in force: where, and whether it
    answers the handshake (`codexHome` only when it did)."""

    url: str | None = None
    source: str | None = None
    reachable: bool = False
    error: str | None = None
    user_agent: str | None = None
    codex_version: str | None = None
    codex_home: str | None = None

    def as_dict(self) -> Data:
        data: Data = {"url": self.url, "source": self.source, "reachable": self.reachable,
                      "error": self.error, "userAgent": self.user_agent,
                      "codexVersion": self.codex_version}
        if self.reachable:
            data["codexHome"] = self.codex_home
        return data


async def _probe(rt: Runtime) -> AppServerSeen:
    from ..host.binaries import parse_version  # lazy: the cold MCP start to initialize

    seen = AppServerSeen()
    try:
        ep = rt.endpoint()
        seen.url, seen.source = ep.url, ep.source

        async def handshake() -> InitializeResponse:
            async with rt.connect() as client:
                return client.initialized

        answer = await asyncio.wait_for(handshake(), PROBE_TIMEOUT)
        seen.reachable, seen.user_agent = True, answer.user_agent
        seen.codex_home = answer.codex_home
        # userAgent is `<client>/<codex version> (<os>) …`
        seen.codex_version = parse_version((answer.user_agent or "").split("/", 1)[-1])
    except BridgeError as exc:
        seen.error = exc.message
    except TimeoutError:
        seen.error = f"no answer within {PROBE_TIMEOUT:g} s"
    except OSError as exc:
        seen.error = str(exc)
    return seen


def _deliveries() -> list[Data]:
    """The ten most recent delivery records (talk send / wait=false / expect-reply)."""
    # lazy: the cold MCP start to initialize (bench_mcp) imports no engine
    from ..messages.records import DeliveryStore

    try:
        return [{"id": d.id, "state": d.state.value, "direction": d.direction.value,
                 "thread_id": d.thread_id, "created_at": d.created_at}
                for d in DeliveryStore().recent(10)]
    except OSError as exc:  # a status call never fails on an unreadable state dir
        return [{"error": str(exc)}]


def _mailboxes(rt: Runtime) -> Data:
    # lazy: the cold MCP start to initialize (bench_mcp) imports no engine
    from ..host.mailboxes import default_mailbox
    from ..messages import to_claude as inbox

    directory = rt.inbox()
    out: Data = {"inboxDir": directory, "defaultMailbox": default_mailbox(),
                 "from": os.environ.get(inbox.FROM_ENV) or inbox.DEFAULT_SENDER}
    try:
        _, summaries = inbox.summaries(directory)
        out["mailboxes"] = [{"name": s.name, "pending": s.pending,
                             "listening": s.listener is not None} for s in summaries]
    except BridgeError as exc:
        out["mailboxes"] = []
        out["error"] = exc.message
    return out


async def status(rt: Runtime, tools: list[str]) -> Outcome:
    app = await _probe(rt)
    data: Data = {
        "role": rt.settings.role,
        "tools": tools,
        "versions": {"codexbridge": __version__, "mcp": _mcp_version(),
                     "python": platform.python_version(),
                     "codex": app.codex_version},
        "appServer": app.as_dict(),
        "mailboxes": _mailboxes(rt),
        "settings": rt.settings.as_dict(),
        "deliveries": _deliveries(),
        "artifacts": rt.store.usage(),
        "errorCodes": {code: {"retryable": r, "meaning": m}
                       for code, (r, m) in CODES.items()},
    }
    reach = "reachable" if app.reachable else f"NOT reachable ({app.error})"
    summary = (f"codexbridge {__version__} MCP server, role {rt.settings.role}; "
               f"app-server {app.url or '(none configured)'} {reach}; "
               f"approvals={rt.settings.approvals}")
    return Outcome(data, summary)


# -- bridge_output_read --------------------------------------------------------------------

async def read_output(rt: Runtime, artifact_id: str, cursor: str | None,
                      max_bytes: int | None) -> Outcome:
    limit = min(max_bytes or rt.settings.page_bytes, rt.settings.inline_max)
    page = rt.store.read(artifact_id, cursor, limit)
    art = page.artifact
    data: Data = {"artifactId": art.id, "text": page.text, "offset": page.offset,
                  "bytes": page.nbytes, "totalBytes": art.size,
                  "nextCursor": page.next_cursor, "eof": page.eof,
                  "expiresAt": art.public()["expiresAt"]}
    end = page.offset + page.nbytes
    summary = (f"artifact {art.id}: bytes {page.offset}-{end} of {art.size}"
               + (" (end)" if page.eof else f"; nextCursor={page.next_cursor}")
               + f"\n{page.text}")
    return Outcome(data, summary)


# -- bridge_handoff ------------------------------------------------------------------------

NoteParam = Annotated[str | None, Field(description=(
    "Your note for the agent taking over, in your own words: `Decisions:` (what was "
    "decided — and `Rejected:` what was rejected, and why) and `Next:` (the current "
    "objective and what is still open), on their own lines or inline. Plain text is read "
    "as the next step."))]
DecisionsParam = Annotated[str | None, Field(description=(
    "Decisions, and what was rejected and why (added to the note's Decisions)."))]
NextParam = Annotated[str | None, Field(description=(
    "The next step and what is still open (added to the note's Next)."))]
ProjectParam = Annotated[str | None, Field(description=(
    "The project directory (its handoff ledger and git). Default: this server's working "
    "directory."))]
DryRunParam = Annotated[bool, Field(description=(
    "Build the delta and return it without delivering anything (no watermark moves)."))]


class HandoffToCodex:
    """`bridge_handoff` of role claude."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def bridge_handoff(
        self,
        note: NoteParam = None,
        decisions: DecisionsParam = None,
        nextStep: NextParam = None,
        threadId: Annotated[str | None, Field(description=(
            "The Codex thread to hand to (id or exact name). Leave it out when exactly one "
            "user thread is loaded."))] = None,
        fromSession: Annotated[str | None, Field(description=(
            "Your Claude Code session id. Default: the session running this server, else "
            "the only one hooked in the project."))] = None,
        project: ProjectParam = None,
        dryRun: DryRunParam = False,
    ) -> CallToolResult:
        """Hand the work to the live Codex thread the human watches: what was said in
        this session since Codex last heard (never tool output), your note (decisions,
        next step) and what git shows go into the thread's history, and a short turn
        shows the human that context arrived. Returns once Codex started that turn."""
        body = hand_to_codex(self.rt, note, decisions, nextStep, thread=threadId,
                             from_session=fromSession, project=project, dry_run=dryRun)
        return await guarded("bridge_handoff", body)


class HandoffToClaude:
    """`bridge_handoff` of role codex."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def bridge_handoff(
        self,
        note: NoteParam = None,
        decisions: DecisionsParam = None,
        nextStep: NextParam = None,
        mailbox: Annotated[str | None, Field(description=(
            "The mailbox of the Claude Code session to hand to. Default: the only session "
            "hooked in the project."))] = None,
        threadId: Annotated[str | None, Field(description=(
            "Your Codex thread (the source). Default: the thread making this call."))] = None,
        via: Annotated[str, Field(json_schema_extra={"enum": ["auto", "mail", "resume"]},
                                  description=(
            "mail: the session's Stop hook / watcher brings it in; resume: its "
            "SessionStart hook (the codexbridge plugin's) when it is resumed; auto "
            "(default): mail if it runs, else resume."))] = "auto",
        project: ProjectParam = None,
        dryRun: DryRunParam = False,
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Hand the work to a Claude Code session: what was said in this thread since
        that session last heard (never tool output), your note (decisions, next step)
        and what git shows arrive there as one message — live or at its next stop if
        it runs, else when it is resumed. The result's `state` says which (delivered,
        queued, parked, waiting-for-resume) and `action` what the human should run."""
        body = hand_to_claude(self.rt, note, decisions, nextStep, mailbox=mailbox,
                              thread=threadId or calling_thread(ctx), via=via,
                              project=project, dry_run=dryRun)
        return await guarded("bridge_handoff", body)


async def hand_to_codex(rt: Runtime, note: str | None, decisions: str | None,
                        next_step: str | None, *, thread: str | None,
                        from_session: str | None, project: str | None,
                        dry_run: bool) -> Outcome:
    # lazy: the cold MCP start to initialize (bench_mcp) imports no handoff
    from ..handoff.note import parse_note
    from ..handoff.to_codex import handoff_to_codex

    async with rt.connect() as client:
        result = await handoff_to_codex(
            client, project=project or os.getcwd(),
            note=parse_note(note, decisions, next_step), thread=thread,
            from_session=from_session, inbox=rt.inbox(), approvals=rt.settings.approvals,
            approval_timeout=rt.settings.approval_timeout,
            busy_timeout=rt.settings.queue_wait, dry_run=dry_run)
    return handoff_outcome(result, dry_run)


async def hand_to_claude(rt: Runtime, note: str | None, decisions: str | None,
                         next_step: str | None, *, mailbox: str | None, thread: str | None,
                         via: str, project: str | None, dry_run: bool) -> Outcome:
    # lazy: the cold MCP start to initialize (bench_mcp) imports no handoff
    from ..handoff.note import parse_note
    from ..handoff.to_claude import handoff_to_claude

    async with rt.connect() as client:
        result = await handoff_to_claude(
            client, project=project or os.getcwd(),
            note=parse_note(note, decisions, next_step), mailbox=mailbox, thread=thread,
            via=via, inbox=rt.inbox(), dry_run=dry_run)
    return handoff_outcome(result, dry_run)


def _handoff_summary(result: HandoffOutcome) -> str:
    built = result.prepared.built
    if result.dry_run:
        return f"dry run: delta of {len(built.delta)} characters (nothing delivered)"
    if result.nothing_new:
        return f"nothing new to hand to {result.target}: it has heard everything"
    return (f"handoff {result.handoff_id} to {result.target} via {result.via}: "
            f"{result.state_text()}; {built.messages} message(s), "
            f"{len(built.delta)} characters; every message in full: "
            f"{result.prepared.full_path}")


def handoff_outcome(result: HandoffOutcome, include_delta: bool) -> Outcome:
    data: Data = dict(result.as_dict())
    data.pop("ok", None)
    data["stateText"] = result.state_text()
    if include_delta:
        data["delta"] = result.prepared.built.delta
        data["deltaFile"] = result.prepared.delta_path
    warnings = [warning("HANDOFF", w) for w in result.all_warnings]
    return Outcome(data, _handoff_summary(result), warnings)

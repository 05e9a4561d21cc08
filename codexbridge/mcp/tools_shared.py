"""Tools both roles have: `bridge_status` and `bridge_output_read`.

What only `bridge_status` needs (the mailbox service, version parsing, package
metadata) is imported in its body, not at start-up.
"""

import asyncio
import os
import platform
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from .. import __version__
from ..errors import BridgeError
from .results import CODES
from .runtime import Runtime
from .tooling import READ_ONLY, Outcome, add_tool, guarded

TOOLS = ("bridge_status", "bridge_output_read")
PROBE_TIMEOUT = 3.0


def _mcp_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return None


async def _probe(rt: Runtime) -> dict[str, Any]:
    from ..host.binaries import parse_version

    info: dict[str, Any] = {"url": None, "source": None, "reachable": False, "error": None,
                            "userAgent": None, "codexVersion": None}
    try:
        ep = rt.endpoint()
        info["url"], info["source"] = ep.url, ep.source

        async def handshake() -> dict[str, Any]:
            async with rt.connect() as client:
                return dict(getattr(client, "server_info", {}) or {})

        server_info = await asyncio.wait_for(handshake(), PROBE_TIMEOUT)
        agent = server_info.get("userAgent")
        info["reachable"] = True
        info["userAgent"] = agent
        info["codexHome"] = server_info.get("codexHome")
        # userAgent is `<client>/<codex version> (<os>) …`
        info["codexVersion"] = parse_version((agent or "").split("/", 1)[-1])
    except BridgeError as exc:
        info["error"] = exc.message
    except TimeoutError:
        info["error"] = f"no answer within {PROBE_TIMEOUT:g} s"
    except OSError as exc:
        info["error"] = str(exc)
    return info


def _deliveries() -> list[dict[str, Any]]:
    """The ten most recent delivery records (talk send / wait=false / expect-reply)."""
    from ..conversation.records import DeliveryStore

    try:
        return [{k: r[k] for k in ("id", "state", "direction", "thread_id", "created_at")}
                for r in (d.as_dict() for d in DeliveryStore().recent(10))]
    except OSError as exc:  # a status call never fails on an unreadable state dir
        return [{"error": str(exc)}]


def _mailboxes(rt: Runtime) -> dict[str, Any]:
    from ..inbox import service as inbox
    from ..inbox.names import default_mailbox

    directory = rt.inbox()
    out: dict[str, Any] = {"inboxDir": directory, "defaultMailbox": default_mailbox(),
                           "from": os.environ.get(inbox.FROM_ENV) or inbox.DEFAULT_SENDER}
    try:
        _, summaries = inbox.summaries(directory)
        out["mailboxes"] = [{"name": s.name, "pending": s.pending,
                             "listening": s.listener is not None} for s in summaries]
    except BridgeError as exc:
        out["mailboxes"] = []
        out["error"] = exc.message
    return out


def register(server: MCPServer, rt: Runtime, role_tools: tuple[str, ...]) -> None:
    """Add the shared tools to `server`."""

    async def bridge_status() -> CallToolResult:
        """Show this bridge server's role, versions, the Codex app-server it uses (and
        whether it answers), the Claude mailboxes, and the settings in force."""
        async def body() -> Outcome:
            app = await _probe(rt)
            data = {
                "role": rt.settings.role,
                "tools": [*TOOLS, *role_tools],
                "versions": {"codexbridge": __version__, "mcp": _mcp_version(),
                             "python": platform.python_version(),
                             "codex": app.get("codexVersion")},
                "appServer": app,
                "mailboxes": _mailboxes(rt),
                "settings": rt.settings.as_dict(),
                "deliveries": _deliveries(),
                "artifacts": rt.store.usage(),
                "errorCodes": {code: {"retryable": r, "meaning": m}
                               for code, (r, m) in CODES.items()},
            }
            reach = ("reachable" if app["reachable"]
                     else f"NOT reachable ({app['error']})")
            summary = (f"codexbridge {__version__} MCP server, role {rt.settings.role}; "
                       f"app-server {app['url'] or '(none configured)'} {reach}; "
                       f"approvals={rt.settings.approvals}")
            return Outcome(data, summary)
        return await guarded("bridge_status", body)

    async def bridge_output_read(
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
        async def body() -> Outcome:
            limit = min(maxBytes or rt.settings.page_bytes, rt.settings.inline_max)
            page = rt.store.read(artifactId, cursor, limit)
            art = page.artifact
            data = {"artifactId": art.id, "text": page.text, "offset": page.offset,
                    "bytes": page.nbytes, "totalBytes": art.size,
                    "nextCursor": page.next_cursor, "eof": page.eof,
                    "expiresAt": art.public()["expiresAt"]}
            end = page.offset + page.nbytes
            summary = (f"artifact {art.id}: bytes {page.offset}-{end} of {art.size}"
                       + (" (end)" if page.eof else f"; nextCursor={page.next_cursor}")
                       + f"\n{page.text}")
            return Outcome(data, summary)
        return await guarded("bridge_output_read", body)

    add_tool(server, bridge_status, READ_ONLY)
    add_tool(server, bridge_output_read, READ_ONLY)

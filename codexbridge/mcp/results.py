"""The shape of every tool result; the error codes are the error tree's (`errors.py`).

Success: `structuredContent = {"ok": true, "data": {...}, "warnings": [...]}` and a short
text summary. Failure: a tool error (`isError: true`) whose structured content is
`{"ok": false, "error": {"code", "message", "retryable", "details"}, "warnings": []}`,
with the message as text. The code and `retryable` come from the error's class;
`retryable` is true only when nothing happened yet, so a retry cannot run anything
twice: a turn that has started is never retryable.

Pure: dicts in, dicts out. `tooling.py` wraps them into the SDK's CallToolResult.
"""

from __future__ import annotations

from typing import Any

from ..error_tables import mcp_codes
from ..errors import BridgeError, ConnectionLostError, RequestTimeoutError, RpcError

# code → (retryable, meaning), rendered from the error tree; docs/mcp.md shows it.
CODES: dict[str, tuple[bool, str]] = mcp_codes()


def warning(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def ok_envelope(data: dict[str, Any], warnings: list[dict[str, str]] | None = None
                ) -> dict[str, Any]:
    return {"ok": True, "data": data, "warnings": list(warnings or [])}


def turn_started(exc: BridgeError) -> BridgeError:
    """Mark `exc` as raised after `turn/start` went out (the turn may be running)."""
    exc.details["turnStarted"] = True
    return exc


def error_envelope(exc: BridgeError, warnings: list[dict[str, str]] | None = None
                   ) -> dict[str, Any]:
    """The structured content of a failed tool call.

    After `turn/start` went out (`details.turnStarted`) nothing is retryable, whatever
    the error, and a connection that broke (or went silent) is reported as
    CODEX_CONNECTION_LOST — the turn may be running.
    """
    code, retryable = exc.mcp_code, exc.retryable
    details = dict(exc.details)
    if details.get("turnStarted") is True:
        retryable = False
        if isinstance(exc, (ConnectionLostError, RequestTimeoutError)) or type(exc) is RpcError:
            code = ConnectionLostError.mcp_code
    return {"ok": False,
            "error": {"code": code, "message": exc.message, "retryable": retryable,
                      "details": details},
            "warnings": list(warnings or [])}

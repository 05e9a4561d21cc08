"""The shape of every tool result, and the documented list of error codes.

Success: `structuredContent = {"ok": true, "data": {...}, "warnings": [...]}` and a short
text summary. Failure: a tool error (`isError: true`) whose structured content is
`{"ok": false, "error": {"code", "message", "retryable", "details"}, "warnings": []}`,
with the message as text. `retryable` is true only when nothing happened yet, so a
retry cannot run anything twice: a turn that has started is never retryable.

Pure: dicts in, dicts out. `server.py` wraps them into the SDK's CallToolResult.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import errors as E

# code → (retryable, meaning). docs/mcp.md is written from this table.
CODES: dict[str, tuple[bool, str]] = {
    "NO_LIVE_THREAD": (True, "no user thread is loaded, or threadId matched none "
                             "(details.candidates lists the user threads)"),
    "AMBIGUOUS_THREAD": (False, "several threads fit; pass threadId "
                                "(details.candidates lists them)"),
    "NO_ROLLOUT": (True, "the thread has no first turn yet: send one message in the "
                         "Codex TUI first"),
    "THREAD_QUEUE_TIMEOUT": (True, "waited CODEX_BRIDGE_QUEUE_WAIT behind another turn on the "
                                   "same thread; nothing was sent"),
    "TURN_START_FAILED": (True, "the app-server refused to start the turn; nothing ran"),
    "TURN_TIMEOUT": (False, "the turn started but did not finish within timeoutMs; it may "
                            "still be running in the TUI (details.turnId)"),
    "TURN_FAILED": (False, "the turn ended with status failed (details.error)"),
    "TURN_INTERRUPTED": (False, "the turn was interrupted (cancelled in the TUI, or an "
                                "approval was cancelled)"),
    "CODEX_CONNECT_FAILED": (False, "no app-server to talk to: start `codexbridge serve` "
                                    "(or set CODEX_BRIDGE_URL)"),
    "CODEX_CONNECTION_LOST": (False, "the app-server connection broke mid-operation; "
                                     "details.turnStarted says whether a turn may be running"),
    "SERVER_OVERLOADED": (True, "the app-server answered -32001 (overloaded); nothing ran"),
    "THREAD_READ_FAILED": (False, "the app-server could not list or read the thread"),
    "NO_MAILBOX": (False, "no Claude session listens on that mailbox name "
                          "(details.mailboxes, details.didYouMean)"),
    "MAILBOX_READ_FAILED": (False, "the mailbox files could not be read"),
    "MAILBOX_WRITE_FAILED": (False, "the mailbox files could not be written; the mail was "
                                    "not stored"),
    "INVALID_ARGUMENT": (False, "a parameter is missing, malformed or out of range "
                                "(approvals=accept is refused over MCP)"),
    "INVALID_CURSOR": (False, "the cursor is malformed, forged, or belongs to another "
                              "artifact"),
    "ARTIFACT_NOT_FOUND": (False, "no such artifact for this role: never existed, expired "
                                  "(CODEX_BRIDGE_ARTIFACT_TTL), evicted, or made by the "
                                  "other role"),
    "UNKNOWN_TOOL": (False, "no tool of that name on this role's server"),
    "INTERNAL_ERROR": (False, "a bug in codexbridge; details.type names the exception"),
}


def warning(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


@dataclass
class ToolFailure(Exception):
    """Raised inside a tool; becomes an isError result with the code's retryable flag."""

    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    retryable: bool | None = None  # None: the code's default

    def __post_init__(self) -> None:
        super().__init__(self.message)
        if self.code not in CODES:
            raise ValueError(f"undocumented error code {self.code!r}")

    def envelope(self, warnings: list[dict[str, str]] | None = None) -> dict[str, Any]:
        retryable = CODES[self.code][0] if self.retryable is None else self.retryable
        return {"ok": False,
                "error": {"code": self.code, "message": self.message, "retryable": retryable,
                          "details": self.details},
                "warnings": list(warnings or [])}


def ok_envelope(data: dict[str, Any], warnings: list[dict[str, str]] | None = None
                ) -> dict[str, Any]:
    return {"ok": True, "data": data, "warnings": list(warnings or [])}


def from_bridge_error(exc: E.BridgeError, *, turn_started: bool = False,
                      rpc_code: str = "THREAD_READ_FAILED") -> ToolFailure:
    """The tool error for one of codexbridge's own errors.

    `turn_started` is whether a `turn/start` request went out: from then on nothing is
    retryable, whatever the error. `rpc_code` is the code for a plain JSON-RPC error
    answer in this context (a refused read, or a refused turn/start).
    """
    details = dict(exc.details)
    code: str
    if isinstance(exc, E.AmbiguousThreadError):
        code = "AMBIGUOUS_THREAD"
    elif isinstance(exc, E.NoRolloutError):
        code = "NO_ROLLOUT"
    elif isinstance(exc, (E.NoThreadError, E.ThreadNotLoadedError, E.TargetError)):
        code = "NO_LIVE_THREAD"
    elif isinstance(exc, E.ConnectionLostError) or (
            turn_started and isinstance(exc, E.RequestTimeoutError)):
        code = "CODEX_CONNECTION_LOST"
    elif isinstance(exc, E.ConnectError):
        code = "CODEX_CONNECT_FAILED"
    elif isinstance(exc, E.ServerOverloadedError):
        code = "SERVER_OVERLOADED"
    elif isinstance(exc, E.TurnTimeoutError):
        code = "TURN_TIMEOUT"
    elif isinstance(exc, E.TurnInterruptedError):
        code = "TURN_INTERRUPTED"
    elif isinstance(exc, E.TurnFailedError):
        code = "TURN_FAILED"
    elif isinstance(exc, (E.MailboxNameError, E.UsageError)):
        code = "INVALID_ARGUMENT"
    elif isinstance(exc, E.MailboxError):
        code = "MAILBOX_WRITE_FAILED"
    elif isinstance(exc, (E.RpcError, E.RequestTimeoutError)):
        code = rpc_code if not turn_started else "CODEX_CONNECTION_LOST"
    else:
        code = "INTERNAL_ERROR"
    failure = ToolFailure(code, exc.message, details)
    if turn_started:
        failure.retryable = False
        failure.details.setdefault("turnStarted", True)
    return failure

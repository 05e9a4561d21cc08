"""Every failure codexbridge reports, in one tree.

    BridgeError                     root; `exit_code` is what the CLI exits with
    ├── UsageError                  bad argument or setting (exit 2)
    │   └── MailboxNameError        a mailbox name outside [A-Za-z0-9._-]{1,64}
    ├── BinaryNotFoundError         codex / claude binary not installed (exit 10)
    ├── ServeError                  app-server would not start or died (exit 11)
    ├── ConnectError                nothing listening at the URL (exit 5)
    ├── ConnectionLostError         socket closed while a request waited (exit 5)
    ├── RequestTimeoutError         a request got no answer in time (exit 6)
    ├── RpcError                    the server answered with a JSON-RPC error
    │   ├── NoRolloutError          thread/resume before its first turn started (exit 3)
    │   ├── ThreadNotLoadedError    the thread id is not loaded (exit 3)
    │   └── ServerOverloadedError   -32001, retry later
    ├── TargetError                 which thread to talk to
    │   ├── NoThreadError           no user thread, or the id/name matched none (exit 3)
    │   └── AmbiguousThreadError    several candidates; `.candidates` lists them (exit 4)
    ├── TurnError                   the turn ran but did not complete
    │   ├── TurnFailedError         turn.status == failed (exit 1)
    │   ├── TurnInterruptedError    turn.status == interrupted (exit 7)
    │   └── TurnTimeoutError        no turn/completed before --timeout (exit 6)
    ├── MailboxError                the reverse channel's mail store (exit 8)
    └── SchemaViolation             a message we built breaks schemas/ — a codexbridge bug (exit 70)

Wire errors are mapped by message text, not code: codex 0.169.0 answers every error
with -32600 (see ../shared/reference/codex-app-server.md §4).
"""

from __future__ import annotations

from typing import Any


class BridgeError(Exception):
    """Root of every error codexbridge raises on purpose."""

    exit_code = 1
    code = "bridge_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}


class UsageError(BridgeError):
    exit_code = 2
    code = "usage"


class MailboxNameError(UsageError):
    code = "invalid_mailbox_name"


class BinaryNotFoundError(BridgeError):
    exit_code = 10
    code = "binary_not_found"


class ServeError(BridgeError):
    exit_code = 11
    code = "serve_failed"


class ConnectError(BridgeError):
    exit_code = 5
    code = "cannot_connect"


class ConnectionLostError(ConnectError):
    code = "connection_lost"


class RequestTimeoutError(BridgeError):
    exit_code = 6
    code = "request_timeout"


class RpcError(BridgeError):
    """A JSON-RPC error answer. `from_wire` picks the subclass by message text."""

    code = "rpc_error"

    def __init__(self, rpc_code: int, message: str, data: Any = None) -> None:
        super().__init__(message, details={"rpc_code": rpc_code, "data": data})
        self.rpc_code = rpc_code
        self.data = data

    @staticmethod
    def from_wire(error: Any) -> RpcError:
        if not isinstance(error, dict):
            return RpcError(-32603, f"malformed error object: {error!r}")
        rpc_code = error.get("code")
        message = str(error.get("message", ""))
        data = error.get("data")
        code = rpc_code if isinstance(rpc_code, int) else -32603
        if "no rollout found" in message:
            return NoRolloutError(code, message, data)
        if message.startswith("thread not loaded"):
            return ThreadNotLoadedError(code, message, data)
        if code == -32001 or "overloaded" in message.lower():
            return ServerOverloadedError(code, message, data)
        return RpcError(code, message, data)


class NoRolloutError(RpcError):
    exit_code = 3
    code = "no_rollout"


class ThreadNotLoadedError(RpcError):
    exit_code = 3
    code = "thread_not_loaded"


class ServerOverloadedError(RpcError):
    code = "server_overloaded"


class TargetError(BridgeError):
    exit_code = 3
    code = "no_live_thread"


class NoThreadError(TargetError):
    code = "no_live_thread"


class AmbiguousThreadError(TargetError):
    exit_code = 4
    code = "ambiguous_thread"

    def __init__(self, message: str, candidates: list[dict[str, Any]]) -> None:
        super().__init__(message, details={"candidates": candidates})
        self.candidates = candidates


class TurnError(BridgeError):
    code = "turn_error"

    def __init__(self, message: str, *, thread_id: str, turn_id: str | None,
                 partial_reply: str = "", error: Any = None) -> None:
        super().__init__(message, details={"thread_id": thread_id, "turn_id": turn_id,
                                           "error": error})
        self.thread_id = thread_id
        self.turn_id = turn_id
        self.partial_reply = partial_reply


class TurnFailedError(TurnError):
    exit_code = 1
    code = "turn_failed"


class TurnInterruptedError(TurnError):
    exit_code = 7
    code = "turn_interrupted"


class TurnTimeoutError(TurnError):
    exit_code = 6
    code = "turn_timeout"


class MailboxError(BridgeError):
    exit_code = 8
    code = "mailbox_error"


class SchemaViolation(BridgeError):
    """Something codexbridge built for the wire does not match the codex schema.

    Raised by `codexbridge.protocol.schema` (the test suite's guard on every outgoing
    message). Never the user's fault: it means our request or answer has drifted from
    what codex 0.169.0 accepts, which codex may reject or — for answers — hang on.
    `.errors` lists `(path, message)` pairs, the path in `$.a.b[0]` form.
    """

    exit_code = 70  # EX_SOFTWARE: an internal error, not a usage error
    code = "schema_violation"

    def __init__(self, what: str, errors: list[tuple[str, str]]) -> None:
        lines = "\n".join(f"  at {path}: {message}" for path, message in errors)
        super().__init__(f"{what} does not match the codex schema:\n{lines}",
                         details={"what": what,
                                  "errors": [{"path": p, "message": m} for p, m in errors]})
        self.what = what
        self.errors = errors
        self.path = errors[0][0] if errors else "$"

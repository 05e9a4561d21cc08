"""Every failure codexbridge reports, in one tree — with its exit code and its MCP code.

    BridgeError                     root                                  exit  MCP code
    ├── UsageError                  bad argument, setting or input           2  INVALID_ARGUMENT
    │   ├── MailboxNameError        a name outside [A-Za-z0-9._-]{1,64}      2  INVALID_ARGUMENT
    │   └── InvalidCursorError      a forged or foreign page cursor          2  INVALID_CURSOR
    ├── ArtifactNotFoundError       no such stored output for this role      2  ARTIFACT_NOT_FOUND
    ├── UnknownToolError            no tool of that name on the server       2  UNKNOWN_TOOL
    ├── BinaryNotFoundError         codex / claude not installed            10  BINARY_NOT_FOUND
    ├── ServeError                  app-server would not start or died      11  SERVE_FAILED
    ├── ConnectError                nothing listening at the URL             5  CODEX_CONNECT_FAILED
    │   └── ConnectionLostError     closed while a request waited           5  CODEX_CONNECTION_LOST
    ├── RequestTimeoutError         a request got no answer in time          6  THREAD_READ_FAILED
    ├── QueueTimeoutError           waited too long behind other turns       6  THREAD_QUEUE_TIMEOUT
    ├── RpcError                    the server answered a JSON-RPC error     1  THREAD_READ_FAILED
    │   ├── NoRolloutError          resume before the first turn started     3  NO_ROLLOUT
    │   ├── ThreadNotLoadedError    the thread id is not loaded              3  NO_LIVE_THREAD
    │   ├── ServerOverloadedError   -32001, retry later                      1  SERVER_OVERLOADED
    │   └── TurnStartFailedError    turn/start refused: nothing ran          1  TURN_START_FAILED
    ├── TargetError                 which thread to talk to                  3  NO_LIVE_THREAD
    │   ├── NoThreadError           no user thread, or none matched          3  NO_LIVE_THREAD
    │   ├── NoRunningTurnError      nothing to steer or interrupt            3  NO_RUNNING_TURN
    │   ├── AmbiguousThreadError    several candidates (`.candidates`)       4  AMBIGUOUS_THREAD
    │   ├── NoSessionError          no Claude session to hand to / from      3  NO_CLAUDE_SESSION
    │   └── AmbiguousSessionError   several Claude sessions (`.candidates`)  4  AMBIGUOUS_SESSION
    ├── TurnError                   the turn ran but did not complete
    │   ├── TurnFailedError         turn.status == failed                    1  TURN_FAILED
    │   ├── TurnInterruptedError    turn.status == interrupted               7  TURN_INTERRUPTED
    │   └── TurnTimeoutError        no turn/completed before --timeout       6  TURN_TIMEOUT
    ├── MailboxError                the reverse channel's mail store         8  MAILBOX_WRITE_FAILED
    │   ├── MailboxReadError        mailbox files could not be read          8  MAILBOX_READ_FAILED
    │   ├── MailboxWriteError       mailbox files could not be written       8  MAILBOX_WRITE_FAILED
    │   └── NoMailboxError          nobody listens on that (mistyped?) name  8  NO_MAILBOX
    ├── LoopGuardError              refused by a loop guard; nothing sent    9
    │   ├── HopLimitError           the conversation's hop budget is spent   9  HOP_LIMIT
    │   ├── LoopDetectedError       a request repeating itself (no progress) 9  LOOP_DETECTED
    │   └── SelfSendError           a send into the thread that runs it      9  SELF_SEND
    ├── DeliveryNotFoundError       no delivery record with that id          2  DELIVERY_NOT_FOUND
    ├── ConversationNotFoundError   no record of that conversation, or none  2  (CLI only)
    ├── HandoffStateError           handoff ledger from a newer build        2  HANDOFF_STATE
    ├── UnhealthyError              `doctor` found a FAIL row                1  INTERNAL_ERROR
    ├── StateError                  the state home cannot be used           73  STATE_UNUSABLE
    │   ├── UnsafeStateError        loose, foreign or a symlink: refused    73  STATE_UNSAFE
    │   ├── DamagedStateError       a state file of ours no longer reads    73  STATE_UNUSABLE
    │   └── StateWriteError         read-only, full, or out of quota        73  STATE_UNWRITABLE
    ├── OutputClosedError           whoever read our output went away       74  OUTPUT_CLOSED
    └── InternalError               a bug in codexbridge                    70  INTERNAL_ERROR
        └── SchemaViolation         a message we built breaks schemas/      70  INTERNAL_ERROR

`error_tables.exit_help()` renders a command's exit-code table and `mcp_codes()` the MCP
code table from these classes; `--help`, docs/mcp.md and README are written from them,
never by hand. `retryable` is true only when nothing ran, so a retry cannot run anything twice.

Wire errors are mapped by message text, not code: codex 0.169.0 answers every error
with -32600 (docs/protocol-notes.md, "Errors").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .jsontypes import JsonRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .jsontypes import JsonObject, JsonValue

INTERRUPTED_EXIT = 130  # Ctrl-C


class BridgeError(Exception):
    """Root of every error codexbridge raises on purpose."""

    exit_code = 1
    # A short meaning on the class that introduces an exit code / an MCP code (or
    # changes it); the tables are built from these.
    exit_meaning: str | None = None
    mcp_code = "INTERNAL_ERROR"
    mcp_meaning: str | None = None
    retryable = False
    # Set by a command that already printed its result (e.g. `say --json` printed the
    # failed turn): the handler then prints only the message, not an error object.
    reported = False

    def __init__(self, message: str, *, details: Mapping[str, object] | None = None,
                 retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        # What a script needs beyond the message: `--json` and MCP show it as is.
        self.details: dict[str, object] = dict(details) if details else {}
        if retryable is not None:
            self.retryable = retryable

    @property
    def code(self) -> str:
        """The machine-readable code shown in `--json` output (the MCP code)."""
        return self.mcp_code


class UsageError(BridgeError):
    exit_code = 2
    exit_meaning = "bad argument, setting or input"
    mcp_code = "INVALID_ARGUMENT"
    mcp_meaning = ("a parameter is missing, malformed or out of range "
                   "(approvals=accept is refused over MCP)")


class MailboxNameError(UsageError):
    pass


class InvalidCursorError(UsageError):
    mcp_code = "INVALID_CURSOR"
    mcp_meaning = "the cursor is malformed, forged, or belongs to another artifact"


class ArtifactNotFoundError(BridgeError):
    exit_code = 2
    mcp_code = "ARTIFACT_NOT_FOUND"
    mcp_meaning = ("no such artifact for this role: never existed, expired "
                   "(CODEX_BRIDGE_ARTIFACT_TTL), evicted, or made by the other role")


class UnknownToolError(BridgeError):
    exit_code = 2
    mcp_code = "UNKNOWN_TOOL"
    mcp_meaning = "no tool of that name on this role's server"


class BinaryNotFoundError(BridgeError):
    exit_code = 10
    exit_meaning = "codex / claude binary not found"
    mcp_code = "BINARY_NOT_FOUND"
    mcp_meaning = "the codex or claude binary is not installed where codexbridge looks"


class ServeError(BridgeError):
    exit_code = 11
    exit_meaning = "app-server failed to start"
    mcp_code = "SERVE_FAILED"
    mcp_meaning = "the app-server would not start, or died"


class ConnectError(BridgeError):
    exit_code = 5
    exit_meaning = ("cannot connect: no app-server (plain `codex` starts codex's own daemon; "
                    "or `codexbridge serve`)")
    mcp_code = "CODEX_CONNECT_FAILED"
    mcp_meaning = ("no app-server to talk to: open the Codex TUI (plain `codex` starts "
                   "codex's own daemon), or start `codexbridge serve`, or set CODEX_BRIDGE_URL")


class ConnectionLostError(ConnectError):
    mcp_code = "CODEX_CONNECTION_LOST"
    mcp_meaning = ("the app-server connection broke mid-operation; details.turnStarted "
                   "says whether a turn may be running")


class RequestTimeoutError(BridgeError):
    exit_code = 6
    exit_meaning = "timed out"
    mcp_code = "THREAD_READ_FAILED"


class QueueTimeoutError(BridgeError):
    exit_code = 6
    mcp_code = "THREAD_QUEUE_TIMEOUT"
    mcp_meaning = ("waited CODEX_BRIDGE_QUEUE_WAIT behind another turn on the same thread; "
                   "nothing was sent")
    retryable = True


class WireError(JsonRecord):
    """A JSON-RPC error object as the app-server sends it (`RpcError.from_wire`)."""

    code: int | None = None
    message: JsonValue = ""
    data: JsonValue = None


class RpcError(BridgeError):
    """A JSON-RPC error answer. `from_wire` picks the subclass by message text."""

    mcp_code = "THREAD_READ_FAILED"
    mcp_meaning = "the app-server could not list or read the thread"

    def __init__(self, rpc_code: int, message: str, data: object = None) -> None:
        super().__init__(message, details={"rpc_code": rpc_code, "data": data})
        self.rpc_code = rpc_code
        self.data = data

    @staticmethod
    def from_wire(error: JsonObject) -> RpcError:
        wire = WireError.read(error)
        message, data = str(wire.message), wire.data
        code = wire.code if wire.code is not None else -32603
        if "no rollout found" in message:
            return NoRolloutError(code, message, data)
        if message.startswith("thread not loaded"):
            return ThreadNotLoadedError(code, message, data)
        if code == -32001 or "overloaded" in message.lower():
            return ServerOverloadedError(code, message, data)
        return RpcError(code, message, data)


class NoRolloutError(RpcError):
    exit_code = 3
    mcp_code = "NO_ROLLOUT"
    mcp_meaning = "the thread has no first turn yet: send one message in the Codex TUI first"
    retryable = True


class ThreadNotLoadedError(RpcError):
    exit_code = 3
    mcp_code = "NO_LIVE_THREAD"


class ServerOverloadedError(RpcError):
    mcp_code = "SERVER_OVERLOADED"
    mcp_meaning = "the app-server answered -32001 (overloaded); nothing ran"
    retryable = True


class TurnStartFailedError(RpcError):
    mcp_code = "TURN_START_FAILED"
    mcp_meaning = "the app-server refused to start the turn; nothing ran"
    retryable = True


class TargetError(BridgeError):
    exit_code = 3
    exit_meaning = "no thread to talk to"
    mcp_code = "NO_LIVE_THREAD"
    mcp_meaning = ("no user thread is loaded, or threadId matched none "
                   "(details.candidates lists the user threads)")
    retryable = True


class NoThreadError(TargetError):
    pass


class NoRunningTurnError(TargetError):
    mcp_code = "NO_RUNNING_TURN"
    mcp_meaning = "no turn is running in the thread: nothing to steer or interrupt"
    retryable = False


class AmbiguousThreadError(TargetError):
    exit_code = 4
    exit_meaning = "ambiguous target"
    mcp_code = "AMBIGUOUS_THREAD"
    mcp_meaning = "several threads fit; pass threadId (details.candidates lists them)"
    retryable = False

    def __init__(self, message: str, candidates: Sequence[Mapping[str, object]]) -> None:
        super().__init__(message, details={"candidates": candidates})
        self.candidates = candidates


class NoSessionError(TargetError):
    mcp_code = "NO_CLAUDE_SESSION"
    mcp_meaning = ("no Claude Code session to hand to or from: none has run the codexbridge "
                   "hook in this project (details.sessions lists the known ones)")
    retryable = False


class AmbiguousSessionError(TargetError):
    exit_code = 4
    mcp_code = "AMBIGUOUS_SESSION"
    mcp_meaning = ("several Claude Code sessions fit (for a request: none of them is "
                   "already in this conversation); nothing was sent — send again naming the "
                   "session or mailbox (details.candidates lists each: when it was last "
                   "seen, and for a request whether it runs or is busy, when it last talked "
                   "with this thread, and its `retry` arguments)")
    retryable = True

    def __init__(self, message: str, candidates: Sequence[Mapping[str, object]]) -> None:
        super().__init__(message, details={"candidates": candidates})
        self.candidates = candidates


class TurnError(BridgeError):
    def __init__(self, message: str, *, thread_id: str, turn_id: str | None,
                 partial_reply: str = "", error: object = None) -> None:
        super().__init__(message, details={"thread_id": thread_id, "turn_id": turn_id,
                                           "error": error})
        self.thread_id = thread_id
        self.turn_id = turn_id
        self.partial_reply = partial_reply


class TurnFailedError(TurnError):
    exit_code = 1
    exit_meaning = "turn failed"
    mcp_code = "TURN_FAILED"
    mcp_meaning = "the turn ended with status failed (details.error)"


class TurnInterruptedError(TurnError):
    exit_code = 7
    exit_meaning = "turn interrupted"
    mcp_code = "TURN_INTERRUPTED"
    mcp_meaning = ("the turn was interrupted (cancelled in the TUI, or an approval was "
                   "cancelled)")


class TurnTimeoutError(TurnError):
    exit_code = 6
    mcp_code = "TURN_TIMEOUT"
    mcp_meaning = ("the turn started but did not finish within timeoutMs; it may still be "
                   "running in the TUI (details.turnId)")


class MailboxError(BridgeError):
    exit_code = 8
    exit_meaning = "mailbox error"
    mcp_code = "MAILBOX_WRITE_FAILED"
    mcp_meaning = "the mailbox files could not be written; the mail was not stored"


class MailboxReadError(MailboxError):
    mcp_code = "MAILBOX_READ_FAILED"
    mcp_meaning = "the mailbox files could not be read"


class MailboxWriteError(MailboxError):
    pass


class NoMailboxError(MailboxError):
    mcp_code = "NO_MAILBOX"
    mcp_meaning = ("no Claude session listens on that mailbox name (details.mailboxes lists "
                   "the ones that do, details.didYouMean the closest)")


class LoopGuardError(BridgeError):
    exit_code = 9
    exit_meaning = ("refused by a loop guard (hop budget, a request repeated a third time, "
                    "self-send); nothing was sent")


class HopLimitError(LoopGuardError):
    mcp_code = "HOP_LIMIT"
    mcp_meaning = ("the conversation has used its hop budget (`talk budget`); nothing was "
                   "sent (details.hops is the trail) — newConversation: true goes on")


class LoopDetectedError(LoopGuardError):
    mcp_code = "LOOP_DETECTED"
    mcp_meaning = ("the request repeats one the conversation already carried twice (a "
                   "loop, no progress); nothing was sent")


class SelfSendError(LoopGuardError):
    mcp_code = "SELF_SEND"
    mcp_meaning = ("a send from inside a Codex turn into that same thread (it would wait on "
                   "itself); nothing was sent")


class DeliveryNotFoundError(BridgeError):
    exit_code = 2
    mcp_code = "DELIVERY_NOT_FOUND"
    mcp_meaning = "no delivery record has that id (never made here, or expired after its TTL)"


class ConversationNotFoundError(BridgeError):
    """`codexbridge log`: nothing on this machine names that conversation (never here,
    or expired), or there is no conversation yet. Only the CLI raises it."""

    exit_code = 2
    mcp_code = "CONVERSATION_NOT_FOUND"


class HandoffStateError(BridgeError):
    """The project's handoff ledger was written by a newer codexbridge: refused, since
    every write is a read-modify-write that would drop what this build does not know.
    Nothing is overwritten (it holds the watermarks). A damaged ledger is a
    DamagedStateError."""

    exit_code = 2
    mcp_code = "HANDOFF_STATE"
    mcp_meaning = ("the project's handoff ledger is from a newer codexbridge; nothing was "
                   "sent or changed (details.path)")


class UnhealthyError(BridgeError):
    """`doctor` printed its report and at least one row is FAIL."""

    exit_code = 1
    exit_meaning = "at least one FAIL row: the bridge cannot work until it is fixed"


class StateError(BridgeError, OSError):
    """codexbridge's own state (`CODEX_BRIDGE_HOME`, the inbox dir, the runtime dir)
    cannot be used. The user's environment, not a bug: the message names the path and
    the fix, and nothing was half-written (details.path).

    Also an OSError, which is what it is: every place that already carries on when the
    state cannot be written (an artifact store that falls back to inline text, the Stop
    hook's log) carries on the same way, and a command that cannot is told exactly why."""

    exit_code = 73  # EX_CANTCREAT
    exit_meaning = ("codexbridge's state cannot be written: read-only, full, or refused as "
                    "unsafe (the message names the path and the fix)")
    mcp_code = "STATE_UNUSABLE"
    mcp_meaning = "codexbridge's state directory cannot be used (details.path, details.fix)"


class UnsafeStateError(StateError):
    """A directory or file in the state home is not ours alone: another owner, a mode
    others may use, or a symlink. Refused, never repaired: codexbridge changes the mode
    only of what it created itself."""

    mcp_code = "STATE_UNSAFE"
    mcp_meaning = ("a state path is another user's, open to others, or a symlink; refused "
                   "and left as it is (details.fix says what to run)")


class DamagedStateError(StateError):
    """A state file codexbridge wrote (a live record, a handling marker, a ledger …) is
    there but is no longer what it wrote: not JSON, not an object, or a version field
    that is not a number. The message names the file; each reader says what it does
    then (most skip it, as they skip a file being written)."""


class StateWriteError(StateError):
    """The state home is read-only (a sandbox, a read-only mount), the disk is full, or
    the quota is spent. What was being written was not written (or was undone)."""

    mcp_code = "STATE_UNWRITABLE"
    mcp_meaning = ("the state directory is read-only or full; nothing was stored "
                   "(details.path, details.errno)")


class OutputClosedError(BridgeError):
    """Writing our own output failed (a closed pipe, a full disk): the reader is gone, not
    codexbridge broken — and the turn being followed may well still be running."""

    exit_code = 74  # EX_IOERR
    exit_meaning = "writing codexbridge's output failed (the reader went away)"
    mcp_code = "OUTPUT_CLOSED"
    mcp_meaning = "writing the output failed; the turn may still be running"


class InternalError(BridgeError):
    exit_code = 70  # EX_SOFTWARE: an internal error, not a usage error
    exit_meaning = "a bug in codexbridge (please report it)"
    mcp_code = "INTERNAL_ERROR"
    mcp_meaning = "a bug in codexbridge; details.type names the exception"


class SchemaViolation(InternalError):
    """Something codexbridge built for the wire does not match the codex schema.

    Raised by `codexbridge.codex.protocol.schema` (the test suite's guard on every outgoing
    message). Never the user's fault: it means our request or answer has drifted from
    what codex 0.169.0 accepts, which codex may reject or — for answers — hang on.
    `.errors` lists `(path, message)` pairs, the path in `$.a.b[0]` form.
    """

    def __init__(self, what: str, errors: list[tuple[str, str]]) -> None:
        lines = "\n".join(f"  at {path}: {message}" for path, message in errors)
        super().__init__(f"{what} does not match the codex schema:\n{lines}",
                         details={"what": what,
                                  "errors": [{"path": p, "message": m} for p, m in errors]})
        self.what = what
        self.errors = errors
        self.path = errors[0][0] if errors else "$"


def internal(exc: BaseException, where: str) -> InternalError:
    """An unexpected exception as an InternalError naming it (never a bare traceback)."""
    return InternalError(f"{where} failed: {exc!r}", details={"type": type(exc).__name__})

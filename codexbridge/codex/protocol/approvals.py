"""What to answer to every server→client request codex 0.169.0 can send.

The answer shapes differ per method (docs/protocol-notes.md, "Answers"): the two
`item/*/requestApproval` methods take `{"decision": "decline"}`, permissions want an
(empty) granted profile, the legacy v1 methods want `{"decision": {"denied": {...}}}`.
A wrong shape is a schema error, not a polite refusal, and other clients have hung on
it — so every answer here is checked against `schemas/` in the tests.

Policy:
  * approvals (`is_approval`): `decline` answers fail-closed at once, `accept` answers
    the accept shape, `tui` stays silent so the human decides in the TUI and answers
    fail-closed only when the deadline passes;
  * every other known request always gets its fail-closed answer (the bridge has no UI
    to ask anyone);
  * an unknown method gets a JSON-RPC error, never silence, so codex never waits on us.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING

from ...errors import UsageError
from ...jsontypes import obj
from .enums import ApprovalPolicy
from .generated import methods as m
from .generated.results import PermissionsRequestApprovalParams, ToolRequestUserInputParams
from .wire import Made, Record

if TYPE_CHECKING:
    from ...jsontypes import JsonObject

POLICIES: tuple[ApprovalPolicy, ...] = tuple(ApprovalPolicy)
# Over MCP an agent would approve its own peer's commands with `accept`: refused there.
MCP_POLICIES: tuple[ApprovalPolicy, ...] = (ApprovalPolicy.TUI, ApprovalPolicy.DECLINE)
DEFAULT_POLICY = ApprovalPolicy.TUI
DEFAULT_APPROVAL_TIMEOUT = 300.0

# JSON-RPC "method not found"; codex itself uses -32600 for everything, but this is the
# code a reader of our answer will recognise.
UNKNOWN_METHOD_CODE = -32601
REFUSED_CODE = -32000

Builder = Callable[["JsonObject"], "JsonObject"]  # a request's params → our answer

_REFUSAL_TEXT = "refused by codexbridge: no human answered in time"


def _const(answer: JsonObject) -> Builder:
    return lambda _params: dict(answer)


def _accept_permissions(params: JsonObject) -> JsonObject:
    requested = obj(PermissionsRequestApprovalParams.from_wire(params).permissions)
    granted: JsonObject = {k: requested[k] for k in ("fileSystem", "network") if k in requested}
    return {"permissions": granted, "scope": "turn"}


def _accept_user_input(params: JsonObject) -> JsonObject:
    # Not used by any policy (user input is never an approval); kept so the table is
    # complete. An accept picks each question's first option when there is one.
    answers: JsonObject = {}
    for q in ToolRequestUserInputParams.from_wire(params).questions:
        if q.id:
            first = q.options[0].label if q.options else None
            answers[q.id] = {"answers": [first or ""]}
    return {"answers": answers}


# Server requests an older codex of the supported range sends that the pinned schema no
# longer has: answered the same way, so the whole range works (doctor/compat.py knows).
LEGACY_CURRENT_TIME_READ = "currentTime/read"
LEGACY_SERVER_REQUESTS = frozenset({LEGACY_CURRENT_TIME_READ})


def _clock(_params: JsonObject) -> JsonObject:
    return {"currentTimeAt": int(time.time())}


# Read-only records (codex/protocol/wire.py), not NamedTuples: `talk say` imports this table,
# and a NamedTuple costs it ~0.3 ms to define (measured).
_set = object.__setattr__


class Rule(Made):
    """How codexbridge answers one server request."""

    __slots__ = ("accept", "fail_closed", "is_approval", "method", "summary")
    method: str
    is_approval: bool
    # None: the result has no refusal shape, so refusing is a JSON-RPC error.
    fail_closed: Builder | None
    accept: Builder | None
    summary: str


TABLE: dict[str, Rule] = {r.method: r for r in (
    Rule(m.ITEM_COMMAND_EXECUTION_REQUEST_APPROVAL, True,
         _const({"decision": "decline"}), _const({"decision": "accept"}),
         "run a command"),
    Rule(m.ITEM_FILE_CHANGE_REQUEST_APPROVAL, True,
         _const({"decision": "decline"}), _const({"decision": "accept"}),
         "change files"),
    Rule(m.ITEM_PERMISSIONS_REQUEST_APPROVAL, True,
         _const({"permissions": {}}), _accept_permissions,
         "grant extra permissions"),
    Rule(m.APPLY_PATCH_APPROVAL, True,
         _const({"decision": {"denied": {"rejection": _REFUSAL_TEXT}}}),
         _const({"decision": "approved"}),
         "apply a patch (legacy)"),
    Rule(m.EXEC_COMMAND_APPROVAL, True,
         _const({"decision": {"denied": {"rejection": _REFUSAL_TEXT}}}),
         _const({"decision": "approved"}),
         "run a command (legacy)"),
    Rule(m.ITEM_TOOL_REQUEST_USER_INPUT, False,
         _const({"answers": {}}), _accept_user_input,
         "ask the user a question"),
    Rule(m.MCP_SERVER_ELICITATION_REQUEST, False,
         _const({"action": "decline"}), lambda _p: {"action": "accept", "content": {}},
         "an MCP server asks for input"),
    Rule(m.ITEM_TOOL_CALL, False,
         _const({"success": False, "contentItems": [
             {"type": "inputText", "text": "codexbridge registers no dynamic tools"}]}),
         lambda _p: {"success": True, "contentItems": []},
         "call a client-side dynamic tool"),
    Rule(m.ACCOUNT_CHATGPT_AUTH_TOKENS_REFRESH, False, None, None,
         "refresh ChatGPT auth tokens"),
    Rule(m.ATTESTATION_GENERATE, False, None, None, "generate an attestation"),
    # Experimental (codexbridge is an experimentalApi client). Telling the time grants
    # nothing, so even the fail-closed answer is the clock. Codex 0.171.0 no longer asks
    # it (not in the generated methods); 0.169.0, the oldest supported, still does.
    Rule(LEGACY_CURRENT_TIME_READ, False, _clock, _clock, "read the client's clock"),
)}


class Reply(Record):
    """Answer now: a result, or a JSON-RPC error when `error` is set."""

    __slots__ = ("error", "result")
    result: JsonObject | None
    error: tuple[int, str] | None

    def __init__(self, result: JsonObject | None = None,
                 error: tuple[int, str] | None = None) -> None:
        _set(self, "result", result)
        _set(self, "error", error)


class Defer(Made):
    """Stay silent (the human decides in the TUI); answer `fallback` at the deadline."""

    __slots__ = ("fallback",)
    fallback: Reply


Decision = Reply | Defer


def fail_closed(method: str, params: JsonObject) -> Reply:
    rule = TABLE.get(method)
    if rule is None:
        return Reply(error=(UNKNOWN_METHOD_CODE,
                            f"codexbridge does not handle server request {method!r}"))
    if rule.fail_closed is None:
        return Reply(error=(REFUSED_CODE, f"codexbridge refuses {method!r} ({rule.summary})"))
    return Reply(result=rule.fail_closed(params))


def decide(method: str, params: JsonObject, policy: ApprovalPolicy) -> Decision:
    """The answer to one server request under `policy`."""
    rule = TABLE.get(method)
    if rule is None or not is_approval(method, params):
        return fail_closed(method, params)
    if policy is ApprovalPolicy.ACCEPT and rule.accept is not None:
        return Reply(result=rule.accept(params))
    if policy is ApprovalPolicy.TUI:
        return Defer(fail_closed(method, params))
    return fail_closed(method, params)


def is_approval(method: str, params: JsonObject | None = None) -> bool:
    """Whether a human would be asked. An MCP elicitation is an approval when codex uses
    it to ask permission for an MCP tool call (`default_tools_approval_mode` "writes" or
    "prompt"; measured on 0.169.0: `_meta.codex_approval_kind == "mcp_tool_call"`); other
    elicitations ask for data the bridge cannot supply."""
    rule = TABLE.get(method)
    if rule is None:
        return False
    if method == m.MCP_SERVER_ELICITATION_REQUEST:
        match params:
            case {"_meta": {"codex_approval_kind": "mcp_tool_call"}}:
                return True
        return False
    return rule.is_approval


def describe(method: str, params: JsonObject) -> str:
    """One line for a person: what codex asks and why."""
    rule = TABLE.get(method)
    what = rule.summary if rule else method
    # The first of these the request has (one per kind: a command, a patch's reason, an
    # elicitation's message; a legacy command is a list of words).
    detail = next(filter(None, map(params.get, ("command", "reason", "message"))), "")
    if isinstance(detail, list):
        detail = " ".join(str(p) for p in detail)
    return f"{what}: {detail}" if detail else what


def parse_policy(raw: str | None, *, source: str,
                 allowed: Collection[ApprovalPolicy] = POLICIES) -> ApprovalPolicy:
    """`raw` (from `source`, e.g. `--approvals` or `CODEX_BRIDGE_APPROVALS`) as a policy;
    empty means the default. UsageError names the allowed values, and says why `accept`
    is refused where it is (MCP)."""
    if not raw:
        return DEFAULT_POLICY
    policy = ApprovalPolicy.parse(raw)
    if policy is None or policy not in allowed:
        names = " or ".join(p.value for p in allowed)
        why = (" — accept is refused over MCP: an agent would approve its own peer's "
               "commands; only the human (tui) or a refusal (decline) may answer"
               if policy is ApprovalPolicy.ACCEPT else "")
        raise UsageError(f"{source}={raw!r}: expected {names}{why}")
    return policy


def parse_timeout(raw: str | None, *, source: str,
                  default: float = DEFAULT_APPROVAL_TIMEOUT) -> float:
    """Seconds from `raw` (empty: `default`); UsageError unless a positive number."""
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{source}={raw!r} is not a number of seconds") from None
    if value <= 0:
        raise UsageError(f"{source} must be positive, got {raw!r}")
    return value


APPROVALS_ENV = "CODEX_BRIDGE_APPROVALS"
APPROVAL_TIMEOUT_ENV = "CODEX_BRIDGE_APPROVAL_TIMEOUT"


def approval_settings(env: Mapping[str, str], *, policy: str | None = None,
                      timeout: float | None = None,
                      allowed: Collection[ApprovalPolicy] = POLICIES,
                      ) -> tuple[ApprovalPolicy, float]:
    """(policy, seconds a `tui` approval waits) from the flags, else the environment
    (CODEX_BRIDGE_APPROVALS, CODEX_BRIDGE_APPROVAL_TIMEOUT), else the defaults. The one
    place the CLI and the MCP server both take these from."""
    chosen = (parse_policy(policy, source="--approvals", allowed=allowed) if policy
              else parse_policy(env.get(APPROVALS_ENV), source=APPROVALS_ENV,
                                allowed=allowed))
    if timeout is not None:
        if timeout <= 0:
            raise UsageError("--approval-timeout must be positive")
        return chosen, timeout
    return chosen, parse_timeout(env.get(APPROVAL_TIMEOUT_ENV), source=APPROVAL_TIMEOUT_ENV)

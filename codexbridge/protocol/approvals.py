"""What to answer to every server→client request codex 0.169.0 can send.

The answer shapes differ per method (reference §10): the two `item/*/requestApproval`
methods take `{"decision": "decline"}`, permissions want an (empty) granted profile, the
legacy v1 methods want `{"decision": {"denied": {...}}}`. A wrong shape is a schema
error, not a polite refusal, and other clients have hung on it — so every answer here
is checked against `schemas/` in the tests.

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
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

Policy = Literal["tui", "decline", "accept"]
POLICIES: tuple[Policy, ...] = ("tui", "decline", "accept")

# JSON-RPC "method not found"; codex itself uses -32600 for everything, but this is the
# code a reader of our answer will recognise.
UNKNOWN_METHOD_CODE = -32601
REFUSED_CODE = -32000

Answer = dict[str, Any]
Builder = Callable[[dict[str, Any]], Answer]

_REFUSAL_TEXT = "refused by codexbridge: no human answered in time"


def _const(answer: Answer) -> Builder:
    return lambda _params: dict(answer)


def _accept_permissions(params: dict[str, Any]) -> Answer:
    requested = params.get("permissions") or {}
    granted = {k: requested[k] for k in ("fileSystem", "network") if k in requested}
    return {"permissions": granted, "scope": "turn"}


def _accept_user_input(params: dict[str, Any]) -> Answer:
    # Not used by any policy (user input is never an approval); kept so the table is
    # complete. An accept picks each question's first option when there is one.
    answers: dict[str, Any] = {}
    for q in params.get("questions") or []:
        if isinstance(q, dict) and isinstance(q.get("id"), str):
            options = q.get("options") or []
            first = options[0].get("label") if options and isinstance(options[0], dict) else ""
            answers[q["id"]] = {"answers": [first or ""]}
    return {"answers": answers}


class Rule(NamedTuple):
    method: str
    is_approval: bool
    # None: the result has no refusal shape, so refusing is a JSON-RPC error.
    fail_closed: Builder | None
    accept: Builder | None
    summary: str


TABLE: dict[str, Rule] = {r.method: r for r in (
    Rule("item/commandExecution/requestApproval", True,
         _const({"decision": "decline"}), _const({"decision": "accept"}),
         "run a command"),
    Rule("item/fileChange/requestApproval", True,
         _const({"decision": "decline"}), _const({"decision": "accept"}),
         "change files"),
    Rule("item/permissions/requestApproval", True,
         _const({"permissions": {}}), _accept_permissions,
         "grant extra permissions"),
    Rule("applyPatchApproval", True,
         _const({"decision": {"denied": {"rejection": _REFUSAL_TEXT}}}),
         _const({"decision": "approved"}),
         "apply a patch (legacy)"),
    Rule("execCommandApproval", True,
         _const({"decision": {"denied": {"rejection": _REFUSAL_TEXT}}}),
         _const({"decision": "approved"}),
         "run a command (legacy)"),
    Rule("item/tool/requestUserInput", False,
         _const({"answers": {}}), _accept_user_input,
         "ask the user a question"),
    Rule("mcpServer/elicitation/request", False,
         _const({"action": "decline"}), lambda _p: {"action": "accept", "content": {}},
         "an MCP server asks for input"),
    Rule("item/tool/call", False,
         _const({"success": False, "contentItems": [
             {"type": "inputText", "text": "codexbridge registers no dynamic tools"}]}),
         lambda _p: {"success": True, "contentItems": []},
         "call a client-side dynamic tool"),
    Rule("account/chatgptAuthTokens/refresh", False, None, None,
         "refresh ChatGPT auth tokens"),
    Rule("attestation/generate", False, None, None, "generate an attestation"),
    # Only in the --experimental schema; listed so it is answered, not left hanging.
    Rule("currentTime/read", False, None,
         lambda _p: {"currentTimeAt": int(time.time())}, "read the client's clock"),
)}


class Reply(NamedTuple):
    """Answer now: a result, or a JSON-RPC error when `error` is set."""

    result: Answer | None = None
    error: tuple[int, str] | None = None


class Defer(NamedTuple):
    """Stay silent (the human decides in the TUI); answer `fallback` at the deadline."""

    fallback: Reply


Decision = Reply | Defer


def fail_closed(method: str, params: dict[str, Any]) -> Reply:
    rule = TABLE.get(method)
    if rule is None:
        return Reply(error=(UNKNOWN_METHOD_CODE,
                            f"codexbridge does not handle server request {method!r}"))
    if rule.fail_closed is None:
        return Reply(error=(REFUSED_CODE, f"codexbridge refuses {method!r} ({rule.summary})"))
    return Reply(result=rule.fail_closed(params))


def decide(method: str, params: dict[str, Any], policy: Policy) -> Decision:
    """The answer to one server request under `policy`."""
    rule = TABLE.get(method)
    if rule is None or not is_approval(method, params):
        return fail_closed(method, params)
    if policy == "accept" and rule.accept is not None:
        return Reply(result=rule.accept(params))
    if policy == "tui":
        return Defer(fail_closed(method, params))
    return fail_closed(method, params)


def is_approval(method: str, params: dict[str, Any] | None = None) -> bool:
    """Whether a human would be asked. An MCP elicitation is an approval when codex uses
    it to ask permission for an MCP tool call (`default_tools_approval_mode` "writes" or
    "prompt"; measured on 0.169.0: `_meta.codex_approval_kind == "mcp_tool_call"`); other
    elicitations ask for data the bridge cannot supply."""
    rule = TABLE.get(method)
    if rule is None:
        return False
    if method == "mcpServer/elicitation/request":
        meta = (params or {}).get("_meta")
        return isinstance(meta, dict) and meta.get("codex_approval_kind") == "mcp_tool_call"
    return rule.is_approval


def describe(method: str, params: dict[str, Any]) -> str:
    """One line for a person: what codex asks and why."""
    rule = TABLE.get(method)
    what = rule.summary if rule else method
    detail = params.get("command") or params.get("reason") or params.get("message") or ""
    if isinstance(detail, list):
        detail = " ".join(str(p) for p in detail)
    return f"{what}: {detail}" if detail else what

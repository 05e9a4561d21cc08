"""The approval table against the schema: every server request answered, every answer valid.

A wrong answer shape is a schema error, not a refusal, and has hung other clients
(docs/protocol-notes.md, "Answers") — so each fail-closed and accept answer is validated against the
`*Response.json` codex 0.169.0 generated, built from params that themselves validate
against `*Params.json`.
"""

from __future__ import annotations

import json

import pytest

from codexbridge.codex.protocol.approvals import (
    LEGACY_SERVER_REQUESTS,
    POLICIES,
    REFUSED_CODE,
    TABLE,
    UNKNOWN_METHOD_CODE,
    Defer,
    Reply,
    decide,
    describe,
    fail_closed,
    is_approval,
)
from codexbridge.codex.protocol.enums import ApprovalPolicy as P
from codexbridge.codex.protocol.envelopes import error_response
from codexbridge.errors import SchemaViolation
from tests.support.payloads import USER_THREAD, server_request_params
from tests.support.schemas import repo_schemas

schema = repo_schemas()  # the experimental bundle: what codexbridge's client speaks

PARAMS = server_request_params()
SCHEMA_METHODS = sorted(schema.server_request_methods())


def test_table_covers_every_server_request_in_the_schema() -> None:
    # the pinned schema's 10 (0.171.0 dropped the experimental currentTime/read), and the
    # one the oldest supported codex (0.169.0) still sends
    assert len(SCHEMA_METHODS) == 10
    assert set(TABLE) == set(SCHEMA_METHODS) | LEGACY_SERVER_REQUESTS
    assert not LEGACY_SERVER_REQUESTS & set(SCHEMA_METHODS)


def test_examples_cover_the_table_and_are_realistic() -> None:
    assert set(PARAMS) == set(TABLE)
    for method in SCHEMA_METHODS:
        schema.validate_server_request_params(method, PARAMS[method])


@pytest.mark.parametrize("method", SCHEMA_METHODS)
def test_fail_closed_answer_validates(method: str) -> None:
    reply = fail_closed(method, PARAMS[method])
    rule = TABLE[method]
    if rule.fail_closed is None:
        # No refusal shape: the result requires what we cannot give, so a JSON-RPC error.
        assert reply.result is None and reply.error is not None
        assert reply.error[0] == REFUSED_CODE
        schema.validate_error_answer(error_response(0, *reply.error))
    else:
        assert reply.error is None
        schema.validate_server_request_answer(method, reply.result)


@pytest.mark.parametrize("method", SCHEMA_METHODS)
def test_accept_answer_validates(method: str) -> None:
    rule = TABLE[method]
    if rule.accept is None:
        assert rule.fail_closed is None, "a method we can refuse should also be acceptable"
        return
    schema.validate_server_request_answer(method, rule.accept(PARAMS[method]))


@pytest.mark.parametrize("method", SCHEMA_METHODS)
@pytest.mark.parametrize("policy", POLICIES)
def test_every_decision_validates(method: str, policy: str) -> None:
    decision = decide(method, PARAMS[method], policy)  # type: ignore[arg-type]
    reply = decision.fallback if isinstance(decision, Defer) else decision
    if reply.error is not None:
        schema.validate_error_answer(error_response(1, *reply.error))
    else:
        schema.validate_server_request_answer(method, reply.result)


def test_specific_shapes_from_the_reference() -> None:
    # The shapes differ per method (protocol-notes "Answers"); these are the ones
    # codex was seen to act on.
    p = PARAMS
    assert fail_closed("item/commandExecution/requestApproval", {}).result == \
        {"decision": "decline"}
    assert fail_closed("item/permissions/requestApproval", {}).result == {"permissions": {}}
    assert fail_closed("item/tool/requestUserInput", {}).result == {"answers": {}}
    assert fail_closed("mcpServer/elicitation/request", {}).result == {"action": "decline"}
    legacy = fail_closed("execCommandApproval", p["execCommandApproval"]).result
    assert legacy is not None and set(legacy["decision"]) == {"denied"}
    assert isinstance(legacy["decision"]["denied"]["rejection"], str)
    accepted = TABLE["item/permissions/requestApproval"].accept
    assert accepted is not None
    assert accepted(p["item/permissions/requestApproval"]) == {
        "permissions": {"network": {"enabled": True},
                        "fileSystem": {"write": ["/data"], "read": None}},
        "scope": "turn"}


def test_plain_string_denied_is_caught_by_the_schema() -> None:
    # Older protocol sources show "denied" as a string; 0.169.0 rejects it.
    with pytest.raises(SchemaViolation) as info:
        schema.validate_server_request_answer("applyPatchApproval", {"decision": "denied"})
    assert info.value.path == "$.result.decision"


def test_answers_are_fresh_objects() -> None:
    # A caller mutating one answer must not change the next one.
    a = fail_closed("item/commandExecution/requestApproval", {})
    assert a.result is not None
    a.result["decision"] = "accept"
    assert fail_closed("item/commandExecution/requestApproval", {}).result == \
        {"decision": "decline"}


def test_current_time_read_answers_with_the_clock() -> None:
    rule = TABLE["currentTime/read"]
    assert not rule.is_approval and rule.accept is not None
    answer = rule.accept({})
    # CurrentTimeReadResponse in 0.169.0's schema: {"currentTimeAt": int64}, required
    assert set(answer) == {"currentTimeAt"}
    assert isinstance(answer["currentTimeAt"], int) and answer["currentTimeAt"] > 1_700_000_000
    # the time grants nothing: the fail-closed answer is the clock too
    assert "currentTimeAt" in (fail_closed("currentTime/read", {}).result or {})
    # a method outside every schema has no result schema to check, and we say so
    with pytest.raises(SchemaViolation):
        schema.validate_server_request_answer("item/brandNew/request", answer)


APPROVALS = sorted(m for m in TABLE if TABLE[m].is_approval)
NON_APPROVALS = sorted(m for m in TABLE if not TABLE[m].is_approval)


def test_which_methods_are_approvals() -> None:
    expected = {"item/commandExecution/requestApproval", "item/fileChange/requestApproval",
                "item/permissions/requestApproval", "applyPatchApproval", "execCommandApproval"}
    assert set(APPROVALS) == expected
    assert all(is_approval(m) for m in APPROVALS)
    assert not any(is_approval(m) for m in NON_APPROVALS)
    assert not is_approval("thread/bogus")


@pytest.mark.parametrize("method", APPROVALS)
def test_approval_under_each_policy(method: str) -> None:
    params = PARAMS[method]
    closed = fail_closed(method, params)
    assert decide(method, params, P.DECLINE) == closed
    tui = decide(method, params, P.TUI)
    assert tui == Defer(closed)  # silent now, fail-closed at the deadline
    accept = decide(method, params, P.ACCEPT)
    assert isinstance(accept, Reply) and accept.error is None and accept != closed
    rule = TABLE[method]
    assert rule.accept is not None
    assert accept.result == rule.accept(params)


@pytest.mark.parametrize("method", NON_APPROVALS)
@pytest.mark.parametrize("policy", POLICIES)
def test_non_approvals_always_fail_closed(method: str, policy: str) -> None:
    # The bridge has no UI for questions, elicitations, tools or tokens: never deferred,
    # never "accepted" — not even under --approvals accept.
    params = PARAMS[method]
    assert decide(method, params, policy) == fail_closed(method, params)  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", POLICIES)
def test_unknown_method_gets_a_json_rpc_error_never_silence(policy: str) -> None:
    decision = decide("item/brandNew/requestApproval", {"threadId": USER_THREAD}, policy)  # type: ignore[arg-type]
    assert isinstance(decision, Reply)
    assert decision.result is None and decision.error is not None
    code, message = decision.error
    assert code == UNKNOWN_METHOD_CODE == -32601
    assert "item/brandNew/requestApproval" in message
    schema.validate_error_answer(error_response(3, code, message))


def test_describe() -> None:
    cmd = describe("item/commandExecution/requestApproval",
                   PARAMS["item/commandExecution/requestApproval"])
    assert cmd == "run a command: /bin/bash -lc 'touch /w/approved_file'"
    assert describe("execCommandApproval", PARAMS["execCommandApproval"]) == \
        "run a command (legacy): touch /w/f"
    assert describe("item/fileChange/requestApproval", PARAMS["item/fileChange/requestApproval"]
                    ) == "change files: write the fix"
    assert describe("attestation/generate", {}) == "generate an attestation"
    assert describe("x/y", {}) == "x/y"


def test_every_answer_round_trips_through_json() -> None:
    for method in TABLE:
        for policy in POLICIES:
            decision = decide(method, PARAMS[method], policy)
            reply = decision.fallback if isinstance(decision, Defer) else decision
            assert json.loads(json.dumps(reply.result)) == reply.result


def test_mcp_tool_call_elicitation_is_an_approval() -> None:
    """codex 0.169.0 asks permission for an MCP tool call through an elicitation."""
    params = {"threadId": "t", "turnId": "u", "serverName": "codexbridge", "mode": "form",
              "message": 'Allow the codexbridge MCP server to run tool "claude_message_send"?',
              "requestedSchema": {"type": "object", "properties": {}},
              "_meta": {"codex_approval_kind": "mcp_tool_call",
                        "tool_name": "claude_message_send"}}
    method = "mcpServer/elicitation/request"
    assert is_approval(method, params)
    assert isinstance(decide(method, params, P.TUI), Defer)
    assert decide(method, params, P.DECLINE) == Reply(result={"action": "decline"})
    assert decide(method, params, P.ACCEPT) == Reply(result={"action": "accept",
                                                             "content": {}})
    other = {**params, "_meta": {"codex_approval_kind": "something_else"}}
    assert not is_approval(method, other)
    assert decide(method, other, P.TUI) == Reply(result={"action": "decline"})
    assert decide(method, {k: v for k, v in params.items() if k != "_meta"},
                  P.ACCEPT) == Reply(result={"action": "decline"})

"""Classifying what arrives on the wire (protocol-notes "Wire"): pure, dicts and strings in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codexbridge.codex.protocol.envelopes import (
    Invalid,
    Notification,
    Response,
    ServerRequest,
    classify,
    error_response,
    notification,
    parse_frame,
    request,
    result_response,
)

APPROVAL: dict[str, Any] = {"id": 0, "method": "item/commandExecution/requestApproval",
                            "params": {"threadId": "t", "turnId": "u", "itemId": "call_3",
                                       "command": "/bin/bash -lc 'touch f'", "cwd": "/w"}}


def test_response() -> None:
    env = classify({"id": 1, "result": {"userAgent": "x"}})
    assert env == Response(1, {"userAgent": "x"}, None)


def test_response_with_null_result_is_still_a_response() -> None:
    assert classify({"id": 7, "result": None}) == Response(7, None, None)


def test_error_response() -> None:
    err = {"code": -32600, "message": "no rollout found for thread id t", "data": None}
    env = classify({"id": "abc", "error": err})
    assert isinstance(env, Response)
    assert env.id == "abc" and env.error == err and env.result is None


def test_error_that_is_not_an_object_is_normalised() -> None:
    env = classify({"id": 2, "error": "boom"})
    assert isinstance(env, Response)
    assert env.error == {"code": -32603, "message": "boom"}


def test_server_request() -> None:
    env = classify(APPROVAL)
    assert env == ServerRequest(0, APPROVAL["method"], APPROVAL["params"])


def test_server_request_without_params_gets_empty_params() -> None:
    assert classify({"id": 3, "method": "attestation/generate"}) == \
        ServerRequest(3, "attestation/generate", {})


def test_notification() -> None:
    msg: dict[str, Any] = {"method": "turn/started",
                           "params": {"threadId": "t", "turn": {"id": "u"}},
                           "emittedAtMs": 1796017570662}
    assert classify(msg) == Notification("turn/started", msg["params"])


def test_notification_with_null_params() -> None:
    assert classify({"method": "thread/goal/cleared", "params": None}) == \
        Notification("thread/goal/cleared", {})


def test_jsonrpc_member_is_ignored() -> None:
    assert classify({"jsonrpc": "2.0", "method": "x"}) == Notification("x", {})


@pytest.mark.parametrize("rid", [0, 1, 2**53, -4, "req-1", ""])
def test_ids_int_or_str(rid: int | str) -> None:
    assert classify({"id": rid, "result": {}}) == Response(rid, {}, None)
    assert isinstance(classify({"id": rid, "method": "m", "params": {}}), ServerRequest)


@pytest.mark.parametrize("rid", [True, False, 1.5, None, [1], {"a": 1}])
def test_other_ids_are_not_ids(rid: Any) -> None:
    # A response needs a valid id: without one it is neither request nor response.
    assert isinstance(classify({"id": rid, "result": {}}), Invalid)
    # With a method it degrades to a notification, never a server request we'd answer
    # with a bogus id.
    assert classify({"id": rid, "method": "m"}) == Notification("m", {})


@pytest.mark.parametrize("obj, reason", [
    ([1, 2], "not a JSON object"),
    ("text", "not a JSON object"),
    (42, "not a JSON object"),
    ({}, "neither a request, a response nor a notification"),
    ({"id": 1}, "response without result or error"),
    ({"id": 1, "method": "m", "params": [1]}, "server request params is not an object"),
    ({"method": "m", "params": "x"}, "notification params is not an object"),
    ({"method": 5}, "neither a request, a response nor a notification"),
])
def test_invalid_keeps_a_reason(obj: Any, reason: str) -> None:
    env = classify(obj, json.dumps(obj))
    assert isinstance(env, Invalid)
    assert env.reason == reason
    assert env.raw == json.dumps(obj)


def test_frame_with_one_object() -> None:
    assert parse_frame(json.dumps({"id": 1, "result": {}})) == [Response(1, {}, None)]


def test_frame_with_several_newline_separated_objects() -> None:
    frame = "\n".join([json.dumps({"method": "a", "params": {}}),
                       "",
                       json.dumps(APPROVAL),
                       "   ",
                       json.dumps({"id": 5, "result": {"ok": True}})]) + "\n"
    assert parse_frame(frame) == [Notification("a", {}),
                                  ServerRequest(0, APPROVAL["method"], APPROVAL["params"]),
                                  Response(5, {"ok": True}, None)]


def test_crlf_and_bytes_frames() -> None:
    frame = (json.dumps({"method": "a"}) + "\r\n" + json.dumps({"method": "b"})).encode()
    assert parse_frame(frame) == [Notification("a", {}), Notification("b", {})]


def test_garbage_is_kept_as_invalid_with_a_reason() -> None:
    envs = parse_frame('not json at all\n{"method": "ok"}\n{"truncated": ')
    assert len(envs) == 3
    assert isinstance(envs[0], Invalid) and envs[0].reason.startswith("invalid JSON")
    assert envs[0].raw == "not json at all"
    assert envs[1] == Notification("ok", {})
    assert isinstance(envs[2], Invalid) and envs[2].reason.startswith("invalid JSON")


def test_json_array_frame_is_invalid_not_fatal() -> None:
    envs = parse_frame(json.dumps([{"method": "a"}]))
    assert len(envs) == 1 and isinstance(envs[0], Invalid)
    assert envs[0].reason == "not a JSON object"


def test_invalid_utf8_bytes_do_not_raise() -> None:
    envs = parse_frame(b'{"method": "a\xff"}')
    assert envs == [Notification("a\ufffd", {})]


def test_huge_garbage_raw_is_truncated() -> None:
    (env,) = parse_frame("x" * 10_000)
    assert isinstance(env, Invalid) and len(env.raw) == 500


def test_empty_frame_has_no_envelopes() -> None:
    assert parse_frame("") == [] and parse_frame("\n\n") == []


def test_builders() -> None:
    assert request(1, "thread/loaded/list", {}) == {"id": 1, "method": "thread/loaded/list",
                                                    "params": {}}
    assert request(2, "x", None) == {"id": 2, "method": "x"}
    assert notification("initialized") == {"method": "initialized"}
    assert notification("n", {"a": 1}) == {"method": "n", "params": {"a": 1}}
    assert result_response(0, {"decision": "decline"}) == {"id": 0,
                                                           "result": {"decision": "decline"}}
    assert error_response(0, -32601, "nope") == {"id": 0, "error": {"code": -32601,
                                                                      "message": "nope"}}

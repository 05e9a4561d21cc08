"""Frames off the wire: parse_frame / classify never raise, and nothing is lost.

Every frame gives one envelope per message in it — a Response, ServerRequest or
Notification carrying exactly what was sent, or an Invalid keeping (a cut of) the text
and saying why. Schema-valid messages come from schemas/ (schemagen.py); near-valid ones
are those one step off.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from codexbridge.codex.protocol.envelopes import (
    Invalid,
    Notification,
    Response,
    ServerRequest,
    classify,
    parse_frame,
)

from . import schemagen as sg
from .strategies import deep_json, json_values, junk_bytes, junk_text, lone_surrogate_json

ENVELOPES = (Response, ServerRequest, Notification, Invalid)


def _blank(text: str) -> bool:
    return not text.strip()


def _expected_count(text: str) -> int:
    """How many envelopes a frame must give: one per non-blank line, or one for a frame
    that is a single JSON text spread over lines."""
    if _blank(text):
        return 0
    if "\n" not in text:
        return 1
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return sum(1 for line in text.split("\n") if line.strip())
    return 1


def _check_frame(frame: str | bytes) -> list[Any]:
    out = parse_frame(frame)
    text = frame.decode("utf-8", errors="replace") if isinstance(frame, bytes) else frame
    assert isinstance(out, list)
    assert len(out) == _expected_count(text)
    for env in out:
        assert isinstance(env, ENVELOPES)
        if isinstance(env, Invalid):
            assert env.reason and len(env.raw) <= 500
    return out


# --- anything at all ----------------------------------------------------------------

@given(junk_text | junk_bytes)
@example("")
@example("\n\n")
@example("{}\n")
@example('{"id": 1,\n "result": 2}')  # one pretty-printed message (was two Invalids)
@example("[" * 5000)  # was RecursionError
@example("[" * 5000 + "\n" + "{")
def test_any_frame_gives_envelopes_or_invalid(frame: str | bytes) -> None:
    _check_frame(frame)


@given(deep_json())
@example("[" * 100_000 + "]" * 100_000)  # was RecursionError out of parse_frame
def test_deeply_nested_json_is_invalid_not_a_crash(text: str) -> None:
    for frame in (text, text + "\n" + text):
        # Where json.loads gives up depends on the stack already in use: either way
        # the frame is classified or reported, never raised.
        for env in _check_frame(frame):
            assert not isinstance(env, Invalid) or "invalid JSON" not in env.reason \
                or "nested too deeply" in env.reason


@given(lone_surrogate_json)
def test_lone_surrogates_in_json_strings(text: str) -> None:
    (env,) = _check_frame('{"method":"m","params":{"delta":' + text + "}}")
    assert isinstance(env, Notification)


@given(json_values)
def test_classify_any_json_value(value: Any) -> None:
    env = classify(value, json.dumps(value))
    assert isinstance(env, ENVELOPES)
    if not isinstance(value, dict):
        assert isinstance(env, Invalid)


def test_huge_frame() -> None:
    big = json.dumps({"method": "item/agentMessage/delta",
                      "params": {"delta": "x" * (8 << 20)}})
    (env,) = parse_frame(big)
    assert isinstance(env, Notification) and len(env.params["delta"]) == 8 << 20
    (bad,) = parse_frame(big[:-1])
    assert isinstance(bad, Invalid) and len(bad.raw) == 500


# --- drawn from the schema ------------------------------------------------------------

@given(sg.notifications().any_message(), st.booleans(), st.sampled_from([None, 0, 2]))
def test_schema_notifications_parse_exactly(msg: dict[str, Any], ascii_only: bool,
                                            indent: int | None) -> None:
    frame = json.dumps(msg, ensure_ascii=ascii_only, indent=indent)
    (env,) = _check_frame(frame)
    assert env == Notification(msg["method"], msg["params"])


@given(sg.server_requests().any_message())
def test_schema_server_requests_parse_exactly(msg: dict[str, Any]) -> None:
    (env,) = _check_frame(json.dumps(msg))
    assert env == ServerRequest(msg["id"], msg["method"], msg["params"])


@given(st.lists(sg.notifications().any_message() | sg.server_requests().any_message(),
                min_size=2, max_size=4))
def test_several_messages_in_one_frame_keep_their_order(msgs: list[dict[str, Any]]) -> None:
    out = _check_frame("\n".join(json.dumps(m) for m in msgs) + "\n")
    assert [e.method for e in out] == [m["method"] for m in msgs]  # type: ignore[union-attr]


# The JSON-RPC envelopes are small: hypothesis-jsonschema draws them directly.
@given(from_schema(sg.load("JSONRPCResponse.json")))
def test_schema_responses(msg: dict[str, Any]) -> None:
    (env,) = _check_frame(json.dumps(msg))
    assert env == Response(msg["id"], msg["result"], None)


@given(from_schema(sg.load("JSONRPCError.json")))
def test_schema_error_responses(msg: dict[str, Any]) -> None:
    (env,) = _check_frame(json.dumps(msg))
    assert isinstance(env, Response) and env.id == msg["id"]
    assert env.error == msg["error"]


@given(from_schema(sg.load("JSONRPCMessage.json")))
def test_schema_any_jsonrpc_message(msg: dict[str, Any]) -> None:
    (env,) = _check_frame(json.dumps(msg))
    if "method" in msg and msg.get("params") is not None \
            and not isinstance(msg["params"], dict):
        # JSON-RPC allows by-position params; codex never sends them, and we say so.
        assert isinstance(env, Invalid) and "params is not an object" in env.reason
    elif "method" in msg:
        assert isinstance(env, ServerRequest if "id" in msg else Notification)
        assert env.method == msg["method"]
    else:
        assert isinstance(env, Response) and env.id == msg["id"]


@given(sg.near_valid(sg.notifications().any_message() | sg.server_requests().any_message()))
def test_near_valid_messages_follow_the_jsonrpc_rules(msg: Any) -> None:
    (env,) = _check_frame(json.dumps(msg))
    if not isinstance(msg, dict):
        assert isinstance(env, Invalid)
        return
    rid = msg.get("id")
    has_id = isinstance(rid, (int, str)) and not isinstance(rid, bool)
    method = msg.get("method")
    params = msg.get("params")
    params_ok = params is None or isinstance(params, dict)
    if has_id and isinstance(method, str):
        assert isinstance(env, ServerRequest if params_ok else Invalid)
    elif has_id:
        assert isinstance(env, Response if ("result" in msg or "error" in msg) else Invalid)
    elif isinstance(method, str):
        assert isinstance(env, Notification if params_ok else Invalid)
    else:
        assert isinstance(env, Invalid)


@given(sg.notifications().any_message() | sg.server_requests().any_message(), st.data())
def test_truncated_messages_are_invalid(msg: dict[str, Any], data: st.DataObject) -> None:
    text = json.dumps(msg)
    cut = data.draw(st.integers(1, len(text) - 1))
    frame = text[:cut]
    if "\n" in frame or _blank(frame):
        return  # (a string value may hold an escaped newline only, never a raw one)
    (env,) = _check_frame(frame)
    assert isinstance(env, Invalid) and env.reason.startswith("invalid JSON")

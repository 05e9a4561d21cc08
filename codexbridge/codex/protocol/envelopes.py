"""Classifying what arrives on the wire.

codex sends one JSON object per text frame and never a "jsonrpc" member; other
projects have seen several newline-separated objects in one frame, so a frame is split
on newlines before parsing. Classification follows the reference: id+method is a
server request, id alone a response, method alone a notification.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ...jsontypes import JsonObject, JsonValue

RequestId = int | str


# NamedTuples rather than dataclasses: these modules are imported by every `talk say`,
# and a dataclass costs ~0.4 ms to define against ~0.05 ms for a NamedTuple.


class Response(NamedTuple):
    id: RequestId
    result: JsonValue = None
    error: JsonObject | None = None


class ServerRequest(NamedTuple):
    id: RequestId
    method: str
    params: JsonObject = {}  # noqa: RUF012 - never mutated; classify always passes one


class Notification(NamedTuple):
    method: str
    params: JsonObject = {}  # noqa: RUF012 - never mutated; classify always passes one


class Invalid(NamedTuple):
    """Something that is not a JSON-RPC message; kept so it can be reported, not dropped."""

    raw: str
    reason: str


Envelope = Response | ServerRequest | Notification | Invalid


def classify(obj: JsonValue, raw: str = "") -> Envelope:
    if not isinstance(obj, dict):
        return _invalid(obj, raw, "not a JSON object")
    # Each member read once, the fewest checks first: most frames by far are
    # notifications (a flood of deltas; bench/bench_reader.py).
    method, params = obj.get("method"), obj.get("params")
    if type(method) is str and type(params) is dict and "id" not in obj:
        return Notification(method, params)
    rid = obj.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        rid = None  # (an id of null is no id)
    if params is None:
        params = {}
    if isinstance(method, str):  # a server request (with an id), or a notification
        if not isinstance(params, dict):
            kind = "server request" if rid is not None else "notification"
            return _invalid(obj, raw, f"{kind} params is not an object")
        return ServerRequest(rid, method, params) if rid is not None \
            else Notification(method, params)
    if rid is not None:
        if "result" not in obj and "error" not in obj:
            return _invalid(obj, raw, "response without result or error")
        result, error = obj.get("result"), obj.get("error")
        if error is not None and not isinstance(error, dict):
            error = {"code": -32603, "message": str(error)}
        return Response(rid, result, error)
    return _invalid(obj, raw, "neither a request, a response nor a notification")


def _invalid(obj: JsonValue, raw: str, reason: str) -> Invalid:
    """Kept for the report, cut to 500 characters (only when it is reported)."""
    return Invalid((raw or repr(obj))[:500], reason)


def _not_json(text: str, exc: Exception) -> Invalid:
    # json.loads raises RecursionError, not ValueError, on deeply nested input.
    why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
    return Invalid(text[:500], f"invalid JSON: {why}")


def parse_frame(frame: str | bytes) -> list[Envelope]:
    """All envelopes in one WebSocket frame (usually exactly one)."""
    text = frame.decode("utf-8", errors="replace") if isinstance(frame, bytes) else frame
    try:
        # What codex sends: one object per frame — the fast path (a flood of deltas goes
        # through here; bench/bench_reader.py). One message spread over lines
        # (pretty-printed) is still one message.
        return [classify(json.loads(text), text)]
    except (ValueError, RecursionError) as exc:
        if "\n" not in text:
            return [_not_json(text, exc)] if text.strip() else []
    out: list[Envelope] = []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:
            out.append(_not_json(line, exc))
            continue
        out.append(classify(obj, line))
    return out


def request(request_id: RequestId, method: str, params: JsonObject | None) -> JsonObject:
    msg: JsonObject = {"id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: JsonObject | None = None) -> JsonObject:
    msg: JsonObject = {"method": method}
    if params is not None:
        msg["params"] = params
    return msg


def result_response(request_id: RequestId, result: JsonValue) -> JsonObject:
    return {"id": request_id, "result": result}


def error_response(request_id: RequestId, code: int, message: str) -> JsonObject:
    return {"id": request_id, "error": {"code": code, "message": message}}

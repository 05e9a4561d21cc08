"""The Responses API's Server-Sent Events, as codex 0.169.0 reads them.

A text reply is created → output_item.added → output_text.delta… → output_item.done →
completed; a tool call sends the same function_call item in added and done. The shapes
are the ones measured in docs/protocol-notes.md, "The mock model". Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

TEXT_DELTA_CHARS = 8
_USAGE = {
    "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def sse_frame(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start:start + size]


def text_frames(text: str, n: int, delta_size: int = TEXT_DELTA_CHARS) -> list[bytes]:
    resp_id, msg_id = f"resp_{n}", f"msg_{n}"
    message: dict[str, Any] = {"type": "message", "role": "assistant", "id": msg_id}
    frames = [
        sse_frame({"type": "response.created", "response": {"id": resp_id}}),
        sse_frame({"type": "response.output_item.added", "output_index": 0,
                   "item": {**message, "content": []}}),
    ]
    frames += [
        sse_frame({"type": "response.output_text.delta", "item_id": msg_id, "output_index": 0,
                   "content_index": 0, "delta": delta})
        for delta in _chunks(text, delta_size)
    ]
    frames += [
        sse_frame({"type": "response.output_item.done", "output_index": 0,
                   "item": {**message, "content": [{"type": "output_text", "text": text}]}}),
        sse_frame({"type": "response.completed", "response": {"id": resp_id, "usage": _USAGE}}),
    ]
    return frames


def exec_command_frames(cmd: str, n: int, *, escalate: bool) -> list[bytes]:
    args: dict[str, Any] = {"cmd": cmd}
    if escalate:
        args["sandbox_permissions"] = "require_escalated"
        args["justification"] = f"Mock model wants to run: {cmd}"
    return function_call_frames("exec_command", json.dumps(args), n)


def function_call_frames(name: str, arguments: str, n: int, *,
                         namespace: str | None = None) -> list[bytes]:
    """A call of tool `name` (in an MCP `namespace`, as codex offers MCP tools)."""
    item: dict[str, Any] = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                            "name": name, "arguments": arguments}
    if namespace is not None:
        item["namespace"] = namespace
    return [
        sse_frame({"type": "response.created", "response": {"id": f"resp_{n}"}}),
        sse_frame({"type": "response.output_item.added", "output_index": 0, "item": item}),
        sse_frame({"type": "response.output_item.done", "output_index": 0, "item": item}),
        sse_frame({"type": "response.completed",
                   "response": {"id": f"resp_{n}", "usage": _USAGE}}),
    ]

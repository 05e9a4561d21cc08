"""The benchmark baseline: the least a client can do to say one thing into a Codex thread.

    python bench/raw_say.py --url ws://127.0.0.1:PORT --thread THREAD_ID "hello"

initialize/initialized, thread/resume {excludeTurns:true}, turn/start, stream the deltas
to stderr, wait for the turn/completed with our turn id, print the reply to stdout.
Nothing but the stdlib and `websockets`, so any overhead codexbridge adds over this
script is codexbridge's own. `await raw_say(url, thread_id, text)` does the same in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any, TextIO

from websockets.asyncio.client import ClientConnection, connect


class RawSayError(Exception):
    pass


async def _call(ws: ClientConnection, request_id: int, method: str,
                params: dict[str, Any], notes: list[dict[str, Any]]) -> Any:
    """Send one request; keep notifications that arrive before its answer in `notes`."""
    await ws.send(json.dumps({"id": request_id, "method": method, "params": params}))
    while True:
        message = json.loads(await ws.recv())
        if message.get("id") == request_id and "method" not in message:
            if "error" in message:
                raise RawSayError(f"{method}: {message['error'].get('message')}")
            return message.get("result")
        if "id" in message and "method" in message:
            await _refuse(ws, message)
        else:
            notes.append(message)


async def _refuse(ws: ClientConnection, request: dict[str, Any]) -> None:
    # Never leave a server request unanswered; the baseline does not do approvals.
    answer: dict[str, Any] = {"id": request["id"]}
    if request["method"] == "item/commandExecution/requestApproval":
        answer["result"] = {"decision": "decline"}
    else:
        answer["error"] = {"code": -32603, "message": "raw_say answers no server requests"}
    await ws.send(json.dumps(answer))


def _turn_id(message: dict[str, Any]) -> str | None:
    params = message.get("params") or {}
    turn = params.get("turn")
    if isinstance(turn, dict):
        return turn.get("id")
    return params.get("turnId")


async def raw_say(url: str, thread_id: str, text: str, *, stream: TextIO | None = None,
                  timeout: float = 120.0) -> str:
    """Say `text` into `thread_id` on the app-server at `url`; return the final reply."""
    async def run() -> str:
        async with connect(url, compression=None, max_size=None, ping_interval=None) as ws:
            notes: list[dict[str, Any]] = []
            await _call(ws, 1, "initialize", {
                "clientInfo": {"name": "raw_say", "version": "0.0.0"},
                "capabilities": {"experimentalApi": False}}, notes)
            await ws.send(json.dumps({"method": "initialized"}))
            await _call(ws, 2, "thread/resume", {"threadId": thread_id, "excludeTurns": True},
                        notes)
            notes.clear()  # anything older than our turn/start is not ours
            result = await _call(ws, 3, "turn/start", {
                "threadId": thread_id,
                "input": [{"type": "text", "text": text, "text_elements": []}]}, notes)
            turn_id = result["turn"]["id"]
            reply: str | None = None
            pending = iter(notes)  # events that raced ahead of the turn/start answer
            while True:
                message = next(pending, None)
                if message is None:
                    message = json.loads(await ws.recv())
                    if "id" in message and "method" in message:
                        await _refuse(ws, message)
                        continue
                if _turn_id(message) != turn_id:
                    continue
                method, params = message.get("method"), message.get("params") or {}
                if method == "item/agentMessage/delta" and stream is not None:
                    stream.write(params.get("delta", ""))
                    stream.flush()
                elif method == "item/completed" and params["item"].get("type") == "agentMessage":
                    reply = params["item"].get("text", "")
                elif method == "turn/completed":
                    turn = params["turn"]
                    if turn.get("status") != "completed":
                        error = (turn.get("error") or {}).get("message", "")
                        raise RawSayError(f"turn {turn.get('status')}: {error}")
                    return reply or ""
    return await asyncio.wait_for(run(), timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", required=True, help="ws://127.0.0.1:PORT")
    parser.add_argument("--thread", required=True, help="thread id")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("text")
    args = parser.parse_args(argv)
    try:
        reply = asyncio.run(raw_say(args.url, args.thread, args.text, stream=sys.stderr,
                                    timeout=args.timeout))
    except (TimeoutError, RawSayError, OSError) as exc:
        print(f"\nraw_say: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    print(file=sys.stderr)
    print(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())

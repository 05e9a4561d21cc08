"""A plain JSON-RPC stdio MCP server (stdlib only, no SDK) that offers one slow tool as an
MCP task, and logs every message it receives and sends.

    python task_server.py            # env: TASK_LOG (required), TASK_SUPPORT, TASK_MODE

It speaks both eras the pinned Claude Code can pick:

* modern (2026-07-28): `server/discover`, per-request `_meta` envelope. Tasks are the
  `io.modelcontextprotocol/tasks` extension (SEP-2663): the server advertises it under
  `capabilities.extensions`; when a `tools/call` carries the extension in
  `_meta["io.modelcontextprotocol/clientCapabilities"].extensions`, the server may answer
  with a task handle `{"resultType": "task", "taskId", "status": "working", ...}`; the
  client polls `tasks/get` (the final answer carries `result`) and may `tasks/cancel`.
* legacy (2025-11-25 `initialize`): `capabilities.tasks` and a tool with
  `execution.taskSupport`; a `tools/call` with a `task` param gets
  `{"task": {...}}` (CreateTaskResult), then `tasks/get`, `tasks/result`, `tasks/cancel`.

The tool `slow_ask {"text": str, "seconds": number}` stands for a blocking
`codex_message_send wait: true`: it answers `CODEX_DONE: <text>` after `seconds`.

TASK_MODE: `auto` (default: a task whenever the client says it takes one), `never`
(always answer inline). TASK_SUPPORT: the tool's `execution.taskSupport`
(`optional` default, `required`, `forbidden`, or `none` to leave it out).

Every line of TASK_LOG is `{"t": epoch, "dir": "c2s"|"s2c"|"event", "msg": …}`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import uuid
from typing import Any

MODERN = "2026-07-28"
TASKS_EXT = "io.modelcontextprotocol/tasks"
CAPS_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO = {"name": "tasks-spike", "version": "0.1"}
POLL_MS = 500

_out_lock = threading.Lock()
_log_lock = threading.Lock()
_log = open(os.environ["TASK_LOG"], "a", encoding="utf-8")  # noqa: SIM115


def log(direction: str, msg: Any) -> None:
    with _log_lock:
        _log.write(json.dumps({"t": time.time(), "dir": direction, "msg": msg}) + "\n")
        _log.flush()


def send(msg: dict[str, Any]) -> None:
    log("s2c", msg)
    with _out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def answer(req_id: Any, result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": req_id, "result": result})


def error(req_id: Any, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}})


def now_iso() -> str:
    ms = int(time.time() * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{ms:03d}Z"


class Work:
    """One run of the slow tool: done after `seconds`, or cancelled."""

    def __init__(self, text: str, seconds: float) -> None:
        self.text = text
        self.seconds = seconds
        self.started = time.time()
        self.created = now_iso()
        self.cancelled = threading.Event()
        self.finished_at: float | None = None

    def result(self) -> dict[str, Any]:
        text = f"CODEX_DONE: {self.text} (worked {self.seconds:g}s)"
        return {"content": [{"type": "text", "text": text}], "isError": False}

    def status(self) -> str:
        if self.cancelled.is_set():
            return "cancelled"
        if time.time() - self.started >= self.seconds:
            if self.finished_at is None:
                self.finished_at = time.time()
                log("event", {"event": "work_finished", "text": self.text})
            return "completed"
        return "working"


class Server:
    def __init__(self) -> None:
        self.era = "unknown"
        self.tasks: dict[str, Work] = {}
        self.inline: dict[Any, Work] = {}  # request id → inline (non-task) call
        self.mode = os.environ.get("TASK_MODE", "auto")
        self.support = os.environ.get("TASK_SUPPORT", "optional")

    # -- capabilities and the tool ---------------------------------------------------
    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {"tools": {"listChanged": False}}
        if self.era == "modern":
            caps["extensions"] = {TASKS_EXT: {}}
        else:
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return caps

    def tool(self) -> dict[str, Any]:
        tool: dict[str, Any] = {
            "name": "slow_ask",
            "description": "Ask Codex and wait for its answer (stands for codex_message_send "
                           "wait:true). Takes `seconds` to answer.",
            "inputSchema": {"type": "object", "properties": {
                "text": {"type": "string"}, "seconds": {"type": "number"}},
                "required": ["text"]},
        }
        if self.support != "none":
            tool["execution"] = {"taskSupport": self.support}
        return tool

    # -- tasks -----------------------------------------------------------------------
    def task_view(self, task_id: str, work: Work) -> dict[str, Any]:
        modern = self.era == "modern"
        view: dict[str, Any] = {"taskId": task_id, "status": work.status(),
                                "createdAt": work.created, "lastUpdatedAt": now_iso(),
                                "ttlMs" if modern else "ttl": 3_600_000,
                                "pollIntervalMs" if modern else "pollInterval": POLL_MS}
        return view

    def start_task(self, work: Work) -> str:
        task_id = f"task-{uuid.uuid4().hex[:12]}"
        self.tasks[task_id] = work
        log("event", {"event": "task_created", "taskId": task_id, "era": self.era})
        return task_id

    # -- dispatch --------------------------------------------------------------------
    def handle(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        req_id = msg.get("id")
        params = msg.get("params") or {}
        if method is None:
            return  # an answer to something we never asked
        if req_id is None:
            self.notification(method, params)
            return
        if method == "server/discover":
            self.era = "modern"
            answer(req_id, {"capabilities": self.capabilities(), "resultType": "complete",
                            "supportedVersions": [MODERN], "cacheScope": "private", "ttlMs": 0,
                            "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}})
        elif method == "initialize":
            self.era = "legacy"
            answer(req_id, {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                            "capabilities": self.capabilities(), "serverInfo": SERVER_INFO})
        elif method == "subscriptions/listen":
            # keep it open, as the SDK does; acknowledge like the SDK
            send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                  "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": req_id},
                             "notifications": {}}})
        elif method == "ping":
            answer(req_id, {})
        elif method == "tools/list":
            answer(req_id, self.done({"tools": [self.tool()]}))
        elif method in ("prompts/list", "resources/list", "resources/templates/list"):
            key = {"prompts/list": "prompts", "resources/list": "resources",
                   "resources/templates/list": "resourceTemplates"}[method]
            answer(req_id, self.done({key: []}))
        elif method == "tools/call":
            self.call(req_id, params)
        elif method == "tasks/get":
            self.tasks_get(req_id, params)
        elif method == "tasks/result":
            self.tasks_result(req_id, params)
        elif method == "tasks/cancel":
            self.tasks_cancel(req_id, params)
        elif method == "tasks/list":
            answer(req_id, {"tasks": [self.task_view(k, w) for k, w in self.tasks.items()]})
        else:
            error(req_id, -32601, f"method not found: {method}")

    def done(self, result: dict[str, Any]) -> dict[str, Any]:
        if self.era == "modern":
            result = {**result, "resultType": "complete",
                      "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}
        return result

    def notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            work = self.inline.get(params.get("requestId"))
            if work is not None:
                work.cancelled.set()
                log("event", {"event": "inline_call_cancelled",
                              "requestId": params.get("requestId")})

    def client_takes_tasks(self, params: dict[str, Any]) -> bool:
        if self.mode == "never":
            return False
        if self.era == "modern":
            caps = (params.get("_meta") or {}).get(CAPS_META) or {}
            return TASKS_EXT in (caps.get("extensions") or {})
        return "task" in params

    def call(self, req_id: Any, params: dict[str, Any]) -> None:
        args = params.get("arguments") or {}
        work = Work(str(args.get("text", "")), float(args.get("seconds", 20)))
        if self.client_takes_tasks(params):
            task_id = self.start_task(work)
            view = self.task_view(task_id, work)
            if self.era == "modern":
                answer(req_id, {"resultType": "task", **view})
            else:
                answer(req_id, {"task": view})
            return
        log("event", {"event": "inline_call_started", "requestId": req_id})
        self.inline[req_id] = work

        def run() -> None:
            if work.cancelled.wait(work.seconds):
                return  # cancelled: a cancelled request gets no answer
            log("event", {"event": "work_finished", "text": work.text})
            answer(req_id, self.done(work.result()))

        threading.Thread(target=run, daemon=True).start()

    def tasks_get(self, req_id: Any, params: dict[str, Any]) -> None:
        task_id = str(params.get("taskId"))
        work = self.tasks.get(task_id)
        if work is None:
            error(req_id, -32602, f"unknown task {task_id}")
            return
        view = self.task_view(task_id, work)
        if self.era == "modern" and view["status"] == "completed":
            view["result"] = work.result()
        answer(req_id, self.done(view))

    def tasks_result(self, req_id: Any, params: dict[str, Any]) -> None:
        task_id = str(params.get("taskId"))
        work = self.tasks.get(task_id)
        if work is None:
            error(req_id, -32602, f"unknown task {task_id}")
            return

        def run() -> None:  # blocks until the task is done, as the 2025-11-25 spec says
            while work.status() == "working":
                time.sleep(0.1)
            answer(req_id, {**work.result(), "_meta": {
                "io.modelcontextprotocol/related-task": {"taskId": task_id}}})

        threading.Thread(target=run, daemon=True).start()

    def tasks_cancel(self, req_id: Any, params: dict[str, Any]) -> None:
        task_id = str(params.get("taskId"))
        work = self.tasks.get(task_id)
        if work is None:
            error(req_id, -32602, f"unknown task {task_id}")
            return
        work.cancelled.set()
        log("event", {"event": "task_cancelled", "taskId": task_id})
        answer(req_id, self.done(self.task_view(task_id, work)))


def main() -> None:
    def on_signal(signum: int, _frame: object) -> None:
        log("event", {"event": "signal", "signum": signum})
        os._exit(0)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    log("event", {"event": "started", "pid": os.getpid(),
                  "env": {k: v for k, v in os.environ.items()
                          if k.startswith(("CLAUDE", "MCP", "TASK"))}})
    server = Server()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            log("c2s", line)
            continue
        log("c2s", msg)
        if isinstance(msg, dict):
            server.handle(msg)
    log("event", {"event": "stdin_closed"})


if __name__ == "__main__":
    main()

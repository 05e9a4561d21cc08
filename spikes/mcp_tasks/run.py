"""Reproduce the MCP Tasks measurement against the pinned Claude Code (offline, loopback).

    TMPDIR=… flock /work/heavy.lock .venv/bin/python -m spikes.mcp_tasks.run SCENARIO

SCENARIO: p | p-legacy | tui | tui-cancel | tui-legacy | tui-notask | sdk
  p          claude -p calls slow_ask (5 s) on task_server.py (modern era)
  p-legacy   the same with MCP_PROTOCOL_NEGOTIATION=legacy (initialize handshake)
  tui        interactive claude in tmux calls slow_ask (20 s): task? background? result?
  tui-cancel as tui, then the model calls TaskStop on the task: is tasks/cancel sent?
  tui-legacy tui with MCP_PROTOCOL_NEGOTIATION=legacy
  tui-notask tui with TASK_MODE=never and CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS=5000
  sdk        claude -p calls echo on the `mcp` SDK's own server behind tap.py

Prints a timeline (seconds from the tool call) of the server's log and the model calls,
and leaves everything in the printed ROOT directory (task.jsonl, debug.log).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codexbridge.host.binaries import pinned_claude
from tests.support.claude_env import offline_env, seed_interactive
from tests.support.mock_claude import MockMessages, ToolUse, conversation

HERE = Path(__file__).resolve().parent
TASK_ID_RE = re.compile(r'task_id "([^"]+)"')


def stop_responder(body, n):
    """tui-cancel: once a tool result says the call went to the background, stop it."""
    msgs = conversation(body)
    if not msgs or msgs[-1].get("role") != "user":
        return None
    text = json.dumps(msgs[-1].get("content"))
    found = TASK_ID_RE.search(text.replace('\\"', '"'))
    if found and "moved to the background" in text:
        return ToolUse("TaskStop", {"task_id": found.group(1)})
    return None


def main() -> None:
    scenario = sys.argv[1] if len(sys.argv) > 1 else "tui"
    root = Path(tempfile.mkdtemp(prefix=f"mcptasks-{scenario}-"))
    log = root / "task.jsonl"
    server_env = {"TASK_LOG": str(log)}
    claude_env: dict[str, str] = {}
    if scenario.endswith("legacy"):
        claude_env["MCP_PROTOCOL_NEGOTIATION"] = "legacy"
    if scenario == "tui-notask":
        server_env["TASK_MODE"] = "never"
        claude_env["CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS"] = "5000"
    if scenario == "sdk":
        name, tool, args = "sdk", "mcp__sdk__echo", {"text": "hi"}
        cmd = [str(HERE / "tap.py"), str(log), "--", sys.executable, str(HERE / "sdk_server.py")]
    else:
        name, tool = "t", "mcp__t__slow_ask"
        args = {"text": "hello", "seconds": 5 if scenario.startswith("p") else 20}
        cmd = [str(HERE / "task_server.py")]
    cfg = {"mcpServers": {name: {"type": "stdio", "command": sys.executable, "args": cmd,
                                 "env": server_env}}}
    (root / "mcp.json").write_text(json.dumps(cfg))
    proj = root / "proj"
    proj.mkdir()
    home = root / "home"
    (home / ".claude").mkdir(parents=True)
    prompt = f"CALL_TOOL {tool} {json.dumps(args)}"
    flags = ["--mcp-config", str(root / "mcp.json"), "--strict-mcp-config",
             "--allowedTools", f"mcp__{name}", "TaskStop", "--permission-mode", "default",
             "--debug-file", str(root / "debug.log")]
    responder = stop_responder if scenario == "tui-cancel" else None
    with MockMessages(responder=responder) as mock:
        t0 = time.time()
        if scenario.startswith(("p", "sdk")):
            env = offline_env(home, home / ".claude", mock.url, extra=claude_env)
            proc = subprocess.run([str(pinned_claude()), "-p", prompt, "--output-format", "json",
                                   *flags], cwd=proj, env=env, capture_output=True, text=True,
                                  timeout=120, stdin=subprocess.DEVNULL, check=False)
            print("exit", proc.returncode, "after", round(time.time() - t0, 2), "s")
            print("result:", (json.loads(proc.stdout.splitlines()[-1]) or {}).get("result")
                  if proc.stdout.strip() else proc.stderr[-500:])
        else:
            run_tui(root, proj, home, mock, claude_env, flags, prompt, scenario)
        report(t0, log, mock)
    print("ROOT", root)


def run_tui(root: Path, proj: Path, home: Path, mock: MockMessages, claude_env: dict[str, str],
            flags: list[str], prompt: str, scenario: str) -> None:
    seed_interactive(home / ".claude", proj)
    env = offline_env(home, home / ".claude", mock.url, term="xterm-256color", extra=claude_env)
    sock = f"mcptasks-{os.getpid()}"

    def tmux(*a: str) -> str:
        return subprocess.run(["tmux", "-L", sock, *a], env=env, capture_output=True,
                              text=True, timeout=20, check=False).stdout

    tmux("new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "-c", str(proj),
         str(pinned_claude()), *flags)
    pid = int(tmux("display-message", "-p", "-t", "main", "#{pane_pid}").strip())
    try:
        deadline = time.time() + 30
        while "❯" not in tmux("capture-pane", "-p", "-t", "main") and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # let the MCP server connect
        tmux("send-keys", "-t", "main", "-l", prompt)
        time.sleep(0.5)
        tmux("send-keys", "-t", "main", "Enter")
        wait = 40 if scenario != "tui-notask" else 35
        end = time.time() + wait
        while time.time() < end:
            time.sleep(1)
        (root / "screen.txt").write_text(tmux("capture-pane", "-p", "-t", "main", "-S", "-200"))
    finally:
        for sig in (15, 9):
            try:
                os.kill(pid, sig)
                time.sleep(1)
            except ProcessLookupError:
                break
        tmux("kill-server")


def report(t0: float, log: Path, mock: MockMessages) -> None:
    rows: list[tuple[float, str]] = []
    if log.exists():
        for line in log.read_text().splitlines():
            rec = json.loads(line)
            msg = rec["msg"]
            if rec["dir"] == "event":
                what = f"event {msg.get('event')} {msg.get('taskId', '')}"
            elif isinstance(msg, dict):
                keys = msg.get("method") or (
                    "result " + json.dumps(msg.get("result"))[:160] if "result" in msg
                    else "error " + json.dumps(msg.get("error")))
                params = msg.get("params") or {}
                if msg.get("method") in ("initialize", "server/discover", "tools/call"):
                    caps = params.get("capabilities") or (params.get("_meta") or {}).get(
                        "io.modelcontextprotocol/clientCapabilities")
                    keys += f" clientCaps={json.dumps(caps)}"
                    if "task" in params:
                        keys += f" task={json.dumps(params['task'])}"
                what = f"{rec['dir']} {keys}"
            else:
                what = f"{rec['dir']} {msg!r}"
            rows.append((rec["t"], what))
    for r in mock.model_calls:
        rows.append((r.at, f"MODEL#{r.index} tail: {r.tail_text()[-260:]!r}"))
    for t, what in sorted(rows):
        print(f"{t - t0:8.2f}  {what}")


if __name__ == "__main__":
    main()

"""A logging relay: `python tap.py LOG -- CMD ARGS…` runs CMD as Claude Code's stdio MCP
server and writes every line each way to LOG (one JSON object a line:
{"t": wall time, "dir": "c2s"|"s2c", "msg": <the JSON-RPC message>}). Used to see what
the `mcp` SDK's own server negotiates with the pinned Claude Code."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time


def main() -> None:
    log_path = sys.argv[1]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lock = threading.Lock()
    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - open for the relay's life

    def note(direction: str, line: bytes) -> None:
        try:
            msg: object = json.loads(line)
        except ValueError:
            msg = line.decode("utf-8", "replace")
        with lock:
            log.write(json.dumps({"t": time.time(), "dir": direction, "msg": msg}) + "\n")
            log.flush()

    def pump_out() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            note("s2c", line)
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    threading.Thread(target=pump_out, daemon=True).start()
    assert child.stdin is not None
    try:
        for line in sys.stdin.buffer:
            note("c2s", line)
            child.stdin.write(line)
            child.stdin.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        try:  # noqa: SIM105 - the child may be gone
            child.stdin.close()
        except BrokenPipeError:
            pass
        try:
            child.wait(timeout=3)
        except subprocess.TimeoutExpired:
            child.kill()


if __name__ == "__main__":
    main()

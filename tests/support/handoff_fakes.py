"""Fakes the handoff tests share: the scripted app-server with `thread/inject_items`,
listener records as the hook writes them, a Claude session's work, a thread's items."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.messages.listeners import record_listener
from tests.support import payloads
from tests.support.memory_appserver import MemoryAppServer
from tests.support.transcripts import SESSION, Transcript

Message = dict[str, Any]
T1, T2 = payloads.TURN_1, payloads.TURN_2


class Server(MemoryAppServer):
    """The scripted app-server, with `thread/inject_items` (answers {} like codex)."""

    inject_error: str | None = None

    def _thread_inject_items(self, rid: Any, params: Message) -> list[Message]:
        if self.inject_error:
            return [{"id": rid, "error": {"code": -32600, "message": self.inject_error}}]
        return [{"id": rid, "result": {}}]

    def injected(self) -> list[str]:
        return [i["content"][0]["text"] for r in self.requests("thread/inject_items")
                for i in r["params"]["items"]]


def dead_pid() -> int:
    out = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


def hook_session(project: str, transcript: Path | None, name: str = "web",
                 session: str = SESSION, pid: int | None = None) -> None:
    os.environ["CLAUDE_PID"] = str(pid if pid is not None else dead_pid())
    try:
        record_listener(inbox_dir(), name, {"cwd": project, "session_id": session,
                                            "transcript_path": str(transcript) if transcript
                                            else None}, "hook")
    finally:
        del os.environ["CLAUDE_PID"]


def claude_work(tmp_path: Path) -> Transcript:
    t = Transcript(cwd=str(tmp_path))
    t.prompt("make the parser strict")
    t.tool("Bash", {"command": "make check-all"}, "SECRET TOOL OUTPUT")
    t.reply("Done: the parser rejects trailing commas now")
    return t


def codex_items() -> list[Message]:
    """Newest first, as thread/items/list answers with sortDirection desc."""
    return list(reversed([
        payloads.item_entry(T1, payloads.user_message("human asks codex", "u1")),
        payloads.item_entry(T1, payloads.command_item("echo CODEX TOOL OUTPUT")),
        payloads.item_entry(T1, payloads.agent_message("codex did it", "m1"))]))

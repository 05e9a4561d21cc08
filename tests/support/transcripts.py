"""Claude Code transcripts for tests, in the shape 2.1.332 writes (one JSON record a
line; measured in docs/protocol-notes.md, "Transcripts"): prompts, a tool call and its
result, hook feedback (`isMeta`), bookkeeping records, uuid → parentUuid links."""

from __future__ import annotations

import json
import uuid as uuidlib
from pathlib import Path
from typing import Any

SESSION = "5e55a0a1-0000-4000-8000-000000000001"


class Transcript:
    """Builds records in order, each linked to the previous one (`parentUuid`)."""

    def __init__(self, session: str = SESSION, cwd: str = "/home/dev/project") -> None:
        self.session = session
        self.cwd = cwd
        self.records: list[dict[str, Any]] = []
        self.last: str | None = None

    def _add(self, rec: dict[str, Any], *, parent: str | bool | None = True) -> str:
        uid = str(uuidlib.uuid4())
        base = {"parentUuid": self.last if parent is True else (parent or None),
                "isSidechain": False, "sessionId": self.session, "cwd": self.cwd,
                "uuid": uid, "timestamp": "2026-12-01T10:00:00.000Z", "version": "2.1.332"}
        self.records.append({**base, **rec})
        self.last = uid
        return uid

    def bookkeeping(self) -> None:
        self.records.append({"type": "queue-operation", "operation": "enqueue",
                             "sessionId": self.session, "content": "x"})
        self._add({"type": "attachment", "attachment": {"type": "date", "date": "2026-12-01"}})

    def prompt(self, text: str, **extra: Any) -> str:
        return self._add({"type": "user", "message": {"role": "user", "content": text},
                          "promptId": "p", **extra})

    def reply(self, text: str, **extra: Any) -> str:
        return self._add({"type": "assistant", "message": {
            "role": "assistant", "model": "claude-mock", "id": "msg_x",
            "content": [{"type": "text", "text": text}]}, **extra})

    def tool(self, name: str, args: dict[str, Any], output: str) -> tuple[str, str]:
        call = self._add({"type": "assistant", "message": {
            "role": "assistant", "model": "claude-mock", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": name, "input": args}]}})
        result = self._add({"type": "user", "toolUseResult": {"stdout": output},
                            "message": {"role": "user", "content": [
                                {"tool_use_id": "toolu_1", "type": "tool_result",
                                 "content": output, "is_error": False}]}})
        return call, result

    def hook_feedback(self, text: str) -> str:
        return self._add({"type": "user", "isMeta": True,
                          "message": {"role": "user", "content": f"Stop hook feedback:\n{text}"}})

    def lines(self) -> list[bytes]:
        return [json.dumps(r).encode() + b"\n" for r in self.records]

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(self.lines()))
        return path

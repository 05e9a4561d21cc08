"""The user's path, end to end, at its defaults: set up the way README and SETUP.md say
(`codexbridge setup claude`, `codexbridge setup codex`, plain `codex -C ~/project` on
codex's own daemon, `claude` in the project), both real TUIs in tmux, the two mock models
on loopback (`tests/support/world.py`). Nothing is switched off: live delivery, the
plugin's hooks and watcher, the MCP tools as setup registers them.

A journey asserts what the human sees (both TUIs' screens) and what the agents see (the
mock models' requests). One world per module: its TUIs keep running from test to test,
as a user's would.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.binaries import require_claude, require_codex, require_tmux
from tests.support.helpers import wait_until
from tests.support.mock_claude import RecordedRequest, peer_answer
from tests.support.tmux_tui import ClaudeTUI, CodexTUI, approve_claude
from tests.support.world import World

FIRST = "hello from the human"


@dataclass
class Journey:
    """One user's machine with both agents running, and what a test needs to watch it."""

    world: World
    codex: dict[str, CodexTUI] = field(default_factory=dict)
    claude: dict[str, ClaudeTUI] = field(default_factory=dict)
    threads: dict[str, str] = field(default_factory=dict)

    # -- the user's commands -----------------------------------------------------------

    def cb(self, *args: str, project: str = "project", stdin: str | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`codexbridge ARGS` typed in a terminal in the project."""
        return self.world.run("codexbridge", *args, cwd=self.world.projects[project],
                              stdin=stdin, timeout=timeout)

    def cb_json(self, *args: str, project: str = "project") -> dict[str, Any]:
        done = self.cb(*args, "--json", project=project)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        data = json.loads(done.stdout)
        assert isinstance(data, dict)
        return data

    # -- the TUIs ----------------------------------------------------------------------

    def open_codex(self, project: str = "project") -> CodexTUI:
        """`codex -C ~/project`, and the human's first message (a thread exists only
        after it)."""
        tui = self.world.codex_tui(project)
        tui.wait_ready(60)
        tui.send(f"{FIRST} in {project}")
        tui.wait_for_text(f"MOCK REPLY: {FIRST} in {project}", 60)
        self.codex[project] = tui
        listed = self.cb_json("talk", "list", project=project)
        mine = [t["id"] for t in listed["threads"]
                if t.get("cwd") == str(self.world.projects[project])]
        assert len(mine) == 1, listed
        self.threads[project] = mine[0]
        return tui

    def open_claude(self, project: str = "project", *args: str) -> ClaudeTUI:
        """`claude` in ~/project; ready once its prompt shows and the plugin's
        SessionStart hook has registered the session as its project's listener."""
        tui = self.world.claude_tui(project, *args)
        tui.wait_ready(60)
        self.claude[project] = tui
        wait_until(lambda: self.listener(project, tui.pid), 30,
                   f"the Claude session in {project} to listen", lambda: tui.capture())
        return tui

    def listener(self, project: str = "project", pid: int | None = None) -> str | None:
        """The mailbox the Claude session of `project` listens on (its pid, if given)."""
        inbox = self.world.bridge_home / "inbox"
        for path in sorted(inbox.glob("*.session.json")) if inbox.exists() else []:
            try:
                rec = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if rec.get("cwd") == str(self.world.projects[project]) and (
                    pid is None or rec.get("claude_pid") == str(pid)):
                return str(rec["name"])
        return None

    def session(self, project: str = "project") -> str:
        """The session id of the Claude running in `project` (from its listener)."""
        name = self.listener(project, self.claude[project].pid)
        assert name is not None, project
        path = self.world.bridge_home / "inbox" / f"{name}.session.json"
        return str(json.loads(path.read_text())["session_id"])

    def claude_types(self, text: str, project: str = "project") -> None:
        self.claude[project].send(text)

    def claude_allows(self, project: str = "project", unless: str | None = None) -> str:
        """The human answers Claude Code's permission prompt with Yes (if it asks:
        `unless` shows the action ran without asking)."""
        return approve_claude(self.claude[project], unless=unless)

    def codex_asks(self, question: str, project: str = "project") -> str:
        """The human's Codex turn calls `claude_message_send` with expectReply (Codex asks
        the human first: `setup codex` leaves writing tools to default_tools_approval_mode);
        Claude, idle at its prompt, gets it at once (live). The request's id."""
        since = self.claude_mark()
        self.codex[project].send("MCP_CALL: claude_message_send " + json.dumps(
            {"text": question, "expectReply": True}))
        self.codex[project].answer(
            'Allow the codexbridge MCP server to run tool "claude_message_send"', "Enter")
        asked = self.claude_saw(question, since)
        request = re.search(r"request (req_\d+_[a-z0-9]+)", asked.tail_text())
        assert request is not None, asked.tail_text()
        return request.group(1)

    # -- what happened -----------------------------------------------------------------

    def record(self, delivery_id: str) -> dict[str, Any]:
        path = self.world.bridge_home / "deliveries" / f"{delivery_id}.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        assert isinstance(data, dict)
        return data

    def records(self) -> list[dict[str, Any]]:
        folder = self.world.bridge_home / "deliveries"
        out = []
        for path in sorted(folder.glob("req_*.json")) if folder.exists() else []:
            try:
                out.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
        return sorted(out, key=lambda r: r["created_at"])

    def final(self, delivery_id: str, timeout: float = 60) -> dict[str, Any]:
        """The record once it is final (waiting on the file: no command is run)."""
        def probe() -> dict[str, Any] | None:
            rec = self.record(delivery_id)
            return rec if rec["state"] in ("delivered", "failed", "orphaned") else None
        return wait_until(probe, timeout, f"delivery {delivery_id} to end",
                          lambda: self.explain(f"delivery {delivery_id} to end"))

    def logs(self) -> str:
        folder = self.world.bridge_home / "logs"
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(folder.glob("*.log"))) if folder.exists() else ""

    def claude_requests(self, since: int = 0) -> list[RecordedRequest]:
        return [r for r in self.world.claude_mock.model_calls if r.index >= since]

    def claude_mark(self) -> int:
        return len(self.world.claude_mock.requests)

    def claude_saw(self, needle: str, since: int = 0, timeout: float = 60) -> RecordedRequest:
        """The first model request of Claude's (from `since`) that brings `needle` new
        (in what was added since Claude last spoke: a user turn, a tool result, or the
        `system` entry mail arrives as during a tool call)."""
        found = self.world.claude_mock.wait_for(
            lambda r: r.index >= since and needle in fresh_text(r), timeout)
        assert found is not None, self.explain(needle, since)
        return found

    def explain(self, what: str, since: int = 0) -> str:
        """Everything a failing journey needs said: screens, requests, records, logs (and,
        with CB_JOURNEY_KEEP=DIR, a copy of the whole state to look at afterwards)."""
        import os
        import shutil

        keep = os.environ.get("CB_JOURNEY_KEEP")
        if keep:
            for part in (".codex-bridge", ".claude/projects"):
                src = self.world.home / part
                if src.exists():
                    shutil.copytree(src, Path(keep) / part, dirs_exist_ok=True,
                                    ignore_dangling_symlinks=True,
                                    ignore=shutil.ignore_patterns("*.sock"))
        inbox = self.world.bridge_home / "inbox"
        files = {p.name: p.read_text(errors="replace")[-600:]
                 for p in sorted(inbox.glob("*")) if p.is_file()} if inbox.exists() else {}
        return "\n".join([
            f"waiting for: {what}",
            *(f"== codex TUI {k}\n{self.screen(t)[-2500:]}" for k, t in self.codex.items()),
            *(f"== claude TUI {k}\n{self.screen(t)[-2500:]}" for k, t in self.claude.items()),
            "== claude requests", *(r.tail_text()[-400:] for r in self.claude_requests(since)),
            "== records", *(json.dumps(r)[:800] for r in self.records()[-6:]),
            "== inbox", json.dumps(files, indent=1)[:4000], self.logs(),
            "== handling", *(f"{p.name}: {p.read_text()[:600]}" for p in sorted(
                (self.world.bridge_home / "conversations" / "handling").glob("*.json"))),
            "== transcripts", *self.transcript_tail()])

    def transcript_has(self, *words: str) -> bool:
        """Does one of Claude's transcripts hold a record with all of `words`?"""
        return any(all(w in line for w in words)
                   for path in (self.world.home / ".claude" / "projects").glob("*/*.jsonl")
                   for line in path.read_text(errors="replace").splitlines())

    def transcript_tail(self, lines: int = 40) -> list[str]:
        """The last records of each Claude transcript: type, and the start of the text."""
        out = []
        for path in sorted((self.world.home / ".claude" / "projects").glob("*/*.jsonl")):
            out.append(f"-- {path.name}")
            for raw in path.read_text(errors="replace").splitlines()[-lines:]:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                text = json.dumps(rec.get("message") or rec.get("attachment")
                                  or rec.get("content") or "")[:160]
                out.append(f"{rec.get('type')}/{rec.get('subtype') or ''} {text}")
        return out

    def codex_user_texts(self) -> list[str]:
        return [c.user_text or "" for c in self.world.codex_mock.model_calls]

    def on_screen(self, tui: CodexTUI | ClaudeTUI, text: str, timeout: float = 60) -> str:
        """Until `text` shows in the TUI (words compared, not layout); the screen."""
        return wait_until(lambda: self.screen(tui) if one_line(text) in one_line(
            self.screen(tui)) else None, timeout, f"{text!r} on screen",
            lambda: self.explain(f"{text!r} on screen"))

    def screen(self, tui: CodexTUI | ClaudeTUI) -> str:
        return "\n".join(line.rstrip() for line in tui.capture(scrollback=True).splitlines())


@contextmanager
def journey_world(projects: tuple[str, ...] = ("project", "other"), *,
                  codex_config: str = "") -> Iterator[Journey]:
    """The world of README's "Use it for real": set up, codex's TUI on its daemon with
    the human's first message, Claude Code in the project. `codex_config`: lines put
    first in codex's config.toml (a setting under test)."""
    require_tmux()
    world = World(require_codex(), require_claude(), projects=projects,
                  responder=peer_answer).start()
    try:
        if codex_config:
            config = world.codex_home / "config.toml"
            config.write_text(codex_config + config.read_text(encoding="utf-8"),
                              encoding="utf-8")
        world.setup()
        j = Journey(world)
        j.open_codex("project")
        j.open_claude("project")
        yield j
    finally:
        world.stop()


@pytest.fixture(scope="module")
def journey() -> Iterator[Journey]:
    """One world per module: its TUIs keep running from test to test, as a user's do."""
    with journey_world() as j:
        yield j


def fresh_text(req: RecordedRequest) -> str:
    """The text a request adds since the model last spoke, system entries included."""
    msgs = [m for m in (req.body or {}).get("messages", []) if isinstance(m, dict)]
    tail: list[dict[str, Any]] = []
    for msg in reversed(msgs):
        if msg.get("role") == "assistant":
            break
        tail.insert(0, msg)
    parts: list[str] = []
    for msg in tail:
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (
            content if isinstance(content, list) else [])
        for block in blocks:
            if not isinstance(block, dict):
                continue
            inner = block.get("content")
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(inner, str):
                parts.append(inner)
            elif isinstance(inner, list):
                parts.extend(str(b.get("text", "")) for b in inner if isinstance(b, dict))
    return "\n".join(parts)


def one_line(text: str) -> str:
    """A TUI wraps long lines: compare words, not layout."""
    return re.sub(r"\s+", " ", text)


def project_dir(j: Journey, project: str = "project") -> Path:
    return j.world.projects[project]

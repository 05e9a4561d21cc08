"""A Claude Code session as a handoff source: its transcript, read since a watermark.

The transcript is `$CLAUDE_CONFIG_DIR/projects/<slug>/<session>.jsonl`, one JSON record
a line; the Stop hook records its path (`transcript_path`) in the mailbox's listener
record, so nothing here guesses where it is. Measured on Claude Code 2.1.332
(docs/protocol-notes.md, "Transcripts"; docs/handoff.md, "What crosses"):

* `user` records are the human's prompts only when the human wrote them: typed at the
  prompt (also while a turn ran) they carry `origin.kind: "human"`; the `-p` prompt
  has no `origin` and `turnOrigin: "sdk"`. Everything else never crosses, so nothing
  Codex sent comes back to it and nothing is labelled as the human that the human did
  not say: tool output (`toolUseResult`, a `tool_result` block), hook feedback
  (`isMeta`: a Stop-hook block carrying mail, with `rowSource: "hook"`), mail pushed
  live (`isMeta`, `origin.kind: "peer"` with our `msg_id`, text opening "Another
  Claude session sent a message:"), a watcher's wake (NOT `isMeta`: `origin.kind:
  "task-notification"`, `promptSource: "system"`, text opening `<task-notification>`),
  and any other origin that is not the human's.
* `assistant` records hold the model's `message`; only its `text` blocks cross, and
  the `file_path` of its Edit / Write / MultiEdit / NotebookEdit calls (names only).
* Records link by `uuid` → `parentUuid` (`logicalParentUuid` across a compaction). A
  rewind leaves the abandoned branch in the file, so messages off the path from the
  last message back to the root are dropped — unless that path is broken, when file
  order is kept (dropping messages on a guess would be silent loss).
* `isSidechain` records are a subagent's own conversation: not the session's.

The watermark is the uuid of the last message packed. `parse` is pure (bytes lines in);
`read_transcript` opens the file. Memory stays at the messages after the mark plus one
uuid → parent entry per record: tool output is parsed and dropped line by line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..host.jsonfile import loads_json
from ..host.text import writable
from .messages import CLAUDE, Said, SourceRead, Stats, source_key

ROLES = ("user", "assistant")
# Every record type seen in 2.1.332 transcripts (and a few older ones): anything else
# is counted as unknown, the canary's evidence that the format moved.
KNOWN_TYPES = frozenset({
    "user", "assistant", "attachment", "system", "summary", "queue-operation",
    "api-request", "api-request-shape", "api-request-blob", "atis-latch", "last-prompt",
    "cost-state", "mode", "tools-used", "file-history-snapshot", "custom-title",
    "agent-name", "tag", "pr-link", "progress",
    "permission-mode",  # the session's permission mode changed (2.1.332, interactive)
})
EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}
# A user record whose text is one of these is Claude Code's own bookkeeping (slash
# commands, `!` shell runs and their output), not something the human said.
WRAPPERS = ("<command-name>", "<command-message>", "<command-args>", "<local-command-",
            "<bash-input>", "<bash-stdout>", "<bash-stderr>", "<system-reminder>")
SYNTHETIC_MODEL = "<synthetic>"
# Who wrote a user record, as 2.1.332 says it (docs/handoff.md, "What crosses"): origin
# kinds that are the human; turnOrigin / promptSource values that are not (used when a
# record has no origin); and the openings Claude Code gives what it injects itself, for
# records that carry none of these fields.
HUMAN_ORIGIN = "human"
NOT_HUMAN_TURNS = frozenset({"task_notification", "peer", "system"})
NOT_HUMAN_SOURCES = frozenset({"system"})
INJECTED = ("<task-notification>", "Another Claude session sent a message",
            "Stop hook feedback:", "[SYSTEM NOTIFICATION")


@dataclass
class ClaudeParse:
    messages: list[Said] = field(default_factory=list)
    mark: str | None = None
    found: bool = False
    files: list[str] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)


def _str(value: Any) -> str | None:
    return writable(value) if isinstance(value, str) else None


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def from_the_human(rec: dict[str, Any]) -> bool:
    """Did the human write this user record (not a hook, the watcher, a peer)?"""
    if rec.get("isMeta") is True or "toolUseResult" in rec:
        return False
    origin = rec.get("origin")
    if isinstance(origin, dict):
        # an origin names its writer: "human" when typed (queued or not); a watcher's
        # wake is "task-notification", mail pushed live "peer" — and an origin we have
        # not seen is not taken for the human's words either
        return origin.get("kind") == HUMAN_ORIGIN and not origin.get("msg_id")
    turn, source = rec.get("turnOrigin"), rec.get("promptSource")  # any JSON value
    return not ((isinstance(turn, str) and turn in NOT_HUMAN_TURNS)
                or (isinstance(source, str) and source in NOT_HUMAN_SOURCES))


def _user_text(rec: dict[str, Any], msg: dict[str, Any]) -> str | None:
    if not from_the_human(rec):
        return None
    blocks = _blocks(msg.get("content"))
    if any(b.get("type") == "tool_result" for b in blocks):
        return None
    parts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    if any(b.get("type") == "image" for b in blocks):
        parts.append("[an image]")
    text = writable("\n".join(p for p in parts if p).strip())
    if not text or text.startswith(WRAPPERS) or text.startswith(INJECTED):
        return None
    return text


def _assistant_text(msg: dict[str, Any], files: list[str]) -> str | None:
    blocks = _blocks(msg.get("content"))
    for b in blocks:
        name = b.get("name")  # any JSON value: a list in `in EDIT_TOOLS` was a TypeError
        if b.get("type") == "tool_use" and isinstance(name, str) and name in EDIT_TOOLS:
            args = b.get("input")
            path = _str(args.get(EDIT_TOOLS[name])) if isinstance(args, dict) else None
            if path and path not in files:
                files.append(path)
    if msg.get("model") == SYNTHETIC_MODEL:
        return None  # Claude Code's own stand-in text (an API error, "no response")
    text = "\n".join(str(b.get("text", "")) for b in blocks
                     if b.get("type") == "text" and b.get("text")).strip()
    return writable(text) or None


def _parent(rec: dict[str, Any]) -> str | None:
    parent = rec.get("parentUuid") or rec.get("logicalParentUuid")
    return _str(parent)


def _active_branch(parents: dict[str, str | None], leaf: str | None) -> set[str] | None:
    """Uuids on the path from `leaf` to the root; None when the path is broken (a
    parent not in the file, a cycle): then nothing is filtered."""
    if leaf is None:
        return None
    seen: set[str] = set()
    node: str | None = leaf
    while node is not None:
        if node in seen or node not in parents:
            return None
        seen.add(node)
        node = parents[node]
    return seen


def parse(lines: Iterable[bytes], since: str | None) -> ClaudeParse:
    """Every message after the record `since` (all of them when it is not found)."""
    out = ClaudeParse()
    stats = out.stats
    parents: dict[str, str | None] = {}
    leaf: str | None = None
    for raw in lines:
        if not raw.strip():
            continue
        stats.records += 1
        try:
            rec = loads_json(raw)
        except ValueError:
            stats.bad_rows += 1
            continue
        if not isinstance(rec, dict):
            stats.bad_rows += 1
            continue
        raw_kind = rec.get("type")
        kind = _str(raw_kind) or "?"
        stats.kinds[kind] += 1
        if kind not in KNOWN_TYPES:
            stats.unknown[kind] += 1
        uuid = _str(rec.get("uuid"))  # the mark: cleaned the same way on every read
        if uuid is not None:
            parents[uuid] = _parent(rec)
        if kind in ROLES and rec.get("isSidechain") is not True:
            msg = rec.get("message")
            if not isinstance(msg, dict) or "content" not in msg:
                stats.unreadable += 1
            else:
                text = (_user_text(rec, msg) if kind == "user"
                        else _assistant_text(msg, out.files))
                if text is not None and uuid is not None:
                    stats.said += 1
                    leaf = uuid
                    at = _str(rec.get("timestamp"))
                    out.messages.append(Said("user" if kind == "user" else CLAUDE, text,
                                             uuid, at))
        if since is not None and uuid == since:
            out.found = True
            out.messages.clear()  # the target has everything up to here
            out.files.clear()
    active = _active_branch(parents, leaf)
    if active is not None:
        out.messages = [m for m in out.messages if m.mark in active]
    out.mark = out.messages[-1].mark if out.messages else since
    return out


def read_transcript(path: str, session_id: str, since: str | None,
                    label: str | None = None) -> SourceRead:
    """The session's transcript since `since`, as a SourceRead (a missing or unreadable
    file is a `problem`, never an exception: the other sources still cross)."""
    read = SourceRead(key=source_key(CLAUDE, session_id), kind=CLAUDE,
                      label=label or f"Claude Code session {session_id}", since=since,
                      mark=since, where=path)
    try:
        with open(path, "rb") as fh:
            parsed = parse(fh, since)
    except OSError as exc:
        read.problem = f"cannot read {path}: {exc.strerror or exc}"
        return read
    read.messages, read.mark, read.files, read.stats = (parsed.messages, parsed.mark,
                                                         parsed.files, parsed.stats)
    read.found = since is None or parsed.found
    return read

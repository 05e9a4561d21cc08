"""A Claude Code session in a handoff: which one, its transcript read since a watermark,
and what it already has from Codex.

## Which session

The Stop hook (and, since it also runs at SessionStart, the session's very start)
records each session in its mailbox's listener record (`messages/listeners.py`): session
id, `transcript_path`, cwd, `CLAUDE_PID`, config dir. So the session is looked up,
never guessed: an explicit id or mailbox, else the session running this command
(`CLAUDE_CODE_SESSION_ID`), else the one session whose cwd is the project. Several
candidates → refused with the list (a second session in another terminal must never
be taken by accident); none → refused, saying how to hook one.

## Its transcript

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

## What it already has

Two kinds of turn in a thread went through the bridge, each a delivery record
(`messages/records.py`, direction to-codex) whose id is also the turn's
userMessage `clientId`:

    a request    Claude's `talk send` / `codex_message_send`: when the turn completed,
                 the courier mailed Codex's final message to the asking session
                 (`reply_to`, `reply_mail_id`, `turn_id`, state delivered)
    an answer    Claude's answer to Codex's own request (`in_reply_to` = that request's
                 token), sent back as a turn

The target has them when its transcript holds the reply mail's id (every mail reaches
Claude under a header `· id <mail id>`, by the Stop hook, the watcher or live) or the
reply still waits in its mailbox (it arrives anyway); an answer is its own when its
transcript holds the request it answered (`request <token>` in the mail's envelope).
Then the request and the answer are words the target wrote, and the reply's final
agentMessage one it received: none of them crosses. Records expire with the delivery
store (7 days by default); older ones cross again, labelled.

The other way, a Codex thread has Claude's answers to its requests as reply turns
(`answers_into`: the answer records' texts, matched against Claude's messages), so
those do not cross into it again.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from ..claude.files import Message, Record
from ..claude.plugin import ClaudeSettings, claude_config_dir, plugin_facts
from ..errors import AmbiguousSessionError, NoSessionError
from ..host.jsonfile import read_object
from ..host.procs import pid_alive
from ..host.text import writable
from ..jsontypes import obj
from ..messages.listeners import Listener, listeners, ours, read_listener
from ..messages.records import Delivery, DeliveryState, DeliveryStore, ToCodex
from ..messages.routing import SESSION_ENV, SOCKET_ENV
from .delta import CLAUDE, Parsed, Received, Said, SourceRead, source_key
from .ledger import Agent, project_dir

if TYPE_CHECKING:
    from ..jsontypes import JsonObject


# --- which session ------------------------------------------------------------------

# A session registers itself through our SessionStart / Stop hook: the plugin's (what
# `codexbridge setup claude` enables, README's way) or one `install-hook` wrote.
SETUP_HINT = "run `codexbridge setup claude --project {project}`, then start claude there"
PLUGIN_HINT = ("start Claude Code in {project} (the codexbridge plugin registers the "
               "session when it starts)")


@dataclass(frozen=True)
class ClaudeSession:
    session_id: str
    transcript: str | None
    mailbox: str | None = None
    cwd: str | None = None
    pid: int | None = None
    last_seen: str | None = None
    config_dir: str | None = None  # the session's CLAUDE_CONFIG_DIR (None: the default)

    @property
    def running(self) -> bool:
        """Its Claude Code process is alive (the pid the hook last recorded)."""
        return self.pid is not None and pid_alive(self.pid)

    def as_dict(self) -> JsonObject:
        return {**asdict(self), "running": self.running}


def _from_listener(rec: Listener) -> ClaudeSession | None:
    if not rec.session_id:
        return None
    return ClaudeSession(rec.session_id, rec.transcript_path, rec.name, rec.cwd,
                         rec.claude_pid, rec.last_seen, rec.config_dir or None)


def known_sessions(inbox: str) -> list[ClaudeSession]:
    """Every session a listener record names, newest first, one per session id."""
    found: dict[str, ClaudeSession] = {}
    for rec in listeners(inbox).values():
        session = _from_listener(rec)
        if session is None:
            continue
        old = found.get(session.session_id)
        if old is None or (session.last_seen or "") > (old.last_seen or ""):
            found[session.session_id] = session
    return sorted(found.values(), key=lambda s: s.last_seen or "", reverse=True)


def _inside(cwd: str | None, project: str) -> bool:
    if not cwd:
        return False
    here = project_dir(cwd)
    return here == project or here.startswith(project.rstrip(os.sep) + os.sep)


def in_project(project: str, inbox: str) -> list[ClaudeSession]:
    return [s for s in known_sessions(inbox) if _inside(s.cwd, project)]


def hook_hint(project: str) -> str:
    """How a session in `project` gets registered, given what is set up there."""
    return (PLUGIN_HINT if plugin_enabled(project) else SETUP_HINT).format(project=project)


def _the_one_here(project: str, inbox: str, what: str, flag: str) -> ClaudeSession:
    """The one session in `project`; refused, with the list, when none or several."""
    here = in_project(project, inbox)
    if len(here) == 1:
        return here[0]
    if here:
        listed = "; ".join(f"{s.session_id} (mailbox {s.mailbox}, last seen {s.last_seen})"
                           for s in here)
        raise AmbiguousSessionError(
            f"{len(here)} Claude Code sessions in {project}: {listed} — pass {flag}",
            [s.as_dict() for s in here])
    others = known_sessions(inbox)
    elsewhere = ", ".join(f"{s.session_id} (cwd {s.cwd})" for s in others[:5])
    raise NoSessionError(
        f"no Claude Code session to {what} in {project}: none has run the codexbridge hook "
        f"there ({hook_hint(project)})"
        + (f"; sessions elsewhere: {elsewhere}" if others else ""),
        details={"project": project, "sessions": [s.as_dict() for s in others]})


def _transcript_for(session_id: str, config_dirs: list[str]) -> str | None:
    for base in config_dirs:
        hits = glob.glob(os.path.join(glob.escape(base), "projects", "*",
                                      glob.escape(session_id) + ".jsonl"))
        if hits:
            return hits[0]
    return None


def source_session(project: str, inbox: str, session_id: str | None = None,
                   env: Mapping[str, str] | None = None,
                   linked: Mapping[str, Agent] | None = None) -> ClaudeSession:
    """The departing Claude session (see the module docstring)."""
    env = os.environ if env is None else env
    sessions = known_sessions(inbox)
    if session_id:
        for s in sessions:
            if s.session_id == session_id:
                return s
        agent = (linked or {}).get(f"claude:{session_id}")
        dirs = [*dict.fromkeys((claude_config_dir(env),
                                os.path.join(os.path.expanduser("~"), ".claude")))]
        where = agent.where if agent is not None and agent.where is not None \
            else _transcript_for(session_id, dirs)
        if where:
            return ClaudeSession(session_id, where)
        raise NoSessionError(f"no Claude Code session {session_id} is known (no listener "
                             "record names it and no transcript was found)",
                             details={"session": session_id,
                                      "sessions": [s.as_dict() for s in sessions]})
    socket, mine = env.get(SOCKET_ENV), env.get(SESSION_ENV)
    records = listeners(inbox)
    for s in sessions:
        rec = records.get(s.mailbox or "")
        if (mine and s.session_id == mine) or (
                socket and rec is not None and rec.messaging_socket == socket):
            return s
    return _the_one_here(project, inbox, "hand from", "--from-session ID")


def target_session(project: str, inbox: str, mailbox: str | None = None) -> ClaudeSession:
    """The Claude session a handoff goes to: mailbox `mailbox`'s, else the project's one."""
    if mailbox:
        rec = read_listener(inbox, mailbox)
        session = _from_listener(rec) if rec is not None else None
        if session is None:
            raise NoSessionError(
                f'no Claude Code session has listened on mailbox "{mailbox}" yet '
                f"({hook_hint(project)})", details={"mailbox": mailbox,
                                           "sessions": [s.as_dict() for s in
                                                        known_sessions(inbox)]})
        return session
    return _the_one_here(project, inbox, "hand to", "--as MAILBOX")


def plugin_enabled(project: str, config_dir: str | None = None) -> bool:
    """Is codexbridge's Claude Code plugin (its SessionStart and Stop hooks, its watcher)
    enabled for `project`, in the user's settings (`config_dir`'s, else this process's
    Claude config dir) or the project's own?"""
    env = {"CLAUDE_CONFIG_DIR": config_dir} if config_dir else None
    facts = plugin_facts(project, env)
    return bool(facts["enabled_in"]) and bool(facts["marketplace_ok"])


def session_start_hooked(project: str, session: ClaudeSession) -> bool:
    """Does our hook run when `session` starts (so it is handed a pending delta): the
    codexbridge plugin's, or the one `install-hook` put in the project's settings?"""
    return (plugin_enabled(project, session.config_dir)
            or _project_hooked(project, session.mailbox))


def _project_hooked(project: str, mailbox: str | None) -> bool:
    """Does the project's settings run our hook at SessionStart (for `mailbox`)?"""
    for name in ("settings.json", "settings.local.json"):
        settings = obj(read_object(os.path.join(project, ".claude", name)))
        # `hooks.SessionStart[].hooks[].command` (anything of another shape runs nothing)
        for command in ClaudeSettings.read(settings).commands("SessionStart"):
            found = ours(command)
            if found and found[0] == "hook" and mailbox in (None, found[1]):
                return True
    return False


# --- its transcript -----------------------------------------------------------------

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


def _str(value: object) -> str | None:
    return writable(value) if isinstance(value, str) else None


def from_the_human(rec: Record) -> bool:
    """Did the human write this user record (not a hook, the watcher, a peer)?"""
    if rec.meta or rec.tool_result:
        return False
    if rec.origin is not None:
        # an origin names its writer: "human" when typed (queued or not); a watcher's
        # wake is "task-notification", mail pushed live "peer" — and an origin we have
        # not seen is not taken for the human's words either
        return rec.origin.kind == HUMAN_ORIGIN and not rec.origin.msg_id
    turn, source = rec.turn_origin, rec.prompt_source  # any JSON value
    return not ((isinstance(turn, str) and turn in NOT_HUMAN_TURNS)
                or (isinstance(source, str) and source in NOT_HUMAN_SOURCES))


def _user_text(rec: Record, msg: Message) -> str | None:
    if not from_the_human(rec):
        return None
    blocks = msg.blocks
    if any(b.kind == "tool_result" for b in blocks):
        return None
    parts = [b.text or "" for b in blocks if b.kind == "text"]
    if any(b.kind == "image" for b in blocks):
        parts.append("[an image]")
    text = writable("\n".join(p for p in parts if p).strip())
    if not text or text.startswith(WRAPPERS) or text.startswith(INJECTED):
        return None
    return text


def _assistant_text(msg: Message, files: list[str]) -> str | None:
    for b in msg.blocks:
        if b.kind == "tool_use" and b.name is not None and b.name in EDIT_TOOLS:
            path = _str(b.input.get(EDIT_TOOLS[b.name]))
            if path and path not in files:
                files.append(path)
    if msg.model == SYNTHETIC_MODEL:
        return None  # Claude Code's own stand-in text (an API error, "no response")
    text = "\n".join(b.text for b in msg.blocks if b.kind == "text" and b.text).strip()
    return writable(text) or None


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


def parse(lines: Iterable[bytes], since: str | None,
          answered: frozenset[str] = frozenset()) -> Parsed:
    """Every message after the record `since` (all of them when it is not found).
    `answered`: texts of Claude's messages the target already has (`answers_into`):
    left out, though the mark moves past them."""
    out = Parsed()
    stats = out.stats
    parents: dict[str, str | None] = {}
    leaf: str | None = None
    for raw in lines:
        if not raw.strip():
            continue
        stats.records += 1
        rec = Record.parse_line(raw)
        if rec is None:
            stats.bad_rows += 1
            continue
        kind = _str(rec.kind) or "?"
        stats.kinds[kind] += 1
        if kind not in KNOWN_TYPES:
            stats.unknown[kind] += 1
        uuid = _str(rec.uuid)  # the mark: cleaned the same way on every read
        if uuid is not None:
            parents[uuid] = _str(rec.parent)
        if kind in ROLES and not rec.sidechain:
            msg = rec.message
            if msg is None:
                stats.unreadable += 1
            else:
                text = (_user_text(rec, msg) if kind == "user"
                        else _assistant_text(msg, out.files))
                if text is not None and uuid is not None:
                    stats.said += 1
                    leaf = uuid
                    at = _str(rec.timestamp)
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
    if answered:
        out.messages = [m for m in out.messages
                        if not (m.role == CLAUDE and m.text in answered)]
    return out


def read_transcript(path: str, session_id: str, since: str | None,
                    label: str | None = None,
                    answered: frozenset[str] = frozenset()) -> SourceRead:
    """The session's transcript since `since`, as a SourceRead (a missing or unreadable
    file is a `problem`, never an exception: the other sources still cross).
    `answered`: what the target already has (`answers_into`), left out."""
    read = SourceRead(key=source_key(CLAUDE, session_id), kind=CLAUDE,
                      label=label or f"Claude Code session {session_id}", since=since,
                      mark=since, where=path)
    try:
        with open(path, "rb") as fh:
            parsed = parse(fh, since, answered)
    except OSError as exc:
        read.problem = f"cannot read {path}: {exc.strerror or exc}"
        return read
    return read.take(parsed)


# --- what it already has ------------------------------------------------------------

ALL_RECORDS = 1_000_000


def _needles(records: Iterable[Delivery], mailbox: str | None) -> dict[str, ToCodex]:
    """The string whose presence in the target's transcript proves it has the record's
    turn: the reply mail's id (a request it asked), or the request token (an answer)."""
    out: dict[str, ToCodex] = {}
    for r in records:
        if not isinstance(r, ToCodex) or not r.thread_id:
            continue
        if r.in_reply_to:
            out[r.in_reply_to] = r
        elif (r.reply_mail_id and r.turn_id and r.state is DeliveryState.DELIVERED
              and mailbox is not None and r.reply_to == mailbox):
            out[r.reply_mail_id] = r
    return out


def seen_in(path: str | None, needles: Iterable[str]) -> set[str]:
    """Which of `needles` the file holds (line by line: a transcript can be large)."""
    left = {n.encode("utf-8"): n for n in needles}
    found: set[str] = set()
    if not path or not left:
        return found
    try:
        with open(path, "rb") as fh:
            for line in fh:
                for raw in [raw for raw in left if raw in line]:
                    found.add(left.pop(raw))
                if not left:
                    break
    except OSError:
        pass  # an unreadable transcript proves nothing: everything crosses
    return found


def received_by(transcript: str | None, mailbox: str | None, waiting: Iterable[str],
                store: DeliveryStore | None = None) -> dict[str, Received]:
    """thread id → what the session (its transcript, its mailbox; `waiting`: the mail
    ids still in that mailbox) already has from it."""
    store = store or DeliveryStore()
    needles = _needles(store.recent(ALL_RECORDS), mailbox)
    if not needles:
        return {}
    have = [needles[n] for n in seen_in(transcript, needles) | (set(waiting) & set(needles))]
    return {thread: Received(frozenset(r.id for r in have if r.thread_id == thread),
                             frozenset(r.turn_id for r in have if r.thread_id == thread
                                       and not r.in_reply_to and r.turn_id))
            for thread in {str(r.thread_id) for r in have}}


def answers_into(thread_id: str, store: DeliveryStore | None = None) -> frozenset[str]:
    """Claude's answers to `thread_id`'s requests that went into it as reply turns (or
    are on their way: the courier carries a queued one anyway), as the transcript reads
    them: the thread has them, so they do not cross again. Matched by text, because the
    answer is the answering turn's final message, sent as it was (one clipped for its
    size no longer matches, and crosses: never dropped on a guess)."""
    store = store or DeliveryStore()
    out: set[str] = set()
    for r in store.recent(ALL_RECORDS):
        if (not isinstance(r, ToCodex) or not r.in_reply_to or r.notice
                or r.thread_id != thread_id
                or r.state in (DeliveryState.FAILED, DeliveryState.ORPHANED)):
            continue
        try:
            raw = store.text_path(r.id).read_bytes()
        except OSError:
            continue  # no text kept: nothing to match, so it crosses
        text = writable(raw.decode("utf-8", "replace")).strip()
        if text:
            out.add(text)
    return frozenset(out)

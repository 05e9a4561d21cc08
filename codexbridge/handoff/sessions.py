"""Which Claude Code session a handoff reads from or delivers to.

The Stop hook (and, since it also runs at SessionStart, the session's very start)
records each session in its mailbox's listener record (`inbox/listeners.py`): session
id, `transcript_path`, cwd, `CLAUDE_PID`, config dir. So the session is looked up,
never guessed: an explicit id or mailbox, else the session running this command
(`CLAUDE_CODE_SESSION_ID`), else the one session whose cwd is the project. Several
candidates → refused with the list (a second session in another terminal must never
be taken by accident); none → refused, saying how to hook one.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..conversation.routing import SESSION_ENV, SOCKET_ENV
from ..errors import AmbiguousSessionError, NoSessionError
from ..host.procs import pid_alive
from ..inbox.listeners import read_listeners
from .paths import project_dir

# A session registers itself through our SessionStart / Stop hook: the plugin's (what
# `codexbridge setup claude` enables, README's way) or one `install-hook` wrote.
SETUP_HINT = "run `codexbridge setup claude --project {project}`, then start claude there"
PLUGIN_HINT = ("start Claude Code in {project} (the codexbridge plugin registers the "
               "session when it starts)")
PLUGIN = "plugin"  # what runs our hook at SessionStart: codexbridge's Claude Code plugin
PROJECT_HOOK = "project-hook"  # ... or the hook `install-hook` put in the project settings


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

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "running": self.running}


def _from_listener(name: str, rec: Mapping[str, Any]) -> ClaudeSession | None:
    sid = rec.get("session_id")
    if not isinstance(sid, str) or not sid:
        return None
    pid = rec.get("claude_pid")

    def text(key: str) -> str | None:
        value = rec.get(key)
        return value if isinstance(value, str) else None

    return ClaudeSession(sid, text("transcript_path"), name, text("cwd"),
                         int(pid) if isinstance(pid, (int, str)) and str(pid).isdigit()
                         else None, text("last_seen"), text("config_dir") or None)


def known_sessions(inbox: str) -> list[ClaudeSession]:
    """Every session a listener record names, newest first, one per session id."""
    found: dict[str, ClaudeSession] = {}
    for name, rec in read_listeners(inbox).items():
        session = _from_listener(name, rec)
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


def _none_here(project: str, inbox: str, what: str) -> NoSessionError:
    others = [s.as_dict() for s in known_sessions(inbox)]
    elsewhere = ", ".join(f"{s['session_id']} (cwd {s['cwd']})" for s in others[:5])
    return NoSessionError(
        f"no Claude Code session to {what} in {project}: none has run the codexbridge hook "
        f"there ({hook_hint(project)})"
        + (f"; sessions elsewhere: {elsewhere}" if others else ""),
        details={"project": project, "sessions": others})


def _several(project: str, found: list[ClaudeSession], flag: str) -> AmbiguousSessionError:
    listed = "; ".join(f"{s.session_id} (mailbox {s.mailbox}, last seen {s.last_seen})"
                       for s in found)
    return AmbiguousSessionError(
        f"{len(found)} Claude Code sessions in {project}: {listed} — pass {flag}",
        [s.as_dict() for s in found])


def _transcript_for(session_id: str, config_dirs: list[str]) -> str | None:
    for base in config_dirs:
        hits = glob.glob(os.path.join(glob.escape(base), "projects", "*",
                                      glob.escape(session_id) + ".jsonl"))
        if hits:
            return hits[0]
    return None


def source_session(project: str, inbox: str, session_id: str | None = None,
                   env: Mapping[str, str] | None = None,
                   linked: Mapping[str, Any] | None = None) -> ClaudeSession:
    """The departing Claude session (see the module docstring)."""
    env = os.environ if env is None else env
    sessions = known_sessions(inbox)
    if session_id:
        for s in sessions:
            if s.session_id == session_id:
                return s
        agent = (linked or {}).get(f"claude:{session_id}")
        where = agent.get("where") if isinstance(agent, dict) else None
        dirs = [d for d in (env.get("CLAUDE_CONFIG_DIR"),
                            os.path.join(os.path.expanduser("~"), ".claude")) if d]
        where = where if isinstance(where, str) else _transcript_for(session_id, dirs)
        if where:
            return ClaudeSession(session_id, where)
        raise NoSessionError(f"no Claude Code session {session_id} is known (no listener "
                             "record names it and no transcript was found)",
                             details={"session": session_id,
                                      "sessions": [s.as_dict() for s in sessions]})
    socket, mine = env.get(SOCKET_ENV), env.get(SESSION_ENV)
    records = read_listeners(inbox)
    for s in sessions:
        rec = records.get(s.mailbox or "") or {}
        if (mine and s.session_id == mine) or (socket and rec.get("messaging_socket") == socket):
            return s
    here = in_project(project, inbox)
    if len(here) == 1:
        return here[0]
    if not here:
        raise _none_here(project, inbox, "hand from")
    raise _several(project, here, "--from-session ID")


def target_session(project: str, inbox: str, mailbox: str | None = None) -> ClaudeSession:
    """The Claude session a handoff goes to: mailbox `mailbox`'s, else the project's one."""
    if mailbox:
        rec = read_listeners(inbox).get(mailbox)
        session = _from_listener(mailbox, rec) if isinstance(rec, dict) else None
        if session is None:
            raise NoSessionError(
                f'no Claude Code session has listened on mailbox "{mailbox}" yet '
                f"({hook_hint(project)})", details={"mailbox": mailbox,
                                           "sessions": [s.as_dict() for s in
                                                        known_sessions(inbox)]})
        return session
    here = in_project(project, inbox)
    if len(here) == 1:
        return here[0]
    if not here:
        raise _none_here(project, inbox, "hand to")
    raise _several(project, here, "--as MAILBOX")


def plugin_enabled(project: str, config_dir: str | None = None) -> bool:
    """Is codexbridge's Claude Code plugin (its SessionStart and Stop hooks, its watcher)
    enabled for `project`, in the user's settings (`config_dir`'s, else this process's
    Claude config dir) or the project's own?"""
    from ..host.claude_plugin import plugin_facts

    env = {"CLAUDE_CONFIG_DIR": config_dir} if config_dir else None
    facts = plugin_facts(project, env)
    return bool(facts["enabled_in"]) and bool(facts["marketplace_ok"])


def session_start_hook(project: str, session: ClaudeSession) -> str | None:
    """What runs our hook when `session` starts (so it is handed a pending delta):
    PLUGIN, PROJECT_HOOK, or None."""
    if plugin_enabled(project, session.config_dir):
        return PLUGIN
    return PROJECT_HOOK if session_start_hooked(project, session.mailbox) else None


def session_start_hooked(project: str, mailbox: str | None) -> bool:
    """Does the project's settings run our hook at SessionStart (for `mailbox`)?"""
    from ..host.jsonfile import read_object
    from ..inbox.install_hook import ours

    for name in ("settings.json", "settings.local.json"):
        settings = read_object(os.path.join(project, ".claude", name))
        hooks = settings.get("hooks") if settings else None
        groups = hooks.get("SessionStart") if isinstance(hooks, dict) else None
        for group in groups if isinstance(groups, list) else []:
            for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                cmd = hook.get("command") if isinstance(hook, dict) else None
                found = ours(cmd) if isinstance(cmd, str) else None
                if found and found[0] == "hook" and mailbox in (None, found[1]):
                    return True
    return False

"""The Claude side: whether this Claude Code still offers what codexbridge relies on,
the project's hooks and settings, the plugin, the mailboxes and the block chain. Facts,
how they are gathered (files only: settings, mailboxes, what the hooks recorded), and rows.

    claude-compat:peer-protocol,   what Claude Code last handed codexbridge: its
      :hook-input, :transcript     cross-session inbox, the hooks' input, its records
    claude-settings, claude-hook   settings files Claude would ignore; the Stop hook
    claude-plugin                  codexbridge's Claude Code plugin enabled here
    mailbox:NAME, mailboxes        pending / rejected mail, listeners, how mail reaches
    max-chain                      CODEX_BRIDGE_MAX_CHAIN against Claude's block cap

A Claude Code newer than the tested one is judged by evidence — what its sessions handed
our hooks (hooks/seen.py records it), what their transcripts hold (the handoff canary) —
never by its version number alone (SETUP.md, "Checking the set-up").
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..claude.inbox_socket import PEER_PROTOCOL
from ..claude.plugin import PluginFacts
from ..claude.plugin import plugin_facts as read_plugin_facts
from ..hooks.loop_guard import effective_max_chain
from ..hooks.seen import UNNAMED, HookSeen, read_seen
from ..host.binaries import CLAUDE_OLDEST, CLAUDE_VERSION, VersionFit, install_hint, version_fit
from ..host.jsonfile import loads_json
from ..host.mailboxes import inbox_dir
from ..inbox.location import rejected_path
from ..inbox.peek import summarize
from ..jsontypes import opt_int, read_fields
from ..messages.listeners import Listener, closest_name, read_listeners
from ..messages.live import Reach
from ..messages.to_claude import reach
from . import parse
from .binaries import BinaryFacts
from .parse import CHAIN_VARS, ClaudeHook, HookKind, read_text
from .records import CanaryEntry, canary_entries
from .report import INFO, OK, WARN, Check, Status, plural

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

# --- does this Claude Code still offer what codexbridge relies on? --------------------------

COMPAT = "claude-compat"
# The hook input fields codexbridge reads, per event, and what breaks without each.
HOOK_INPUT: dict[str, dict[str, str]] = {
    "Stop": {
        "session_id": "Claude's answers do not go back to the Codex thread that asked, "
                      "handoff cannot find the session, and live delivery is off",
        "transcript_path": "handoff cannot read Claude's conversation, and live delivery "
                           "is off (mail waits for each stop)",
        "cwd": "the session is filed under the hook process's own working directory "
               "(handoff finds sessions by it; live delivery reads that project's "
               "crossSessionInbound)",
        "stop_hook_active": "a stop after the hook's own block is recognised by prompt_id "
                            "alone",
        "prompt_id": "a chain of blocks whose stop_hook_active stays false "
                     "(anthropics/claude-code#54360) is not counted, so the chain limit "
                     "below Claude's block cap may not hold",
        "last_assistant_message": "Claude's answers to Codex's requests are not sent back "
                                  "(each is reported failed: no final message)",
        "permission_mode": "a bypassPermissions session is not recognised: mail pushed "
                           "live to it is held, then left for its next stop",
    },
    "SessionStart": {
        "hook_event_name": "a session start is taken for a stop, so a handoff waiting "
                           "for a resumed session is not handed over",
        "session_id": "a handoff waiting for a resumed session is not handed over, and "
                      "the session is unknown until its first stop",
        "transcript_path": "until its first stop the session can neither be handed off "
                           "from nor reached live",
        "cwd": "until its first stop the session is filed under the hook process's own "
               "working directory",
    },
}
NO_EVENT_NAME = ("hook input without hook_event_name: "
                 + HOOK_INPUT["SessionStart"]["hook_event_name"])
# The registry entry fields live delivery reads (messages/live.py `target`).
REGISTRY_FIELDS = ("sessionId", "peerProtocol", "messagingSocketPath")
LIVE_FALLBACK = ("live delivery stays off meanwhile: mail arrives through the Stop hook "
                 "(and the asyncRewake watcher wakes an idle session)")
NOT_YET = ("start Claude Code in a project with codexbridge's hooks (`codexbridge setup "
           "claude`), or run `claude -p hi` there, then run doctor again")


@dataclass(frozen=True, slots=True)
class Seen:
    """What Claude Code handed codexbridge's hooks last time (hooks/seen.py: the hook
    records its input's field names and the session registry's protocol); `record` None
    when absent or unreadable."""

    path: str = ""
    exists: bool = False
    record: JsonObject | None = None

    @staticmethod
    def read() -> Seen:
        seen = read_seen()
        return Seen(seen["path"], seen["exists"], seen["record"])

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


# The evidence file's shapes (hooks/seen.py writes them; doctor alone reads them).

@dataclass(frozen=True, slots=True)
class SeenRecord:
    peer: JsonObject  # a PeerSeen; empty until a hooked session has run
    hooks: JsonObject  # event → a HookSeen


@dataclass(frozen=True, slots=True)
class PeerSeen:
    """`peer`: what the last hooked session's environment and registry entry said of live
    delivery's address and protocol; `raw` as recorded (the row's details)."""

    socket_env: bool
    pid_env: bool
    registry: bool
    registry_fields: tuple[str, ...]
    protocol: int | str | None
    socket_matches: bool
    claude_version: str | None
    seen: str | None
    raw: JsonObject


def claude_compat_rows(claude: BinaryFacts, seen: Seen,
                       transcripts: Sequence[Mapping[str, object]] | None) -> list[Check]:
    """`transcripts`: the handoff canary's Claude entries (None: not checked). One row per
    concern — live delivery's protocol, the hooks' input, the transcript records — since
    each has its own evidence, its own consequence and its own fallback."""
    if not claude.path and not seen.exists:
        return []  # no Claude Code here and none ever ran our hooks: nothing to judge
    installed = claude.version
    read = _transcript_row(None if transcripts is None else canary_entries(transcripts))
    if seen.exists and seen.record is None:
        unreadable = Check(f"{COMPAT}:hook-input", WARN,
                           f"{seen.path} is not readable JSON: what Claude Code "
                           "handed the hooks is not known",
                           "remove it; the next hook run writes it again", seen.as_dict())
        return [unreadable, read]
    record = read_fields(SeenRecord, seen.record or {})
    events = {k: v for k, v in record.hooks.items() if isinstance(v, dict)}
    return [_peer_row(read_fields(PeerSeen, record.peer) if record.peer else None, installed),
            _hook_input_row(events, installed), read]


def _day(entry: PeerSeen | HookSeen) -> str:
    return (entry.seen or "?")[:10]


def _compat_fix(version: str | None, meanwhile: str) -> str:
    """Never "downgrade" a newer Claude Code: codexbridge is what has to catch up."""
    if version and version_fit(version, CLAUDE_OLDEST, CLAUDE_VERSION) is VersionFit.OLDER:
        return f"install Claude Code {CLAUDE_VERSION}: {install_hint('claude')}"
    about = f" that knows Claude Code {version}" if version else ""
    return f"update codexbridge (a release{about}); {meanwhile}"


def _stale(seen_version: str | None, installed: str | None) -> str | None:
    """Why the evidence does not speak for the installed Claude Code, or None."""
    if seen_version and installed and seen_version != installed:
        return (f"that was Claude Code {seen_version}; the installed {installed} has not "
                "run codexbridge's hooks since")
    return None


def _peer_problems(p: PeerSeen) -> list[str]:
    if not p.pid_env:
        return ["hooks no longer get CLAUDE_PID: live delivery cannot find the session's "
                "registry entry"]
    out = []
    if p.socket_env and not p.registry:
        out.append("the session has an inbox socket but no registry entry "
                   "($CLAUDE_CONFIG_DIR/sessions/<pid>.json): live delivery takes it for "
                   "not running")
    if p.registry and not p.socket_env:
        out.append("hooks no longer get CLAUDE_CODE_MESSAGING_SOCKET: live delivery has "
                   "no address for the session")
    gone = [k for k in REGISTRY_FIELDS if p.registry and k not in p.registry_fields]
    if gone:
        out.append(f"the session registry has no {', '.join(gone)}: live delivery cannot "
                   "check the session")
    protocol = p.protocol
    if "peerProtocol" not in gone and p.registry and protocol != PEER_PROTOCOL:
        out.append(f"the session advertises peerProtocol {protocol!r}; codexbridge "
                   f"speaks {PEER_PROTOCOL}: live delivery is off for such sessions")
    if (p.registry and p.socket_env and "messagingSocketPath" not in gone
            and not p.socket_matches):
        out.append("the registry's messagingSocketPath is not the socket the hooks are "
                   "told: live delivery takes the session's inbox for gone")
    return out


def _peer_row(p: PeerSeen | None, installed: str | None) -> Check:
    name = f"{COMPAT}:peer-protocol"
    if p is None:
        return Check(name, INFO, "not yet seen: no Claude session has run codexbridge's "
                     "hooks, so what its cross-session inbox speaks is unknown", NOT_YET)
    details = p.raw
    version = p.claude_version
    said = f"on {_day(p)}" + (f" (Claude Code {version})" if version else "")
    if not p.registry and not p.socket_env and p.pid_env:
        return Check(name, INFO, f"the last hooked session ({said}) had no cross-session "
                     "inbox (CLAUDE_CODE_HARBOR_KITE=0?): its mail arrived at its stops",
                     "if you did not turn it off, this Claude Code moved it: "
                     + _compat_fix(version, LIVE_FALLBACK), details)
    problems = _peer_problems(p)
    if problems:
        return Check(name, WARN, f"Claude Code's cross-session inbox moved ({said}): "
                     + "; ".join(problems), _compat_fix(version, LIVE_FALLBACK), details)
    found = (f"peerProtocol {PEER_PROTOCOL}, the one codexbridge speaks, and the registry "
             f"fields live delivery reads ({', '.join(REGISTRY_FIELDS)}) seen {said}")
    stale = _stale(version, installed)
    if stale:
        return Check(name, INFO, f"{found}; {stale}", NOT_YET, details)
    return Check(name, OK, found, None, details)


def _hook_gaps(hooks: Mapping[str, HookSeen]) -> list[str]:
    gaps = []
    for event, wanted in HOOK_INPUT.items():
        if event not in hooks:
            continue
        entry = hooks[event]
        for field_name, breaks in wanted.items():
            if field_name not in entry.fields:
                gaps.append(f"{event} hook input ({_day(entry)}) has no {field_name}: "
                            f"{breaks}")
    if UNNAMED in hooks:
        gaps.append(f"{NO_EVENT_NAME} (seen {_day(hooks[UNNAMED])})")
    return gaps


def _hook_input_row(raw: Mapping[str, JsonObject], installed: str | None) -> Check:
    """`raw`: the evidence file's `hooks`, event → its entry (the row's details)."""
    name = f"{COMPAT}:hook-input"
    if not raw:
        return Check(name, INFO, "not yet seen: no Claude session has run codexbridge's "
                     "hooks, so their input fields are unknown", NOT_YET)
    events = {k: HookSeen.read(v) for k, v in raw.items()}
    # the newest evidence speaks for the Claude Code that ran the hooks last
    version = max(events.values(), key=lambda e: e.seen or "").claude_version
    details = {"hooks": dict(raw), "relied_on": {k: sorted(v) for k, v in HOOK_INPUT.items()}}
    gaps = _hook_gaps(events)
    if gaps:
        return Check(name, WARN, "; ".join(gaps),
                     _compat_fix(version, "mail from Codex still reaches Claude at each "
                                          "stop"), details)
    parts = [f"{event}: {', '.join(HOOK_INPUT[event])} seen on {_day(events[event])}"
             for event in HOOK_INPUT if event in events]
    unseen = [event for event in HOOK_INPUT if event not in events]
    found = ("; ".join(parts) + (f" (Claude Code {version})" if version else "")
             + (f"; {', '.join(unseen)} not run yet" if unseen else ""))
    stale = _stale(version, installed)
    if stale:
        return Check(name, INFO, f"{found}; {stale}", NOT_YET, details)
    return Check(name, OK, found, None, details)


def _transcript_row(entries: Sequence[CanaryEntry] | None) -> Check:
    """The handoff canary's verdict over this project's Claude transcripts, reused."""
    name = f"{COMPAT}:transcript"
    if entries is None:
        return Check(name, INFO, "not checked: the handoff canary did not run (see the "
                     "handoff rows)")
    read = [e for e in entries if e.records]
    if not read:
        return Check(name, INFO, "not yet seen: no transcript of a Claude session in this "
                     "project to read", NOT_YET)
    unknown: dict[str, int] = {}
    for e in read:
        for kind, n in e.unknown.items():
            unknown[kind] = unknown.get(kind, 0) + (opt_int(n) or 0)
    drifted = [e for e in read if e.verdict == "drifted"]
    records = sum(e.records or 0 for e in read)
    details = {"sessions": [{"session_id": e.session_id, "where": e.where,
                             "verdict": e.verdict, "why": e.why, "records": e.records,
                             "said": e.said, "unknown": e.unknown} for e in read],
               "unknown": unknown}
    if unknown or drifted:
        parts = []
        if unknown:
            kinds = ", ".join(f"{k} ×{n}" for k, n in sorted(unknown.items()))
            parts.append(f"record kinds codexbridge does not know ({kinds}): handoff leaves "
                         "them out, so whatever they hold does not cross to Codex")
        parts += [f"{e.where}: {e.why}: handoff from it "
                  + ("carries nothing" if not e.said else "misses part of it")
                  for e in drifted]
        return Check(name, WARN, f"Claude's transcripts moved ({plural(len(read), 'session')}"
                     f"): " + "; ".join(parts),
                     "update codexbridge (its transcript parser is "
                     "codexbridge/handoff/claude_source.py); report the record kinds named "
                     "here", details)
    said = sum(e.said or 0 for e in read)
    return Check(name, OK, f"{plural(len(read), 'transcript')} of this project read: "
                 f"{plural(records, 'record')}, every kind one codexbridge knows, "
                 f"{plural(said, 'message')} recognised", None, details)


# --- the project's settings and hooks ----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SettingsFile:
    """One Claude Code settings file (scope: project, local, user) and our hooks in it."""

    path: str
    scope: str
    exists: bool = True
    error: str | None = None
    hooks: tuple[ClaudeHook, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ProjectFacts:
    dir: str
    files: tuple[SettingsFile, ...] = ()


def claude_settings_files(project: Path) -> list[tuple[Path, str]]:
    user_dir = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return [(project / ".claude" / "settings.json", "project"),
            (project / ".claude" / "settings.local.json", "local"),
            (Path(user_dir) / "settings.json", "user")]


def _settings_file(path: Path, scope: str) -> SettingsFile:
    text, error = read_text(path)
    if text is None or not text.strip():
        return SettingsFile(str(path), scope, text is not None, error)
    try:
        facts = parse.claude_settings_facts(loads_json(text))
    except ValueError as exc:
        return SettingsFile(str(path), scope, True, f"not valid JSON: {exc}")
    hooks = tuple(h if not h.interpreter else ClaudeHook(
        h.event, h.kind, h.mailbox, h.async_rewake, h.interpreter,
        os.access(h.interpreter, os.X_OK)) for h in facts.hooks)
    return SettingsFile(str(path), scope, True, facts.error, hooks, facts.env)


def project(project_dir: Path) -> ProjectFacts:
    files = [_settings_file(path, scope) for path, scope in claude_settings_files(project_dir)]
    return ProjectFacts(str(project_dir),
                        tuple(f for f in files if f.exists or f.scope == "project"))


def hooked_mailboxes(facts: ProjectFacts | None) -> list[str]:
    """The mailboxes the project's readable settings files register a Stop hook for."""
    return sorted({h.mailbox for f in (facts.files if facts else ()) if not f.error
                   for h in f.hooks if h.kind is HookKind.STOP})


def settings_env(facts: ProjectFacts | None) -> dict[str, str]:
    """The chain variables the settings' `env` sets; project files win over the user's."""
    env: dict[str, str] = {}
    for scope in ("user", "project", "local"):
        for f in facts.files if facts else ():
            if f.scope == scope and not f.error:
                env.update(f.env)
    return env


def _hook_details(h: ClaudeHook, file: str) -> dict[str, object]:
    return {**h.as_dict(), "file": file}


def project_rows(p: ProjectFacts, listeners: Mapping[str, Mapping[str, object]],
                 plugin_enabled: bool = False) -> list[Check]:
    """`listeners` as in mailbox facts (each NAME.session.json as read); `plugin_enabled`:
    codexbridge's Claude Code plugin brings the hooks instead."""
    rows = [Check("claude-settings", WARN,
                  f"{f.path} is not valid settings ({f.error}): Claude Code ignores the "
                  "whole file (silently under -p), hooks included",
                  f"fix it: `python -m json.tool {shlex.quote(f.path)}` shows where",
                  {"path": f.path, "error": f.error}) for f in p.files if f.error]
    hooks = [(h, f.path) for f in p.files if not f.error for h in f.hooks]
    stops = [(h, file) for h, file in hooks if h.kind is HookKind.STOP]
    watchers = [h for h, _ in hooks if h.kind is HookKind.WATCH]
    details: dict[str, object] = {"project": p.dir,
                                  "hooks": [_hook_details(h, file) for h, file in hooks]}
    if not stops:
        return [*rows, _no_stop_hook(p, watchers, plugin_enabled, details)]
    for h, file in hooks:
        if h.interpreter and h.interpreter_ok is False:
            rows.append(Check("claude-hook", WARN,
                              f"the {h.event} hook for mailbox \"{h.mailbox}\" in {file} runs "
                              f"{h.interpreter}, which does not exist: it cannot deliver",
                              "re-run `codexbridge install-hook` from the environment "
                              "codexbridge is installed in", {"hook": _hook_details(h, file)}))
    for mailbox in sorted({h.mailbox for h, _ in stops}):
        files = [file for h, file in stops if h.mailbox == mailbox]
        woke = sorted({w.event for w in watchers if w.mailbox == mailbox})
        rewake = f" + asyncRewake watcher on {', '.join(woke)}" if woke else ""
        last_seen = (Listener.from_json(listeners[mailbox], mailbox).last_seen
                     if mailbox in listeners else None)
        seen = (f"a session last ran it {last_seen}" if last_seen
                else "no session has run it yet")
        rows.append(Check("claude-hook", OK,
                          f"Stop hook for mailbox \"{mailbox}\"{rewake} in "
                          f"{', '.join(files)}; {seen}",
                          details={"mailbox": mailbox, "files": files,
                                   "rewake_events": woke, "last_seen": last_seen}))
    return rows


def _no_stop_hook(p: ProjectFacts, watchers: list[ClaudeHook], plugin_enabled: bool,
                  details: dict[str, object]) -> Check:
    if plugin_enabled:
        return Check("claude-hook", OK, f"the codexbridge plugin brings the Stop hook and "
                     f"the watcher to sessions in {p.dir} (see claude-plugin)", None, details)
    also = (f"; asyncRewake watchers for {sorted({w.mailbox for w in watchers})} "
            "run without a Stop hook" if watchers else "")
    looked = ", ".join(f.path for f in p.files)
    return Check("claude-hook", WARN if watchers else INFO,
                 f"no codexbridge Stop hook in {looked}: mail from Codex does not "
                 f"reach Claude sessions in {p.dir}{also}",
                 "`codexbridge setup claude` (the plugin: hooks, watcher and MCP "
                 "tools in every project); hooks only: `codexbridge install-hook "
                 f"--project {shlex.quote(p.dir)} --as NAME`", details)


# --- the plugin ------------------------------------------------------------------------------

def plugin_facts(project_dir: Path) -> PluginFacts:
    """claude/plugin.py `plugin_facts`: marketplace_path, marketplace_ok,
    enabled_in, bin, files."""
    return read_plugin_facts(str(project_dir))


def plugin_row(p: PluginFacts) -> Check:
    details: dict[str, object] = dict(p)
    enabled_in = p["enabled_in"]
    if not enabled_in:
        return Check("claude-plugin", INFO,
                     "codexbridge's Claude Code plugin is not enabled for this project",
                     "`codexbridge setup claude` (every project) or `--project DIR`", details)
    where = ", ".join(map(str, enabled_in))
    if not p["marketplace_ok"]:
        return Check("claude-plugin", WARN,
                     f"the plugin is enabled ({where} settings) but its marketplace "
                     f"{p['marketplace_path'] or '(not declared)'} holds no plugin: "
                     "Claude Code will not load it",
                     "run `codexbridge setup claude` again from the installed codexbridge",
                     details)
    return Check("claude-plugin", OK,
                 f"the plugin is enabled ({where} settings) from {p['marketplace_path']}: "
                 "its Stop hook, watcher and MCP tools run in every session here",
                 details=details)


# --- mailboxes and the block chain ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Mailbox:
    """One mailbox (inbox/peek.py `summarize`); `listener` is its session.json, `reach`
    how mail reaches the listening session now (messages/to_claude.py `reach`)."""

    name: str
    pending: int = 0
    rejected: int = 0
    in_flight: int = 0
    listener: Mapping[str, object] | None = None
    rejected_file: str = ""
    reach: Reach | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class MailboxFacts:
    inbox_dir: str
    mailboxes: tuple[Mailbox, ...] = ()
    listeners: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    error: str | None = None


def mailboxes() -> MailboxFacts:
    directory = inbox_dir()
    try:
        listeners = read_listeners(directory)
        summaries = summarize(directory, listeners)
    except OSError as exc:
        return MailboxFacts(directory, error=exc.strerror or str(exc))
    return MailboxFacts(directory, tuple(
        Mailbox(s.name, s.pending, s.rejected, s.in_flight, s.listener,
                rejected_path(directory, s.name),
                reach(directory, s.name) if s.listener else None) for s in summaries),
        listeners)


def mailbox_rows(m: MailboxFacts, hooked: Sequence[str] = ()) -> list[Check]:
    """`hooked`: mailboxes the checked project's Stop hooks listen as."""
    directory = m.inbox_dir
    if m.error:
        return [Check("mailboxes", WARN, f"could not read {directory}: {m.error}",
                      f"check the permissions of {directory}", {"inbox_dir": directory})]
    if not m.mailboxes:
        return [Check("mailboxes", INFO, f"no mailboxes yet in {directory}", None,
                      {"inbox_dir": directory})]
    listened = [b.name for b in m.mailboxes if b.listener]
    return [_mailbox_row(b, sorted(set(listened) | set(hooked)), hooked) for b in m.mailboxes]


def _reach_phrase(reach: Reach | None, statuses: list[Status],
                  fixes: list[str]) -> str:
    """How mail reaches the listening session now: live into its cross-session inbox,
    or at its next stop (why). A protocol we do not know is a WARN: a Claude upgrade
    changed what live delivery relies on, and it stays off until codexbridge knows."""
    if reach is None:
        return "reach unknown"
    if reach["live"]:
        return f"mail goes live into the running session ({reach['session']})"
    if reach["drift"]:
        statuses.append(WARN)
        fixes.append("live delivery is off for this Claude Code version; mail still "
                     "arrives through the Stop hook (update codexbridge)")
    return f"mail waits for the next stop: {reach['reason']}"


def _mailbox_row(b: Mailbox, known: list[str], hooked: Sequence[str]) -> Check:
    name, pending = b.name, b.pending
    listener = None if b.listener is None else Listener.from_json(b.listener, name)
    parts = [f"{pending} pending"]
    if b.in_flight:
        parts.append(f"{b.in_flight} being delivered")
    statuses: list[Status] = [OK]
    fixes: list[str] = []
    if listener is not None and listener.error:
        statuses.append(WARN)
        parts.append(f"listener file: {listener.error}")
        fixes.append("the next stop of a hooked session rewrites it")
    elif listener is not None:
        parts.append(f"listener cwd {listener.cwd or '-'}, session "
                     f"{listener.session_id or '-'}, last seen {listener.last_seen or '-'}")
        parts.append(_reach_phrase(b.reach, statuses, fixes))
    elif pending and name in hooked:
        statuses.append(INFO)
        parts.append("this project's Stop hook listens as it, but no session has run the "
                     "hook yet: the mail arrives at its first stop")
    elif pending:
        statuses.append(WARN)
        others = [k for k in known if k != name]
        guess = closest_name(name, others) if others else None
        parts.append("nobody has ever listened as this name (a typo?"
                     + (f' did you mean "{guess}"?' if guess else "") + ")")
        fixes.append(f"hook a session with `codexbridge install-hook --project DIR --as {name}`"
                     + (f', or send to "{guess}"' if guess else ""))
    else:
        statuses.append(INFO)
        parts.append("no listener yet")
    if b.rejected:
        statuses.append(WARN)
        parts.append(f"{plural(b.rejected, 'rejected line')} kept in {b.rejected_file}")
        fixes.append(f"read {b.rejected_file}; delete it once handled")
    status = WARN if WARN in statuses else (INFO if INFO in statuses else OK)
    return Check(f"mailbox:{name}", status, "; ".join(parts), "; ".join(fixes) or None,
                 b.as_dict())


def chain_rows(shell_env: Mapping[str, str], settings_env: Mapping[str, str]) -> list[Check]:
    """CODEX_BRIDGE_MAX_CHAIN against CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, as the hook would see
    them: this shell's values with the project settings' `env` on top."""
    env = {k: v for k, v in shell_env.items() if k in CHAIN_VARS}
    env.update({k: v for k, v in settings_env.items() if k in CHAIN_VARS})
    value, note = effective_max_chain(env)
    cap = env.get("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "8")
    shown = ", ".join(f"{k}={v}" for k, v in sorted(env.items())) or (
        "the defaults: neither variable is set in this shell or the settings' env")
    details = {"env": env, "effective_max_chain": value,
               "from_settings": sorted(k for k in settings_env if k in CHAIN_VARS)}
    if note:
        return [Check("max-chain", WARN, f"{note} ({shown})",
                      "set CODEX_BRIDGE_MAX_CHAIN below CLAUDE_CODE_STOP_HOOK_BLOCK_CAP "
                      "(or unset both)", details)]
    return [Check("max-chain", OK,
                  f"the hook blocks at most {value} times in a row, below Claude's block cap "
                  f"of {cap} ({shown})", details=details)]

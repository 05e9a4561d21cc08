"""Doctor rows for the Claude side: Claude Code and whether it still offers what
codexbridge relies on, the project's hooks, the mailboxes, the chain limit, tmux. Pure:
plain dicts in, `Check`s out (the keys are in each docstring).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ..hooks.seen import UNNAMED
from ..host.binaries import (
    CLAUDE_OLDEST,
    CLAUDE_VERSION,
    VersionFit,
    install_hint,
    version_fit,
)
from ..inbox.hook import effective_max_chain
from ..inbox.listeners import closest_name
from ..inbox.live_rules import PEER_PROTOCOL
from .parse import CHAIN_VARS
from .report import INFO, OK, WARN, Check
from .rows import Facts, pinned_fix, plural, version_row

# --- 5. Claude side ----------------------------------------------------------------------

def claude_rows(f: Facts) -> list[Check]:
    """`path`, `source`, `error`, `version`, `version_error` — like `codex_rows`."""
    if not f.get("path"):
        return [Check("claude", INFO,
                      f"Claude Code not found ({f.get('error') or 'not on PATH'}): the CLI "
                      "side works without it; Claude sessions need it for the Stop hook",
                      f"install Claude Code {CLAUDE_VERSION}: {install_hint('claude')}; or "
                      "set CODEX_BRIDGE_CLAUDE_BIN to its path")]
    return [Check("claude", OK, f"{f['path']} (found via {f.get('source') or 'lookup'})",
                  details={"path": f["path"], "source": f.get("source")}),
            version_row("claude-version", "claude", f, (CLAUDE_OLDEST, CLAUDE_VERSION),
                        f"the Stop-hook framing, block cap and asyncRewake were measured "
                        f"on {CLAUDE_VERSION}: "
                        + pinned_fix("claude", "CODEX_BRIDGE_CLAUDE_BIN"),
                        "the claude-compat rows judge whether it fits")]


# --- 5b. does this Claude Code still offer what codexbridge relies on? --------------------
# A Claude Code newer than the tested one is judged by evidence — what its sessions
# handed our hooks (hooks/seen.py records it), what their transcripts hold (the handoff
# canary) — never by its version number alone (SETUP.md, "Checking the set-up").

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
# The registry entry fields live delivery reads (inbox/live_rules.py `target`).
REGISTRY_FIELDS = ("sessionId", "peerProtocol", "messagingSocketPath")
LIVE_FALLBACK = ("live delivery stays off meanwhile: mail arrives through the Stop hook "
                 "(and the asyncRewake watcher wakes an idle session)")


def claude_compat_rows(f: Facts) -> list[Check]:
    """f: `claude` (`claude_rows`' facts: path, version), `seen` (hooks/seen.py
    `read_seen`: path, exists, record), `transcripts` (the handoff canary's Claude
    entries; None: not checked). One row per concern — live delivery's protocol, the
    hooks' input, the transcript records — since each has its own evidence, its own
    consequence and its own fallback."""
    claude: Facts = f.get("claude") or {}
    seen: Facts = f.get("seen") or {}
    if not claude.get("path") and not seen.get("exists"):
        return []  # no Claude Code here and none ever ran our hooks: nothing to judge
    installed = claude.get("version")
    if seen.get("exists") and not isinstance(seen.get("record"), Mapping):
        unreadable = Check(f"{COMPAT}:hook-input", WARN,
                           f"{seen.get('path')} is not readable JSON: what Claude Code "
                           "handed the hooks is not known",
                           "remove it; the next hook run writes it again", dict(seen))
        return [unreadable, _transcript_row(f.get("transcripts"))]
    record: Facts = seen.get("record") or {}
    return [_peer_row(record.get("peer"), installed),
            _hook_input_row(record.get("hooks"), installed),
            _transcript_row(f.get("transcripts"))]


def _day(entry: Facts) -> str:
    return str(entry.get("seen") or "?")[:10]


def _compat_fix(version: Any, meanwhile: str) -> str:
    """Never "downgrade" a newer Claude Code: codexbridge is what has to catch up."""
    known = version if isinstance(version, str) else None
    if known and version_fit(known, CLAUDE_OLDEST, CLAUDE_VERSION) is VersionFit.OLDER:
        return f"install Claude Code {CLAUDE_VERSION}: {install_hint('claude')}"
    about = f" that knows Claude Code {known}" if known else ""
    return f"update codexbridge (a release{about}); {meanwhile}"


def _stale(seen_version: Any, installed: Any) -> str | None:
    """Why the evidence does not speak for the installed Claude Code, or None."""
    if (isinstance(seen_version, str) and isinstance(installed, str)
            and seen_version != installed):
        return (f"that was Claude Code {seen_version}; the installed {installed} has not "
                "run codexbridge's hooks since")
    return None


NOT_YET = ("start Claude Code in a project with codexbridge's hooks (`codexbridge setup "
           "claude`), or run `claude -p hi` there, then run doctor again")


def _peer_problems(p: Facts) -> list[str]:
    if not p.get("pid_env"):
        return ["hooks no longer get CLAUDE_PID: live delivery cannot find the session's "
                "registry entry"]
    out = []
    if p.get("socket_env") and not p.get("registry"):
        out.append("the session has an inbox socket but no registry entry "
                   "($CLAUDE_CONFIG_DIR/sessions/<pid>.json): live delivery takes it for "
                   "not running")
    if p.get("registry") and not p.get("socket_env"):
        out.append("hooks no longer get CLAUDE_CODE_MESSAGING_SOCKET: live delivery has "
                   "no address for the session")
    fields = set(p.get("registry_fields") or [])
    gone = [k for k in REGISTRY_FIELDS if p.get("registry") and k not in fields]
    if gone:
        out.append(f"the session registry has no {', '.join(gone)}: live delivery cannot "
                   "check the session")
    protocol = p.get("protocol")
    if "peerProtocol" not in gone and p.get("registry") and protocol != PEER_PROTOCOL:
        out.append(f"the session advertises peerProtocol {protocol!r}; codexbridge "
                   f"speaks {PEER_PROTOCOL}: live delivery is off for such sessions")
    if (p.get("registry") and p.get("socket_env") and "messagingSocketPath" not in gone
            and not p.get("socket_matches")):
        out.append("the registry's messagingSocketPath is not the socket the hooks are "
                   "told: live delivery takes the session's inbox for gone")
    return out


def _peer_row(p: Any, installed: Any) -> Check:
    name = f"{COMPAT}:peer-protocol"
    if not isinstance(p, Mapping):
        return Check(name, INFO, "not yet seen: no Claude session has run codexbridge's "
                     "hooks, so what its cross-session inbox speaks is unknown", NOT_YET)
    details = dict(p)
    version = p.get("claude_version")
    said = f"on {_day(p)}" + (f" (Claude Code {version})" if version else "")
    if not p.get("registry") and not p.get("socket_env") and p.get("pid_env"):
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


def _hook_gaps(hooks: Mapping[str, Any]) -> list[str]:
    gaps = []
    for event, wanted in HOOK_INPUT.items():
        entry = hooks.get(event)
        if not isinstance(entry, Mapping):
            continue
        have = set(entry.get("fields") or [])
        for field_name, breaks in wanted.items():
            if field_name not in have:
                gaps.append(f"{event} hook input ({_day(entry)}) has no {field_name}: "
                            f"{breaks}")
    if isinstance(hooks.get(UNNAMED), Mapping):
        gaps.append(f"{NO_EVENT_NAME} (seen {_day(hooks[UNNAMED])})")
    return gaps


def _hook_input_row(hooks: Any, installed: Any) -> Check:
    name = f"{COMPAT}:hook-input"
    events = {k: v for k, v in (hooks or {}).items() if isinstance(v, Mapping)} \
        if isinstance(hooks, Mapping) else {}
    if not events:
        return Check(name, INFO, "not yet seen: no Claude session has run codexbridge's "
                     "hooks, so their input fields are unknown", NOT_YET)
    # the newest evidence speaks for the Claude Code that ran the hooks last
    version = max(events.values(), key=lambda e: str(e.get("seen") or "")).get(
        "claude_version")
    details = {"hooks": events, "relied_on": {k: sorted(v) for k, v in HOOK_INPUT.items()}}
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


def _transcript_row(entries: Any) -> Check:
    """The handoff canary's verdict over this project's Claude transcripts, reused."""
    name = f"{COMPAT}:transcript"
    if entries is None:
        return Check(name, INFO, "not checked: the handoff canary did not run (see the "
                     "handoff rows)")
    read = [e for e in entries if isinstance(e, Mapping) and int(e.get("records") or 0)]
    if not read:
        return Check(name, INFO, "not yet seen: no transcript of a Claude session in this "
                     "project to read", NOT_YET)
    unknown: dict[str, int] = {}
    for e in read:
        for kind, n in (e.get("unknown") or {}).items():
            unknown[str(kind)] = unknown.get(str(kind), 0) + int(n)
    drifted = [e for e in read if e.get("verdict") == "drifted"]
    records = sum(int(e.get("records") or 0) for e in read)
    details = {"sessions": [{k: e.get(k) for k in ("session_id", "where", "verdict", "why",
                                                   "records", "said", "unknown")}
                            for e in read], "unknown": unknown}
    if unknown or drifted:
        parts = []
        if unknown:
            kinds = ", ".join(f"{k} ×{n}" for k, n in sorted(unknown.items()))
            parts.append(f"record kinds codexbridge does not know ({kinds}): handoff leaves "
                         "them out, so whatever they hold does not cross to Codex")
        parts += [f"{e.get('where')}: {e.get('why')}: handoff from it "
                  + ("carries nothing" if not e.get("said") else "misses part of it")
                  for e in drifted]
        return Check(name, WARN, f"Claude's transcripts moved ({plural(len(read), 'session')}"
                     f"): " + "; ".join(parts),
                     "update codexbridge (its transcript parser is "
                     "codexbridge/handoff/claude_source.py); report the record kinds named "
                     "here", details)
    said = sum(int(e.get("said") or 0) for e in read)
    return Check(name, OK, f"{plural(len(read), 'transcript')} of this project read: "
                 f"{plural(records, 'record')}, every kind one codexbridge knows, "
                 f"{plural(said, 'message')} recognised", None, details)


def _files_phrase(files: Sequence[Facts]) -> str:
    return ", ".join(str(f.get("path")) for f in files)


def project_rows(p: Facts, listeners: Mapping[str, Mapping[str, Any]],
                 plugin_enabled: bool = False) -> list[Check]:
    """p: `dir`, `files` [{path, scope, exists, error, hooks: [{event, kind, mailbox,
    async_rewake, interpreter, interpreter_ok}], env}]; `listeners` as in mailbox facts;
    `plugin_enabled`: codexbridge's Claude Code plugin brings the hooks instead."""
    rows: list[Check] = []
    files = list(p.get("files") or [])
    for f in files:
        if f.get("error"):
            rows.append(Check("claude-settings", WARN,
                              f"{f.get('path')} is not valid settings ({f['error']}): Claude "
                              "Code ignores the whole file (silently under -p), hooks included",
                              f"fix it: `python -m json.tool {shlex.quote(str(f.get('path')))}` "
                              "shows where", {"path": f.get("path"), "error": f["error"]}))
    hooks = [dict(h, file=f.get("path")) for f in files if not f.get("error")
             for h in f.get("hooks") or []]
    stops = [h for h in hooks if h.get("kind") == "hook"]
    watchers = [h for h in hooks if h.get("kind") == "watch"]
    looked = _files_phrase(files)
    details: dict[str, Any] = {"project": p.get("dir"), "hooks": hooks}
    if not stops and plugin_enabled:
        rows.append(Check("claude-hook", OK, f"the codexbridge plugin brings the Stop hook and "
                          f"the watcher to sessions in {p.get('dir')} (see claude-plugin)", None,
                          details))
        return rows
    if not stops:
        status = WARN if watchers else INFO
        also = (f"; asyncRewake watchers for {sorted({w['mailbox'] for w in watchers})} "
                "run without a Stop hook" if watchers else "")
        rows.append(Check("claude-hook", status,
                          f"no codexbridge Stop hook in {looked}: mail from Codex does not "
                          f"reach Claude sessions in {p.get('dir')}{also}",
                          "`codexbridge setup claude` (the plugin: hooks, watcher and MCP "
                          "tools in every project); hooks only: `codexbridge install-hook "
                          f"--project {shlex.quote(str(p.get('dir')))} --as NAME`", details))
        return rows
    problems = [h for h in hooks if h.get("interpreter") and h.get("interpreter_ok") is False]
    for h in problems:
        rows.append(Check("claude-hook", WARN,
                          f"the {h.get('event')} hook for mailbox \"{h.get('mailbox')}\" in "
                          f"{h.get('file')} runs {h.get('interpreter')}, which does not exist: "
                          "it cannot deliver",
                          "re-run `codexbridge install-hook` from the environment codexbridge "
                          "is installed in", {"hook": h}))
    for mailbox in sorted({h["mailbox"] for h in stops}):
        mine = [h for h in stops if h["mailbox"] == mailbox]
        woke = sorted({str(w.get("event")) for w in watchers if w["mailbox"] == mailbox})
        rewake = f" + asyncRewake watcher on {', '.join(woke)}" if woke else ""
        lst = listeners.get(mailbox) or {}
        seen = (f"a session last ran it {lst['last_seen']}" if lst.get("last_seen")
                else "no session has run it yet")
        rows.append(Check("claude-hook", OK,
                          f"Stop hook for mailbox \"{mailbox}\"{rewake} in "
                          f"{_files_phrase([{'path': h['file']} for h in mine])}; {seen}",
                          details={"mailbox": mailbox, "files": [h["file"] for h in mine],
                                   "rewake_events": woke, "last_seen": lst.get("last_seen")}))
    return rows


# --- 6. mailboxes and the block chain ----------------------------------------------------

def mailbox_rows(m: Facts, hooked: Sequence[str] = ()) -> list[Check]:
    """`inbox_dir`, `error`, `mailboxes` [{name, pending, rejected, in_flight, listener,
    rejected_file}]; `hooked`: mailboxes the checked project's Stop hooks listen as."""
    directory = m.get("inbox_dir")
    if m.get("error"):
        return [Check("mailboxes", WARN, f"could not read {directory}: {m['error']}",
                      f"check the permissions of {directory}", {"inbox_dir": directory})]
    boxes = list(m.get("mailboxes") or [])
    if not boxes:
        return [Check("mailboxes", INFO, f"no mailboxes yet in {directory}", None,
                      {"inbox_dir": directory})]
    listened = [str(b["name"]) for b in boxes if b.get("listener")]
    return [_mailbox_row(b, sorted(set(listened) | set(hooked)), hooked) for b in boxes]


def _reach_phrase(reach: Any, statuses: list[str], fixes: list[str]) -> str:
    """How mail reaches the listening session now: live into its cross-session inbox,
    or at its next stop (why). A protocol we do not know is a WARN: a Claude upgrade
    changed what live delivery relies on, and it stays off until codexbridge knows."""
    if not isinstance(reach, Mapping):
        return "reach unknown"
    if reach.get("live"):
        return f"mail goes live into the running session ({reach.get('session')})"
    if reach.get("drift"):
        statuses.append(WARN)
        fixes.append("live delivery is off for this Claude Code version; mail still "
                     "arrives through the Stop hook (update codexbridge)")
    return f"mail waits for the next stop: {reach.get('reason')}"


def _mailbox_row(b: Facts, known: list[str], hooked: Sequence[str]) -> Check:
    name = str(b.get("name"))
    pending = int(b.get("pending") or 0)
    rejected = int(b.get("rejected") or 0)
    in_flight = int(b.get("in_flight") or 0)
    listener = b.get("listener")
    parts = [f"{pending} pending"]
    if in_flight:
        parts.append(f"{in_flight} being delivered")
    statuses = [OK]
    fixes: list[str] = []
    if isinstance(listener, Mapping) and listener.get("error"):
        statuses.append(WARN)
        parts.append(f"listener file: {listener['error']}")
        fixes.append("the next stop of a hooked session rewrites it")
    elif isinstance(listener, Mapping):
        parts.append(f"listener cwd {listener.get('cwd') or '-'}, session "
                     f"{listener.get('session_id') or '-'}, last seen "
                     f"{listener.get('last_seen') or '-'}")
        parts.append(_reach_phrase(b.get("reach"), statuses, fixes))
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
    if rejected:
        statuses.append(WARN)
        parts.append(f"{plural(rejected, 'rejected line')} kept in {b.get('rejected_file')}")
        fixes.append(f"read {b.get('rejected_file')}; delete it once handled")
    status = WARN if WARN in statuses else (INFO if INFO in statuses else OK)
    return Check(f"mailbox:{name}", status, "; ".join(parts), "; ".join(fixes) or None,
                 {k: b.get(k) for k in ("name", "pending", "rejected", "in_flight", "listener",
                                        "rejected_file", "reach")})


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


# --- 7. tmux -----------------------------------------------------------------------------

def tmux_rows(path: str | None) -> list[Check]:
    if path:
        return [Check("tmux", INFO, f"{path} (used by `codexbridge demo` only)", None,
                      {"path": path})]
    return [Check("tmux", INFO, "not found: only `codexbridge demo` needs it (the bridge "
                  "itself does not)", "install tmux to run the offline demo",
                  {"path": None})]


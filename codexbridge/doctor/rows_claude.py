"""Doctor rows for the Claude side: Claude Code, the project's hooks, the mailboxes, the
chain limit, tmux. Pure: plain dicts in, `Check`s out (the keys are in each docstring).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ..host.binaries import CLAUDE_OLDEST, CLAUDE_VERSION, install_hint
from ..inbox.hook import effective_max_chain
from ..inbox.listeners import closest_name
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


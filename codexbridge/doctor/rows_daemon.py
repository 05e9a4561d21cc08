"""Doctor rows for codex's own daemon and for how the TUI attaches. Pure: facts in, rows
out.

    codex-daemon    is CODEX_HOME's managed daemon running (its socket answering)
    endpoint-pick   a serve and the daemon both run: which one talk / mcp use, how to
                    pick the other (only then); WARN when they share a CODEX_HOME
    tui-attach      the exact line that opens the Codex TUI on the app-server in force
    claude-plugin   is codexbridge's Claude Code plugin enabled here (`setup claude`)
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

from ..host.daemon import attach_line, is_daemon_url, start_hint
from .report import INFO, OK, WARN, Check

Facts = Mapping[str, Any]


def daemon_row(d: Facts) -> Check:
    """d: `home`, `socket`, `url`, `enabled`, `listening` (host/daemon.py `facts`)."""
    details = dict(d)
    if not d.get("enabled"):
        return Check("codex-daemon", INFO, "not looked for: CODEX_BRIDGE_DAEMON=off", None,
                     details)
    if d.get("listening"):
        return Check("codex-daemon", OK,
                     f"codex's own daemon of {d.get('home')} answers at {d.get('url')}",
                     details=details)
    return Check("codex-daemon", INFO,
                 f"codex's own daemon of {d.get('home')} is not running (no {d.get('socket')})",
                 f"{start_hint()}; or keep using `codexbridge serve`", details)


def pick_row(d: Facts, serve: Facts, ep: Facts) -> list[Check]:
    """ep: `url`, `source`, `threads` (of the app-server in force). Only when serve and
    the daemon both run; a WARN when they share a CODEX_HOME (bridge.json's
    `codex_home`): codex lets one app-server write a thread, so a thread the TUI has on
    one cannot be driven through the other."""
    if not (d.get("listening") and serve.get("serve_alive") and ep.get("url")):
        return []
    raw = serve.get("record")
    record: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    serve_url, pid, home = record.get("url"), record.get("pid"), record.get("codex_home")
    on_daemon = ep.get("url") == d.get("url")
    users = [t for t in ep.get("threads") or [] if isinstance(t, dict) and t.get("user")]
    used = ("codex's own daemon" if on_daemon else "`codexbridge serve`") + (
        f" (it holds {len(users)} user thread{'s' if len(users) != 1 else ''})")
    details = {"serve": serve_url, "serve_pid": pid, "daemon": d.get("url"),
               "codex_home": home, "using": ep.get("url")}
    other = serve_url if on_daemon else d.get("url")
    if not isinstance(home, str) or os.path.normpath(home) != os.path.normpath(
            str(d.get("home"))):
        return [Check("endpoint-pick", INFO,
                      f"both `codexbridge serve` ({serve_url}) and codex's daemon "
                      f"({d.get('url')}) run: talk and mcp use {used}",
                      f"to use the other: --url {other} (or CODEX_BRIDGE_URL)", details)]
    if on_daemon:
        fix = (f"stop the leftover serve: Ctrl-C in its terminal, or `kill {pid}` (the TUI, "
               "plain `codex`, is on the daemon)")
    else:
        fix = (f"keep one: if the TUI runs on serve (`codex --remote {serve_url}`), stop the "
               "daemon with `codex app-server daemon stop`; if it runs on the daemon (plain "
               f"`codex`), stop serve with Ctrl-C in its terminal or `kill {pid}`")
    return [Check("endpoint-pick", WARN,
                  f"two app-servers run on one CODEX_HOME ({home}): `codexbridge serve` "
                  f"({serve_url}, pid {pid}) and codex's own daemon ({d.get('url')}). codex "
                  "lets one of them write a thread, so a thread the TUI has on one cannot be "
                  f"driven through the other; talk and mcp use {used}, --url {other} the "
                  "other", fix, details)]


def attach_row(ep: Facts, project: str, serve: Facts) -> Check:
    """The TUI line for the endpoint in force (ep: `url`, `source`, `token`)."""
    url = ep.get("url")
    if not url:
        return Check("tui-attach", INFO, "no app-server to attach the TUI to",
                     f"{start_hint()}, or run `codexbridge serve --cwd DIR`")
    raw = serve.get("record")
    record: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    public = record.get("public_url") if record.get("url") == url else None
    line = attach_line(str(public or url), project)
    if str(ep.get("source") or "").startswith("codex daemon") or is_daemon_url(str(url)):
        plain = f"codex -C {shlex.quote(project)}"  # attaches to the daemon by itself
        return Check("tui-attach", INFO,
                     f"open the TUI with: {plain} (plain `codex` in this CODEX_HOME attaches "
                     f"to codex's own daemon by itself; the explicit form: {line})", None,
                     {"line": plain, "explicit": line, "url": url})
    if ep.get("token"):
        line = ("CODEX_BRIDGE_TOKEN=<token> " + line
                + " --remote-auth-token-env CODEX_BRIDGE_TOKEN")
    return Check("tui-attach", INFO, f"open the TUI with: {line}", None,
                 {"line": line, "url": url})


def daemon_rows(d: Facts, serve: Facts, ep: Facts, project: str) -> list[Check]:
    return [daemon_row(d), *pick_row(d, serve, ep), attach_row(ep, project, serve)]


def plugin_row(p: Facts) -> Check:
    """p: host/claude_plugin.py `plugin_facts` (marketplace_path, marketplace_ok, enabled_in,
    bin)."""
    details = dict(p)
    if not p.get("enabled_in"):
        return Check("claude-plugin", INFO,
                     "codexbridge's Claude Code plugin is not enabled for this project",
                     "`codexbridge setup claude` (every project) or `--project DIR`", details)
    where = ", ".join(p.get("enabled_in") or [])
    if not p.get("marketplace_ok"):
        return Check("claude-plugin", WARN,
                     f"the plugin is enabled ({where} settings) but its marketplace "
                     f"{p.get('marketplace_path') or '(not declared)'} holds no plugin: "
                     "Claude Code will not load it",
                     "run `codexbridge setup claude` again from the installed codexbridge",
                     details)
    return Check("claude-plugin", OK,
                 f"the plugin is enabled ({where} settings) from {p.get('marketplace_path')}: "
                 "its Stop hook, watcher and MCP tools run in every session here",
                 details=details)

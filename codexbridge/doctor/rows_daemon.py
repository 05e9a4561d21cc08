"""Doctor rows for codex's own daemon and for how the TUI attaches. Pure: facts in, rows
out.

    codex-daemon    is CODEX_HOME's managed daemon running (its socket answering)
    endpoint-pick   a serve and the daemon both run: which one talk / mcp use, how to
                    pick the other (only then)
    tui-attach      the exact line that opens the Codex TUI on the app-server in force
    claude-plugin   is codexbridge's Claude Code plugin enabled here (`setup claude`)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..host.daemon import attach_line, start_hint
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
    """ep: `url`, `source`. Only when serve and the daemon both run."""
    if not (d.get("listening") and serve.get("serve_alive") and ep.get("url")
            and ep.get("url") != d.get("url")):
        return []
    return [Check("endpoint-pick", INFO,
                  f"both `codexbridge serve` ({ep.get('url')}) and codex's daemon "
                  f"({d.get('url')}) run: talk and mcp use serve while it runs",
                  f"to use the daemon: --url {d.get('url')} (or CODEX_BRIDGE_URL)",
                  {"serve": ep.get("url"), "daemon": d.get("url")})]


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
    if ep.get("token"):
        line = ("CODEX_BRIDGE_TOKEN=<token> " + line
                + " --remote-auth-token-env CODEX_BRIDGE_TOKEN")
    extra = ""
    if str(ep.get("source") or "").startswith("codex daemon"):
        extra = " (plain `codex` in this CODEX_HOME attaches to the daemon by itself)"
    return Check("tui-attach", INFO, f"open the TUI with: {line}{extra}", None,
                 {"line": line, "url": url})


def daemon_rows(d: Facts, serve: Facts, ep: Facts, project: str) -> list[Check]:
    return [daemon_row(d), *pick_row(d, serve, ep), attach_row(ep, project, serve)]


def plugin_row(p: Facts) -> Check:
    """p: setup/status.py `plugin_facts` (marketplace_path, marketplace_ok, enabled_in,
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

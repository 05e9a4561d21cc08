"""Turning gathered facts into doctor rows — the codex side: the binary, serve and the
app-server, threads, approval diverters. Pure: plain dicts in, `Check`s out.

Every row says only what was actually looked at: OK means "checked, and fine", and a
thing that could not be checked says so instead of passing. The fact dicts are built by
`gather.py`; their keys are listed in each function's docstring. The Claude side's rows
are in `rows_claude.py`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ..host.binaries import (
    CODEX_OLDEST,
    CODEX_VERSION,
    VersionFit,
    in_checkout,
    install_hint,
    supported_range,
    tools_dir,
    version_fit,
)
from .parse import DIVERTING_REVIEWERS
from .report import FAIL, INFO, OK, WARN, Check

Facts = Mapping[str, Any]


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --- 1. codex ----------------------------------------------------------------------------

def codex_rows(f: Facts) -> list[Check]:
    """`path`, `source` (which lookup step found it), `error` (not found); `version`,
    `version_error`; `listen` ({listen_option, ws, unix}) or `help_error`."""
    if not f.get("path"):
        return [Check("codex", FAIL, str(f.get("error") or "codex not found"),
                      f"install codex {CODEX_VERSION}: {install_hint('codex')}; or set "
                      "CODEX_BRIDGE_CODEX_BIN to its path")]
    rows = [Check("codex", OK, f"{f['path']} (found via {f.get('source') or 'lookup'})",
                  details={"path": f["path"], "source": f.get("source")})]
    rows.append(version_row("codex-version", "codex", f, (CODEX_OLDEST, CODEX_VERSION),
                            pinned_fix("codex", "CODEX_BRIDGE_CODEX_BIN"),
                            "the protocol row judges whether it fits"))
    rows.append(_listen_row(f))
    return rows


def pinned_fix(command: str, env_var: str) -> str:
    """How to get the tested `command` ("codex" / "claude") used: a checkout has its own
    copy in .tools/ (found after PATH, so named by the variable); an install has npm."""
    if in_checkout():
        pinned = tools_dir() / command / "node_modules" / ".bin" / command
        return (f"{install_hint(command)}; for the checkout's copy set {env_var}={pinned} "
                "(a codex or claude on PATH comes first)")
    return f"{install_hint(command)} (and unset {env_var} if it names another one)"


def version_row(name: str, what: str, f: Facts, supported: tuple[str, str], fix: str,
                judged_by: str) -> Check:
    """The `--version` row: OK inside the supported range (oldest, pin) and above it (a
    newer release is judged by what it speaks — `judged_by` names the row — never told
    to downgrade); WARN below it, where codexbridge is known not to be tested."""
    if f.get("version_error"):
        return Check(name, WARN, f"could not run `{what} --version`: {f['version_error']}",
                     f"check that {f.get('path')} runs", {"error": f["version_error"]})
    version = f.get("version")
    if not version:
        return Check(name, WARN, f"`{what} --version` printed no version number",
                     f"check that {f.get('path')} is {what}", {})
    return fit_row(name, str(version), supported, fix, judged_by)


def fit_row(name: str, version: str, supported: tuple[str, str], fix: str,
            judged_by: str, said: str = "", details: Mapping[str, Any] | None = None) -> Check:
    oldest, pin = supported
    span = supported_range(oldest, pin)
    fit = version_fit(version, oldest, pin)
    info = {**(details or {}), "version": version, "oldest": oldest, "tested": pin,
            "fit": fit.value}
    lead = f"{said}{version}"
    if fit in (VersionFit.TESTED, VersionFit.IN_RANGE):
        return Check(name, OK, f"{lead}, within the supported range {span}", details=info)
    if fit is VersionFit.NEWER:
        return Check(name, OK, f"{lead}, newer than the tested range {span}: {judged_by}",
                     details=info)
    if fit is VersionFit.UNKNOWN:
        return Check(name, INFO, f"{lead}: not a release number codexbridge can place "
                     f"against the supported range {span}; {judged_by}", details=info)
    return Check(name, WARN, f"{lead} is older than the oldest supported, {oldest} "
                 f"(supported: {span})", fix, info)


def _listen_row(f: Facts) -> Check:
    if f.get("help_error"):
        return Check("listen-schemes", WARN,
                     f"could not run `codex app-server --help`: {f['help_error']}",
                     f"check that {f.get('path')} runs", {"error": f["help_error"]})
    listen = f.get("listen") or {}
    if not listen.get("listen_option"):
        return Check("listen-schemes", FAIL,
                     "`codex app-server --help` shows no --listen option: this codex cannot "
                     "serve the TUI and the bridge together",
                     f"install codex {CODEX_VERSION}: {install_hint('codex')}", dict(listen))
    if not listen.get("ws"):
        return Check("listen-schemes", FAIL,
                     "`codex app-server --listen` does not list ws://: `codexbridge serve` "
                     "cannot start (some codex builds removed WebSocket listening)",
                     f"install codex {CODEX_VERSION}: {install_hint('codex')}", dict(listen))
    if not listen.get("unix"):
        return Check("listen-schemes", WARN,
                     "`codex app-server --listen` lists ws:// but not unix://: "
                     "--url unix://… will not work", None, dict(listen))
    return Check("listen-schemes", OK, "`codex app-server --listen` lists ws:// and unix://",
                 details=dict(listen))


# --- 2. serve and the app-server ---------------------------------------------------------

def serve_rows(serve: Facts, ep: Facts) -> list[Check]:
    """serve: `state_dir`, `bridge_file`, `exists`, `record` (None: unreadable),
    `serve_alive`, `app_server_alive`. ep: `url`, `source`, `resolve_error`, `bad_url`, `token`,
    `reachable`, `connect_error`, `user_agent`, `server_version`, `codex_home`."""
    return [bridge_row(serve), endpoint_row(serve, ep)]


def bridge_row(s: Facts) -> Check:
    path = s.get("bridge_file")
    details = {"bridge_file": path, "state_dir": s.get("state_dir")}
    if not s.get("exists"):
        return Check("bridge-json", INFO,
                     f"no {path}: no `codexbridge serve` runs for this CODEX_BRIDGE_HOME "
                     "(codex's own daemon needs none)", None, details)
    record = s.get("record")
    if not isinstance(record, dict):
        return Check("bridge-json", WARN, f"{path} is not readable JSON",
                     f"remove it (`rm {shlex.quote(str(path))}`) and restart "
                     "`codexbridge serve`", details)
    details["record"] = {k: record.get(k) for k in ("url", "pid", "app_server_pid", "cwd",
                                                    "codex_version", "started_at")}
    pid = record.get("pid")
    if not isinstance(pid, int):
        return Check("bridge-json", WARN, f"{path} names no serve pid",
                     "remove it and restart `codexbridge serve`", details)
    if s.get("serve_alive") is False:
        return Check("bridge-json", WARN,
                     f"stale bridge.json: serve pid {pid} is not running ({path})",
                     f"remove it (`rm {shlex.quote(str(path))}`), or start `codexbridge "
                     "serve`, which replaces it", details)
    app_pid = record.get("app_server_pid")
    if s.get("app_server_alive") is False:
        return Check("bridge-json", WARN,
                     f"serve pid {pid} runs but its app-server (pid {app_pid}) is gone",
                     "stop serve (Ctrl-C in its terminal) and start it again", details)
    where = f", cwd {record['cwd']}" if record.get("cwd") else ""
    since = f" since {record['started_at']}" if record.get("started_at") else ""
    return Check("bridge-json", OK,
                 f"serve pid {pid} is running{since}: {record.get('url')}{where}",
                 details=details)


# What starts an app-server for a user who has none: codex's own daemon first.
START_FIX = ("open your TUI with `codex -C DIR`: it starts codex's own daemon (and attaches), "
             "which talk and mcp find by themselves; or run `codexbridge serve --cwd DIR` "
             "for a dedicated ws:// server")


def endpoint_row(s: Facts, ep: Facts) -> Check:
    url = ep.get("url")
    if ep.get("bad_url"):
        return Check("app-server", FAIL, str(ep["bad_url"]),
                     "correct --url / CODEX_BRIDGE_URL (or leave both unset: talk finds "
                     "codex's own daemon by itself)", {"error": ep["bad_url"]})
    if not url:
        return Check("app-server", WARN,
                     "no app-server running: neither codex's own daemon nor a "
                     "`codexbridge serve` (and no --url or CODEX_BRIDGE_URL)",
                     START_FIX, {"error": ep.get("resolve_error")})
    source = ep.get("source") or "?"
    details = {"url": url, "source": source, "token": bool(ep.get("token"))}
    from_record = source not in ("--url", "CODEX_BRIDGE_URL")
    if not ep.get("reachable"):
        details["error"] = ep.get("connect_error")
        if from_record and s.get("serve_alive") is False:
            return Check("app-server", WARN,
                         f"no serve is running (bridge.json is stale; nothing answers at {url})",
                         START_FIX, details)
        if "401" in str(ep.get("connect_error")):
            fix = ("the server wants a capability token: set CODEX_BRIDGE_TOKEN to the one "
                   "it was started with")
        elif from_record:
            fix = "restart `codexbridge serve`"
        elif source == "CODEX_BRIDGE_URL":
            fix = "start the app-server at that URL, or unset CODEX_BRIDGE_URL"
        else:
            fix = ("check the URL; is the app-server (codex's own daemon, or "
                   "`codexbridge serve`) running?")
        return Check("app-server", FAIL,
                     f"cannot reach {url} (from {source}): {ep.get('connect_error')}", fix,
                     details)
    version = ep.get("server_version")
    details.update({"user_agent": ep.get("user_agent"), "codex_version": version,
                    "codex_home": ep.get("codex_home")})
    said = f"{url} (from {source}) answered initialize"
    if not version:
        return Check("app-server", OK, f"{said}; its codex version is not in the userAgent",
                     details=details)
    restart = ("then restart codex's daemon (`codex app-server daemon stop`; the next "
               "`codex` starts it again)" if str(source).startswith("codex daemon")
               else "then restart `codexbridge serve`")
    return fit_row("app-server", str(version), (CODEX_OLDEST, CODEX_VERSION),
                   f"install codex {CODEX_VERSION}: {install_hint('codex')}; {restart}",
                   "the protocol row judges whether it fits", f"{said}: codex ", details)


# --- 3. threads --------------------------------------------------------------------------

def _thread_label(t: Mapping[str, Any]) -> str:
    name = f" \"{t['name']}\"" if t.get("name") else ""
    return f"{t.get('id')}{name} ({t.get('status')}, cwd {t.get('cwd') or '-'})"


def thread_rows(ep: Facts) -> list[Check]:
    """ep: `reachable`, `url`, `threads` (ThreadInfo.as_dict() plus `user`),
    `threads_error`."""
    if not ep.get("reachable"):
        return [Check("threads", INFO, "not checked: no app-server answered")]
    if ep.get("threads_error"):
        return [Check("threads", WARN, f"could not list threads: {ep['threads_error']}",
                      "run `codexbridge talk list` to see the error in full",
                      {"error": ep["threads_error"]})]
    threads = list(ep.get("threads") or [])
    users = [t for t in threads if t.get("user")]
    helpers = len(threads) - len(users)
    extra = f" (+{plural(helpers, 'ephemeral/helper thread')})" if helpers else ""
    details = {"user_threads": users, "ephemeral": helpers}
    if not users:
        from ..host.daemon import open_tui  # plain `codex` for the daemon, else --remote

        return [Check("threads", WARN, f"no user thread loaded{extra}",
                      f"{open_tui(str(ep.get('url') or '') or None)} and send it one message",
                      details)]
    if len(users) == 1:
        return [Check("threads", OK, f"1 user thread: {_thread_label(users[0])}{extra}",
                      details=details)]
    listed = "; ".join(_thread_label(t) for t in users)
    return [Check("threads", INFO, f"{len(users)} user threads: {listed}{extra}",
                  "`talk say` needs --thread ID|NAME (or --cwd DIR) to pick one", details)]


# --- 4. approval diverters ---------------------------------------------------------------

_SERVE_ONLY = "codexbridge serve --codex-arg={} --codex-arg={}"


def diverter_rows(layers: Sequence[Facts]) -> list[Check]:
    """One entry per CODEX_HOME codex uses: `home`, `used_by` (who uses it), `suffix`
    (row-name suffix), `exists`, `hooks_json` {path, exists, error,
    permission_request_hooks}, `config` {path, exists, error, …codex_config_facts}."""
    rows: list[Check] = []
    for layer in layers:
        suffix = str(layer.get("suffix") or "")
        whose = "; ".join(layer.get("used_by") or []) or "codex"
        home = layer.get("home")
        if not layer.get("exists"):
            rows.append(Check(f"codex-home{suffix}", INFO,
                              f"{home} ({whose}) does not exist: no hooks.json and no "
                              "config.toml there to divert approvals", None, {"home": home}))
            continue
        rows.append(_hooks_row(layer, suffix, whose))
        rows.extend(_config_rows(layer, suffix, whose))
    return rows


def _hooks_row(layer: Facts, suffix: str, whose: str) -> Check:
    hooks = layer.get("hooks_json") or {}
    config = layer.get("config") or {}
    name = f"codex-hooks{suffix}"
    details: dict[str, Any] = {"home": layer.get("home"), "hooks_json": hooks.get("path")}
    if hooks.get("error"):
        return Check(name, WARN,
                     f"{hooks.get('path')} ({whose}) could not be read: {hooks['error']}; "
                     "PermissionRequest hooks not checked",
                     "fix the file (codex may refuse it as well)", details)
    counted = int(hooks.get("permission_request_hooks") or 0)
    inline = int(config.get("permission_request_hooks") or 0)
    places = [p for p, n in ((str(hooks.get("path")), counted),
                             (f"{config.get('path')} [hooks]", inline)) if n]
    total = counted + inline
    details["permission_request_hooks"] = total
    if not total:
        looked = ("hooks.json" if hooks.get("exists") else "hooks.json absent") + ", " + (
            "config.toml" if config.get("exists") else "config.toml absent")
        return Check(name, OK, f"{layer.get('home')} ({whose}): no PermissionRequest hook "
                     f"({looked})", details=details)
    found = f"{layer.get('home')} ({whose}): {plural(total, 'PermissionRequest hook')} in " \
        f"{' and '.join(places)}"
    if config.get("hooks_enabled") is False:
        return Check(name, INFO, f"{found}, but [features] hooks = false turns hooks off",
                     None, details)
    return Check(name, WARN,
                 f"{found}: once trusted (/hooks in codex), it answers approvals before the "
                 "TUI is asked, so `--approvals tui` means the hook decides",
                 "remove the hook (or turn hooks off: [features] hooks = false); to keep it "
                 "for your own sessions, run the bridge on `"
                 + _SERVE_ONLY.format("--disable", "hooks") + "` instead of codex's daemon "
                 "(your config is left as it is)", details)


def _config_rows(layer: Facts, suffix: str, whose: str) -> list[Check]:
    config = layer.get("config") or {}
    path = config.get("path")
    details: dict[str, Any] = {"home": layer.get("home"), "config_toml": path}
    if config.get("error"):
        return [Check(f"approvals-reviewer{suffix}", WARN,
                      f"{path} ({whose}) could not be read: {config['error']}; reviewer and "
                      "approval policy not checked", "fix the file (codex refuses invalid "
                      "TOML at start-up too)", details)]
    if not config.get("exists"):
        return [Check(f"approvals-reviewer{suffix}", OK,
                      f"{layer.get('home')} ({whose}): no config.toml, so neither "
                      "approvals_reviewer nor approval_policy is set", details=details)]
    reviewer = config.get("approvals_reviewer")
    key = config.get("approvals_reviewer_key") or "approvals_reviewer"
    details["approvals_reviewer"] = reviewer
    if reviewer in DIVERTING_REVIEWERS:
        rev = Check(f"approvals-reviewer{suffix}", WARN,
                    f'{path} ({whose}): {key} = "{reviewer}" — a reviewer agent answers '
                    "approvals, the TUI is never asked",
                    'set approvals_reviewer = "user"; to keep the reviewer for your own '
                    "sessions, run the bridge on `"
                    + _SERVE_ONLY.format("-c", "approvals_reviewer=user")
                    + "` instead of codex's daemon", details)
    else:
        shown = f'{key} = "{reviewer}"' if reviewer else "approvals_reviewer not set"
        rev = Check(f"approvals-reviewer{suffix}", OK, f"{path} ({whose}): {shown}",
                    details=details)
    policy = config.get("approval_policy")
    pkey = config.get("approval_policy_key") or "approval_policy"
    pdetails = {**details, "approval_policy": policy}
    if policy == "never":
        pol = Check(f"approval-policy{suffix}", INFO,
                    f'{path} ({whose}): {pkey} = "never" — codex never asks, so there is '
                    "nothing for the TUI or --approvals to decide", None, pdetails)
    else:
        shown = f'{pkey} = "{policy}"' if policy else "approval_policy not set (codex's default)"
        pol = Check(f"approval-policy{suffix}", OK, f"{path} ({whose}): {shown}",
                    details=pdetails)
    return [rev, pol]

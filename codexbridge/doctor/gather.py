"""Collecting the facts the doctor judges: the only part that runs programs, reads files
and opens a socket. Everything here only reads; nothing is written or changed.

Each function returns a plain dict (the keys `rows.py` documents). Subprocesses get a
short timeout; the only network use is the configured app-server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import BridgeError, ConnectError, UsageError
from ..host.binaries import find_claude, find_codex, parse_version, pinned_claude, pinned_codex
from ..host.jsonfile import loads_json
from ..host.procs import pid_alive
from ..host.tomlfile import load_toml
from . import parse

TIMEOUT = 3.0


def _run(argv: list[str], timeout: float) -> tuple[str, str | None]:
    """(stdout+stderr, None) or (whatever was printed, why it failed).

    In its own process group, so a timeout also ends what a wrapper script started (an
    npm `codex` is node starting the native binary) instead of waiting on its pipe.
    """
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        return "", exc.strerror or str(exc)
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "", f"no answer within {timeout:g} s"
    text = raw.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        tail = text.strip().splitlines()[-1:] or [""]
        return text, f"exit status {proc.returncode} {tail[0]}".strip()
    return text, None


def _lookup_step(path: str, env_var: str, command: str, pinned: Path | None) -> str:
    """Which step of binaries._find gave `path` (same order: variable, PATH, .tools/)."""
    if os.environ.get(env_var):
        return env_var
    if shutil.which(command) == path:
        return "PATH"
    if pinned is not None and str(pinned) == path:
        return "the pinned copy in .tools/"
    return "lookup"


def _binary(find: Callable[[], str], env_var: str, command: str,
            pinned: Callable[[], Path | None], timeout: float) -> dict[str, Any]:
    try:
        path = find()
    except BridgeError as exc:
        return {"path": None, "error": exc.message}
    out, error = _run([path, "--version"], timeout)
    return {"path": path, "source": _lookup_step(path, env_var, command, pinned()),
            "version": None if error else parse_version(out), "version_error": error}


def codex(timeout: float = TIMEOUT) -> dict[str, Any]:
    facts = _binary(find_codex, "CODEX_BRIDGE_CODEX_BIN", "codex", pinned_codex, timeout)
    if facts.get("path"):
        out, error = _run([facts["path"], "app-server", "--help"], timeout)
        facts["help_error"] = error
        facts["listen"] = None if error else parse.listen_schemes(out)
    return facts


def claude(timeout: float = TIMEOUT) -> dict[str, Any]:
    return _binary(find_claude, "CODEX_BRIDGE_CLAUDE_BIN", "claude", pinned_claude, timeout)


def claude_seen() -> dict[str, Any]:
    """What Claude Code handed codexbridge's hooks last time (`hooks/seen.py`: the hook
    records its input's field names and the session registry's protocol)."""
    from ..hooks.seen import read_seen

    return read_seen()


def serve() -> dict[str, Any]:
    from ..host.paths import bridge_file, read_bridge_file, state_dir

    path = bridge_file()
    record = read_bridge_file() if path.exists() else None
    facts: dict[str, Any] = {"state_dir": str(state_dir(create=False)),
                             "bridge_file": str(path), "exists": path.exists(),
                             "record": record, "serve_alive": None, "app_server_alive": None}
    if record:
        for key, pid_key in (("serve_alive", "pid"), ("app_server_alive", "app_server_pid")):
            pid = record.get(pid_key)
            if isinstance(pid, int) and pid > 0:
                facts[key] = pid_alive(pid)
    return facts


async def _probe(url: str, token: str | None, timeout: float) -> dict[str, Any]:
    """Connect + initialize within `timeout`, then list threads within `timeout`."""
    from ..talk.client import AppServerClient
    from ..talk.threads import list_threads

    client = AppServerClient(url, token=token, client_name="codexbridge-doctor",
                             request_timeout=timeout)
    try:
        await asyncio.wait_for(client.connect(), timeout)
    except (TimeoutError, BridgeError, OSError, ValueError) as exc:
        # ValueError: a URL the WebSocket library cannot even parse (`ws://[::1`).
        await client.close()
        return {"reachable": False, "connect_error": _why(exc, timeout)}
    try:
        info = client.server_info
        agent = info.get("userAgent")
        home = info.get("codexHome")
        facts: dict[str, Any] = {
            "reachable": True,
            "user_agent": agent if isinstance(agent, str) else None,
            "server_version": parse.user_agent_version(agent) if isinstance(agent, str)
            else None,
            "codex_home": home if isinstance(home, str) else None}
        try:
            threads = await asyncio.wait_for(list_threads(client, include_all=True), timeout)
        except (TimeoutError, BridgeError) as exc:
            facts["threads_error"] = _why(exc, timeout)
        else:
            facts["threads"] = [dict(t.as_dict(), user=t.is_user_thread) for t in threads]
        return facts
    finally:
        await client.close()


def _why(exc: BaseException, timeout: float) -> str:
    cause = exc.__cause__
    if isinstance(exc, ConnectError) and cause is not None:
        # The client's own message adds "is serve running?": the row says that itself.
        if isinstance(cause, asyncio.TimeoutError):
            return f"no answer within {timeout:g} s"
        return str(cause) or type(cause).__name__
    if isinstance(exc, BridgeError):
        return exc.message
    if isinstance(exc, asyncio.TimeoutError):
        return f"no answer within {timeout:g} s"
    return f"{type(exc).__name__}: {exc}"


def endpoint(url: str | None, timeout: float = TIMEOUT) -> dict[str, Any]:
    from ..talk.endpoint import resolve_endpoint

    try:
        ep = resolve_endpoint(url)
    except UsageError as exc:  # --url / CODEX_BRIDGE_URL is not a URL: the user's typo
        return {"url": None, "bad_url": exc.message, "reachable": False}
    except BridgeError as exc:
        return {"url": None, "resolve_error": exc.message, "reachable": False}
    facts: dict[str, Any] = {"url": ep.url, "source": ep.source, "token": ep.token is not None}

    facts.update(asyncio.run(_probe(ep.url, ep.token, timeout)))
    return facts


def is_local(url: str) -> bool:
    """A unix:// socket or a loopback host: the server's files are this machine's."""
    if url.startswith("unix://"):
        return True
    from ..host.loopback import loopback_url

    return loopback_url(url)


# --- CODEX_HOME layers -------------------------------------------------------------------

def _read_text(path: Path) -> tuple[str | None, str | None]:
    try:
        return path.read_text(encoding="utf-8"), None
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, getattr(exc, "strerror", None) or str(exc)


def codex_home_layer(home: Path, used_by: list[str], suffix: str = "") -> dict[str, Any]:
    hooks_path, config_path = home / "hooks.json", home / "config.toml"
    layer: dict[str, Any] = {"home": str(home), "used_by": used_by, "suffix": suffix,
                             "exists": home.is_dir()}
    text, error = _read_text(hooks_path)
    hooks: dict[str, Any] = {"path": str(hooks_path), "exists": text is not None,
                             "error": error, "permission_request_hooks": 0}
    if text is not None and text.strip():
        try:
            hooks.update(parse.hooks_json_facts(loads_json(text)))
        except ValueError as exc:
            hooks["error"] = f"not valid JSON ({exc})"
    text, error = _read_text(config_path)
    config: dict[str, Any] = {"path": str(config_path), "exists": text is not None,
                              "error": error}
    if text is not None:
        try:
            config.update(parse.codex_config_facts(load_toml(text)))
        except ValueError as exc:
            config["error"] = f"not valid TOML ({exc})"
    layer.update(hooks_json=hooks, config=config)
    return layer


def caller_codex_home() -> tuple[Path, str]:
    raw = os.environ.get("CODEX_HOME")
    if raw:
        return Path(raw).expanduser(), "this shell's CODEX_HOME"
    return Path.home() / ".codex", "the default: CODEX_HOME is unset"


def codex_homes(ep: dict[str, Any]) -> list[dict[str, Any]]:
    """The caller's CODEX_HOME and, when it is another directory on this machine, the one
    the running app-server reported in initialize (`codexHome`)."""
    mine, label = caller_codex_home()
    server_home = ep.get("codex_home")
    server_local = bool(server_home) and is_local(str(ep.get("url") or ""))
    if server_local and os.path.realpath(str(server_home)) == os.path.realpath(mine):
        return [codex_home_layer(mine, [label, "the running app-server uses it"])]
    layers = [codex_home_layer(mine, [label, "serve would start codex with it"])]
    if server_local:
        layers.append(codex_home_layer(Path(str(server_home)),
                                       ["the running app-server's CODEX_HOME"], "@server"))
    return layers


# --- Claude Code settings ----------------------------------------------------------------

def claude_settings_files(project: Path) -> list[tuple[Path, str]]:
    user_dir = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return [(project / ".claude" / "settings.json", "project"),
            (project / ".claude" / "settings.local.json", "local"),
            (Path(user_dir) / "settings.json", "user")]


def project(project_dir: Path) -> dict[str, Any]:
    files: list[dict[str, Any]] = []
    for path, scope in claude_settings_files(project_dir):
        text, error = _read_text(path)
        entry: dict[str, Any] = {"path": str(path), "scope": scope,
                                 "exists": text is not None, "error": error,
                                 "hooks": [], "env": {}}
        if text is not None and text.strip():
            try:
                entry.update(parse.claude_settings_facts(loads_json(text)))
            except ValueError as exc:
                entry["error"] = f"not valid JSON: {exc}"
        for hook in entry["hooks"]:
            exe = hook.get("interpreter")
            if exe:
                hook["interpreter_ok"] = os.access(exe, os.X_OK)
        if entry["exists"] or scope == "project":
            files.append(entry)
    return {"dir": str(project_dir), "files": files}


def hooked_mailboxes(project_facts: dict[str, Any]) -> list[str]:
    """The mailboxes the project's readable settings files register a Stop hook for."""
    return sorted({str(h.get("mailbox")) for f in project_facts.get("files") or []
                   if not f.get("error") for h in f.get("hooks") or []
                   if h.get("kind") == "hook"})


def settings_env(project_facts: dict[str, Any]) -> dict[str, str]:
    """The chain variables the settings' `env` sets; project files win over the user's."""
    env: dict[str, str] = {}
    for scope in ("user", "project", "local"):
        for f in project_facts.get("files") or []:
            if f.get("scope") == scope and not f.get("error"):
                env.update(f.get("env") or {})
    return env


# --- mailboxes, tmux ---------------------------------------------------------------------

def mailboxes() -> dict[str, Any]:
    from ..inbox.listeners import read_listeners
    from ..inbox.location import inbox_dir, rejected_path
    from ..inbox.peek import summarize

    directory = inbox_dir()
    facts: dict[str, Any] = {"inbox_dir": directory, "mailboxes": [], "listeners": {}}
    try:
        listeners = read_listeners(directory)
        summaries = summarize(directory, listeners)
    except OSError as exc:
        facts["error"] = exc.strerror or str(exc)
        return facts
    facts["listeners"] = listeners
    from ..inbox.service import reach

    facts["mailboxes"] = [{"name": s.name, "pending": s.pending, "rejected": s.rejected,
                           "in_flight": s.in_flight, "listener": s.listener,
                           "rejected_file": rejected_path(directory, s.name),
                           "reach": reach(directory, s.name) if s.listener else None}
                          for s in summaries]
    return facts


def tmux() -> str | None:
    return shutil.which("tmux")

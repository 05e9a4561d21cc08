"""The codex side: the app-server in force and what stands between it and the TUI. Facts,
how they are gathered (the only network use is the configured app-server), and rows.

    bridge-json, app-server   a running `codexbridge serve` (optional); initialize on the
                              app-server in force (codex's own daemon, or serve)
    threads                   the user threads the TUI has loaded
    codex-daemon              is CODEX_HOME's managed daemon running (its socket answering)
    endpoint-pick             a serve and the daemon both run: which one talk / mcp use,
                              how to pick the other (only then); WARN on one CODEX_HOME
    tui-attach                the exact line that opens the Codex TUI on it
    codex-mcp-env             a token variable codex's config names for an MCP server
                              (`setup codex --url`): does the app-server in force have it
    codex-hooks,              settings in CODEX_HOME (yours, the app-server's, the
      approvals-reviewer,     project's .codex/) that answer approvals before the TUI
      approval-policy
    protocol                  the installed codex's schema judged against what
                              codexbridge uses (compat.py)
    deep                      (doctor --deep) one real turn on a private app-server with
                              the mock model: LIVE or BROKEN

Every row says only what was actually looked at: OK means "checked, and fine", and a
thing that could not be checked says so instead of passing.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..codex.client import AppServerClient
from ..codex.endpoint import EndpointKind, resolve_endpoint
from ..codex.protocol.generated.uses import BUILT_ON
from ..codex.protocol.threads import ThreadInfo
from ..codex.threads import list_threads
from ..errors import BridgeError, ConnectError, DamagedStateError, UsageError
from ..host import daemon
from ..host.binaries import (
    CODEX_OLDEST,
    CODEX_VERSION,
    VersionFit,
    in_checkout,
    install_hint,
    parse_version,
    supported_range,
    version_fit,
)
from ..host.codex_mcp import launched
from ..host.daemon import attach_line, codex_home, is_daemon_url, open_tui, start_hint, token_word
from ..host.envbaseline import mcp_token_needs
from ..host.jsonfile import loads_json, read_object
from ..host.loopback import loopback_url
from ..host.paths import BridgeRecord, bridge_file, state_dir
from ..host.procs import environ_names, pid_alive
from ..host.tomlfile import load_toml
from ..jsontypes import opt_int
from . import parse
from .binaries import TIMEOUT, fit_row
from .compat import AnswerProblem, Change, Finding, check_answers, incompatible, judge
from .parse import DIVERTING_REVIEWERS, CodexConfig, McpServer, read_text
from .report import FAIL, INFO, OK, WARN, Check, plural

# --- serve and the app-server ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ServeFacts:
    """bridge.json, read by its one reader (host/paths.py `BridgeRecord`): `record` None
    when absent or damaged; each `*_alive` None when the record names no such pid."""

    state_dir: str = ""
    bridge_file: str = ""
    exists: bool = False
    record: BridgeRecord | None = None
    serve_alive: bool | None = None
    app_server_alive: bool | None = None


def _alive(pid: int | None) -> bool | None:
    return pid_alive(pid) if pid is not None and pid > 0 else None


def serve() -> ServeFacts:
    path = bridge_file()
    try:
        record = BridgeRecord.read()
    except DamagedStateError:
        record = None  # the row says the file cannot be used
    return ServeFacts(str(state_dir(create=False)), str(path), path.exists(), record,
                      _alive(record.pid) if record else None,
                      _alive(record.app_server_pid) if record else None)


@dataclass(frozen=True, slots=True)
class EndpointFacts:
    """The app-server in force (codex/endpoint.py) and what it said: `url` None when none
    (`bad_url`: the user's --url / CODEX_BRIDGE_URL is no URL; `resolve_error`: nothing
    runs); `threads` (as `thread/list` gave them) or `threads_error`."""

    url: str | None = None
    source: str | None = None
    kind: EndpointKind | None = None
    token: bool = False
    token_file: str | None = None  # where the token was read (serve's ws-token), if a file
    bad_url: str | None = None
    resolve_error: str | None = None
    reachable: bool = False
    connect_error: str | None = None
    user_agent: str | None = None
    server_version: str | None = None
    codex_home: str | None = None
    threads: tuple[ThreadInfo, ...] = ()
    threads_error: str | None = None


async def _probe(url: str, token: str | None, timeout: float) -> EndpointFacts:
    """Connect + initialize within `timeout`, then list threads within `timeout`: what
    the app-server said (`endpoint` adds which one it is)."""
    client = AppServerClient(url, token=token, client_name="codexbridge-doctor",
                             request_timeout=timeout)
    try:
        await asyncio.wait_for(client.connect(), timeout)
    except (TimeoutError, BridgeError, OSError, ValueError) as exc:
        # ValueError: a URL the WebSocket library cannot even parse (`ws://[::1`).
        await client.close()
        return EndpointFacts(connect_error=_why(exc, timeout))
    try:
        info = client.initialized
        agent = info.user_agent
        said = EndpointFacts(reachable=True, user_agent=agent,
                             server_version=parse.user_agent_version(agent) if agent else None,
                             codex_home=info.codex_home)
        try:
            threads = await asyncio.wait_for(list_threads(client, include_all=True), timeout)
        except (TimeoutError, BridgeError) as exc:
            return replace(said, threads_error=_why(exc, timeout))
        return replace(said, threads=tuple(threads))
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


def endpoint(url: str | None, timeout: float = TIMEOUT) -> EndpointFacts:
    try:
        ep = resolve_endpoint(url)
    except UsageError as exc:  # --url / CODEX_BRIDGE_URL is not a URL: the user's typo
        return EndpointFacts(bad_url=exc.message)
    except BridgeError as exc:
        return EndpointFacts(resolve_error=exc.message)
    said = asyncio.run(_probe(ep.url, ep.token, timeout))
    return replace(said, url=ep.url, source=ep.source, kind=ep.kind,
                   token=ep.token is not None, token_file=ep.token_file)


def is_local(url: str) -> bool:
    """A unix:// socket or a loopback host: the server's files are this machine's."""
    return url.startswith("unix://") or loopback_url(url)


def bridge_row(s: ServeFacts) -> Check:
    path = s.bridge_file
    details: dict[str, object] = {"bridge_file": path, "state_dir": s.state_dir}
    if not s.exists:
        return Check("bridge-json", INFO,
                     f"no {path}: no `codexbridge serve` runs for this CODEX_BRIDGE_HOME "
                     "(codex's own daemon needs none)", None, details)
    record = s.record
    if record is None:
        return Check("bridge-json", WARN, f"{path} is not readable JSON",
                     f"remove it (`rm {shlex.quote(path)}`) and restart "
                     "`codexbridge serve`", details)
    details["record"] = {"url": record.url, "pid": record.pid,
                         "app_server_pid": record.app_server_pid, "cwd": record.cwd,
                         "codex_version": record.codex_version,
                         "started_at": record.started_at}
    pid = record.pid
    if pid is None:
        return Check("bridge-json", WARN, f"{path} names no serve pid",
                     "remove it and restart `codexbridge serve`", details)
    if s.serve_alive is False:
        return Check("bridge-json", WARN,
                     f"stale bridge.json: serve pid {pid} is not running ({path})",
                     f"remove it (`rm {shlex.quote(path)}`), or start `codexbridge "
                     "serve`, which replaces it", details)
    app_pid = record.app_server_pid
    if s.app_server_alive is False:
        return Check("bridge-json", WARN,
                     f"serve pid {pid} runs but its app-server (pid {app_pid}) is gone",
                     "stop serve (Ctrl-C in its terminal) and start it again", details)
    where = f", cwd {record.cwd}" if record.cwd else ""
    since = f" since {record.started_at}" if record.started_at else ""
    return Check("bridge-json", OK,
                 f"serve pid {pid} is running{since}: {record.url}{where}",
                 details=details)


# What starts an app-server for a user who has none: codex's own daemon first.
START_FIX = ("open your TUI with `codex -C DIR`: it starts codex's own daemon (and attaches), "
             "which talk and mcp find by themselves; or run `codexbridge serve --cwd DIR` "
             "for a dedicated ws:// server")


def _unreachable_row(s: ServeFacts, ep: EndpointFacts, url: str, source: str,
                     details: dict[str, object]) -> Check:
    details["error"] = ep.connect_error
    from_record = ep.kind not in (EndpointKind.URL, EndpointKind.ENV)
    if from_record and s.serve_alive is False:
        return Check("app-server", WARN,
                     f"no serve is running (bridge.json is stale; nothing answers at {url})",
                     START_FIX, details)
    if "401" in str(ep.connect_error):
        fix = ("the server wants a capability token: set CODEX_BRIDGE_TOKEN to the one "
               "it was started with")
    elif from_record:
        fix = "restart `codexbridge serve`"
    elif ep.kind is EndpointKind.ENV:
        fix = "start the app-server at that URL, or unset CODEX_BRIDGE_URL"
    else:
        fix = ("check the URL; is the app-server (codex's own daemon, or "
               "`codexbridge serve`) running?")
    return Check("app-server", FAIL,
                 f"cannot reach {url} (from {source}): {ep.connect_error}", fix, details)


def endpoint_row(s: ServeFacts, ep: EndpointFacts) -> Check:
    url = ep.url
    if ep.bad_url:
        return Check("app-server", FAIL, ep.bad_url,
                     "correct --url / CODEX_BRIDGE_URL (or leave both unset: talk finds "
                     "codex's own daemon by itself)", {"error": ep.bad_url})
    if not url:
        return Check("app-server", WARN,
                     "no app-server running: neither codex's own daemon nor a "
                     "`codexbridge serve` (and no --url or CODEX_BRIDGE_URL)",
                     START_FIX, {"error": ep.resolve_error})
    source = ep.source or "?"
    details: dict[str, object] = {"url": url, "source": source, "token": ep.token}
    if not ep.reachable:
        return _unreachable_row(s, ep, url, source, details)
    version = ep.server_version
    details.update({"user_agent": ep.user_agent, "codex_version": version,
                    "codex_home": ep.codex_home})
    said = f"{url} (from {source}) answered initialize"
    if not version:
        return Check("app-server", OK, f"{said}; its codex version is not in the userAgent",
                     details=details)
    restart = ("then restart codex's daemon (`codex app-server daemon stop`; the next "
               "`codex` starts it again)" if ep.kind is EndpointKind.DAEMON
               else "then restart `codexbridge serve`")
    return fit_row("app-server", version, (CODEX_OLDEST, CODEX_VERSION),
                   f"install codex {CODEX_VERSION}: {install_hint('codex')}; {restart}",
                   "the protocol row judges whether it fits", f"{said}: codex ", details)


# --- threads --------------------------------------------------------------------------------

def _thread_label(t: ThreadInfo) -> str:
    name = f" \"{t.name}\"" if t.name else ""
    return f"{t.id}{name} ({t.status_label}, cwd {t.cwd or '-'})"


def thread_rows(ep: EndpointFacts) -> list[Check]:
    if not ep.reachable:
        return [Check("threads", INFO, "not checked: no app-server answered")]
    if ep.threads_error:
        return [Check("threads", WARN, f"could not list threads: {ep.threads_error}",
                      "run `codexbridge talk list` to see the error in full",
                      {"error": ep.threads_error})]
    users = [t for t in ep.threads if t.is_user_thread]
    helpers = len(ep.threads) - len(users)
    extra = f" (+{plural(helpers, 'ephemeral/helper thread')})" if helpers else ""
    details = {"user_threads": [dict(t.as_dict(), user=True) for t in users],
               "ephemeral": helpers}
    if not users:
        # plain `codex` for the daemon, else --remote
        return [Check("threads", WARN, f"no user thread loaded{extra}",
                      f"{open_tui(ep.url or None)} and send it one message", details)]
    if len(users) == 1:
        return [Check("threads", OK, f"1 user thread: {_thread_label(users[0])}{extra}",
                      details=details)]
    listed = "; ".join(_thread_label(t) for t in users)
    return [Check("threads", INFO, f"{len(users)} user threads: {listed}{extra}",
                  "`talk say` needs --thread ID|NAME (or --cwd DIR) to pick one", details)]


# --- codex's own daemon, and how the TUI attaches ---------------------------------------------

@dataclass(frozen=True, slots=True)
class DaemonFacts:
    """codex's own daemon (host/daemon.py): CODEX_HOME, its socket and URL, whether the
    lookup is on and the socket answers (None: not looked at)."""

    home: str = ""
    socket: str = ""
    url: str = ""
    enabled: bool = True
    listening: bool | None = None

    @staticmethod
    def read() -> DaemonFacts:
        home = codex_home()
        socket = daemon.socket_path(home)
        on = daemon.enabled()
        return DaemonFacts(str(home), str(socket), daemon.socket_url(socket), on,
                           daemon.listening(socket) if on else None)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def daemon_row(d: DaemonFacts) -> Check:
    details = d.as_dict()
    if not d.enabled:
        return Check("codex-daemon", INFO, "not looked for: CODEX_BRIDGE_DAEMON=off", None,
                     details)
    if d.listening:
        return Check("codex-daemon", OK,
                     f"codex's own daemon of {d.home} answers at {d.url}", details=details)
    return Check("codex-daemon", INFO,
                 f"codex's own daemon of {d.home} is not running (no {d.socket})",
                 f"{start_hint()}; or keep using `codexbridge serve`", details)


def pick_row(d: DaemonFacts, serve: ServeFacts, ep: EndpointFacts) -> list[Check]:
    """Only when serve and the daemon both run; a WARN when they share a CODEX_HOME
    (bridge.json's `codex_home`): codex lets one app-server write a thread, so a thread
    the TUI has on one cannot be driven through the other."""
    if not (d.listening and serve.serve_alive and ep.url):
        return []
    record = serve.record
    serve_url, pid, home = ((record.url, record.pid, record.codex_home) if record
                            else (None, None, None))
    on_daemon = ep.url == d.url
    users = [t for t in ep.threads if t.is_user_thread]
    used = ("codex's own daemon" if on_daemon else "`codexbridge serve`") + (
        f" (it holds {len(users)} user thread{'s' if len(users) != 1 else ''})")
    details = {"serve": serve_url, "serve_pid": pid, "daemon": d.url,
               "codex_home": home, "using": ep.url}
    other = serve_url if on_daemon else d.url
    if not isinstance(home, str) or os.path.normpath(home) != os.path.normpath(d.home):
        return [Check("endpoint-pick", INFO,
                      f"both `codexbridge serve` ({serve_url}) and codex's daemon "
                      f"({d.url}) run: talk and mcp use {used}",
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
                  f"({serve_url}, pid {pid}) and codex's own daemon ({d.url}). codex "
                  "lets one of them write a thread, so a thread the TUI has on one cannot be "
                  f"driven through the other; talk and mcp use {used}, --url {other} the "
                  "other", fix, details)]


def attach_row(ep: EndpointFacts, project: str, serve: ServeFacts) -> Check:
    """The TUI line for the endpoint in force."""
    url = ep.url
    if not url:
        return Check("tui-attach", INFO, "no app-server to attach the TUI to",
                     f"{start_hint()}, or run `codexbridge serve --cwd DIR`")
    record = serve.record
    public = record.public_url if record and record.url == url else None
    line = attach_line(str(public or url), project)
    if ep.kind is EndpointKind.DAEMON or is_daemon_url(url):
        plain = f"codex -C {shlex.quote(project)}"  # attaches to the daemon by itself
        return Check("tui-attach", INFO,
                     f"open the TUI with: {plain} (plain `codex` in this CODEX_HOME attaches "
                     f"to codex's own daemon by itself; the explicit form: {line})", None,
                     {"line": plain, "explicit": line, "url": url})
    if ep.token:
        line = attach_line(str(public or url), project, token=token_word(ep.token_file))
    return Check("tui-attach", INFO, f"open the TUI with: {line}", None,
                 {"line": line, "url": url})


def daemon_rows(d: DaemonFacts, serve: ServeFacts, ep: EndpointFacts,
                project: str) -> list[Check]:
    return [daemon_row(d), *pick_row(d, serve, ep), attach_row(ep, project, serve)]


# --- what codex's MCP servers read from codex's own environment ------------------------------

@dataclass(frozen=True, slots=True)
class McpEnvFacts:
    """The variables codex's config names for its MCP servers' credentials (`needs`:
    server, variable — what `setup codex --url` writes for the Claude machine's server),
    and the environment of the app-server in force, when it runs here and can be read
    (`server_env` None otherwise): codex reads those variables from its own process."""

    needs: tuple[tuple[str, str], ...] = ()
    config_home: str = ""
    server: str | None = None  # "serve" or "daemon": whose environment was read
    server_pid: int | None = None
    server_env: frozenset[str] | None = None
    shell_env: frozenset[str] = frozenset()


def mcp_env(ep: EndpointFacts, serve: ServeFacts, project: Path) -> McpEnvFacts:
    local = bool(ep.codex_home) and is_local(ep.url or "")
    home = Path(str(ep.codex_home)) if local else codex_home()
    needs = tuple(mcp_token_needs(home, project))
    record = serve.record
    server, pid = None, None
    if ep.url and (ep.kind is EndpointKind.SERVE or (record and record.url == ep.url)):
        server, pid = "serve", record.app_server_pid if record else None
    elif ep.kind is EndpointKind.DAEMON or is_daemon_url(ep.url):
        server, pid = "daemon", _daemon_pid(home)
    seen = environ_names(pid) if needs and pid else None
    return McpEnvFacts(needs, str(home), server, pid, seen, frozenset(os.environ))


def _daemon_pid(home: Path) -> int | None:
    """codex's daemon records its pid in `<CODEX_HOME>/app-server-daemon/daemon.pid`
    (JSON `{"pid": N, …}`, measured on 0.171.0); doctor is its only reader."""
    match read_object(str(home / "app-server-daemon" / "daemon.pid")):
        case {"pid": pid}:
            return opt_int(pid)
    return None


def mcp_env_rows(f: McpEnvFacts) -> list[Check]:
    """One row per variable an MCP server of codex's config reads from codex's own
    environment: FAIL when the app-server in force was started without it (codex then
    offers the model none of that server's tools: measured, docs/fitting-in.md)."""
    rows = []
    for server, var in f.needs:
        details: dict[str, object] = {"server": server, "variable": var,
                                      "config_home": f.config_home,
                                      "app_server": f.server, "app_server_pid": f.server_pid}
        said = f"codex's MCP server {server} (in {f.config_home}) reads its token from ${var}"
        if f.server_env is not None:
            who = ("`codexbridge serve`'s app-server" if f.server == "serve"
                   else "codex's own daemon") + f" (pid {f.server_pid})"
            if var in f.server_env:
                rows.append(Check("codex-mcp-env", OK, f"{said}; {who} has it",
                                  details=details))
                continue
            fix = (f"export {var} in the shell that runs `codexbridge serve`, and restart "
                   "serve (it passes on the variables codex's config names)"
                   if f.server == "serve" else
                   f"`codex app-server daemon stop`, export {var}, then start codex again "
                   "(the daemon keeps the environment of the shell that started it)")
            rows.append(Check("codex-mcp-env", FAIL,
                              f"{said}, but {who} was started without it: codex offers "
                              f"the model none of {server}'s tools", fix, details))
        elif var in f.shell_env:
            rows.append(Check("codex-mcp-env", INFO,
                              f"{said}; it is set in this shell (the app-server in force "
                              "is not one whose environment can be read here: start it "
                              "with this variable too)", None, details))
        else:
            rows.append(Check("codex-mcp-env", WARN,
                              f"{said}, which is not set in this shell: codex started from "
                              f"here would offer the model none of {server}'s tools",
                              f"export {var} (the token `codexbridge mcp --http` serves "
                              "behind) before codex, or `codexbridge serve`, starts",
                              details))
    return rows


# --- CODEX_HOME layers: the approval diverters -------------------------------------------------

@dataclass(frozen=True, slots=True)
class HooksJson:
    path: str
    exists: bool = False
    error: str | None = None
    permission_request_hooks: int = 0


@dataclass(frozen=True, slots=True)
class ConfigToml:
    path: str
    exists: bool = False
    error: str | None = None
    facts: CodexConfig = field(default_factory=CodexConfig)


@dataclass(frozen=True, slots=True)
class CodexHomeLayer:
    """One CODEX_HOME codex uses: `used_by` says who uses it, `suffix` the row names'
    suffix (`@server`, `@project`)."""

    home: str
    used_by: tuple[str, ...]
    suffix: str
    exists: bool
    hooks_json: HooksJson
    config: ConfigToml


def _hooks_json(path: Path) -> HooksJson:
    text, error = read_text(path)
    if text is None or not text.strip():
        return HooksJson(str(path), text is not None, error)
    try:
        count, error = parse.hooks_json_facts(loads_json(text))
    except ValueError as exc:
        return HooksJson(str(path), True, f"not valid JSON ({exc})")
    return HooksJson(str(path), True, error, count)


def _config_toml(path: Path) -> ConfigToml:
    text, error = read_text(path)
    if text is None:
        return ConfigToml(str(path), False, error)
    try:
        return ConfigToml(str(path), True, None, parse.codex_config_facts(load_toml(text)))
    except ValueError as exc:
        return ConfigToml(str(path), True, f"not valid TOML ({exc})")


def codex_home_layer(home: Path, used_by: Sequence[str], suffix: str = "") -> CodexHomeLayer:
    return CodexHomeLayer(str(home), tuple(used_by), suffix, home.is_dir(),
                          _hooks_json(home / "hooks.json"), _config_toml(home / "config.toml"))


def caller_codex_home() -> tuple[Path, str]:
    raw = os.environ.get("CODEX_HOME")
    if raw:
        return Path(raw).expanduser(), "this shell's CODEX_HOME"
    return Path.home() / ".codex", "the default: CODEX_HOME is unset"


def codex_homes(ep: EndpointFacts) -> list[CodexHomeLayer]:
    """The caller's CODEX_HOME and, when it is another directory on this machine, the one
    the running app-server reported in initialize (`codexHome`)."""
    mine, label = caller_codex_home()
    server_home = ep.codex_home
    server_local = bool(server_home) and is_local(ep.url or "")
    if server_local and os.path.realpath(str(server_home)) == os.path.realpath(mine):
        return [codex_home_layer(mine, [label, "the running app-server uses it"])]
    layers = [codex_home_layer(mine, [label, "serve would start codex with it"])]
    if server_local:
        layers.append(codex_home_layer(Path(str(server_home)),
                                       ["the running app-server's CODEX_HOME"], "@server"))
    return layers


def project_codex(project: Path) -> list[CodexHomeLayer]:
    """The project's own `.codex/` (config.toml, hooks.json) is read like CODEX_HOME."""
    layer = project / ".codex"
    if not layer.is_dir():
        return []
    return [codex_home_layer(layer, ["the project's .codex (read by codex in it)"],
                             "@project")]


def registered_mcp_command(project: Path) -> str | None:
    """The command of `[mcp_servers.codexbridge]` codex would start (the project's
    .codex/config.toml first, then CODEX_HOME's), if setup registered one."""
    for config in (project / ".codex" / "config.toml", codex_home() / "config.toml"):
        servers = _config_toml(config).facts.mcp_servers
        ours = servers["codexbridge"] if "codexbridge" in servers else McpServer()
        if ours.command:
            return launched(ours.command, list(ours.args))[0]
    return None


_SERVE_ONLY = "codexbridge serve --codex-arg={} --codex-arg={}"


def diverter_rows(layers: Sequence[CodexHomeLayer]) -> list[Check]:
    rows: list[Check] = []
    for layer in layers:
        whose = "; ".join(layer.used_by) or "codex"
        if not layer.exists:
            rows.append(Check(f"codex-home{layer.suffix}", INFO,
                              f"{layer.home} ({whose}) does not exist: no hooks.json and no "
                              "config.toml there to divert approvals", None,
                              {"home": layer.home}))
            continue
        rows.append(_hooks_row(layer, whose))
        rows.extend(_config_rows(layer, whose))
    return rows


def _hooks_row(layer: CodexHomeLayer, whose: str) -> Check:
    hooks, config = layer.hooks_json, layer.config
    name = f"codex-hooks{layer.suffix}"
    details: dict[str, object] = {"home": layer.home, "hooks_json": hooks.path}
    if hooks.error:
        return Check(name, WARN,
                     f"{hooks.path} ({whose}) could not be read: {hooks.error}; "
                     "PermissionRequest hooks not checked",
                     "fix the file (codex may refuse it as well)", details)
    counted, inline = hooks.permission_request_hooks, config.facts.permission_request_hooks
    places = [p for p, n in ((hooks.path, counted), (f"{config.path} [hooks]", inline)) if n]
    total = counted + inline
    details["permission_request_hooks"] = total
    if not total:
        looked = ("hooks.json" if hooks.exists else "hooks.json absent") + ", " + (
            "config.toml" if config.exists else "config.toml absent")
        return Check(name, OK, f"{layer.home} ({whose}): no PermissionRequest hook "
                     f"({looked})", details=details)
    found = f"{layer.home} ({whose}): {plural(total, 'PermissionRequest hook')} in " \
        f"{' and '.join(places)}"
    if config.facts.hooks_enabled is False:
        return Check(name, INFO, f"{found}, but [features] hooks = false turns hooks off",
                     None, details)
    return Check(name, WARN,
                 f"{found}: once trusted (/hooks in codex), it answers approvals before the "
                 "TUI is asked, so `--approvals tui` means the hook decides",
                 "remove the hook (or turn hooks off: [features] hooks = false); to keep it "
                 "for your own sessions, run the bridge on `"
                 + _SERVE_ONLY.format("--disable", "hooks") + "` instead of codex's daemon "
                 "(your config is left as it is)", details)


def _config_rows(layer: CodexHomeLayer, whose: str) -> list[Check]:
    config, suffix = layer.config, layer.suffix
    path, facts = config.path, config.facts
    details: dict[str, object] = {"home": layer.home, "config_toml": path}
    if config.error:
        return [Check(f"approvals-reviewer{suffix}", WARN,
                      f"{path} ({whose}) could not be read: {config.error}; reviewer and "
                      "approval policy not checked", "fix the file (codex refuses invalid "
                      "TOML at start-up too)", details)]
    if not config.exists:
        return [Check(f"approvals-reviewer{suffix}", OK,
                      f"{layer.home} ({whose}): no config.toml, so neither "
                      "approvals_reviewer nor approval_policy is set", details=details)]
    reviewer = facts.approvals_reviewer
    key = facts.approvals_reviewer_key or "approvals_reviewer"
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
    policy = facts.approval_policy
    pkey = facts.approval_policy_key or "approval_policy"
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


# --- protocol -----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ProtocolFacts:
    """The installed codex's schema judged (`error` when it could not be): `findings`
    are compat.Finding.as_dict(), `answers_refused` the answers it would refuse."""

    error: str | None = None
    codex: str | None = None
    version: str | None = None
    built_on: str | None = None
    findings: tuple[Finding, ...] = ()
    answers_checked: int = 0
    answers_refused: tuple[AnswerProblem, ...] = ()

    def as_dict(self) -> dict[str, object]:
        if self.error:
            return {"error": self.error}
        return {"codex": self.codex, "version": self.version, "built_on": self.built_on,
                "findings": [f.as_dict() for f in self.findings],
                "answers_checked": self.answers_checked,
                "answers_refused": [r.as_dict() for r in self.answers_refused]}


def _stdout(argv: list[str], timeout: float) -> str:
    """stdout alone (the schema generator's, `--version`'s); OSError / SubprocessError
    say why it failed."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise subprocess.SubprocessError(
            f"`{' '.join(argv[1:3])}` exited {done.returncode}: {done.stderr.strip()[:300]}")
    return done.stdout


def protocol(codex: str | None, timeout: float = 20.0) -> ProtocolFacts:
    """Have the installed codex generate its (experimental) schema and judge the part
    codexbridge uses against what it was built on (codex/protocol/generated/uses.py)."""
    if not codex:
        return ProtocolFacts("no codex binary to ask")
    try:
        said = _stdout([codex, "--version"], timeout)
        with tempfile.TemporaryDirectory(prefix="codexbridge-protocol-") as tmp:
            _stdout([codex, "app-server", "generate-json-schema", "--experimental", "--out",
                     tmp], timeout)
            findings = judge(Path(tmp))
            checked, refused = check_answers(Path(tmp))
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return ProtocolFacts(str(exc))
    return ProtocolFacts(None, codex, parse_version(said), BUILT_ON, tuple(findings), checked,
                         tuple(refused))


def protocol_rows(p: ProtocolFacts) -> list[Check]:
    details = p.as_dict()
    if p.error:
        return [Check("protocol", WARN, f"could not check the installed codex's protocol: "
                      f"{p.error}", None, details)]
    bad = incompatible(p.findings)
    codex = f"codex {p.version or '(version unknown)'}"
    scope = (f"supported: {supported_range(CODEX_OLDEST, CODEX_VERSION)}; codexbridge's "
             f"surface is from {p.built_on or '?'}")
    refused = p.answers_refused
    answers = (f"; it takes all {p.answers_checked} answers codexbridge gives its "
               "approval requests" if p.answers_checked and not refused else "")
    if not bad and not refused:
        return [Check("protocol", OK, f"{codex} speaks what codexbridge uses ({scope}): "
                      f"{_compatible_summary(p.findings)}{answers}", None, details)]
    listed = "; ".join([f"{f.method} ({f.direction.value if f.direction else 'method'}): "
                        f"{f.where} {f.detail} — {f.consequence}" for f in bad[:4]]
                       + [f"{r.method}: codex would refuse codexbridge's {r.answer} answer "
                          f"({'; '.join(r.errors)}) — a turn waiting on that approval would "
                          "hang" for r in refused[:3]])
    count = len(bad) + len(refused)
    return [Check("protocol", WARN,
                  f"{codex} changed what codexbridge uses in {count} place(s) ({scope}): "
                  f"{listed}" + (" …" if count > 4 else ""),
                  _protocol_fix(p.version), details)]


def _compatible_summary(findings: Sequence[Finding]) -> str:
    if not findings:
        return "no differences"
    added = sum(1 for f in findings if f.change is Change.METHOD_ADDED)
    gone = sum(1 for f in findings if f.change is Change.METHOD_GONE)
    parts = [f"{n} {what}" for n, what in ((added, "new method(s)"),
                                          (gone, "method(s) codexbridge does not use gone"))
             if n]
    fields = [f for f in findings if f.change not in (Change.METHOD_ADDED, Change.METHOD_GONE)]
    parts += [f"{f.where} {f.detail}" for f in fields[:4]]
    more = f"; {len(fields) - 4} more" if len(fields) > 4 else ""
    return f"{len(findings)} compatible difference(s): {'; '.join(parts)}{more}"


def _protocol_fix(version: str | None) -> str:
    if version and version_fit(version, CODEX_OLDEST, CODEX_VERSION) is VersionFit.OLDER:
        return (f"install a codex codexbridge supports ({install_hint('codex')}): "
                f"{version} is older than {CODEX_OLDEST}")
    fix = f"update codexbridge (it needs a release that knows codex {version or 'this'})"
    if in_checkout():
        fix += ("; in this checkout, scripts/update-schemas regenerates schemas/ and the "
                "generated protocol types for review")
    return fix


# --- deep ----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DeepFacts:
    error: str | None = None
    reply: str | None = None
    url: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"error": self.error} if self.error else {"reply": self.reply, "url": self.url}


def deep(codex: str | None, timeout: float = 60.0) -> DeepFacts:
    """One real turn: a private app-server, the mock model, our client — end to end."""
    if not codex:
        return DeepFacts("no codex binary")
    from .offline_stack import OfflineStack  # the mock model's server: --deep's alone

    try:
        with OfflineStack(codex) as stack:
            _thread, reply = asyncio.run(asyncio.wait_for(
                stack.human_thread("doctor --deep: one turn"), timeout))
            return DeepFacts(None, reply, stack.url)
    except Exception as exc:  # the whole point is to report it
        return DeepFacts(f"{type(exc).__name__}: {exc}")


def deep_rows(d: DeepFacts) -> list[Check]:
    if d.error or not str(d.reply or "").startswith("MOCK REPLY"):
        return [Check("deep", FAIL, f"BROKEN: one real turn on a private app-server failed: "
                      f"{d.error or repr(d.reply)}",
                      "see the rows above (in a checkout, `./scripts/demo` shows the whole path)",
                      d.as_dict())]
    return [Check("deep", OK, "LIVE: a real turn ran on a private app-server with the mock "
                  "model and codexbridge's client read the reply", None, d.as_dict())]

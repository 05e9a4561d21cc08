"""Which app-server to talk to: `--url`, else `CODEX_BRIDGE_URL`, else the running
serve's bridge.json, else the user's own codex daemon (its unix socket in CODEX_HOME).

Never a guess between two. When a serve and a daemon both run (and no --url or
CODEX_BRIDGE_URL names one), both are asked which threads they hold — codex lets one
app-server write a thread (`thread/resume` elsewhere fails "already has an active
writer"), so the right one is the one holding the TUI's thread: the one that has the
thread asked for, else the only one with user threads, else serve (someone started it on
purpose). A one-line note on stderr says which and the `--url` that picks the other.
`CODEX_BRIDGE_DAEMON=off` turns the daemon lookup off. The bearer token comes from
`CODEX_BRIDGE_TOKEN` or the token file serve recorded; the daemon's socket needs none
(its directory is the user's, 0700).

`choose()` and `by_threads()` are the decisions, on plain values; `resolve_endpoint()`
gathers them; `others()` names the servers a thread may be held by instead
(codex/threads.py asks them when this one does not hold it).
"""

from __future__ import annotations

import enum
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

from ..errors import ConnectError, UsageError
from ..host import daemon
from ..host.paths import BridgeRecord, bridge_file
from ..host.procs import pid_alive

if TYPE_CHECKING:
    from .protocol.threads import ThreadInfo

SURVEY_TIMEOUT = 3.0  # per server and step, when two app-servers are asked which is which


@dataclass(frozen=True)
class Reach:
    """How a delivery's app-server is reached, as its sender reached it: the URL, the
    capability token (`token`, from the sender's environment — kept beside the record,
    0600 — or `token_file`, the file it came from), and what a wss:// server is trusted
    by. All None: the courier finds the app-server itself (codex's daemon, a serve)."""

    url: str | None = None
    token: str | None = None
    token_file: str | None = None
    ca_file: str | None = None
    ca_dir: str | None = None

    @staticmethod
    def from_env(env: Mapping[str, str]) -> Reach:
        """What this environment names (CODEX_BRIDGE_URL, CODEX_BRIDGE_TOKEN,
        SSL_CERT_FILE / SSL_CERT_DIR for wss://, made absolute) — for a sender that does
        not connect itself (the Stop hook answering Codex)."""
        url = env.get("CODEX_BRIDGE_URL") or None
        if url is None:
            return Reach()
        return Reach(url, env.get("CODEX_BRIDGE_TOKEN") or None, None, *_trust(url, env))


class EndpointKind(enum.StrEnum):
    """What named the app-server in force: code branches on this, never on `source`
    (the words for a person)."""

    URL = "--url"
    ENV = "CODEX_BRIDGE_URL"
    SERVE = "serve"  # bridge.json: a running `codexbridge serve`
    DAEMON = "daemon"  # CODEX_HOME's own codex daemon (its unix socket)


class Endpoint(NamedTuple):
    url: str
    token: str | None
    source: str
    kind: EndpointKind = EndpointKind.URL  # a URL the caller named itself
    # Where `token` came from when it is a file (serve's 0600 ws-token); None: from
    # CODEX_BRIDGE_TOKEN, or no token.
    token_file: str | None = None
    # What a wss:// connection trusts, as this process's TLS would (SSL_CERT_FILE,
    # SSL_CERT_DIR), made absolute: a courier started elsewhere must trust the same.
    ca_file: str | None = None
    ca_dir: str | None = None


class Choice(NamedTuple):
    url: str
    source: str  # what named it: --url, CODEX_BRIDGE_URL, bridge.json's path, codex daemon (…)
    kind: EndpointKind
    note: str | None  # why this one, when another server also runs


class Server(NamedTuple):
    """An app-server that runs here: the serve of bridge.json, or CODEX_HOME's daemon."""

    url: str
    token: str | None
    source: str
    kind: EndpointKind  # SERVE or DAEMON


class Holding(NamedTuple):
    """What one app-server said it holds (`reachable` False: it did not answer)."""

    server: Server
    reachable: bool
    codex_home: str | None
    threads: tuple[ThreadInfo, ...]  # every loaded thread, helpers too

    @property
    def users(self) -> list[ThreadInfo]:
        return [t for t in self.threads if t.is_user_thread]

    def has(self, selector: str) -> bool:
        """Holds the thread `selector` (an id, or a user thread's exact name)."""
        return any(t.id == selector for t in self.threads) or any(
            t.name == selector for t in self.users)

    def describe(self) -> str:
        what = ("`codexbridge serve`" if self.server.kind == EndpointKind.SERVE
                else "codex's own daemon")
        if not self.reachable:
            return f"{what} at {self.server.url} does not answer"
        users = self.users
        held = (f"{len(users)} user thread{'s' if len(users) != 1 else ''} ("
                + ", ".join(t.id for t in users[:3]) + (", …" if len(users) > 3 else "")
                + ")") if users else "no user thread"
        return f"{what} at {self.server.url} holds {held}"


def daemon_source(home: str) -> str:
    return f"codex daemon ({home})"


def by_threads(serve: Holding, daemon: Holding, selector: str | None = None
               ) -> tuple[Holding, str]:
    """Which of two running app-servers to use, and the note that says why: the one that
    answers; the one holding `selector`; the only one with user threads; else serve."""
    if serve.reachable != daemon.reachable:
        pick = serve if serve.reachable else daemon
        why = f"{(daemon if pick is serve else serve).server.url} does not answer"
    elif selector and serve.has(selector) != daemon.has(selector):
        pick = serve if serve.has(selector) else daemon
        why = f"it holds thread {selector}"
    elif bool(serve.users) != bool(daemon.users):
        pick = serve if serve.users else daemon
        why = "it holds the user threads, the TUI's"
    else:
        pick, why = serve, "serve was started on purpose"
    other = daemon if pick is serve else serve
    same = (serve.codex_home and serve.codex_home == daemon.codex_home)
    home = f" on one CODEX_HOME ({serve.codex_home})" if same else ""
    used = "`codexbridge serve`" if pick is serve else "codex's own daemon"
    note = (f"two app-servers run{home}: {serve.describe()}; {daemon.describe()}. Using "
            f"{used} ({why}); pass --url {other.server.url} (or set CODEX_BRIDGE_URL) for "
            "the other")
    if same:
        note += ", or stop the one you do not use (`codexbridge doctor` says how)"
    return pick, note


def choose(url: str | None, env_url: str | None, record: BridgeRecord | None,
           serve_alive: bool | None, daemon_url: str | None, *, bridge_path: str,
           daemon_home: str) -> Choice | None:
    """The endpoint in force, or None when nothing names or runs one.

    `serve_alive` is None when the record names no pid (kept: an old record still
    counts); `daemon_url` is the daemon's socket URL only when it answers.
    """
    if url:
        return Choice(checked_url(url, "--url"), "--url", EndpointKind.URL, None)
    if env_url:
        return Choice(checked_url(env_url, "CODEX_BRIDGE_URL"), "CODEX_BRIDGE_URL",
                      EndpointKind.ENV, None)
    record_url = record.url if record else None
    if record_url is not None and serve_alive is not False:
        # With the daemon running too, resolve_endpoint asks both (`by_threads`).
        return Choice(record_url, bridge_path, EndpointKind.SERVE, None)
    if daemon_url:
        note = None
        if record_url is not None:
            note = (f"{bridge_path} is stale (its serve is gone); using codex's own daemon "
                    f"at {daemon_url}")
        return Choice(daemon_url, daemon_source(daemon_home), EndpointKind.DAEMON, note)
    if record_url is not None:  # stale, nothing else: fail at connect, as before
        return Choice(record_url, bridge_path, EndpointKind.SERVE, None)
    return None


def checked_url(url: str, source: str) -> str:
    """`url` when it can name an app-server: ws:// or wss:// with a host (and a port in
    1-65535 if one is given), or unix:// with a path. Else a UsageError naming the value
    and `source` (--url, CODEX_BRIDGE_URL) — a typo is the user's, not a failed connect
    (and urllib's ValueError on `ws://[::1` was a traceback)."""
    why = _url_problem(url)
    if why is None:
        return url
    raise UsageError(f"{source} {url!r} is not an app-server URL: {why}; expected "
                     "ws://HOST:PORT, wss://HOST:PORT or unix://PATH",
                     details={"url": url, "source": source})


def _url_problem(url: str) -> str | None:
    if url.startswith("unix://"):
        return None if url[len("unix://"):] else "a unix:// URL needs a socket path"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535", …
        return str(exc)
    if parts.scheme not in ("ws", "wss"):
        return f"the scheme is {parts.scheme or 'missing'!r}, not ws, wss or unix"
    if not parts.hostname:
        return "it names no host"
    if port is not None and not 1 <= port <= 65535:
        return f"port {port} is outside 1-65535"
    return None


def read_token(path: str | None) -> str | None:
    """The token kept in `path` (serve's ws-token, a delivery's own copy); None without
    a path, or when it cannot be read — the server then says 401, which names the fix."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _trust(url: str, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """SSL_CERT_FILE / SSL_CERT_DIR for a wss:// URL, absolute (a relative one names a
    file in this process's directory)."""
    if not url.startswith("wss://"):
        return None, None
    found = [env.get(name) or None for name in ("SSL_CERT_FILE", "SSL_CERT_DIR")]
    ca_file, ca_dir = (os.path.abspath(v) if v else None for v in found)
    return ca_file, ca_dir


def _serve_alive(record: BridgeRecord | None) -> bool | None:
    pid = record.pid if record else None
    if pid is None or pid <= 0:
        return None
    return pid_alive(pid)


_noted: set[str] = set()


def _say_once(note: str) -> None:
    # Once per process: the MCP server resolves on every tool call.
    if note not in _noted:
        _noted.add(note)
        logging.getLogger(__name__).warning("%s", note)


def resolve_endpoint(url: str | None = None, *, thread: str | None = None) -> Endpoint:
    """The app-server to talk to. `thread` (an id or name), when the caller knows it,
    decides between a serve and a daemon that both run (see `by_threads`)."""
    token = os.environ.get("CODEX_BRIDGE_TOKEN") or None
    env_url = os.environ.get("CODEX_BRIDGE_URL") or None
    record = BridgeRecord.current(_say_once)
    home = daemon.codex_home()
    running = None if (url or env_url) else daemon.running_url()
    alive = _serve_alive(record)
    picked = choose(url, env_url, record, alive, running, bridge_path=str(bridge_file()),
                    daemon_home=str(home))
    if picked is None:
        raise ConnectError(
            "no app-server to talk to: codex's daemon is not running (no "
            f"{daemon.socket_path(home)}) and no `codexbridge serve` runs (looked for "
            f"{bridge_file()}); {daemon.start_hint()}, or start `codexbridge serve` "
            "first, or pass --url / set CODEX_BRIDGE_URL",
            details={"bridge_file": str(bridge_file()),
                     "daemon_socket": str(daemon.socket_path(home)),
                     "daemon_lookup": daemon.enabled()})
    if picked.kind is EndpointKind.SERVE and running and record:
        # both run: ask them which is which
        serve = Server(picked.url, token or read_token(record.token_file), picked.source,
                       EndpointKind.SERVE)
        held_by = survey([serve, Server(running, None, daemon_source(str(home)),
                                        EndpointKind.DAEMON)])
        pick, note = by_threads(held_by[0], held_by[1], thread)
        picked = Choice(pick.server.url, pick.server.source, EndpointKind(pick.server.kind),
                        note)
    if picked.note:
        _say_once(picked.note)
    token_file = None
    if token is None and record and (picked.kind is EndpointKind.SERVE
                                       or record.url == picked.url):
        # our own serve, found or named explicitly: its token file
        token_file = record.token_file
        token = read_token(token_file)
    if picked.kind is EndpointKind.DAEMON:
        token, token_file = None, None  # a unix socket of the user's own: no bearer
    return Endpoint(picked.url, token, picked.source, picked.kind, token_file,
                    *_trust(picked.url, os.environ))


def reach_of(ep: Endpoint) -> Reach:
    """What a delivery record keeps of `ep` for its courier (messages/records.py)."""
    token = ep.token if ep.token_file is None else None  # a file is kept by its path
    return Reach(ep.url, token, ep.token_file, ep.ca_file, ep.ca_dir)


def recorded_endpoint(url: str | None, token_file: str | None, ca_file: str | None,
                      ca_dir: str | None) -> Endpoint:
    """The app-server a delivery record names, reached with what the record carries
    (messages/records.py, `ToCodex.app_server*`) — never the environment of the
    process asking: the courier carries every sender's deliveries and was started with
    whatever environment its first caller had. A record that names no server (one made
    before records carried it) is this process's own lookup."""
    if url is None:
        return resolve_endpoint()
    token = read_token(token_file)
    if token_file is None:
        # a record older than its token file: serve's own, when it names serve's URL
        record = BridgeRecord.current(_say_once)
        if record and url in (record.url, record.public_url):
            token_file = record.token_file
            token = read_token(token_file)
    return Endpoint(url, token, "the delivery record", EndpointKind.URL, token_file,
                    ca_file, ca_dir)


def others(url: str) -> list[Server]:
    """The app-servers running here besides the one at `url` (the serve of bridge.json,
    CODEX_HOME's daemon): where a thread this one does not hold may be held instead."""
    found: list[Server] = []
    record = BridgeRecord.current(_say_once)
    served = record.url if record else None
    if (record and served is not None and _serve_alive(record) is not False
            and url not in (served, record.public_url)):
        token = os.environ.get("CODEX_BRIDGE_TOKEN") or read_token(record.token_file)
        found.append(Server(served, token, str(bridge_file()), EndpointKind.SERVE))
    running = daemon.running_url()
    if running and running != url:
        found.append(Server(running, None, daemon_source(str(daemon.codex_home())),
                            EndpointKind.DAEMON))
    return found


def survey(servers: Sequence[Server]) -> list[Holding]:
    """Ask each server what it holds (codex/threads.py `survey`), from synchronous code —
    also inside a running event loop (the MCP server's), so in a thread of its own. A
    server that does not answer in SURVEY_TIMEOUT is `reachable=False`."""
    import asyncio  # (not at the top: the Stop hook's answer reads `Reach` without it)

    from .threads import survey as ask

    out: list[Holding] = []

    def run() -> None:
        try:
            out.extend(asyncio.run(ask(servers, SURVEY_TIMEOUT)))
        except Exception:  # no answer is an answer: nobody reachable
            out.clear()

    worker = threading.Thread(target=run, name="codexbridge-survey", daemon=True)
    worker.start()
    worker.join(4 * SURVEY_TIMEOUT)
    if len(out) != len(servers):
        return [Holding(s, False, None, ()) for s in servers]
    return out

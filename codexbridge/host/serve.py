"""`codexbridge serve`: run the shared app-server and record where it is.

The serve process is a thin supervisor: it starts codex with a baseline environment —
on a unix socket in a private directory at its defaults (the file system is the
authentication: loopback is no boundary on a shared machine), on TCP behind a capability
token when asked for — waits until it listens, writes bridge.json, forwards
SIGINT/SIGTERM/SIGHUP to the child's process group, relays the child's stderr (watching
for auth failures), and on exit removes bridge.json and returns the child's status.

What it says to the person goes two ways: the greeting (where to point the TUI) through
the caller's `echo`, on stdout; warnings (an auth hint, a restart) to this module's
logger, which the CLI shows on stderr as `codexbridge: …` (cli/command.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path
from types import FrameType
from typing import IO, NamedTuple

from ..errors import ServeError, UsageError
from . import daemon
from .appserver import AppServerProcess, codex_version, free_port
from .binaries import find_codex
from .envbaseline import auth_hint, child_env, mcp_token_vars
from .paths import BridgeRecord, bridge_file, state_dir, write_private
from .procs import pid_alive
from .runtime import SOCKET_PATH_MAX, socket_in_runtime
from .tls_relay import TlsRelay, server_context
from .tokens import check_strength, new_token

log = logging.getLogger(__name__)

DEFAULT_PORT = 8787
# A dead app-server child is started again, at most this many times within this window.
RESTART_LIMIT = 3
RESTART_WINDOW = 60.0


def check_not_running() -> None:
    record = BridgeRecord.current()
    pid = record.pid if record is not None else None
    if record is not None and pid is not None and pid_alive(pid):
        raise UsageError(
            f"a codexbridge serve is already running (pid {pid}, {record.url}); "
            "stop it first, or give this one its own CODEX_BRIDGE_HOME")


def port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        # As codex's own listener does (tokio sets it): a connection serve closed a moment
        # ago sits in TIME_WAIT on this port for ~60 s, and without it that reads as
        # "in use". A live listener still makes the bind fail.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host.strip("[]"), port))
        except OSError:
            return False
    return True


def _relay_stderr(stream: IO[bytes], tail: deque[str]) -> None:
    """Copy the child's stderr through, keep a tail, and point auth failures to the fix.

    The child's lines are copied as they are, not logged: they are codex's own words."""
    hinted = False
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace")
        sys.stderr.write(line)
        sys.stderr.flush()
        tail.append(line.rstrip("\n"))
        hint = None if hinted else auth_hint(line)
        if hint:
            hinted = True
            log.warning(hint)


def attach_lines(url: str, workdir: str, token_file: Path | None, tls: bool) -> list[str]:
    """What to paste to open the TUI on this serve: at its defaults a unix socket of
    ours, so no token; on TCP the token, read from its 0600 file."""
    token = daemon.token_word(str(token_file)) if token_file is not None else None
    remote = daemon.attach_line(url, workdir, token=token)
    if tls:
        remote = "SSL_CERT_FILE=<CA file, for a self-signed certificate> " + remote
    return [remote]


def daemon_notes(env: dict[str, str] | None = None) -> list[str]:
    """Why the plain `codex` TUI would not show this serve's threads."""
    notes = ["plain `codex` (without --remote) attaches to codex's own daemon, not to "
             "this serve: use the line above"]
    running = daemon.running_url(env)
    if running:
        # Same CODEX_HOME as this serve's codex: codex lets one app-server write a thread.
        notes.append(f"codex's own daemon also runs ({running}) on this CODEX_HOME: a thread "
                     "the TUI has on one of the two cannot be driven through the other. "
                     "`codexbridge talk` uses the one holding the TUI's thread (`--url` "
                     "picks); stop the one you do not use (`codexbridge doctor` says how)")
    return notes


class _Child:
    """The app-server child serve supervises: started, watched and, when it dies without
    being asked to, started again on the same address (at most RESTART_LIMIT times within
    RESTART_WINDOW seconds) so clients — a courier waiting for its server — find it again.
    The thread a client had is not lost: codex keeps rollouts on disk, `thread/resume`
    loads it into the new process."""

    def __init__(self, make: Callable[[], AppServerProcess]) -> None:
        self.make = make
        self.proc: AppServerProcess | None = None
        self.relay: threading.Thread | None = None
        self.tail: deque[str] = deque(maxlen=40)
        self.forwarded: list[int] = []  # signals serve passed on: a stop asked for
        self.restarts: deque[float] = deque()  # when each restart happened (monotonic)

    def forward(self, signum: int, _frame: FrameType | None) -> None:
        self.forwarded.append(signum)
        if self.proc is not None:
            self.proc.signal(signum)

    def start(self) -> None:
        """Start a child and wait until it listens; ServeError with its stderr if not."""
        self.proc = proc = self.make()
        proc.start()
        assert proc.proc is not None and proc.proc.stderr is not None
        self.relay = threading.Thread(target=_relay_stderr,
                                      args=(proc.proc.stderr, self.tail),
                                      daemon=True)
        self.relay.start()
        try:
            proc.wait_ready()
        except ServeError as exc:
            if self.forwarded:
                return  # stopped while it started: run() sees the exit and returns
            self.relay.join(2)
            raise ServeError(exc.message + _tail_text(self.tail), details=exc.details) from None
        if self.forwarded:  # a stop that came before the child could receive it
            proc.signal(self.forwarded[-1])

    def _wait(self) -> int:
        assert self.proc is not None and self.proc.proc is not None
        while True:
            try:
                return self.proc.proc.wait()
            except KeyboardInterrupt:  # pragma: no cover - the handler forwards instead
                self.proc.signal(signal.SIGINT)

    def run(self, restarted: Callable[[int], None]) -> int:
        """Until a stop is asked for (its status) or the child dies too often (non-zero).
        `restarted(pid)` is called with each new child's pid once it listens."""
        while True:
            code = self._wait()
            if self.relay is not None:
                self.relay.join(2)
            if self.forwarded:
                return _status(code)
            assert self.proc is not None and self.proc.pid is not None
            old = self.proc.pid
            self.proc.stop()  # the rest of its process group (commands the model ran)
            now = time.monotonic()
            while self.restarts and now - self.restarts[0] > RESTART_WINDOW:
                self.restarts.popleft()
            if len(self.restarts) >= RESTART_LIMIT:
                log.warning("the codex app-server (pid %d) %s; it died %d times within "
                            "%g s, more than serve restarts it (%d): serve stops%s",
                            old, _how(code), len(self.restarts) + 1, RESTART_WINDOW,
                            RESTART_LIMIT, _tail_text(self.tail))
                return _status(code) or 1
            self.restarts.append(now)
            self.start()
            if self.forwarded:
                continue
            assert self.proc.pid is not None
            restarted(self.proc.pid)
            log.warning("the codex app-server (pid %d) %s; restarted it on %s as pid %d "
                        "(restart %d of at most %d within %g s)", old, _how(code),
                        self.proc.url, self.proc.pid, len(self.restarts), RESTART_LIMIT,
                        RESTART_WINDOW)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()


def _status(code: int) -> int:
    return 128 - code if code < 0 else code


def _how(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"


def run_serve(cwd: str, port: int | None = None, host: str | None = None,
              codex_args: tuple[str, ...] = (), *, echo: Callable[[str], None],
              tls: tuple[str, str] | None = None) -> int:
    """Run until stopped (SIGINT/SIGTERM/SIGHUP: the app-server's status) or until the
    app-server dies more often than serve restarts it (non-zero).

    At its defaults codex listens on a unix socket in a 0700 directory of ours: nobody
    else can connect, and nothing needs a token. `host`/`port` ask for TCP, and `tls` =
    (cert, key) for wss:// (codex on loopback, a TLS relay on HOST:PORT: tls_relay.py);
    every TCP listener wants a capability token (`_token`)."""
    workdir = _workdir(cwd)
    check_not_running()
    listen = _listen(host, port, tls)
    front: TlsRelay | None = None
    if tls is not None:  # wss://HOST:PORT in front of codex's loopback listener (codex
        # has no TLS listener); the relay checks the token itself too
        assert listen.token is not None
        front = TlsRelay(listen.public_host, listen.port,
                         f"ws://127.0.0.1:{listen.inner_port}", server_context(*tls),
                         listen.token)
    codex = find_codex()
    version = codex_version(codex)
    extra, token_file = _auth_args(list(codex_args), listen.token)
    env = child_env(os.environ, also=mcp_token_vars(daemon.codex_home(os.environ), workdir))
    child = _Child(lambda: AppServerProcess(codex, workdir, listen.host, listen.inner_port,
                                            env, extra, stderr=subprocess.PIPE,
                                            socket_path=listen.socket))
    previous = {s: signal.signal(s, child.forward) for s in (signal.SIGINT, signal.SIGTERM,
                                                            signal.SIGHUP)}
    try:
        child.start()
        assert child.proc is not None
        url = child.proc.url
        record = BridgeRecord(
            url, pid=os.getpid(), app_server_pid=child.proc.pid, cwd=str(workdir),
            codex_version=version, codex_home=str(daemon.codex_home(env)),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            token_file=str(token_file) if token_file is not None else None)
        public = url
        if front is not None:
            front.start()
            public = f"wss://{_url_host(listen.public_host)}:{listen.port}"
            record.public_url = public
        record.save()
        _greet(echo, version, public, url, workdir, token_file, front is not None)
        return child.run(lambda pid: _restarted(record, pid))
    finally:
        if front is not None:
            front.stop()
        child.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
        current = BridgeRecord.current()
        if current is not None and current.pid == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                bridge_file().unlink()


class Listen(NamedTuple):
    """Where serve listens, and the token TCP needs.

    `socket`: the private unix socket codex listens on (the default; the rest unused).
    Otherwise codex listens on host:inner_port — the public port itself, or, behind the
    TLS relay, a free loopback port — and `token` is never None."""

    socket: Path | None
    host: str
    port: int
    inner_port: int
    token: str | None
    public_host: str


def _workdir(cwd: str) -> Path:
    workdir = Path(cwd).expanduser()
    if not workdir.is_dir():
        raise UsageError(f"--cwd {cwd!r} is not a directory")
    return workdir.resolve()


def _listen(host: str | None, port: int | None, tls: tuple[str, str] | None) -> Listen:
    """Where to listen — or a UsageError saying what is wrong, before anything starts."""
    if host is None and port is None and tls is None:
        path = socket_path()
        if daemon.listening(path):
            raise UsageError(f"something already listens on {path} (another serve of this "
                             "state home?); stop it first")
        return Listen(path, "", 0, 0, None, "")
    host = host or "127.0.0.1"
    port = DEFAULT_PORT if port is None else port
    token = _token()
    if port == 0:
        port = free_port(host)
    elif not port_free(host, port):
        raise UsageError(f"port {port} on {host} is in use (another serve?); pass --port N "
                         "or --port 0 for a free one")
    if tls is None:
        return Listen(None, host, port, port, token, host)
    # codex has no TLS listener: it sits on loopback behind the relay, token and all
    return Listen(None, "127.0.0.1", port, free_port("127.0.0.1"), token, host)


def _token() -> str:
    """The capability token every TCP listener of serve wants: CODEX_BRIDGE_TOKEN when
    set (refused when weak), else a fresh one (written to the ws-token file, where our
    own clients and the printed attach line read it)."""
    given = os.environ.get("CODEX_BRIDGE_TOKEN")
    if not given:
        return new_token()
    check_strength(given, "CODEX_BRIDGE_TOKEN")
    return given


def socket_path() -> Path:
    """serve's own unix socket: `serve-<hash of the state home>.sock` in the private
    runtime directory (host/runtime.py), else in the state home itself (0700 too) — a
    socket path must fit in ~104 bytes. UsageError when neither place fits."""
    home = os.path.realpath(state_dir(create=False))
    name = "serve-" + sha256(home.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    found = socket_in_runtime(f"{name}.sock")
    if found is not None:
        return Path(found)
    fallback = state_dir() / "serve.sock"
    if len(str(fallback).encode()) < SOCKET_PATH_MAX:
        return fallback
    raise UsageError(f"no private place for serve's socket: the runtime directory is not "
                     f"yours alone and {fallback} is too long for a unix socket; set "
                     "CODEX_BRIDGE_HOME to a shorter path, or pass --port N for a "
                     "token-protected ws:// listener")


def _restarted(record: BridgeRecord, pid: int) -> None:
    """What a restart changes in bridge.json: the new child's pid, the count."""
    record.app_server_pid = pid
    record.app_server_restarts = (record.app_server_restarts or 0) + 1
    record.save()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _auth_args(extra: list[str], token: str | None) -> tuple[list[str], Path | None]:
    """codex's own capability-token check, from a 0600 file in the state dir."""
    if not token:
        return extra, None
    token_file = state_dir() / "ws-token"
    write_private(token_file, token.encode("utf-8"))
    return [*extra, "--ws-auth", "capability-token", "--ws-token-file", str(token_file)], \
        token_file


def _greet(echo: Callable[[str], None], version: str, public: str, url: str, workdir: Path,
           token_file: Path | None, tls: bool) -> None:
    where = f"{public} (TLS; codex itself on {url})" if tls else url
    echo(f"codexbridge: app-server (codex {version}) listening on {where}, cwd {workdir}")
    echo("codexbridge: open the TUI with:")
    for line in attach_lines(public, str(workdir), token_file, tls):
        echo(f"    {line}")
    for note in daemon_notes(dict(os.environ)):
        echo(f"codexbridge: {note}")
    echo(f"codexbridge: if the app-server dies, serve restarts it on the same address (at "
         f"most {RESTART_LIMIT} times within {RESTART_WINDOW:g} s, then it stops).")
    echo("codexbridge: send one message in the TUI, then `codexbridge talk say \"…\"`. "
         "Ctrl-C stops.")


def _tail_text(tail: deque[str]) -> str:
    lines = [line for line in tail if line.strip()]
    return ("\n--- codex stderr (last lines) ---\n" + "\n".join(lines[-15:])) if lines else ""

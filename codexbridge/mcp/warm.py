"""A warm start for `codexbridge mcp` over stdio: the SDK imported once, forked per session.

Claude Code under `-p` waits for the plugin's MCP server before its first model request,
and nearly all of a cold start is the `mcp` SDK's import (the pydantic models of two
protocol eras and the HTTP transports: bench/bench_mcp.py). So the first stdio server
leaves one *warm server* behind, and the next ones are forked from it:

    codexbridge mcp [--role R]      the launcher (`cli/__init__.py`, before click; no SDK)
        connects to the warm server's socket and hands it its stdin, stdout and stderr
        (SCM_RIGHTS) with its argv, environment, working directory, umask and sys.path.
        The warm server forks a *worker* that becomes what a cold start would have been:
        the same state-dir check, role and settings (errors printed the same, exit 2),
        the same `build_server`, the SDK's own stdio transport on those descriptors. The
        launcher stays the process the agent started: it forwards SIGINT, SIGTERM and
        SIGHUP to the worker, and exits with the worker's status.
        No warm server, or it refuses: the command runs cold in this process as before,
        and once it has listed its tools (the agent's start-up is over) starts one.

    the warm server                 `python -c '… codexbridge.mcp.warm …'`, detached (its
        own session, stdio on /dev/null, cwd /, an environment without any session's
        variables). It imports the SDK and both roles' tools, builds each role's server
        with the default settings and rehearses one in-memory session of each protocol
        era (the SDK builds some validators on first use), then listens on
        `$XDG_RUNTIME_DIR/codexbridge/mcp-<key>.sock` or `$TMPDIR/codexbridge-<uid>/…`
        (0700, ours, never a symlink). <key> names what it shares with its launchers,
        checked in full on each request: the interpreter and its options, the
        codexbridge package, sys.path, and the variables read at import (PYTHON*, OTEL_*,
        LANG, LC_*, TZ) — another install or such an environment gets a server of its
        own. One per key (a lock). Those variables may hold credentials (an OTLP
        exporter's headers), so none of their values is in any argv — which every user
        reads in `ps` — or in a socket name, which every user reads in /proc/net/unix:
        the server is handed that identity in its environment (/proc/PID/environ is its
        user's alone), and <key> is a keyed hash (BLAKE2b) under a random key kept 0600
        in the same private directory. It answers only its own user; it refuses, and leaves,
        once a module it imported has changed on disk; it leaves after
        CODEX_BRIDGE_MCP_WARM seconds (default 600) without a request.
        CODEX_BRIDGE_MCP_WARM=0: none is started or used; every start is cold.

The worker is a child of the warm server, not of the agent: its /proc environ and
cmdline are the warm server's (its real environment is the launcher's: sitecustomize
runs again under it, and atexit handlers run at its end, as in a cold process), and it
runs under the warm server's resource limits. It ends with the session all the same: on
the signals the launcher forwards, on EOF on its stdin, and when the launcher vanishes.

Standard library only at import: the launcher runs this before anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys

from ..host.jsonfile import loads_json
from ..jsontypes import arr

TYPE_CHECKING = False  # (no `typing` at run time: the launcher imports this first)
if TYPE_CHECKING:
    import logging
    from collections.abc import Callable
    from signal import Handlers
    from types import FrameType
    from typing import NoReturn

    from mcp.server.context import (
        CallNext,
        HandlerResult,
        ServerMiddleware,
        ServerRequestContext,
    )
    from mcp.server.mcpserver import MCPServer

    from ..jsontypes import JsonObject
    from .settings import Settings

    Handler = Callable[[int, FrameType | None], object] | int | Handlers | None

IDLE_ENV = "CODEX_BRIDGE_MCP_WARM"
DEFAULT_IDLE = 600.0
HANDOFF_WAIT = 2.0  # s the launcher waits for a worker (the warm server answers in ~5 ms)
GO_WAIT = 5.0  # s a forked worker waits for the launcher's go before it leaves
MAX_REQUEST = 1 << 20
IMPORT_ENV_PREFIXES = ("PYTHON", "OTEL_", "LC_")
IMPORT_ENV_KEYS = ("LANG", "TZ")
IDENT_ENV = "CODEX_BRIDGE_WARM_IDENT"  # how `start` hands the warm server its ident()
NAME_KEY = "mcp-name.key"  # the socket names' key, in the private runtime directory
FD_COUNT = 3  # stdin, stdout, stderr
ROLES = ("claude", "codex")  # settings.ROLES, without importing it

BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
        "from codexbridge.mcp.warm import main; sys.exit(main(sys.argv[2:]))")


def parse_idle(raw: str | None) -> float | None:
    """CODEX_BRIDGE_MCP_WARM: seconds a warm server stays idle (0 = none). None: invalid."""
    if raw is None or not raw.strip():
        return DEFAULT_IDLE
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if value >= 0 and value == value and value != float("inf") else None


def role_flag(argv: list[str]) -> tuple[bool, str | None]:
    """(is this the plain stdio shape, the --role value): `[]`, `--role R`, `--role=R`.
    Anything else (--http, --help, a typo) is click's to parse and report."""
    if not argv:
        return True, None
    if len(argv) == 2 and argv[0] == "--role":
        return True, argv[1]
    if len(argv) == 1 and argv[0].startswith("--role="):
        return True, argv[0].split("=", 1)[1]
    return False, None


def _is_import_env(name: str) -> bool:
    return name in IMPORT_ENV_KEYS or name.startswith(IMPORT_ENV_PREFIXES)


def _package_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def search_path() -> list[str]:
    """sys.path without the working directory `-m`/`-c` put first: which directory a
    session starts in must not split the servers (the worker gets the full path)."""
    path = list(sys.path)
    if path and (not path[0] or os.path.realpath(path[0]) == os.path.realpath(os.getcwd())):
        path = path[1:]
    return path


def _interpreter() -> list[object]:
    """The interpreter's options (-O, -X …, -W …): a warm server started without them
    cannot stand in for a start with them."""
    return [list(sys.flags), sorted(sys._xoptions.items()), list(sys.warnoptions)]


def ident() -> str:
    """What a warm server must share with a launcher to stand in for its cold start."""
    env = sorted((k, v) for k, v in os.environ.items() if _is_import_env(k))
    return json.dumps({"uid": os.getuid(), "python": sys.executable, "version": sys.version,
                       "options": _interpreter(), "package": _package_dir(),
                       "path": search_path(), "env": env}, ensure_ascii=True, sort_keys=True)


def server_key(text: str, key: bytes) -> str:
    """A short name for `ident()` text, keyed (the server checks the whole text). Keyed
    because the name is public (/proc/net/unix) and the text holds environment values;
    `_blake2` is built in and imported in ~0.5 ms (hashlib's OpenSSL takes ~4 ms)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter without the builtin
        from hashlib import blake2b
    return blake2b(text.encode(), digest_size=8, key=key).hexdigest()


def name_key(directory: str) -> bytes | None:
    """This user's random key for socket names, in `directory` (the private runtime
    directory): made once, 0600; None while it cannot be read whole (another launcher is
    making it this instant: this start runs cold)."""
    path = os.path.join(directory, NAME_KEY)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        return data if len(data) == 32 else None
    except OSError:
        return None
    data = os.urandom(32)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return data


def socket_path() -> str | None:
    """Where this install's warm server listens; None when there is no safe place
    (a directory that is not ours alone, or a path too long for a unix socket)."""
    from ..host.runtime import private_runtime_dir, socket_in_runtime

    directory = private_runtime_dir()
    key = name_key(directory) if directory is not None else None
    if key is None:
        return None
    return socket_in_runtime(f"mcp-{server_key(ident(), key)}.sock")


def wanted(env: dict[str, str] | os._Environ[str]) -> bool:
    """Whether this stdio server should leave a warm server behind."""
    return bool(parse_idle(env.get(IDLE_ENV))) and sys.platform != "win32" \
        and not sys.stdin.isatty()


# --- the launcher ------------------------------------------------------------------

def launch(argv: list[str]) -> int | None:
    """Serve this `codexbridge mcp` from the warm server: its exit status, or None when
    the command must run cold (not the plain stdio shape, warm off, no server, refused)."""
    plain, flag = role_flag(argv)
    # A missing or unknown role is click's to report (and not worth a fork).
    if not plain or (flag or os.environ.get("CODEX_BRIDGE_MCP_ROLE")) not in ROLES:
        return None
    if not parse_idle(os.environ.get(IDLE_ENV)) or sys.platform == "win32":
        return None
    try:
        if os.isatty(0):
            return None
        path = socket_path()
        if path is None:
            return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    before = _leave_on_stop_signals()  # the agent may stop us mid-handover, too
    try:
        conn.settimeout(HANDOFF_WAIT)
        conn.connect(path)
        pid = _hand_over(conn, argv)
    except (OSError, ValueError):
        pid = None
    if pid is None:
        conn.close()
        _restore_signals(before)
        return None
    return _relay(conn, pid)


def _leave_on_stop_signals(pid: int | None = None) -> dict[int, Handler]:
    """SIGINT, SIGTERM, SIGHUP: pass it to the worker `pid` (if any), then leave at once,
    as a cold server does (mcp_cmd): exit 0 for the first two. The handlers replaced."""
    import signal

    def leave(signum: int, _frame: object) -> None:
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)
        os._exit(0 if signum in (signal.SIGINT, signal.SIGTERM) else 128 + signum)

    return {sig: signal.signal(sig, leave)
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}


def _restore_signals(handlers: dict[int, Handler]) -> None:
    import signal

    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def _hand_over(conn: socket.socket, argv: list[str]) -> int | None:
    """Send the request and our stdio; the worker's pid once it has been told to go."""
    import array

    mask = os.umask(0)
    os.umask(mask)
    body = json.dumps({"ident": ident(), "argv": argv, "env": dict(os.environ),
                       "cwd": os.getcwd(), "umask": mask, "path": sys.path}).encode()
    fds = array.array("i", range(FD_COUNT))
    conn.sendmsg([struct.pack(">I", len(body)) + body],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())])
    answer = _read_line(conn)
    pid = answer.get("pid") if answer else None
    if not isinstance(pid, int) or pid <= 0:
        return None
    conn.sendall(b"go\n")
    return pid


def _recv_line(conn: socket.socket) -> bytes | None:
    """One newline-ended message; None when the peer hangs up first."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(256)
        if not chunk:
            return None
        data += chunk
    return data


def _read_line(conn: socket.socket) -> JsonObject | None:
    data = _recv_line(conn)
    answer = loads_json(data) if data is not None else None
    return answer if isinstance(answer, dict) else None


def _relay(conn: socket.socket, pid: int) -> int:
    """Stand in for the worker: forward the agent's signals, exit with its status."""
    _leave_on_stop_signals(pid)
    # Our own stdin/stdout stay open but untouched; we leave right after the worker.
    conn.settimeout(None)
    try:
        answer = _read_line(conn)
    except (OSError, ValueError):
        answer = None
    code = answer.get("exit") if answer else None
    return code if isinstance(code, int) else 1


# --- starting a warm server (from a cold one) ---------------------------------------

def start() -> None:
    """Start this install's warm server, detached; a no-op when one is already there
    (it holds the lock) or there is no safe place for its socket."""
    import subprocess

    path = socket_path()
    idle = parse_idle(os.environ.get(IDLE_ENV))
    if path is None or not idle:
        return
    env = {k: v for k, v in os.environ.items() if k == "PATH" or _is_import_env(k)}
    # ident() holds environment values (OTEL_* may carry credentials): not in argv,
    # which `ps` shows every user — in the environment, which only we may read
    env[IDENT_ENV] = ident()
    argv = [sys.executable, "-c", BOOT, json.dumps(search_path()), path, repr(idle)]
    # sh puts it in the background and exits: the warm server is nobody's child, so it
    # never lingers as a zombie of a long session.
    subprocess.run(["/bin/sh", "-c", '"$@" </dev/null >/dev/null 2>&1 &', "sh", *argv],
                   env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, close_fds=True, check=False, timeout=30)


def start_after_listing() -> ServerMiddleware[object]:
    """SDK middleware: start the warm server as this server lists its tools — the end of
    the agent's start-up, so the import competes with it least. Before the answer goes
    out (a few ms): an agent may stop the server as soon as it has the list."""
    started = False

    async def middleware(ctx: ServerRequestContext[object, object],
                         call_next: CallNext) -> HandlerResult:
        nonlocal started
        result = await call_next(ctx)
        if not started and ctx.method == "tools/list":
            started = True
            start()
        return result

    return middleware


# --- the warm server -----------------------------------------------------------------

class _Warm:
    """The warm server's state: what it shares with launchers, what it has ready."""

    def __init__(self, path: str, ident: str, lock_fd: int) -> None:
        self.path, self.ident, self.lock_fd = path, ident, lock_fd
        self.prebuilt: dict[str, tuple[Settings, MCPServer]] = {}  # role → (settings, server)
        self.stamp: dict[str, int] = {}
        self.listener: socket.socket | None = None
        self.inode = 0


def main(argv: list[str]) -> int:
    """`BOOT`'s entry: SOCKET IDLE, and the ident in $CODEX_BRIDGE_WARM_IDENT."""
    from ..host.locking import lock

    path, idle = argv[0], float(argv[1])
    expected = os.environ.pop(IDENT_ENV, "")
    if not expected:
        return 0
    with contextlib.suppress(OSError):  # already a session leader
        os.setsid()
    lock_fd = os.open(path[: -len(".sock")] + ".lock",
                      os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                      0o600)
    if not lock(lock_fd, blocking=False):
        return 0  # another one is starting or running
    warm = _Warm(path, expected, lock_fd)
    if not _prepare(warm):
        return 0
    warm.listener, warm.inode = _bind(path)
    _leave_on_signals(warm)
    try:
        _serve(warm, idle)
    finally:
        _unlink_if_ours(warm)
    return 0


def _prepare(warm: _Warm) -> bool:
    """Import what a worker runs, then freeze it out of the cyclic GC (forks share those
    pages until written). False when this cannot stand in for a launcher's cold start:
    another codexbridge was imported, the interpreter's options differ, the import
    failed, or a thread was left running (no fork is safe then)."""
    import gc
    import threading

    expected = json.loads(warm.ident)
    if expected["options"] != json.loads(json.dumps(_interpreter())):
        return False
    gc.disable()
    try:
        from . import claude_tools, codex_tools, server, settings, stdio  # noqa: F401

        if _package_dir() != expected["package"]:
            return False  # sys.path found another codexbridge than the launcher's
        _ready_made(warm)
    except Exception:  # a broken install: the cold start says what is wrong
        return False
    finally:
        gc.freeze()
        gc.enable()
    warm.stamp = _stamp()
    return threading.active_count() == 1


def _ready_made(warm: _Warm) -> None:
    """Each role's server built with the default settings (most sessions use them), after
    a rehearsal: one in-memory session of each protocol era on a throwaway server (the
    SDK builds some validators on first use). Only a head start: a failure here just
    leaves the workers to build their own."""
    from . import server, settings

    for role in settings.ROLES:
        try:
            _rehearse(server.build_server(settings.load(role, {})))
            config = settings.load(role, {})
            warm.prebuilt[role] = (config, server.build_server(config))
        except Exception:
            continue


def _rehearse(mcp_server: MCPServer) -> None:
    import anyio
    from mcp import Client

    async def session(mode: str) -> None:
        async with Client(mcp_server, mode=mode) as client:
            await client.list_tools()

    for mode in ("auto", "legacy"):
        anyio.run(session, mode)


def _stamp() -> dict[str, int]:
    """mtime of every imported module's file (and the interpreter's)."""
    files = {sys.executable}
    files.update(f for m in list(sys.modules.values())
                 if isinstance(f := getattr(m, "__file__", None), str))
    stamp = {}
    for name in files:
        try:
            stamp[name] = os.stat(name).st_mtime_ns
        except OSError:
            continue
    return stamp


def _changed(stamp: dict[str, int]) -> bool:
    for name, mtime in stamp.items():
        try:
            if os.stat(name).st_mtime_ns != mtime:
                return True
        except OSError:
            return True
    return False


def _bind(path: str) -> tuple[socket.socket, int]:
    """Listen at `path`, replacing a dead server's socket in one rename."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(tmp)
    os.chmod(tmp, 0o600)
    listener.listen(64)
    os.replace(tmp, path)
    return listener, os.stat(path).st_ino


def _unlink_if_ours(warm: _Warm) -> None:
    try:
        if os.stat(warm.path).st_ino == warm.inode:
            os.unlink(warm.path)
    except OSError:
        pass


def _leave_on_signals(warm: _Warm) -> None:
    import signal

    def leave(_signum: int, _frame: object) -> None:
        _unlink_if_ours(warm)
        os._exit(0)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, leave)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel


def _serve(warm: _Warm, idle: float) -> None:
    import time

    assert warm.listener is not None
    last = time.monotonic()
    while True:
        left = idle - (time.monotonic() - last)
        if left <= 0:
            return
        warm.listener.settimeout(left)
        try:
            conn, _ = warm.listener.accept()
        except TimeoutError:
            continue
        last = time.monotonic()
        with conn:
            if not _answer(warm, conn):
                return


def _answer(warm: _Warm, conn: socket.socket) -> bool:
    """One launcher: fork its worker. False when this server must leave (stale code)."""
    conn.settimeout(HANDOFF_WAIT)
    if not _same_user(conn):
        return True
    try:
        request, fds = _receive(conn)
    except (OSError, ValueError):
        return True
    try:
        if request.get("ident") != warm.ident:
            _send(conn, {"refused": "another interpreter, sys.path or environment"})
            return True
        if _changed(warm.stamp):
            _send(conn, {"refused": "codexbridge or a library it uses changed on disk"})
            return False
        try:
            pid = os.fork()
        except OSError:
            return True  # the launcher sees no pid and runs cold
        if pid == 0:
            _worker(warm, conn, request, fds)
    finally:
        for fd in fds:
            os.close(fd)
    return True


def _same_user(conn: socket.socket) -> bool:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:  # the directory (0700, ours) is the only way in
        return True
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _receive(conn: socket.socket) -> tuple[JsonObject, list[int]]:
    """The launcher's request (length-prefixed JSON) and its three descriptors."""
    import array

    fds = array.array("i")
    data, ancillary, _flags, _addr = conn.recvmsg(
        65536, socket.CMSG_SPACE(FD_COUNT * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    try:
        if len(fds) != FD_COUNT or len(data) < 4:
            raise ValueError("a request needs a length and three descriptors")
        (size,) = struct.unpack(">I", data[:4])
        if size > MAX_REQUEST:
            raise ValueError("request too large")
        body = data[4:]
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                raise ValueError("request cut short")
            body += chunk
        request = loads_json(body)
        if not isinstance(request, dict):
            raise ValueError("request is not an object")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, list(fds)


def _send(conn: socket.socket, message: dict[str, object]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


# --- a worker (a forked child of the warm server) -------------------------------------

def _worker(warm: _Warm, conn: socket.socket, request: JsonObject,
            fds: list[int]) -> NoReturn:
    code = 1
    try:
        if warm.listener is not None:
            warm.listener.close()
        os.close(warm.lock_fd)  # the lock is the warm server's alone
        if _adopt(request) and _go(conn):
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            _watch_launcher(conn)
            _customize_again()
            code = _serve_session(warm, [str(a) for a in arr(request.get("argv"))])
            import atexit

            atexit._run_exitfuncs()  # what a cold process's normal exit runs
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # never back into the warm server's loop
        import traceback

        traceback.print_exc()
    finally:
        try:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            _send(conn, {"exit": code})
        except (OSError, ValueError):
            pass
        os._exit(code)


def _adopt(request: JsonObject) -> bool:
    """Become the launcher's process: its environment, directory, umask, sys.path."""
    import signal

    # The warm server's own handlers (leave, and take the socket along) are not ours.
    for sig in (signal.SIGCHLD, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env, path = request.get("env"), request.get("path")
    if not isinstance(env, dict) or not isinstance(path, list):
        return False
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    sys.path[:] = [str(p) for p in path]
    umask = request.get("umask")
    if isinstance(umask, int):
        os.umask(umask)
    try:
        os.chdir(str(request.get("cwd")))
    except OSError:
        return False
    sys.argv = [sys.argv[0], "mcp", *map(str, arr(request.get("argv")))]
    return True


def _customize_again() -> None:
    """Run sitecustomize/usercustomize again, now under the session's environment: a cold
    start would have run them with it (the warm server ran them with its own)."""
    import importlib

    for name in ("sitecustomize", "usercustomize"):
        module = sys.modules.get(name)
        if module is None or getattr(module, "__spec__", None) is None:
            continue
        try:
            importlib.reload(module)
        except Exception as exc:  # as site.py does: say so, start anyway
            _log().warning("Error in %s; set PYTHONVERBOSE for traceback:\n%s: %s",
                           name, type(exc).__name__, exc)


def _log() -> logging.Logger:
    """This module's log, in a worker: the session's stderr, each message bare — the
    words a cold start's front end (cli/command.report) or site.py would print there.
    Not the root handler the SDK's server set up in the warm server (its own format)."""
    import logging

    log = logging.getLogger(__name__)
    if not log.handlers:
        handler = logging.StreamHandler()  # sys.stderr: fd 2 is the session's by now
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.propagate = False
    return log


def _go(conn: socket.socket) -> bool:
    """Tell the launcher our pid; serve only once it says go (else it runs cold)."""
    conn.settimeout(GO_WAIT)
    _send(conn, {"pid": os.getpid()})
    data = _recv_line(conn)
    conn.settimeout(None)
    return data == b"go\n"


def _watch_launcher(conn: socket.socket) -> None:
    """Leave when the launcher is gone (killed outright: it forwards what it can)."""
    import threading

    def watch() -> None:
        try:
            while conn.recv(64):
                pass
        except OSError:
            pass
        os._exit(0)

    threading.Thread(target=watch, name="launcher-watch", daemon=True).start()


def _serve_session(warm: _Warm, argv: list[str]) -> int:
    """What `codexbridge mcp [--role R]` does cold (cli/mcp_cmd.py), checks included; the
    prebuilt server when the session's settings are the defaults it was built with."""
    from ..errors import BridgeError
    from ..host.private import check_state_dirs
    from . import settings
    from .stdio import serve_stdio

    _, flag = role_flag(argv)
    try:
        check_state_dirs()
        config = settings.load(settings.resolve_role(flag, os.environ))
    except BridgeError as exc:  # as a cold start reports it (cli/command.report)
        _log().error("codexbridge: %s", exc.message)
        return exc.exit_code
    built, server = warm.prebuilt.get(config.role, (None, None))
    serve_stdio(config, warm=False, server=server if built == config else None)
    return 0

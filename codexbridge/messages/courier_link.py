"""Reaching the courier: the one resident process per state home that carries every
delivery between the agents (`messages/courier.py`).

    ensure(ids)   hand delivery ids to the running courier; start one (detached) when
                  none answers. True once one has them.
    running()     whether a courier answers.
    socket_path() where a courier starting now listens; `advertise` says where it does.

The courier listens on a unix socket at a short path — a state home may sit deep in the
file system and a socket path may not (~104 bytes): the runtime dir (`host/runtime.py`:
`$XDG_RUNTIME_DIR/codexbridge/`, else `$TMPDIR/codexbridge-<uid>/`; 0700, ours, never a
symlink), named by a hash of the state home, so each state home has its own courier.
Where it listens is written into the state home (`courier.addr`), and senders go there:
the processes of one user need not agree on XDG_RUNTIME_DIR (Claude Code's hooks, codex's
MCP servers, a login shell, a `su`),
and a sender that computed another path would start a second courier that only waits
on the first one's lock — its deliveries never handed over. A sender that finds none
starts one; two starting at once are fine: the second waits on the first's lock and
leaves.

Standard library only: the Stop hook and the watcher call it.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time

from ..host.jsonfile import loads_json
from ..host.locking import try_lock
from ..host.private import (
    ensure_private_dir,
    open_private_log,
    open_state,
    state_home,
    write_private,
)
from ..host.runtime import socket_in_runtime

START_WAIT = 10.0  # s: a cold Python start on a loaded 2-core box takes ~1 s
ACK_WAIT = 5.0
# What the courier must not inherit from whoever happened to start it: it serves every
# session and thread of this state home, and its own mail and turns come from no session.
NOT_INHERITED = ("CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_MESSAGING_SOCKET",
                 "CLAUDE_CODE_MESSAGING_TOKEN", "CLAUDE_PID", "CLAUDE_PROJECT_DIR",
                 "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_THREAD_ID",
                 "CODEX_BRIDGE_CONVERSATION")


def socket_path(home: str | None = None) -> str:
    """Where the courier of state home `home` (default: this one) listens."""

    real = os.path.realpath(home or state_home())
    name = "courier-" + hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    # Not ours alone (or too long): the state home itself, which is.
    return socket_in_runtime(f"{name}.sock") or os.path.join(real, f"{name}.sock")


def _address_file() -> str:
    return os.path.join(state_home(), "courier.addr")


def advertise(path: str) -> None:
    """The courier listens at `path`: tell every sender of this state home."""
    write_private(_address_file(), path.encode("utf-8", "surrogateescape"))


def withdraw(path: str) -> None:
    """The courier at `path` is leaving (a newer one's address stays)."""
    if _advertised() == path:
        try:  # noqa: SIM105 - no contextlib on the hook's path
            os.unlink(_address_file())
        except FileNotFoundError:
            pass


def _advertised() -> str | None:
    try:
        fd = open_state(_address_file(), os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    return data.decode("utf-8", "surrogateescape") or None


def _exchange(message: dict[str, object], timeout: float) -> dict[str, object] | None:
    """One request/answer line with the courier; None when none answers."""
    path = _advertised() or socket_path()
    if not os.path.exists(path):
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(path)
            conn.sendall(json.dumps(message).encode("utf-8") + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            return None
    try:
        answer = loads_json(data)
    except ValueError:
        return None
    return dict(answer) if isinstance(answer, dict) else None


def running() -> bool:
    """A courier runs — or is starting: it holds the state home's courier lock from
    before it listens, so a courier just started is not taken for none."""

    lock = os.path.join(state_home(), "courier.lock")
    if os.path.exists(lock):
        with try_lock(lock) as free:
            if not free:
                return True
    answer = _exchange({"op": "ping"}, 3.0)
    return bool(answer and answer.get("ok"))


def poke(ids: list[str]) -> bool:
    """Hand `ids` to the running courier; False when none answers (or it is leaving)."""
    answer = _exchange({"op": "carry", "ids": ids}, ACK_WAIT)
    return bool(answer and answer.get("ok"))


def start() -> int:
    """Start a courier, detached (its own session: it outlives the caller)."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    home = state_home()
    ensure_private_dir(home)
    log = open_private_log(os.path.join(home, "logs", "courier.log"))
    try:
        proc = subprocess.Popen([sys.executable, "-m", "codexbridge.messages.courier"],
                                env=env, cwd=home, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=log, start_new_session=True, close_fds=True)
    finally:
        os.close(log)
    return proc.pid


def ensure(ids: list[str], wait: float = START_WAIT) -> bool:
    """`ids` are in a courier's hands when this returns True. False only when no courier
    could be started within `wait` seconds — the records stay, and the next sender,
    stop or watcher tries again."""
    if poke(ids):
        return True
    start()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if poke(ids):
            return True
        time.sleep(0.02)
    return False

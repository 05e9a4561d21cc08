"""Starting and stopping a `codex app-server` child process.

The native binary is started in its own process group so signals reach the real
process and teardown is one killpg (docs/protocol-notes.md, "Processes"). `serve`, the
offline stack (`doctor/offline_stack.py`: doctor --deep; the tests and bench/ on it) and
the tests' fixtures all start it through `AppServerProcess`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..errors import ServeError
from .binaries import parse_version
from .daemon import listening

READY_TIMEOUT = 30.0


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def codex_version(codex: str) -> str:
    try:
        out = subprocess.run([codex, "--version"], capture_output=True, text=True, timeout=20,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServeError(f"cannot run {codex} --version: {exc}") from exc
    return parse_version(out.stdout + out.stderr) or "unknown"


@dataclass
class AppServerProcess:
    codex: str
    cwd: Path
    host: str
    port: int
    env: dict[str, str]
    extra_args: list[str] = field(default_factory=list)
    stderr: IO[bytes] | int | None = None
    # Where stderr goes when `stderr` is not given: a file kept for `stderr_text()`.
    stderr_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    # Listen on this unix socket instead of host:port (`serve`'s default: its directory,
    # 0700 and ours, is the authentication).
    socket_path: Path | None = None

    @property
    def url(self) -> str:
        if self.socket_path is not None:
            return f"unix://{self.socket_path}"
        return f"ws://{self.host}:{self.port}"

    def start(self) -> None:
        argv = [self.codex, "app-server", "--listen", self.url, *self.extra_args]
        sink: IO[bytes] | int | None = self.stderr
        opened: IO[bytes] | None = None
        if sink is None and self.stderr_path is not None:
            self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
            opened = sink = open(self.stderr_path, "ab")  # noqa: SIM115 - closed below
        try:
            self.proc = subprocess.Popen(argv, cwd=self.cwd, env=self.env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=sink, start_new_session=True)
        except OSError as exc:
            raise ServeError(f"cannot start {self.codex}: {exc}") from exc
        finally:
            if opened is not None:
                opened.close()  # the child has its own copy of the descriptor

    def stderr_text(self) -> str:
        """What the app-server wrote to `stderr_path` so far ("" without one)."""
        if self.stderr_path is None:
            return ""
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Poll a connect until the listener accepts; fail if the child exits first."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise ServeError(f"codex app-server exited with status {code} before it "
                                 "accepted connections", details={"status": code})
            if self._accepts():
                return
            time.sleep(0.05)
        self.stop()
        raise ServeError(f"codex app-server did not accept connections on {self.url} within "
                         f"{timeout:g} s")

    def _accepts(self) -> bool:
        if self.socket_path is not None:
            return listening(self.socket_path)
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host.strip("[]")
        try:
            with socket.create_connection((host, self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def signal(self, signum: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signum)

    def stop(self, grace: float = 5.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait(grace)
        # Commands the model started live in the same group and may outlive the leader.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode

    def __enter__(self) -> AppServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def launch(codex: str, cwd: Path, env: Mapping[str, str], *, host: str = "127.0.0.1",
           port: int = 0, extra_args: list[str] | None = None,
           stderr: IO[bytes] | int | None = None, stderr_path: Path | None = None,
           ready_timeout: float = READY_TIMEOUT) -> AppServerProcess:
    """Start the app-server and wait until it accepts connections.

    If it never does, it is stopped and the ServeError carries its stderr (when kept).
    """
    proc = AppServerProcess(codex, Path(cwd), host, port or free_port(host), dict(env),
                            list(extra_args or []), stderr, stderr_path)
    proc.start()
    try:
        proc.wait_ready(ready_timeout)
    except ServeError as exc:
        proc.stop()
        tail = proc.stderr_text()
        raise ServeError(exc.message + (f":\n{tail}" if tail else ""),
                         details=exc.details) from None
    return proc

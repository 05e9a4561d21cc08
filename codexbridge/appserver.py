"""Starting and stopping a `codex app-server` child process.

The native binary is started in its own process group so signals reach the real
process and teardown is one killpg (reference §1, pitfall 15).
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

from .binaries import parse_version
from .errors import ServeError

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
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def start(self) -> None:
        argv = [self.codex, "app-server", "--listen", self.url, *self.extra_args]
        try:
            self.proc = subprocess.Popen(argv, cwd=self.cwd, env=self.env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=self.stderr, start_new_session=True)
        except OSError as exc:
            raise ServeError(f"cannot start {self.codex}: {exc}") from exc

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Poll a TCP connect until the listener accepts; fail if the child exits first."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host.strip("[]")
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise ServeError(f"codex app-server exited with status {code} before it "
                                 "accepted connections", details={"status": code})
            try:
                with socket.create_connection((host, self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise ServeError(f"codex app-server did not accept connections on {self.url} within "
                         f"{timeout:g} s")

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


def launch(codex: str, cwd: Path, env: Mapping[str, str], *, host: str = "127.0.0.1",
           port: int = 0, extra_args: list[str] | None = None,
           stderr: IO[bytes] | int | None = None) -> AppServerProcess:
    """Start the app-server and wait until it accepts connections."""
    proc = AppServerProcess(codex, cwd, host, port or free_port(host), dict(env),
                            list(extra_args or []), stderr)
    proc.start()
    proc.wait_ready()
    return proc

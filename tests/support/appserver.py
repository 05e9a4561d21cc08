"""Launch the real `codex app-server` on loopback for tests and bench scripts.

`AppServer.launch(...)` spawns the native binary in its own process group with a clean
environment, waits until the WebSocket port accepts TCP connections and hands back the
`ws://` URL. `MockStack` bundles the whole offline set-up (mock model, CODEX_HOME, project
dir, app-server) for code outside pytest.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from codexbridge.mock import MockResponsesServer, isolated_env, write_codex_home

READY_TIMEOUT_S = 20.0
STOP_GRACE_S = 5.0


def free_port() -> int:
    """A port that was free a moment ago (the kernel may hand it out again; rare on loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class AppServer:
    """A running `codex app-server --listen ws://127.0.0.1:<port>`; stop() kills its group."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, env: dict[str, str],
                 stderr_path: Path) -> None:
        self.proc = proc
        self.port = port
        self.env = env
        self.stderr_path = stderr_path

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @classmethod
    def launch(cls, codex_bin: str, workdir: Path, env: Mapping[str, str], *,
               stderr_path: Path, port: int | None = None,
               extra_args: list[str] | None = None,
               ready_timeout: float = READY_TIMEOUT_S) -> AppServer:
        """Spawn in `workdir` with exactly `env`; return once the port accepts connections."""
        port = port or free_port()
        args = [codex_bin, "app-server", "--listen", f"ws://127.0.0.1:{port}",
                *(extra_args or [])]
        stderr_path.parent.mkdir(parents=True, exist_ok=True)
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(args, cwd=workdir, env=dict(env), stdin=subprocess.DEVNULL,
                                    stdout=err, stderr=err, start_new_session=True)
        server = cls(proc, port, dict(env), stderr_path)
        deadline = time.monotonic() + ready_timeout
        while not _port_open(port):
            if proc.poll() is not None:
                raise RuntimeError(f"codex app-server exited with {proc.returncode} before "
                                   f"listening:\n{server.stderr_text()}")
            if time.monotonic() > deadline:
                server.stop()
                raise TimeoutError(f"codex app-server not listening on {port} after "
                                   f"{ready_timeout}s:\n{server.stderr_text()}")
            time.sleep(0.02)
        return server

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> int | None:
        """SIGTERM the process group, SIGKILL it after 5 s; returns the exit status."""
        if self.proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.proc.wait(timeout=STOP_GRACE_S)
        # Children that outlived the leader (a command the model ran) die with the group.
        self._signal_group(signal.SIGKILL)
        return self.proc.returncode

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def __enter__(self) -> AppServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class MockStack:
    """Mock model + CODEX_HOME + project dir + app-server under `base`, for scripts.

        with MockStack(codex_bin, Path("/tmp/x")) as stack:
            print(stack.server.url, stack.workdir)
    """

    def __init__(self, codex_bin: str, base: Path | None = None) -> None:
        self.codex_bin = codex_bin
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if base is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="codexbridge-stack-")
            base = Path(self._tmp.name)
        self.base = base
        self.workdir = base / "project"
        self.codex_home = base / "codex-home"
        self.user_home = base / "home"
        self.mock = MockResponsesServer()
        self.server: AppServer | None = None

    @property
    def env(self) -> dict[str, str]:
        return isolated_env(self.codex_home, user_home=self.user_home)

    def start(self) -> MockStack:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.user_home.mkdir(parents=True, exist_ok=True)
        self.mock.start()
        write_codex_home(self.codex_home, self.mock.url, [self.workdir])
        self.server = AppServer.launch(self.codex_bin, self.workdir, self.env,
                                       stderr_path=self.base / "app-server.stderr")
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.mock.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> MockStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

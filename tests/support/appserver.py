"""Launch the real `codex app-server` on loopback for tests and bench scripts.

`AppServer.launch(...)` spawns the native binary in its own process group with a clean
environment, waits until the WebSocket port accepts TCP connections and hands back the
`ws://` URL. `MockStack` bundles the whole offline set-up (mock model, CODEX_HOME, project
dir, app-server) for code outside pytest.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from codexbridge.appserver import AppServerProcess, free_port
from codexbridge.errors import ServeError
from codexbridge.mock import MockResponsesServer, isolated_env, write_codex_home

READY_TIMEOUT_S = 20.0

__all__ = ["AppServer", "MockStack", "free_port"]


class AppServer:
    """A running `codex app-server --listen ws://127.0.0.1:<port>` (the package's own
    launcher, `codexbridge.appserver.AppServerProcess`) with its stderr kept in a file."""

    def __init__(self, process: AppServerProcess, stderr_path: Path) -> None:
        self.process = process
        self.stderr_path = stderr_path

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        assert self.process.proc is not None
        return self.process.proc

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def env(self) -> dict[str, str]:
        return self.process.env

    @property
    def url(self) -> str:
        return self.process.url

    @classmethod
    def launch(cls, codex_bin: str, workdir: Path, env: Mapping[str, str], *,
               stderr_path: Path, port: int | None = None,
               extra_args: list[str] | None = None,
               ready_timeout: float = READY_TIMEOUT_S) -> AppServer:
        """Spawn in `workdir` with exactly `env`; return once the port accepts connections."""
        stderr_path.parent.mkdir(parents=True, exist_ok=True)
        with open(stderr_path, "wb") as err:
            process = AppServerProcess(codex_bin, workdir, "127.0.0.1", port or free_port(),
                                       dict(env), list(extra_args or []), stderr=err)
            process.start()
        server = cls(process, stderr_path)
        try:
            process.wait_ready(ready_timeout)
        except ServeError as exc:
            server.stop()
            raise RuntimeError(f"{exc.message}:\n{server.stderr_text()}") from None
        return server

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> int | None:
        """SIGTERM the process group, SIGKILL it after 5 s; returns the exit status."""
        return self.process.stop()

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

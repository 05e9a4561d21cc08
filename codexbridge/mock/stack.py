"""The offline stack: the mock model, a CODEX_HOME that uses it, a project, a real
app-server — the set-up that the tests, the spikes and bench/
all start.

    with OfflineStack(codex_bin) as stack:
        stack.server.url, stack.workdir, stack.env, stack.mock.model_calls

Everything lives under one directory (a temporary one unless `base` is given) and is
removed with it. The app-server's environment is built from nothing but PATH, HOME,
locale and the mock's variables (`codex_home.isolated_env`): no credential or proxy of
the caller can reach it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..host.appserver import AppServerProcess, launch
from .codex_home import isolated_env, write_codex_home
from .responses import MockResponsesServer, Planner, plan_reply


class OfflineStack:
    def __init__(self, codex_bin: str, base: Path | None = None, *,
                 planner: Planner = plan_reply, extra_args: list[str] | None = None) -> None:
        self.codex_bin = codex_bin
        self._owns_base = base is None
        self.base = Path(base) if base is not None else Path(
            tempfile.mkdtemp(prefix="codexbridge-stack-"))
        self.workdir = self.base / "project"
        self.codex_home = self.base / "codex-home"
        self.user_home = self.base / "home"
        self.mock = MockResponsesServer(planner=planner)
        self.extra_args = list(extra_args or [])
        self.server: AppServerProcess | None = None

    @property
    def env(self) -> dict[str, str]:
        """The whole environment for codex processes (app-server, TUI, `codex …`)."""
        return isolated_env(self.codex_home, user_home=self.user_home)

    @property
    def url(self) -> str:
        assert self.server is not None, "the stack is not started"
        return self.server.url

    def prepare(self) -> OfflineStack:
        """The mock and the directories, without an app-server (for tests that start
        their own, or the user's daemon)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.user_home.mkdir(parents=True, exist_ok=True)
        self.mock.start()
        write_codex_home(self.codex_home, self.mock.url, [self.workdir])
        return self

    def start(self) -> OfflineStack:
        self.prepare()
        self.server = launch(self.codex_bin, self.workdir, self.env,
                             extra_args=self.extra_args,
                             stderr_path=self.base / "app-server.stderr")
        return self

    def restart_server(self) -> AppServerProcess:
        """Stop the app-server and start a new one on the same CODEX_HOME and port."""
        assert self.server is not None
        port = self.server.port
        self.server.stop()
        self.server = launch(self.codex_bin, self.workdir, self.env, port=port,
                             extra_args=self.extra_args,
                             stderr_path=self.base / "app-server.stderr")
        return self.server

    async def human_thread(self, text: str, *, timeout: float = 60.0) -> tuple[str, str]:
        """What the human's first message in the TUI does: a `threadSource:"user"`
        thread with one completed turn. Returns (thread id, Codex's reply)."""
        from ..errors import BridgeError
        from ..protocol.enums import TurnOutcome
        from ..protocol.generated.calls import Calls
        from ..talk.client import AppServerClient
        from ..talk.turn import say

        async with AppServerClient(self.url, client_name="offline-human") as human:
            started = await Calls(human).thread_start(cwd=str(self.workdir),
                                                      thread_source="user")
            thread_id = started.thread.id if started.thread is not None else ""
            result = await say(human, thread_id, text, join_first=False, timeout=timeout)
        if result.status is not TurnOutcome.COMPLETED:
            raise BridgeError(f"the first turn ended {result.status}: {result.error}")
        return thread_id, result.reply

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.mock.stop()
        if self._owns_base:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> OfflineStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

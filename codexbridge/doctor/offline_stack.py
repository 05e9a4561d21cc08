"""`doctor --deep`'s offline stack: the mock model (`mock_model.py`), a CODEX_HOME whose
only model it is, a project, a private real app-server — one real turn end to end.

    with OfflineStack(codex_bin) as stack:
        thread_id, reply = asyncio.run(stack.human_thread("hello"))

Everything lives under one directory (a temporary one unless `base` is given) and is
removed with it. The app-server's environment is built from nothing but PATH, HOME,
locale and the mock's variables (`isolated_env`): no credential or proxy of the caller
can reach it. The tests, spikes and bench/ start the same stack with the scripted mock
(tests/support/mock_codex.py).

The CODEX_HOME is measured in docs/protocol-notes.md, "Offline CODEX_HOME". No login and
no auth.json: the provider's `env_key` names a variable that merely has to be non-empty.
Approvals always reach the clients: `on-request` + a read-only sandbox makes the mock's
escalated commands ask, hooks are off and the reviewer is the user, so nothing in a
user-level config can divert an approval away from a test (docs/protocol-notes.md,
"Answers").
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Self

from ..codex.client import AppServerClient
from ..codex.protocol.enums import TurnOutcome
from ..codex.protocol.generated.calls import Calls
from ..codex.turn import say
from ..errors import BridgeError
from ..host.appserver import AppServerProcess, launch
from .mock_model import MockModel

MOCK_API_KEY_VAR = "MOCK_API_KEY"
MOCK_API_KEY = "dummy-key"
LOOPBACK = "127.0.0.1,localhost"

# Never let a real credential or a proxy reach an offline codex process.
SCRUBBED_VARS = (
    "OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
)


def _toml_str(value: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes, \uXXXX included).
    return json.dumps(value, ensure_ascii=False)


def _project_keys(dirs: Iterable[Path]) -> list[str]:
    keys: list[str] = []
    for d in dirs:
        # Trust both spellings: codex may see the resolved path (/private/var on macOS).
        for spelling in (str(Path(d).absolute()), str(Path(d).resolve())):
            if spelling not in keys:
                keys.append(spelling)
    return keys


def codex_config_toml(base_url: str, trusted_dirs: Iterable[Path], *,
                      model: str = "mock-model") -> str:
    """The text of config.toml for a codex that talks only to the mock at `base_url`."""
    lines = [
        f"model = {_toml_str(model)}",
        'model_provider = "mock"',
        'approval_policy = "on-request"',  # "untrusted" makes 0.169.0 app-server exit 1
        'sandbox_mode = "read-only"',
        'approvals_reviewer = "user"',
        "check_for_update_on_startup = false",
        "",
        "[model_providers.mock]",
        'name = "Mock Responses API"',
        f"base_url = {_toml_str(base_url)}",
        'wire_api = "responses"',
        f'env_key = "{MOCK_API_KEY_VAR}"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "supports_websockets = false",
        "",
        "[features]",
        "plugins = false",  # the plugin sync would reach for github.com / chatgpt.com
        "remote_plugin = false",
        "apps = false",
        "hooks = false",  # a PermissionRequest hook could answer approvals before any client
        "",
    ]
    for key in _project_keys(trusted_dirs):
        lines += [f"[projects.{_toml_str(key)}]", 'trust_level = "trusted"', ""]
    return "\n".join(lines)


def write_codex_home(home: Path, base_url: str, trusted_dirs: list[Path], *,
                     model: str = "mock-model") -> Path:
    """Create `home` (if needed) with a config.toml pointing codex at the mock; returns `home`.

    Under the system temp dir codex warns that it cannot create PATH aliases there; that
    is harmless offline (no apply_patch tool under the mock's model name).
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        codex_config_toml(base_url, trusted_dirs, model=model), encoding="utf-8")
    return home


def mock_env(home: Path) -> dict[str, str]:
    """The variables to add to a codex process's environment to use `home` and the mock."""
    return {
        "CODEX_HOME": str(home),
        MOCK_API_KEY_VAR: MOCK_API_KEY,
        "RUST_LOG": "warn",
        "NO_PROXY": LOOPBACK,
        "no_proxy": LOOPBACK,
    }


def isolated_env(home: Path, *, user_home: Path | None = None,
                 base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A whole, clean environment for codex: PATH, HOME, LANG/TERM from `base` plus `mock_env`.

    Nothing else is inherited, so no credential, proxy or user setting can leak in.
    `user_home` becomes HOME (default: keep the caller's HOME).
    """
    src = os.environ if base is None else base
    env = {k: src[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "TMUX_TMPDIR",
                                  "XDG_RUNTIME_DIR") if k in src}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    if user_home is not None:
        env["HOME"] = str(user_home)
    for var in SCRUBBED_VARS:
        env.pop(var, None)
    env.update(mock_env(home))
    return env


class OfflineStack:
    def __init__(self, codex_bin: str, base: Path | None = None, *,
                 mock: MockModel | None = None) -> None:
        self.codex_bin = codex_bin
        self._owns_base = base is None
        self.base = Path(base) if base is not None else Path(
            tempfile.mkdtemp(prefix="codexbridge-stack-"))
        self.workdir = self.base / "project"
        self.codex_home = self.base / "codex-home"
        self.user_home = self.base / "home"
        self.mock = mock if mock is not None else MockModel()
        self.server: AppServerProcess | None = None

    @property
    def env(self) -> dict[str, str]:
        """The whole environment for codex processes (app-server, TUI, `codex …`)."""
        return isolated_env(self.codex_home, user_home=self.user_home)

    @property
    def url(self) -> str:
        assert self.server is not None, "the stack is not started"
        return self.server.url

    def prepare(self) -> Self:
        """The mock and the directories, without an app-server (for tests that start
        their own, or the user's daemon)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.user_home.mkdir(parents=True, exist_ok=True)
        self.mock.start()
        write_codex_home(self.codex_home, self.mock.url, [self.workdir])
        return self

    def start(self) -> Self:
        self.prepare()
        self.server = launch(self.codex_bin, self.workdir, self.env,
                             stderr_path=self.base / "app-server.stderr")
        return self

    async def human_thread(self, text: str, *, timeout: float = 60.0) -> tuple[str, str]:
        """What the human's first message in the TUI does: a `threadSource:"user"`
        thread with one completed turn. Returns (thread id, Codex's reply)."""
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

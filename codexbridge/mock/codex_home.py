"""An isolated CODEX_HOME whose only model is the loopback mock.

Measured in docs/protocol-notes.md, "Offline CODEX_HOME".

No login and no auth.json: the provider's `env_key` names a variable that merely has to
be non-empty. Approvals always reach the clients: `on-request` + a read-only sandbox makes
the mock's escalated commands ask, hooks are off and the reviewer is the user, so nothing
in a user-level config can divert an approval away from the test
(docs/protocol-notes.md, "Answers").
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

MOCK_API_KEY_VAR = "MOCK_API_KEY"
MOCK_API_KEY = "dummy-key"
LOOPBACK = "127.0.0.1,localhost"

# Never let a real credential or a proxy reach a test or demo codex process.
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
    is harmless for tests and the demo (no apply_patch tool under the mock's model name).
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

"""The app-server child's environment: a named allow-list, nothing else (issue 2, item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codexbridge.host.envbaseline import BASELINE, child_env, extra_names, strip_credentials

PARENT = {
    "PATH": "/usr/bin:/bin", "HOME": "/home/dev", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
    "LC_CTYPE": "C.UTF-8", "TMPDIR": "/tmp", "CODEX_HOME": "/home/dev/.codex",
    "OPENAI_API_KEY": "sk-secret", "CODEX_API_KEY": "secret-2", "ANTHROPIC_API_KEY": "sk-ant",
    "AWS_SECRET_ACCESS_KEY": "aws", "GITHUB_TOKEN": "ghp_x", "MY_SECRET": "hunter2",
    "HTTPS_PROXY": "http://user:pa55@proxy.corp:3128",
    "http_proxy": "http://proxy.corp:3128",
    "ALL_PROXY": "socks5://tok@socks.corp:1080/",
    "NO_PROXY": "127.0.0.1,localhost",
    "PYTHONPATH": "/x", "LD_PRELOAD": "/evil.so",
}


def test_secrets_are_absent() -> None:
    env = child_env(PARENT)
    for secret in ("OPENAI_API_KEY", "CODEX_API_KEY", "ANTHROPIC_API_KEY",
                   "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "MY_SECRET", "LD_PRELOAD",
                   "PYTHONPATH"):
        assert secret not in env
    assert not any(v in ("sk-secret", "hunter2", "pa55") for v in env.values())


def test_baseline_and_locale_pass() -> None:
    env = child_env(PARENT)
    for name in ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "CODEX_HOME"):
        assert env[name] == PARENT[name]
    assert set(env) <= set(BASELINE) | {n for n in env if n.startswith("LC_")} | {
        "HTTPS_PROXY", "http_proxy", "ALL_PROXY", "NO_PROXY"}


def test_proxies_pass_without_credentials() -> None:
    env = child_env(PARENT)
    assert env["HTTPS_PROXY"] == "http://proxy.corp:3128"
    assert env["http_proxy"] == "http://proxy.corp:3128"
    assert env["ALL_PROXY"] == "socks5://socks.corp:1080/"
    assert env["NO_PROXY"] == "127.0.0.1,localhost"


@pytest.mark.parametrize("raw, clean", [
    ("http://user:secret@proxy:3128", "http://proxy:3128"),
    ("https://token@proxy:443/path", "https://proxy:443/path"),
    ("http://proxy:3128", "http://proxy:3128"),
    ("proxy:3128", "proxy:3128"),
    ("http://proxy:3128/a@b", "http://proxy:3128/a@b"),  # an @ in the path is not a user
    ("", ""),
    # curl and reqwest accept a proxy without a scheme, credentials included
    ("user:secret@proxy:3128", "proxy:3128"),
    ("token@proxy", "proxy"),
    # an unencoded @ in the password: everything up to the host goes
    ("http://user:p@ss@proxy:3128", "http://proxy:3128"),
    ("HTTP://U:P@proxy:1/", "HTTP://proxy:1/"),
])
def test_strip_credentials(raw: str, clean: str) -> None:
    assert strip_credentials(raw) == clean


def test_child_env_extras_pass() -> None:
    parent = {**PARENT, "CODEX_BRIDGE_CHILD_ENV": "OPENAI_API_KEY, MY_SECRET  MISSING_VAR"}
    env = child_env(parent)
    assert env["OPENAI_API_KEY"] == "sk-secret" and env["MY_SECRET"] == "hunter2"
    assert "MISSING_VAR" not in env
    assert "CODEX_API_KEY" not in env
    assert extra_names(parent) == ["OPENAI_API_KEY", "MY_SECRET", "MISSING_VAR"]
    assert extra_names({}) == []


def test_empty_parent() -> None:
    assert child_env({}) == {}


def test_auth_hint_names_the_missing_variable() -> None:
    from codexbridge.host.envbaseline import auth_hint

    hint = auth_hint("startup auth prewarm failed: Missing environment variable: `MY_KEY`.")
    assert hint is not None and "CODEX_BRIDGE_CHILD_ENV=MY_KEY" in hint
    generic = auth_hint("ERROR: 401 Unauthorized")
    assert generic is not None and "CODEX_BRIDGE_CHILD_ENV" in generic
    assert auth_hint("Codex could not find bubblewrap on PATH. Install bubblewrap") is None
    assert auth_hint("Unknown model mock-model is used") is None


def test_the_variables_codex_config_names_for_mcp_servers_pass(tmp_path: Path) -> None:
    """docs/fitting-in.md, "Two machines": `setup codex --url` has codex read the Claude
    machine's MCP token from its own environment; serve's baseline must not cut it."""
    from codexbridge.host.envbaseline import mcp_token_needs, mcp_token_vars

    home, project = tmp_path / "codex-home", tmp_path / "project"
    (project / ".codex").mkdir(parents=True)
    home.mkdir()
    (home / "config.toml").write_text(
        '[mcp_servers.codexbridge]\nurl = "http://claude-box:8790/mcp"\n'
        'bearer_token_env_var = "CODEX_BRIDGE_MCP_TOKEN"\n'
        '[mcp_servers.other]\ncommand = "x"\n', encoding="utf-8")
    (project / ".codex" / "config.toml").write_text(
        '[mcp_servers.docs]\nurl = "https://docs.example/mcp"\n'
        '[mcp_servers.docs.env_http_headers]\nX-Api-Key = "DOCS_KEY"\n', encoding="utf-8")
    assert mcp_token_needs(home, project) == [("codexbridge", "CODEX_BRIDGE_MCP_TOKEN"),
                                              ("docs", "DOCS_KEY")]
    names = mcp_token_vars(home, project)
    env = child_env({**PARENT, "CODEX_BRIDGE_MCP_TOKEN": "t" * 20, "DOCS_KEY": "k"},
                    also=names)
    assert env["CODEX_BRIDGE_MCP_TOKEN"] == "t" * 20 and env["DOCS_KEY"] == "k"
    assert "OPENAI_API_KEY" not in env  # the rest of the baseline rule still holds
    (home / "config.toml").write_text("not toml [", encoding="utf-8")
    assert mcp_token_vars(home) == []  # codex reports its own config errors

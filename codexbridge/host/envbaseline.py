"""The environment the app-server child gets: a named allow-list, nothing else.

API keys in the caller's shell must not reach codex (it authenticates through files in
CODEX_HOME); a user who relies on an environment variable names it in
`CODEX_BRIDGE_CHILD_ENV` (comma or space separated). Proxy variables pass with any
credentials in them removed.

One more kind passes by itself: a variable codex's own config tells it to read for an MCP
server (`bearer_token_env_var`, `env_http_headers`) — the user configured codex to take
that token from its environment (`codexbridge setup codex --url` writes one for the
Claude machine's MCP server), and without it codex offers the model none of that
server's tools (docs/fitting-in.md, "Two machines").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

BASELINE = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "TERM",
    "LANG", "LANGUAGE", "CODEX_HOME", "RUST_LOG",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE", "SSL_CERT_DIR",
)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
              "http_proxy", "https_proxy", "all_proxy", "no_proxy")
EXTRA_VAR = "CODEX_BRIDGE_CHILD_ENV"
# The userinfo is everything before the authority's *last* @ (a password may hold a raw
# @); the scheme is optional because curl and reqwest take `user:pw@proxy:3128` too.
_CREDENTIALS = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)?[^/?#]*@")


def strip_credentials(value: str) -> str:
    """`http://user:secret@proxy:3128` → `http://proxy:3128` (also without a scheme)."""
    return _CREDENTIALS.sub(lambda m: m.group("scheme") or "", value)


def extra_names(parent: Mapping[str, str]) -> list[str]:
    raw = parent.get(EXTRA_VAR, "")
    return [n for n in re.split(r"[\s,]+", raw) if n]


def child_env(parent: Mapping[str, str], also: Iterable[str] = ()) -> dict[str, str]:
    """The baseline of `parent`, plus the names in `also` (those codex's config reads:
    `mcp_token_vars`) and in CODEX_BRIDGE_CHILD_ENV."""
    env: dict[str, str] = {}
    for name, value in parent.items():
        if name in BASELINE or name.startswith("LC_"):
            env[name] = value
        elif name in PROXY_VARS:
            env[name] = strip_credentials(value)
    for name in [*also, *extra_names(parent)]:
        if name in parent:
            env[name] = parent[name]
    return env


_MISSING_VAR = re.compile(r"Missing environment variable: `?([A-Za-z_][A-Za-z0-9_]*)`?")
_AUTH_FAILURE = re.compile(
    r"\b(401|unauthori[sz]ed|authentication (failed|error|required)|not logged in|"
    r"invalid api key|missing (the )?api key|auth prewarm failed)\b", re.IGNORECASE)


def auth_hint(text: str) -> str | None:
    """What to tell a person when codex's words mean it could not authenticate.

    codex 0.169.0 says e.g. "Missing environment variable: `OPENAI_API_KEY`." when the
    provider's key variable did not reach it — usually because serve's baseline left it
    out."""
    missing = _MISSING_VAR.search(text)
    if missing:
        name = missing.group(1)
        return (f"codex is missing the environment variable {name}: `codexbridge serve` passes "
                f"only a baseline of variables; restart it with {EXTRA_VAR}={name} (codex "
                "can also authenticate through `codex login`, stored under CODEX_HOME)")
    if _AUTH_FAILURE.search(text):
        return ("codex reported an authentication problem. codex normally authenticates "
                "through files under CODEX_HOME (`codex login`); if yours relies on an "
                f"environment variable such as OPENAI_API_KEY, name it in {EXTRA_VAR} "
                f"(e.g. {EXTRA_VAR}=OPENAI_API_KEY) — serve passes only named variables.")
    return None


def mcp_token_needs(codex_home: Path, project: Path | None = None
                    ) -> list[tuple[str, str]]:
    """(MCP server, variable) for each environment variable codex's config.toml
    (`codex_home`'s, and the project's `.codex/config.toml`) names for an MCP server's
    credentials: `bearer_token_env_var`, and the variables of `env_http_headers`. A file
    that cannot be read or parsed names none (codex itself reports it)."""
    # lazy: only doctor asks this; `talk say` imports this module (codex/outcome), not TOML
    from .tomlfile import load_toml

    needs: list[tuple[str, str]] = []
    files = [codex_home / "config.toml"]
    if project is not None:
        files.append(project / ".codex" / "config.toml")
    for path in files:
        try:
            config = load_toml(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        servers = config.get("mcp_servers")
        for name, table in servers.items() if isinstance(servers, dict) else ():
            if not isinstance(table, dict):
                continue
            wanted = [table.get("bearer_token_env_var")]
            headers = table.get("env_http_headers")
            if isinstance(headers, dict):
                wanted.extend(headers.values())
            needs.extend((str(name), v) for v in wanted
                         if isinstance(v, str) and v and (str(name), v) not in needs)
    return needs


def mcp_token_vars(codex_home: Path, project: Path | None = None) -> list[str]:
    """The variables of `mcp_token_needs`, each once: what an app-server child of serve
    is given besides the baseline."""
    return list(dict.fromkeys(var for _server, var in mcp_token_needs(codex_home, project)))

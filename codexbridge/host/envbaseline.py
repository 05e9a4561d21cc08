"""The environment the app-server child gets: a named allow-list, nothing else.

API keys in the caller's shell must not reach codex (it authenticates through files in
CODEX_HOME); a user who relies on an environment variable names it in
`CODEX_BRIDGE_CHILD_ENV` (comma or space separated). Proxy variables pass with any
credentials in them removed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

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


def child_env(parent: Mapping[str, str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for name, value in parent.items():
        if name in BASELINE or name.startswith("LC_"):
            env[name] = value
        elif name in PROXY_VARS:
            env[name] = strip_credentials(value)
    for name in extra_names(parent):
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

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

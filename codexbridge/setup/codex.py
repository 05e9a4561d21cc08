"""What `codexbridge setup codex` registers in codex's config.toml. Pure.

The role-codex MCP server, as the `[mcp_servers.codexbridge]` table `codex mcp add`
would write, plus what it cannot write (measured on 0.169.0, docs/fitting-in.md, "The
Codex side"): `tool_timeout_sec` (a send must never be cut off half-way) and
`default_tools_approval_mode` (`writes`: the human sees each message Codex leaves for
Claude; `auto`: nobody is asked — codexbridge's tools are annotated non-destructive and
closed-world, so auto runs them). A codex plugin could carry the same server, but it
needs `features.plugins`, whose background sync reaches for github.com and chatgpt.com,
plus a marketplace add and a plugin add; this table works with plugins off.

Two transports:
* stdio (this machine): `command` = the installed codexbridge, `args` = mcp --role codex;
  `env` carries the state paths when they are not the defaults (codex gives an MCP
  server only HOME, LANG, PATH and TERM);
* url (Codex on another machine than Claude): the streamable-HTTP server that
  `codexbridge mcp --role codex --http HOST:PORT` runs on the Claude machine, with the
  bearer token read from an environment variable of the codex process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SERVER = "codexbridge"
TOOL_TIMEOUT = 360
APPROVAL_MODES = ("writes", "auto", "prompt", "approve")
DEFAULT_APPROVAL = "writes"
TOKEN_ENV = "CODEX_BRIDGE_MCP_TOKEN"
PASSED_ENV = ("CODEX_BRIDGE_HOME", "CODEX_BRIDGE_INBOX_DIR")


def stdio_table(command: list[str], approval: str = DEFAULT_APPROVAL,
                timeout: int = TOOL_TIMEOUT) -> dict[str, Any]:
    return {"command": command[0], "args": [*command[1:], "mcp", "--role", "codex"],
            "tool_timeout_sec": timeout, "default_tools_approval_mode": approval}


def url_table(url: str, token_env: str | None = TOKEN_ENV, approval: str = DEFAULT_APPROVAL,
              timeout: int = TOOL_TIMEOUT) -> dict[str, Any]:
    table: dict[str, Any] = {"url": url}
    if token_env:
        # Without it `codex mcp list` probes the server for OAuth (8 GETs, measured).
        table["bearer_token_env_var"] = token_env
    table.update(tool_timeout_sec=timeout, default_tools_approval_mode=approval)
    return table


def server_env(environ: Mapping[str, str], mailbox: str | None = None) -> dict[str, str]:
    """The state paths this shell uses (codex would not pass them on), and the mailbox
    Codex writes to when it names none."""
    env = {k: environ[k] for k in PASSED_ENV if environ.get(k)}
    if mailbox:
        env["CODEX_BRIDGE_MAILBOX"] = mailbox
    return env

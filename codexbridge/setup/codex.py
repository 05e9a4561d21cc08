"""`codexbridge setup codex`: the role-codex MCP table in codex's config.toml (written as
one marked block by `tomledit.py`, recorded in `ledger.py` for `--remove`).

The role-codex MCP server, as the `[mcp_servers.codexbridge]` table `codex mcp add`
would write, plus what it cannot write (measured on 0.169.0, docs/fitting-in.md, "The
Codex side"): `tool_timeout_sec` (a send must never be cut off half-way) and
`default_tools_approval_mode` (`writes`: the human sees each message Codex leaves for
Claude; `auto`: nobody is asked — codexbridge's tools are annotated non-destructive and
closed-world, so auto runs them). A codex plugin could carry the same server, but it
needs `features.plugins`, whose background sync reaches for github.com and chatgpt.com,
plus a marketplace add and a plugin add; this table works with plugins off.

Two transports:
* stdio (this machine): the installed codexbridge with `mcp --role codex`, started
  through /bin/sh's one-line launcher (`host/codex_mcp.py`): once codexbridge is
  uninstalled, Codex's start-up warning says so and names the fix; `env` carries the
  state paths when they are not the defaults (codex gives an MCP server only HOME,
  LANG, PATH and TERM);
* url (Codex on another machine than Claude): the streamable-HTTP server that
  `codexbridge mcp --role codex --http HOST:PORT` runs on the Claude machine, with the
  bearer token read from an environment variable of the codex process.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

from ..errors import UsageError
from ..host.codex_mcp import COMMENT, launch
from ..host.tomlfile import load_toml
from ..jsontypes import JsonRecord
from . import files, ledger, tomledit
from .ledger import Report
from .mailbox import project_mailbox
from .where import Scope, codex_config, command_argv, ledger_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject

SERVER = "codexbridge"
TOOL_TIMEOUT = 360
APPROVAL_MODES = ("writes", "auto", "prompt", "approve")
DEFAULT_APPROVAL = "writes"
TOKEN_ENV = "CODEX_BRIDGE_MCP_TOKEN"
PASSED_ENV = ("CODEX_BRIDGE_HOME", "CODEX_BRIDGE_INBOX_DIR")


def stdio_table(command: list[str], config: str, approval: str = DEFAULT_APPROVAL,
                timeout: int = TOOL_TIMEOUT) -> JsonObject:
    shell, args = launch([*command, "mcp", "--role", "codex"], config)
    return {"command": shell, "args": [*args], "tool_timeout_sec": timeout,
            "default_tools_approval_mode": approval}


def url_table(url: str, token_env: str | None = TOKEN_ENV, approval: str = DEFAULT_APPROVAL,
              timeout: int = TOOL_TIMEOUT) -> JsonObject:
    table: JsonObject = {"url": url}
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


class ServerScope(JsonRecord):
    """What the ledger keeps of one scope's `[mcp_servers.NAME]` block (`setup_codex`
    writes it): the server's name, and whether merging it added the blank line before
    it (taken out with it)."""

    server: str | None = None
    separator: bool = False


def codex_table(url: str | None, token_env: str | None, approval: str, config: str
                ) -> tuple[JsonObject, str]:
    """The server's table, and what it runs (its URL, or its command line) for people."""
    if approval not in APPROVAL_MODES:
        raise UsageError(f"--approval {approval!r}: one of {', '.join(APPROVAL_MODES)}")
    if url:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--url {url!r}: the role-codex server's URL is http(s)://HOST:"
                             "PORT/mcp (what `codexbridge mcp --role codex --http` prints)")
        return url_table(url, token_env, approval), url
    argv = command_argv()
    return stdio_table(argv, config, approval), shlex.join([*argv, "mcp", "--role", "codex"])


def setup_codex(scope: Scope, *, dry_run: bool = False, remove: bool = False,
                name: str = SERVER, url: str | None = None,
                token_env: str | None = TOKEN_ENV,
                approval: str = DEFAULT_APPROVAL, mailbox: str | None = None,
                env: Mapping[str, str] | None = None) -> Report:
    env = os.environ if env is None else env
    if not name or not all(ch.isalnum() or ch in "-_" for ch in name):
        raise UsageError(f"--name {name!r}: use letters, digits, '-' and '_'")
    report = Report(scope, remove, dry_run)
    path = codex_config(scope, env)
    book = ledger.load(ledger_path())
    scope_key = f"{scope.key}:{name}"
    before = files.read_text(path)
    current = before or ""
    tomledit.check(current, load_toml, path)  # malformed: refuse before anything else
    mine = book.scope(path, scope_key)
    if remove:
        if before is not None:
            report.changes.append(_removal(book, path, scope_key, name, before))
        if book.last_in(path, scope_key):
            report.leftovers += files.backups_of(path)
        ledger.commit(report, {path: ("toml", None)}, scope_key)
        return report
    table, runs = codex_table(url, token_env, approval, path)
    if mailbox is None and scope.project and not url:
        mailbox = project_mailbox(scope.project)
    # An MCP server's env only reaches a command codex starts, not a URL.
    block = tomledit.server_block(name, table, {} if url else server_env(env, mailbox),
                                  None if url else COMMENT)
    after, separator = tomledit.merge(current, name, block, load_toml, path)
    if mine is not None:
        separator = ServerScope.read(mine).separator  # as the first run left it
    lines = [f"[mcp_servers.{name}] " + ("updated" if tomledit.find_block(current, name)
                                          else "added")
             + f": {runs}, tool_timeout_sec {TOOL_TIMEOUT}, approval mode {approval}"]
    change = files.FileChange(path, before, after if after != current else before,
                              lines if after != current else [])
    report.changes.append(change)
    if url and token_env:
        report.notes.append(f"codex reads the token from ${token_env} of its own process: "
                            f"export it before `codex app-server daemon start` / `codex`")
    if scope.project:
        report.notes.append(f"codex reads {path} only once it trusts {scope.project}")
    ledger.commit(report, {path: ("toml", {"server": name, "separator": separator})},
                  scope_key)
    return report


def _removal(book: ledger.Ledger, path: str, scope_key: str, name: str, before: str
             ) -> files.FileChange:
    """Our block cut out of `path` — or, when nobody touched the file since setup wrote
    it and no other scope shares it, the bytes it had before setup (None: it made it)."""
    mine = book.scope(path, scope_key)
    separator = ServerScope.read(mine).separator if mine else True
    restore, original = book.restorable(path, scope_key, before)
    after = original if restore else tomledit.cut(before, name, separator)
    lines = [f"removed [mcp_servers.{name}]"] if after != before else []
    # Nothing of ours left in the file: its backups all go, so none is made now.
    return files.FileChange(path, before, after, lines,
                            keep_backup=not book.last_in(path, scope_key))


"""`codexbridge mcp --role claude|codex`: the MCP stdio server for one side.

The SDK is imported only once the role and settings are known to be good, so a
misconfigured registration fails fast with a clear message (exit 2) and `--help` is
instant. A plain stdio start is served by `mcp/startup_cache.py` (`cli/__init__.py` runs
it before click); this command serves what that one leaves to click (a terminal,
CODEX_BRIDGE_MCP_WARM=0, an error to report) and `--http`. Either's stdio session runs
in `mcp/stdio.serve_stdio` (signals, the collector paused while the SDK loads).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from ..errors import UsageError
from ..mcp import http
from ..mcp import settings as mcp_settings
from ..mcp.stdio import quiet_gc, serve_stdio
from .command import command, echo

if TYPE_CHECKING:
    from ..mcp.settings import Settings


@click.command("mcp", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--role", type=str, default=None, metavar="claude|codex",
              help="claude: runs inside Claude Code, talks to Codex. codex: runs inside "
                   "Codex, leaves mail for Claude. [default: $CODEX_BRIDGE_MCP_ROLE]")
@click.option("--http", "http_listen", default=None, metavar="HOST:PORT",
              help="Serve over streamable HTTP at http://HOST:PORT/mcp instead of stdio "
                   "(Codex on another machine; docs/fitting-in.md of codexbridge's source). "
                   "Needs a bearer token of at least 16 characters ($CODEX_BRIDGE_MCP_TOKEN "
                   "or --token-file), at any address.")
@click.option("--token-file", default=None, metavar="FILE",
              help="With --http: read the bearer token from FILE (yours alone: mode 0600).")
@command
def mcp(role: str | None, http_listen: str | None = None,
        token_file: str | None = None) -> None:
    """Run the MCP stdio server for one side (its tools are listed by `tools/list`, and
    described in docs/mcp.md of codexbridge's source).

    \b
    Register it with your agent, for example:
      codexbridge setup claude        # the Claude Code plugin runs --role claude
      codexbridge setup codex         # config.toml runs --role codex
    """
    chosen = mcp_settings.resolve_role(role, os.environ)
    config = mcp_settings.load(chosen)
    if http_listen is not None or token_file is not None:
        _serve_http(config, http_listen, token_file)
        return
    if sys.stdin.isatty():
        echo(f"codexbridge mcp --role {chosen}: speaking MCP on stdin/stdout "
             "(started by Claude Code or Codex, not by hand); Ctrl-C to stop.",
             err=True)
    serve_stdio(config)


def _serve_http(config: Settings, listen_text: str | None, token_file: str | None) -> None:
    """The same server over streamable HTTP (`mcp/http.py`): checked, then served."""
    if listen_text is None:
        raise UsageError("--token-file needs --http HOST:PORT")
    listen = http.parse_listen(listen_text)
    token = http.check_exposure(listen, http.load_token(token_file))
    with quiet_gc():
        # lazy: the SDK's import, with the collector paused; `mcp` on stdio never needs it here
        from ..mcp.server import build_server

        server = build_server(config, tasks=False)  # (an HTTP server outlives its clients)
    sock = http.bind(listen)  # bound before anything is printed: the URL below is live
    url = http.url_of(listen, sock)
    echo(f"codexbridge mcp: serving MCP (streamable HTTP) at {url}", err=True)
    echo("codexbridge mcp: on the Codex machine: `codexbridge setup codex --url "
         f"{url}` and export {http.TOKEN_ENV} (the same token) for codex", err=True)
    sys.stderr.flush()
    http.serve_http(server, sock, listen, token)

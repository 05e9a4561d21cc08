"""`codexbridge mcp --role claude|codex`: the MCP stdio server for one side.

The SDK is imported only once the role and settings are known to be good, so a
misconfigured registration fails fast with a clear message (exit 2) and `--help` is
instant. Claude Code stops its MCP servers with SIGINT and SIGTERM 100 ms later:
both end the process at once, quietly — there is nothing to flush (every tool call
is answered or abandoned by the client that is going away; a turn already started
keeps running in Codex).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

import click

from ..errors import UsageError
from .output import command


def _exit_now(signum: int, _frame: FrameType | None) -> None:
    # os._exit: no atexit, no thread joins, no tracebacks from tasks torn down mid-await.
    os._exit(0 if signum in (signal.SIGINT, signal.SIGTERM) else 128 + signum)


@click.command("mcp", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--role", type=str, default=None, metavar="claude|codex",
              help="claude: runs inside Claude Code, talks to Codex. codex: runs inside "
                   "Codex, leaves mail for Claude. [default: $CODEX_BRIDGE_MCP_ROLE]")
@command
def mcp(role: str | None) -> None:
    """Run the MCP stdio server for one side (see docs/mcp.md for the tools).

    \b
    Register it with your agent, for example:
      claude mcp add --scope project codexbridge -- codexbridge mcp --role claude
      codex mcp add codexbridge -- codexbridge mcp --role codex
    """
    from ..mcp import settings as mcp_settings

    chosen = mcp_settings.resolve_role(role, os.environ)
    config = mcp_settings.load(chosen)
    if sys.stdin.isatty():
        click.echo(f"codexbridge mcp --role {chosen}: speaking MCP on stdin/stdout "
                   "(started by Claude Code or Codex, not by hand); Ctrl-C to stop.",
                   err=True)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit_now)
    try:
        from ..mcp.server import build_server
    except ImportError as exc:  # pragma: no cover - a broken install
        raise UsageError(f"the mcp SDK is not importable ({exc}); reinstall codexbridge") \
            from exc
    build_server(config).run("stdio")

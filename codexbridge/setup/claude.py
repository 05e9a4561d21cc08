"""What `codexbridge setup claude` puts into Claude Code's settings. Pure.

The Claude side is the plugin shipped in this package (`codexbridge/claude_plugin/`):
its hooks, MCP server, skill and commands. Enabling it takes (measured on 2.1.332,
docs/fitting-in.md, "The Claude side"):

* the user's settings: `extraKnownMarketplaces.codexbridge` naming the plugin's
  directory — a marketplace declared only in a project's settings is not loaded (a
  project cannot bring plugins of its own), one in the user's settings is, with no
  `claude plugin install`;
* `enabledPlugins["codexbridge@codexbridge"] = true` in the chosen scope: the user's
  settings (`--user`, every project) or the project's `.claude/settings.json`;
* `env.CODEX_BRIDGE_BIN` in the user's settings: the installed command the plugin runs
  (a path on this machine, so never in a project file that may be shared);
* the read-only tools pre-approved in the chosen scope (`permissions.allow`); sending
  to Codex still asks, unless you allow it yourself.
"""

from __future__ import annotations

from ..host.claude_plugin import MARKETPLACE, PLUGIN, PLUGIN_ID
from .jsonedit import Entry

SERVER = "codex"  # the plugin's MCP server: tools are mcp__plugin_codexbridge_codex__<tool>
TOOL_PREFIX = f"mcp__plugin_{PLUGIN}_{SERVER}__"
READ_ONLY_TOOLS = ("codex_threads_list", "codex_thread_read", "codex_delivery_status",
                   "bridge_status", "bridge_output_read")
BIN_ENV = "CODEX_BRIDGE_BIN"


def user_entries(marketplace_dir: str, codexbridge_bin: str | None) -> list[Entry]:
    """What the user's settings need whatever the scope."""
    entries = [Entry(("extraKnownMarketplaces", MARKETPLACE),
                     {"source": {"source": "directory", "path": marketplace_dir}})]
    if codexbridge_bin:
        entries.append(Entry(("env", BIN_ENV), codexbridge_bin))
    return entries


def scope_entries() -> list[Entry]:
    """What the chosen scope's settings need: the plugin on, its read tools allowed."""
    entries = [Entry(("enabledPlugins", PLUGIN_ID), True)]
    entries += [Entry(("permissions", "allow"), TOOL_PREFIX + tool, in_list=True)
                for tool in READ_ONLY_TOOLS]
    return entries


def plan(user_file: str, scope_file: str, marketplace_dir: str,
         codexbridge_bin: str | None) -> dict[str, list[Entry]]:
    """settings file → the entries it needs (one file when the scope is the user)."""
    files: dict[str, list[Entry]] = {user_file: user_entries(marketplace_dir,
                                                             codexbridge_bin)}
    files.setdefault(scope_file, []).extend(scope_entries())
    return files


# Containers setup may create, for a `--remove` that has no record of what it made.
KNOWN_CONTAINERS: tuple[tuple[str, ...], ...] = (
    ("extraKnownMarketplaces",), ("enabledPlugins",), ("env",), ("permissions", "allow"),
    ("permissions",))

"""Is codexbridge's Claude Code plugin enabled for a project? Read-only.

Claude Code loads it when a marketplace named `codexbridge` is declared in the user's
settings and `enabledPlugins["codexbridge@codexbridge"]` is true in the user's, the
project's or the project's local settings (docs/fitting-in.md, "How Claude Code loads
it"); `--plugin-dir` runs cannot be seen from here. The plugin brings the SessionStart
and Stop hooks and the watcher (codexbridge/claude_plugin/hooks/hooks.json).

Down here, not in setup/, because `doctor`, `setup` and `handoff` all ask it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

from ..host.jsonfile import read_object
from ..jsontypes import JsonRecord, obj, objs, opt_str

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

PLUGIN = "codexbridge"
MARKETPLACE = "codexbridge"
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"


class PluginFacts(TypedDict):
    marketplace_path: str | None  # the marketplace the user's settings declare
    marketplace_ok: bool  # it holds a plugin
    enabled_in: list[str]  # the scopes that enable it: user, project, local
    bin: str | None  # the CODEX_BRIDGE_BIN the user's settings give the plugin's hooks
    files: dict[str, str]  # scope → its settings file


BIN_ENV = "CODEX_BRIDGE_BIN"  # where the plugin's hooks find codexbridge (settings `env`)


class MarketplaceSource(JsonRecord):
    path: str | None = None


class Marketplace(JsonRecord):
    """One of `extraKnownMarketplaces`: where it is."""

    source: MarketplaceSource | None = None


class HookHandler(JsonRecord):
    """One handler of a settings file's `hooks.EVENT[].hooks` (its command only)."""

    command: str | None = None


class HookGroup(JsonRecord):
    """One group of a settings file's `hooks.EVENT`: its handlers."""

    hooks: tuple[HookHandler, ...] = ()


class ClaudeSettings(JsonRecord, wire={"marketplaces": "extraKnownMarketplaces",
                                       "enabled_plugins": "enabledPlugins"}):
    """What codexbridge reads of a Claude Code settings file (name → value maps; `hooks`:
    event → its groups)."""

    marketplaces: JsonObject = {}  # noqa: RUF012 (a record is read-only: never changed)
    enabled_plugins: JsonObject = {}  # noqa: RUF012
    env: JsonObject = {}  # noqa: RUF012
    hooks: JsonObject = {}  # noqa: RUF012

    def commands(self, event: str) -> list[str]:
        """The commands the file runs at `event` (anything of another shape there runs
        nothing)."""
        return [h.command for g in map(HookGroup.read, objs(self.hooks.get(event)))
                for h in g.hooks if h.command is not None]


def claude_config_dir(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")


def claude_user_settings(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(claude_config_dir(env), "settings.json")


def plugin_facts(project: str, env: Mapping[str, str] | None = None) -> PluginFacts:
    """What the user's, the project's and the project's local settings say of the plugin."""
    user_file = claude_user_settings(env)
    files = {"user": user_file,
             "project": os.path.join(project, ".claude", "settings.json"),
             "local": os.path.join(project, ".claude", "settings.local.json")}
    loaded = {scope: read_object(path) or {} for scope, path in files.items()}
    user = ClaudeSettings.read(loaded["user"])
    market = Marketplace.read(obj(user.marketplaces.get(MARKETPLACE)))
    path = market.source.path if market.source is not None else None
    enabled_in = [scope for scope, data in loaded.items()
                  if ClaudeSettings.read(data).enabled_plugins.get(PLUGIN_ID) is True]
    return {"marketplace_path": path,
            "marketplace_ok": bool(path) and os.path.isfile(
                os.path.join(str(path), ".claude-plugin", "plugin.json")),
            "enabled_in": enabled_in,
            "bin": opt_str(user.env.get(BIN_ENV)),
            "files": files}

"""Is codexbridge's Claude Code plugin enabled for a project? Read-only (for `doctor`).

Claude Code loads it when a marketplace named `codexbridge` is declared in the user's
settings and `enabledPlugins["codexbridge@codexbridge"]` is true in the user's, the
project's or the project's local settings (docs/fitting-in.md, "How Claude Code loads
it"); `--plugin-dir` runs cannot be seen from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..host.jsonfile import read_object
from .claude import MARKETPLACE, PLUGIN_ID
from .where import claude_user_settings


def plugin_facts(project: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    user_file = claude_user_settings(env)
    files = {"user": user_file,
             "project": os.path.join(project, ".claude", "settings.json"),
             "local": os.path.join(project, ".claude", "settings.local.json")}
    loaded = {scope: read_object(path) for scope, path in files.items()}
    user = loaded["user"] or {}
    market = (user.get("extraKnownMarketplaces") or {}).get(MARKETPLACE)
    path = None
    if isinstance(market, dict) and isinstance(market.get("source"), dict):
        path = market["source"].get("path")
    enabled_in = [scope for scope, data in loaded.items() if data and isinstance(
        data.get("enabledPlugins"), dict) and data["enabledPlugins"].get(PLUGIN_ID) is True]
    return {"marketplace_path": path,
            "marketplace_ok": bool(path) and os.path.isfile(
                os.path.join(str(path), ".claude-plugin", "plugin.json")),
            "enabled_in": enabled_in, "bin": (user.get("env") or {}).get("CODEX_BRIDGE_BIN"),
            "files": files}

"""Is codexbridge's Claude Code plugin enabled for a project? Read-only (for `doctor`).

The logic lives in `host/claude_plugin.py` (handoff asks it too, and must not reach up
into setup/); this name stays for the callers that import it from here.
"""

from __future__ import annotations

from ..host.claude_plugin import plugin_facts

__all__ = ["plugin_facts"]

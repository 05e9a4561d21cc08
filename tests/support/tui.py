"""The real Codex TUI in tmux; the driver lives in the package (the demo uses it too)."""

from codexbridge.tmux_tui import READY_MARKER, SESSION, CodexTUI, pid_alive

__all__ = ["READY_MARKER", "SESSION", "CodexTUI", "pid_alive"]

"""Fixtures for the real Claude Code binary (filled in by the reverse-channel work)."""

"""Fixtures for the real codex binary (filled in by the codex harness work)."""

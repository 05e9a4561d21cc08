"""Reading TOML (codex's config.toml): tomllib, the strict parser codex agrees with.

codexbridge needs Python 3.11+ for it (pyproject's requires-python, which CI runs); a
file tomllib rejects is one codex refuses too, so it is a ValueError here, never a guess.
"""

from __future__ import annotations

import tomllib


def load_toml(text: str) -> dict[str, object]:
    """The parsed document. Raises ValueError on TOML that tomllib (and codex) rejects."""
    try:
        return tomllib.loads(text)
    except RecursionError:  # tomllib recurses on nested arrays and inline tables
        raise ValueError("nested too deeply to read") from None

"""Reading a JSON object someone else may be writing (or may have damaged)."""

from __future__ import annotations

import json
from typing import Any


def read_object(path: str) -> dict[str, Any] | None:
    """The JSON object in `path`; None when it is missing, unreadable, not JSON, or not
    an object — the callers treat all of those as "not there (yet)"."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None

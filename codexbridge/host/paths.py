"""The state dir as a Path, and the running serve's record in it (bridge.json).

The rules for the state home and for private writes are in `private.py` (shared with
the Stop hook, which cannot afford pathlib); this module adds the Path view the other
commands use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .jsonfile import read_object
from .private import ensure_private_dir, state_home, write_private

if TYPE_CHECKING:
    from ..jsontypes import JsonObject

BRIDGE_FILE = "bridge.json"

__all__ = ["BRIDGE_FILE", "bridge_file", "ensure_private_dir", "read_bridge_file",
           "state_dir", "write_private", "write_private_json"]


def state_dir(create: bool = True) -> Path:
    """`CODEX_BRIDGE_HOME`, else `~/.codex-bridge`; created 0700 when asked."""
    path = Path(state_home())
    if create:
        ensure_private_dir(path)
    return path


def write_private_json(path: Path, data: object) -> None:
    """Atomically replace `path` with `data` as JSON, mode 0600."""
    write_private(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def bridge_file() -> Path:
    return state_dir(create=False) / BRIDGE_FILE


def read_bridge_file() -> JsonObject | None:
    """The running serve's record, or None when there is none (or it is unreadable)."""
    return read_object(str(bridge_file()))

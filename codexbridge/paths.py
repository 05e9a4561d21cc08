"""Where codexbridge keeps its state, and how files there are written.

The state dir holds bridge.json, mailboxes and logs. It is private to the user
(0700, files 0600) because bridge.json names a socket that drives an agent able
to run commands.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

BRIDGE_FILE = "bridge.json"


def state_dir(create: bool = True) -> Path:
    """`CODEX_BRIDGE_HOME`, else `~/.codex-bridge`; created 0700 when asked."""
    raw = os.environ.get("CODEX_BRIDGE_HOME") or os.path.join(os.path.expanduser("~"),
                                                              ".codex-bridge")
    path = Path(raw)
    if create:
        ensure_private_dir(path)
    return path


def ensure_private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkdir's mode is filtered by umask and ignored for existing dirs.
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)


def write_private_json(path: Path, data: Any) -> None:
    """Atomically replace `path` with `data` as JSON, mode 0600."""
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def bridge_file() -> Path:
    return state_dir(create=False) / BRIDGE_FILE


def read_bridge_file() -> dict[str, Any] | None:
    """The running serve's record, or None when there is none (or it is unreadable)."""
    try:
        with open(bridge_file(), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None

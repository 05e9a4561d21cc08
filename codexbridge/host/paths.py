"""The state dir as a Path, and the running serve's record in it (bridge.json:
`BridgeRecord`, its one reader and writer).

The rules for the state home and for private writes are in `private.py` (shared with
the Stop hook, which cannot afford pathlib); this module adds the Path view the other
commands use.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DamagedStateError
from ..jsontypes import read_fields
from .jsonfile import read_keyed
from .private import ensure_private_dir, state_home, write_private

if TYPE_CHECKING:
    from collections.abc import Callable


BRIDGE_FILE = "bridge.json"

BRIDGE_VERSION = 1  # bridge.json's format (files without one are version 1)

__all__ = ["BRIDGE_FILE", "BridgeRecord", "bridge_file", "ensure_private_dir",
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


@dataclass
class BridgeRecord:
    """bridge.json: where the running `codexbridge serve` listens (`url`; `public_url`
    behind its wss:// front), its pid, its app-server child's, and the token file a
    TCP client needs."""

    url: str
    pid: int | None = None
    app_server_pid: int | None = None
    cwd: str | None = None
    codex_version: str | None = None
    codex_home: str | None = None
    started_at: str | None = None
    public_url: str | None = None
    token_file: str | None = None
    app_server_restarts: int | None = None
    version: int = BRIDGE_VERSION

    @classmethod
    def read(cls) -> BridgeRecord | None:
        """The running serve's record; None when there is none. A damaged file (not a
        JSON object, a bad version, no url) raises DamagedStateError naming it."""
        found = read_keyed(str(bridge_file()), "serve's record", "url")
        if found is None:
            return None
        data, version, url = found
        return read_fields(cls, data, url=url, version=version)

    @classmethod
    def current(cls, note: Callable[[str], None] | None = None) -> BridgeRecord | None:
        """`read`, with a damaged file taken as no serve (as before records were typed):
        `note` is told why, naming the file."""
        try:
            return cls.read()
        except DamagedStateError as exc:
            if note is not None:
                note(exc.message)
            return None

    def save(self) -> None:
        data = {k: v for k, v in asdict(self).items() if v is not None}
        write_private_json(bridge_file(), {**data, "version": BRIDGE_VERSION})

"""Where codexbridge's own local sockets live: a short private directory.

A unix socket path must fit in ~104 bytes, and a state home can sit deep in the file
system, so the courier's socket (and the MCP quick start's record) live in
`$XDG_RUNTIME_DIR/codexbridge/` (when that exists) or `$TMPDIR/codexbridge-<uid>/` (`/tmp`
when TMPDIR is unset), made 0700 — and used only while it is a directory of ours alone (not
a symlink, owned by us, nobody else may enter): another user could have made it first.
TMPDIR before `/tmp` because it is what codex passes on to the MCP servers it starts
(XDG_RUNTIME_DIR it does not: measured), and a user who points it elsewhere means it.

Standard library only: the Stop hook and the watcher reach it (through the courier).
"""

from __future__ import annotations

import os

from .private import ensure_private_dir

SOCKET_PATH_MAX = 100  # bytes, under the ~104 a sockaddr_un holds


def runtime_dir() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isdir(base):
        return os.path.join(base, "codexbridge")
    tmp = os.environ.get("TMPDIR")
    root = tmp if tmp and os.path.isabs(tmp) and os.path.isdir(tmp) else "/tmp"
    return os.path.join(root, f"codexbridge-{os.getuid()}")


def private_runtime_dir() -> str | None:
    """`runtime_dir()`, created if missing — None when it is not ours alone (another
    user could have made it first; it is refused, never chmodded)."""
    directory = runtime_dir()
    try:
        ensure_private_dir(directory)
    except OSError:  # an UnsafeStateError too (a StateError is an OSError)
        return None
    return directory


def socket_in_runtime(name: str) -> str | None:
    """`<runtime dir>/<name>` when the directory is safe and the path fits a socket."""
    directory = private_runtime_dir()
    if directory is None:
        return None
    path = os.path.join(directory, name)
    return path if len(path.encode()) < SOCKET_PATH_MAX else None

"""Private state: where it lives, and how its directories and files are made.

The state home holds bridge.json (which names a socket that drives an agent able to run
commands), mailboxes and logs, so it is the user's alone: directories 0700, files 0600,
written by temp file + rename so a reader never sees half a file. Every writer in
codexbridge goes through these two functions.

Standard library `os` only: the Stop hook imports this on every Claude stop.
"""

from __future__ import annotations

import os

HOME_ENV = "CODEX_BRIDGE_HOME"


def state_home() -> str:
    """`$CODEX_BRIDGE_HOME`, else `~/.codex-bridge` (not created here)."""
    return os.environ.get(HOME_ENV) or os.path.join(os.path.expanduser("~"), ".codex-bridge")


def ensure_private_dir(path: str | os.PathLike[str]) -> None:
    """Create `path` (and parents) 0700; tighten it if it already exists loosely."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    # mkdir's mode is filtered by umask and ignored for an existing directory.
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def write_private(path: str | os.PathLike[str], data: bytes) -> None:
    """Atomically replace `path` with `data`, mode 0600 (its directory made private)."""
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    ensure_private_dir(directory)
    tmp = os.path.join(directory, f".{os.path.basename(target)}.{os.getpid()}."
                                  f"{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:  # noqa: SIM105 - no contextlib: this runs on the Stop hook's lean path
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise

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


def unsafe_state_dir(path: str, what: str = HOME_ENV) -> str | None:
    """Why `path` must not be codexbridge's state (or inbox) directory, or None.

    It is made 0700 and filled with our files: pointed (directly or by a symlink) at
    `/`, at the home directory itself, or into codex's or Claude Code's own state, it
    would lock the user out or mix our files into theirs."""
    real = os.path.realpath(path)
    home = os.path.realpath(os.path.expanduser("~"))
    agents = [os.path.join(home, ".codex"), os.path.join(home, ".claude")]
    agents += [os.path.realpath(os.environ[v]) for v in ("CODEX_HOME", "CLAUDE_CONFIG_DIR")
               if os.environ.get(v)]
    if real == os.sep:
        return f"{what} resolves to / ({path})"
    if real == home:
        return f"{what} resolves to your home directory itself ({path})"
    for agent in agents:
        if real == agent or real.startswith(agent + os.sep):
            return (f"{what} ({path}) resolves into {agent}, another agent's own state; "
                    "use a directory of its own, e.g. ~/.codex-bridge")
    return None


def ensure_private_dir(path: str | os.PathLike[str]) -> None:
    """Create `path` (and the parents it needs) 0700; tighten it if it exists loosely.

    Every directory this creates is made 0700, not only the last: `makedirs` gives the
    parents the umask's mode (measured: a fresh CODEX_BRIDGE_HOME came out 0755 when
    only its `inbox/` was asked for)."""
    target = os.path.abspath(os.fspath(path))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        missing = []
        walk = target
        while not os.path.exists(walk):
            missing.append(walk)
            parent = os.path.dirname(walk)
            if parent == walk:
                break
            walk = parent
        os.makedirs(target, mode=0o700, exist_ok=True)
        for made in missing:
            os.chmod(made, 0o700)
        st = os.stat(target)
    # mkdir's mode is filtered by umask and ignored for an existing directory.
    if st.st_mode & 0o077:
        os.chmod(target, 0o700)


def write_private(path: str | os.PathLike[str], data: bytes, *,
                  durable: bool = False) -> None:
    """Atomically replace `path` with `data`, mode 0600 (its directory made private).
    `durable`: see `write_atomic`."""
    target = os.fspath(path)
    ensure_private_dir(os.path.dirname(target) or ".")
    write_atomic(target, data, mode=0o600, durable=durable)


def write_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int,
                 durable: bool = False) -> None:
    """Replace `path` with `data` at once — a temp file beside it, then one rename — with
    exactly `mode`. A reader sees the old file or the new one, never half of either.

    `durable` also fsyncs the file and then its directory: after an OS crash or a power
    cut the new file is there whole. For what a promise of "nothing lost" rests on (mail,
    delivery records and their text, ledgers); the rest skips the two syncs' cost."""
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    tmp = os.path.join(directory, f".{os.path.basename(target)}.{os.getpid()}."
                                  f"{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.fchmod(fd, mode)  # exactly `mode`, whatever the umask
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:  # noqa: SIM105 - no contextlib: this runs on the Stop hook's lean path
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        sync_dir(directory)


def sync_dir(directory: str) -> None:
    """fsync a directory, so a rename or a new file in it survives an OS crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_private_log(path: str | os.PathLike[str]) -> int:
    """An O_APPEND descriptor on log file `path`, created 0600 (and tightened if an older
    codexbridge left it looser: logs hold message text and thread ids). The caller
    closes it; a child process can be given it as its stdout/stderr."""
    target = os.fspath(path)
    ensure_private_dir(os.path.dirname(target) or ".")
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    except OSError:
        pass
    return fd


def check_state_dirs() -> None:
    """Refuse a state home or inbox dir that would lock the user out or mix our files
    into another agent's state (`host/private.unsafe_state_dir`) — before anything is
    written there. `doctor` reports the same as a FAIL row instead."""
    import contextlib
    import os

    from ..errors import UsageError

    problem = unsafe_state_dir(state_home(), HOME_ENV)
    if problem is None and os.environ.get("CODEX_BRIDGE_INBOX_DIR"):
        problem = unsafe_state_dir(os.environ["CODEX_BRIDGE_INBOX_DIR"],
                                   "CODEX_BRIDGE_INBOX_DIR")
    if problem:
        raise UsageError(f"refusing to use it: {problem}", details={"problem": problem})
    home = state_home()
    # repaired on start: the state home is the user's alone (doctor shows the rest)
    with contextlib.suppress(OSError):
        if os.stat(home).st_mode & 0o077:
            os.chmod(home, 0o700)

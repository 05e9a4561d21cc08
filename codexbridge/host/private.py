"""Private state: where it lives, and how its directories and files are made.

The state home holds bridge.json (which names a socket that drives an agent able to run
commands), mailboxes and logs, so it is the user's alone: directories 0700, files 0600,
written by temp file + rename so a reader never sees half a file (a rename replaces a
symlink, it never writes through one). Every writer in codexbridge goes through these
functions. Nothing here changes the mode of what codexbridge did not create: a loose,
foreign or symlinked directory is refused with the exact fix (UnsafeStateError).

Standard library `os` only: the Stop hook imports this on every Claude stop.
"""

from __future__ import annotations

import errno
import os
import stat

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


# Every open of a file in the state home adds these: a symlink there is refused (ELOOP),
# never followed; and no descriptor leaks into the agents we start.
NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def _roots() -> list[str]:
    """The directories codexbridge keeps its state in, each checked as a whole: the
    state home and, when set, a separate inbox dir."""
    roots = [state_home()]
    inbox = os.environ.get("CODEX_BRIDGE_INBOX_DIR")
    if inbox:
        roots.append(inbox)
    return [os.path.abspath(os.path.expanduser(r)) for r in roots]


def _root_of(target: str) -> str | None:
    """The root (`_roots`) that holds `target`, if any."""
    return next((r for r in _roots()
                 if target == r or target.startswith(r.rstrip(os.sep) + os.sep)), None)


def _owner(uid: int) -> str:
    try:
        import pwd  # lazy: the Stop hook's path checks its dirs but names no owner

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def dir_problem(path: str, st: os.stat_result) -> tuple[str, str] | None:
    """(what is wrong, the exact fix) when directory `path` (its `lstat`) is not ours
    alone; None when it is. Pure: nothing is changed, here or by the caller — a mode
    codexbridge did not set is never "repaired", it is refused."""
    if stat.S_ISLNK(st.st_mode):
        return (f"{path} is a symlink, and codexbridge never follows a symlink inside its "
                "state home", f"move it away (mv {path} {path}.moved); codexbridge makes "
                "its own directory there")
    if not stat.S_ISDIR(st.st_mode):
        return (f"{path} is not a directory", f"move it away (mv {path} {path}.moved)")
    if st.st_uid != os.geteuid():
        return (f"{path} belongs to {_owner(st.st_uid)}, not to you ({_owner(os.geteuid())})",
                f"use a state home of your own: unset {HOME_ENV} (default ~/.codex-bridge) "
                "or point it at a directory you own")
    mode = st.st_mode & 0o777
    if mode & 0o077:
        return (f"{path} is mode {mode:04o}: other users may read or change codexbridge's "
                "state there", f"chmod 700 {path}")
    return None


def _refuse(problem: tuple[str, str], path: str) -> None:
    from ..errors import UnsafeStateError  # lazy: the Stop hook imports no typing (~3 ms)

    raise UnsafeStateError(f"refusing {path}: {problem[0]}. Fix: {problem[1]}",
                           details={"path": path, "problem": problem[0], "fix": problem[1]})


def _make(path: str) -> bool:
    """mkdir `path` 0700; False when something is already there (checked by the caller)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return False
    except OSError as exc:
        raise write_failure(exc, path) from None
    # Exactly 0700 (mkdir's mode went through the umask): the one mode change codexbridge
    # makes — on what it created itself.
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)
    try:
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and st.st_mode & 0o777 != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return True


def _ensure_root(root: str, known: bool) -> None:
    """The state home (or inbox dir) itself: made with its missing parents, or checked.
    It may be a symlink the user chose (`~/.codex-bridge -> /data/cb`): its target is
    what must be ours alone."""
    if known:
        problem = unsafe_state_dir(root, HOME_ENV)
        if problem:
            _refuse((problem, f"set {HOME_ENV} to a directory of its own, e.g. "
                              "~/.codex-bridge"), root)
    try:
        # A root we do not know (the runtime dir in /tmp) must not be a symlink at all:
        # another user may have put one there first.
        st = os.stat(root) if known else os.lstat(root)
    except FileNotFoundError:
        missing = []
        walk = root
        while not os.path.lexists(walk):
            missing.append(walk)
            parent = os.path.dirname(walk)
            if parent == walk:
                break
            walk = parent
        for path in reversed(missing):  # (root last)
            # Parents are made 0700 too: makedirs would give them the umask's mode.
            _make(path)
        st = os.stat(root) if known else os.lstat(root)
    found = dir_problem(root, st)
    if found:
        _refuse(found, root)


def ensure_private_dir(path: str | os.PathLike[str]) -> None:
    """Make `path` a directory of ours alone, or refuse it (UnsafeStateError, exit 73).

    Inside the state home every component is checked with `lstat`: a symlink is never
    followed, another owner or a mode open to others is refused with the exact fix —
    never chmodded: codexbridge changes the mode only of what it created itself (and
    makes each missing directory 0700). A path outside the state home (the runtime dir
    of our sockets) is its own root, checked the same way."""
    target = os.path.abspath(os.fspath(path))
    root = _root_of(target)
    _ensure_root(root or target, known=root is not None)
    if root is None or target == root:
        return
    walk = root
    for part in os.path.relpath(target, root).split(os.sep):
        walk = os.path.join(walk, part)
        try:
            st = os.lstat(walk)
        except FileNotFoundError:
            if _make(walk):
                continue
            st = os.lstat(walk)
        problem = dir_problem(walk, st)
        if problem:
            _refuse(problem, walk)


# What the user's environment does to a write, not a bug of ours: each becomes
# StateWriteError (exit 73) naming the path and the fix, instead of a traceback.
_WRITE_FAILURES = {
    errno.EROFS: "it is on a read-only file system",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is spent",
    errno.EFBIG: "the file size limit is reached (ulimit -f)",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}


def write_failure(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """`exc` as StateWriteError when the environment refused the write (read-only, full,
    denied); otherwise `exc` itself. `raise write_failure(exc, path) from None`."""
    why = _WRITE_FAILURES.get(exc.errno or 0)
    if why is None:  # (a StateError has no errno: it passes through as it is)
        return exc
    from ..errors import StateWriteError  # lazy: the Stop hook imports no typing

    target = os.fspath(path)
    home = state_home()
    ours = _root_of(target) is not None
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        fix = f"free space on the disk that holds {os.path.dirname(target) or target}"
    elif exc.errno == errno.EFBIG:
        fix = "raise the file size limit (ulimit -f) of the shell that runs codexbridge"
    elif ours and os.environ.get("CODEX_THREAD_ID"):
        # A command Codex runs is sandboxed: its writes outside the workspace fail.
        fix = ("Codex's sandbox does not let a command write outside the workspace: use the "
               "MCP tool claude_message_send, run the command with escalated permissions, or "
               f"add {home} to writable_roots under [sandbox_workspace_write] in "
               "~/.codex/config.toml")
    elif ours:
        fix = f"make {home} writable, or set {HOME_ENV} to a writable directory of your own"
    else:
        fix = f"make {os.path.dirname(target) or target} writable for you"
    return StateWriteError(f"cannot write {target}: {why}; nothing was stored. Fix: {fix}",
                           details={"path": target, "errno": errno.errorcode.get(
                               exc.errno or 0, str(exc.errno)), "fix": fix})


def open_state(path: str, flags: int) -> int:
    """`os.open` of a file in the state home, created 0600, never through a symlink (one
    there is refused with UnsafeStateError)."""
    try:
        return os.open(path, flags | NOFOLLOW, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            _refuse((f"{path} is a symlink, and codexbridge never follows a symlink inside "
                     "its state home", f"remove it (rm {path})"), path)
        raise write_failure(exc, path) from None


def write_all(fd: int, data: bytes, path: str) -> None:
    """Write all of `data` to `fd` (a file at `path`); a full disk is StateWriteError."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise write_failure(exc, path) from None


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
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
    except OSError as exc:
        raise write_failure(exc, target) from None
    try:
        try:
            os.fchmod(fd, mode)  # exactly `mode`, whatever the umask
            write_all(fd, data, target)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as exc:
        try:  # noqa: SIM105 - no contextlib: this runs on the Stop hook's lean path
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise write_failure(exc, target) from None
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
    """An O_APPEND descriptor on log file `path`, created 0600 (logs hold message text
    and thread ids). The caller closes it; a child process can be given it as its
    stdout/stderr."""
    target = os.fspath(path)
    ensure_private_dir(os.path.dirname(target) or ".")
    return open_state(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def check_state_dirs() -> None:
    """Refuse, before anything is written, a state home or inbox dir that would lock the
    user out, mix our files into another agent's state (`unsafe_state_dir`), or is not
    ours alone (`dir_problem`). Reads only: a home that does not exist yet is made on
    first write; one that exists loosely is refused with its fix, never chmodded."""
    # lazy: the Stop hook's path imports no error tree (typing, ~3 ms)
    from ..errors import UsageError

    for root, what in ((state_home(), HOME_ENV),
                       (os.environ.get("CODEX_BRIDGE_INBOX_DIR"), "CODEX_BRIDGE_INBOX_DIR")):
        if not root:
            continue
        problem = unsafe_state_dir(root, what)
        if problem:
            raise UsageError(f"refusing to use it: {problem}", details={"problem": problem})
        try:
            st = os.stat(root)
        except OSError:  # not there yet (made on first write), or an unreadable parent
            continue  # (the first write says what is wrong)
        found = dir_problem(root, st)
        if found:
            _refuse(found, root)
        # Its rooms too (inbox, deliveries, conversations, logs…): a command refused at
        # its first write there would have written elsewhere already (a hop spent).
        try:
            with os.scandir(root) as entries:
                rooms = [(e.path, e.stat(follow_symlinks=False)) for e in entries
                         if e.is_dir(follow_symlinks=False) or e.is_symlink()]
        except OSError:
            continue
        for path, entry in rooms:
            found = dir_problem(path, entry)
            if found:
                _refuse(found, path)

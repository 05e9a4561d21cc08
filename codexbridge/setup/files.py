"""The file work of `codexbridge setup`: read, back up, write atomically, restore, and
clear away what a last `--remove` leaves.

Every file is read and every change computed before the first write, so a malformed
second file never leaves the first half-done. A file that is replaced is first copied
to `<file>.bak-codexbridge-<time>`; the new text goes through a temp file and a rename,
keeping the old file's mode. Once nothing of codexbridge is left in a file, its backups
go (`backups_of`), and so does the plugin's data directory Claude Code made
(`delete_leftovers`): never through a symlink, only what is ours by name and owner.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import shutil
import stat
import time
from dataclasses import dataclass, field

from ..errors import UsageError
from ..host.jsonfile import nofollow
from ..host.private import write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject


@dataclass
class FileChange:
    path: str
    before: str | None  # None: the file did not exist
    after: str | None  # None: delete the file
    lines: list[str] = field(default_factory=list)  # what changes, for people
    backup: str | None = None
    written: bool = False
    keep_backup: bool = True  # False: the old text is exactly what setup wrote itself

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(old, new, fromfile=f"{self.path} (before)",
                                            tofile=f"{self.path} (after)"))

    def as_json(self) -> JsonObject:
        return {"file": self.path, "changed": self.changed, "changes": [*self.lines],
                "backup": self.backup, "written": self.written, "diff": self.diff(),
                "deleted": self.after is None and self.before is not None}


def read_text(path: str, *, follow: bool = True) -> str | None:
    """The file's text, or None when it does not exist; UsageError when unreadable (with
    `follow` False, a symlink too: it is not read through)."""
    try:
        with open(path, encoding="utf-8", newline="",
                  opener=None if follow else nofollow) as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory, not a settings file") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text ({exc.reason}); fix it first "
                         "(nothing was changed)") from exc
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc


def missing_dirs(path: str) -> list[str]:
    """The directories above `path` that do not exist yet, outermost first."""
    out: list[str] = []
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(parent):  # (the root always is)
        out.append(parent)
        parent = os.path.dirname(parent)
    return out[::-1]


BACKUP_MARK = ".bak-codexbridge-"


def backup(path: str, text: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = f"{path}{BACKUP_MARK}{stamp}"
    n = 1
    while os.path.exists(target):
        n += 1
        target = f"{path}{BACKUP_MARK}{stamp}-{n}"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    return target


def write(path: str, text: str) -> None:
    """Atomically replace (or create) `path`, keeping an existing file's mode (a new
    settings file is 0644, as the agents' own are)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
    write_atomic(path, text.encode("utf-8"), mode=mode, durable=True)


def apply(change: FileChange) -> None:
    """Carry out one change: back up the old text, then write or delete."""
    if not change.changed:
        return
    if change.before is not None and change.keep_backup:
        change.backup = backup(change.path, change.before)
    if change.after is None:
        os.unlink(change.path)
    else:
        write(change.path, change.after)
    change.written = True


def undo(done: list[tuple[FileChange, list[str]]]) -> list[str]:
    """Put back what `apply` wrote, newest first: the old text (or no file), the
    directories made for it, the backup taken. The files that could not be put back."""
    left: list[str] = []
    for change, dirs in reversed(done):
        if not change.written:
            continue
        try:
            if change.before is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(change.path)
                remove_empty_dirs(dirs)
            else:
                write(change.path, change.before)
            if change.backup:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(change.backup)
                change.backup = None
            change.written = False
        except OSError:
            left.append(change.path)
    return left


def remove_empty_dirs(dirs: list[str]) -> None:
    """Take out the directories setup made for a file, innermost first, if empty."""
    for d in reversed(dirs):
        try:
            os.rmdir(d)
        except OSError:
            return


def read_backup(path: str | None) -> str | None:
    """The bytes setup kept of a file, or None: missing, unreadable, or a symlink — what
    a link points to is not what setup saved, and must not be written back."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8", newline="", opener=nofollow) as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def backups_of(path: str) -> list[str]:
    """The backups `backup` made of `path` (`<file>.bak-codexbridge-<time>[-n]` beside
    it, files of this user), oldest first. Not a symlink's target: only names."""
    folder, name = os.path.split(os.path.abspath(path))
    pattern = re.compile(re.escape(name + BACKUP_MARK) + r"\d{8}T\d{6}(-\d+)?")
    try:
        names = sorted(n for n in os.listdir(folder) if pattern.fullmatch(n))
    except OSError:
        return []
    found = []
    for n in names:
        full = os.path.join(folder, n)
        try:
            info = os.lstat(full)
        except OSError:
            continue
        if info.st_uid == os.getuid() and (stat.S_ISREG(info.st_mode)
                                           or stat.S_ISLNK(info.st_mode)):
            found.append(full)
    return found


def delete_leftovers(paths: list[str]) -> list[str]:
    """Delete what setup's last `--remove` leaves behind: a file (a symlink is unlinked,
    never followed) or a directory tree (never entered through a symlink). The paths
    that could not be deleted; a missing one counts as deleted."""
    left: list[str] = []
    for path in paths:
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                # rmtree refuses a symlink at the top and, on Linux, walks by file
                # descriptor, so nothing below is followed either.
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError:
            left.append(path)
    return left

"""The mailbox store: push, peek, take-by-rename, recovery, de-dup, rejected lines.

Exactly-once delivery, as far as a file system can give it:

1. **Push** appends one whole line to `NAME.jsonl` while holding `NAME.lock`, and opens
   the file only under that lock — so a push can never land in a file that a taker has
   already renamed away.
2. **Take** (under the same lock) opens `NAME.jsonl`, flocks that file, and renames it to
   `NAME.jsonl.taken-PID-NONCE`. The flock travels with the file and dies with the
   process, so "is its owner alive?" is answered by trying the lock, not by trusting a
   pid that may have been reused. The pid in the name is for people reading the dir.
3. The caller **delivers** the batch (prints it), then calls `Batch.commit()`, which
   records the delivered ids in `NAME.delivered`, appends unreadable lines to
   `NAME.rejected.jsonl`, and only then unlinks the taken file.
4. A later take **recovers** every taken file whose lock it can get (its owner died or
   gave up) before taking new mail. Ids already in `NAME.delivered` are skipped, so a
   taker that died after delivering but before unlinking causes no duplicate.

The one window left is a crash after the batch was printed but before its ids were
recorded: that batch is delivered again (at least once, never lost).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress

from ..host.clock import iso_utc
from ..host.locking import FileLock, lock
from ..host.private import ensure_private_dir, open_state, write_all, write_failure, write_private
from .lines import Mail, Rejected, encode_line, parse_file
from .location import (
    TAKEN_MARK,
    delivered_path,
    lock_path,
    mail_path,
    rejected_path,
    taken_files,
)

# How many delivered ids are remembered for de-duplication. A recovered batch is
# always recent, so a few thousand ids cover it with a wide margin.
DELIVERED_KEEP = 8192
# Where a crash would matter most (after_take, before_delete; live.py: after_send), the
# store calls `reached(point)`: nothing in a user's process. The tests replace it in the
# processes they start (tests/support/child_site) to SIGKILL them right there.
def _passing(_point: str) -> None:
    return None


reached: Callable[[str], None] = _passing


def _append(path: str, data: bytes) -> None:
    """Append whole lines to a line file (mail, rejected lines, delivered ids), synced: a
    push that returned is on disk (an OS crash keeps it).

    Never glued to a torn line: when the file does not end in a newline — a writer killed
    mid-line, or a disk that filled before the line was whole — the fragment is closed
    first, so it stays a line of its own (set aside, bytes and all, at the next take) and
    `data` is read as written. And never left torn by this write: one that fails (a full
    disk, a signal) is undone, the file cut back to where it was."""
    fd = open_state(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    try:
        start = os.fstat(fd).st_size
        if start and os.pread(fd, 1, start - 1) != b"\n":
            data = b"\n" + data
        try:
            write_all(fd, data, path)
            try:
                os.fsync(fd)
            except OSError as exc:
                raise write_failure(exc, path) from None
        except BaseException:
            with suppress(OSError):  # (if even this fails, the next append closes the line)
                os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)


def _read_fd(fd: int, start: int = 0) -> bytes:
    chunks: list[bytes] = []
    offset = start
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def push(inbox: str, mail: Mail) -> None:
    """Append `mail` to its mailbox (`mail.to`) under the mailbox lock."""
    if not mail.to:
        raise ValueError("mail.to names the mailbox and must be set")
    ensure_private_dir(inbox)
    line = encode_line(mail)
    with FileLock(lock_path(inbox, mail.to)):
        _append(mail_path(inbox, mail.to), line)


class _Taken:
    __slots__ = ("fd", "path", "recovered", "size")

    def __init__(self, fd: int, path: str, size: int = 0, recovered: bool = False) -> None:
        self.fd, self.path, self.size, self.recovered = fd, path, size, recovered


class Batch:
    """Mail taken out of a mailbox, held until `commit()` (or released for recovery).

    A plain class, not a dataclass: see lines.py on what `dataclasses` costs here."""

    def __init__(self, inbox: str, name: str) -> None:
        self.inbox = inbox
        self.name = name
        self.mails: list[Mail] = []
        self.rejected: list[Rejected] = []
        self.duplicates = 0
        self.recovered_files = 0
        # Mail taken but over this delivery's size budget: kept pending at commit, ahead
        # of anything pushed since.
        self.left: list[Mail] = []
        self._files: list[_Taken] = []
        self.committed = False

    @property
    def empty(self) -> bool:
        return not self.mails and not self.rejected

    def commit(self, *, delivered: bool = True) -> None:
        """The batch was delivered: remember its ids, keep its bad lines, delete it.

        `delivered=False` hands it over instead (live delivery wrote the mail into its
        own record first, and confirms or puts back the ids later)."""
        if self.committed:
            return
        ids = [m.mail_id for m in self.mails if m.mail_id] if delivered else []
        with FileLock(lock_path(self.inbox, self.name)):
            if ids:
                # (a full disk) The batch was handed over; removing its files below is
                # what keeps it from being delivered again — the ids are only a second
                # guard, for batches recovered from a crash.
                with suppress(OSError):
                    _remember_delivered(self.inbox, self.name, ids)
            if self.rejected:
                now = iso_utc()
                _append(rejected_path(self.inbox, self.name),
                        b"".join((json.dumps(r.to_record(now), ensure_ascii=False) + "\n")
                                 .encode("utf-8") for r in self.rejected))
            for taken in self._files:
                # Someone appended without our lock (a foreign writer) after we read:
                # put those bytes back in the mailbox instead of deleting them.
                late = _read_fd(taken.fd, taken.size)
                if late:
                    _append(mail_path(self.inbox, self.name), late)
            if self.left:
                self._keep_left()
        reached("before_delete")
        for taken in self._files:
            with suppress(FileNotFoundError):
                os.unlink(taken.path)
        self.committed = True
        self.release()

    def _keep_left(self) -> None:
        """The mail over budget goes back as a batch of its own, which the next take
        recovers before it takes NAME.jsonl: no newer mail overtakes it. Written whole
        before the taken files go; killed in between, the next take finds both and
        delivers each id once."""
        path = os.path.join(self.inbox,
                            f"{self.name}{TAKEN_MARK}{os.getpid()}-{time.time_ns()}")
        write_private(path, b"".join(encode_line(m) for m in self.left), durable=True)
        oldest = min(os.fstat(t.fd).st_mtime_ns for t in self._files)
        with suppress(OSError):  # (only the order among recovered batches rests on it)
            os.utime(path, ns=(oldest, oldest))

    def release(self) -> None:
        """Close the taken files. Uncommitted ones stay on disk for the next take."""
        files, self._files = self._files, []
        for taken in files:
            os.close(taken.fd)


def _remember_delivered(inbox: str, name: str, ids: list[str]) -> None:
    """Append ids to NAME.delivered (caller holds the mailbox lock); keep it bounded."""
    path = delivered_path(inbox, name)
    _append(path, "".join(i.replace("\n", " ") + "\n" for i in ids).encode("utf-8"))
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        return
    if size <= DELIVERED_KEEP * 2 * 40:
        return
    with open(path, "rb") as fh:
        keep = fh.read().splitlines()[-DELIVERED_KEEP:]
    write_private(path, b"\n".join(keep) + b"\n", durable=True)


def confirm(inbox: str, name: str, ids: list[str]) -> None:
    """Mail delivered by another path (live): remember its ids, so no take repeats it."""
    with FileLock(lock_path(inbox, name)):
        _remember_delivered(inbox, name, ids)


def put_back(inbox: str, name: str, mails: list[Mail]) -> None:
    """Mail that did not reach the session after all goes back into its mailbox (ids
    already delivered are skipped at the next take, so this never duplicates)."""
    if mails:
        with FileLock(lock_path(inbox, name)):
            _append(mail_path(inbox, name), b"".join(encode_line(m) for m in mails))


def delivered_ids(inbox: str, name: str) -> set[str]:
    """Ids delivered recently (the bounded de-dup record)."""
    try:
        with open(delivered_path(inbox, name), "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return set()
    return {line.decode("utf-8", "replace") for line in data.splitlines() if line}


def _claim_orphan(path: str) -> _Taken | None:
    """Lock a taken file whose owner is gone; None if it is alive or already deleted."""
    try:
        fd = open_state(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if not lock(fd, blocking=False):
            os.close(fd)
            return None
        # The owner may have committed (unlinked) between our open and our lock.
        st = os.stat(path)
        mine = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
            os.close(fd)
            return None
    except FileNotFoundError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return _Taken(fd, path, recovered=True)


def _take_current(inbox: str, name: str, timeout: float | None = None) -> _Taken | None:
    """Rename NAME.jsonl to a private taken name, holding its flock throughout."""
    src = mail_path(inbox, name)
    with FileLock(lock_path(inbox, name), timeout):
        try:
            fd = open_state(src, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            lock(fd)
            if os.fstat(fd).st_size == 0:
                os.unlink(src)
                os.close(fd)
                return None
            dest = os.path.join(inbox, f"{name}{TAKEN_MARK}{os.getpid()}-{time.time_ns()}")
            os.rename(src, dest)
        except BaseException:
            os.close(fd)
            raise
    return _Taken(fd, dest)


def _take_batch(inbox: str, name: str, lock_timeout: float | None = None,
                budget: int | None = None) -> Batch:
    ensure_private_dir(inbox)
    batch = Batch(inbox, name)
    try:
        for path in taken_files(inbox, name):
            orphan = _claim_orphan(path)
            if orphan is not None:
                batch._files.append(orphan)
                batch.recovered_files += 1
        current = _take_current(inbox, name, lock_timeout)
        if current is not None:
            batch._files.append(current)
        if not batch._files:
            return batch
        reached("after_take")
        seen = delivered_ids(inbox, name)
        for taken in batch._files:
            data = _read_fd(taken.fd)
            taken.size = len(data)
            mails, rejected = parse_file(data, source=os.path.basename(taken.path))
            batch.rejected.extend(rejected)
            for mail in mails:
                if mail.mail_id is not None:
                    if mail.mail_id in seen:
                        batch.duplicates += 1
                        continue
                    seen.add(mail.mail_id)
                batch.mails.append(mail)
        if budget is not None:
            _within(batch, budget)
    except BaseException:
        batch.release()
        raise
    return batch


def _within(batch: Batch, budget: int) -> None:
    """Keep the oldest mail whose lines add up to `budget` bytes (always at least one
    mail); the rest is `batch.left`, kept pending by the commit."""
    used = 0
    for i, mail in enumerate(batch.mails):
        used += len(encode_line(mail))
        if i and used > budget:
            batch.mails, batch.left = batch.mails[:i], batch.mails[i:]
            return


@contextmanager
def take(inbox: str, name: str, lock_timeout: float | None = None,
         budget: int | None = None) -> Iterator[Batch]:
    """`with take(inbox, name) as batch: deliver(batch); batch.commit()`.

    Leaving the block without `commit()` releases the batch: its files stay and the next
    take delivers them. `lock_timeout`: LockTimeout rather than waiting longer for the
    mailbox lock. `budget`: at most this many bytes of mail lines (but at least one mail)
    in the batch; the rest stays pending.
    """
    batch = _take_batch(inbox, name, lock_timeout, budget)
    try:
        yield batch
    finally:
        batch.release()


def take_for_claude(inbox: str, name: str,
                    lock_timeout: float | None = None) -> AbstractContextManager[Batch]:
    """`take`, for a delivery into Claude (the Stop hook's block, the watcher's wake, a
    live frame): what one delivery hands the model is bounded by
    `$CODEX_BRIDGE_BATCH_MAX` (host/limits.py); mail over it waits for the next."""
    from ..host.limits import batch_max

    return take(inbox, name, lock_timeout, budget=batch_max(os.environ))


def drain(inbox: str, name: str, deliver: Callable[[Batch], None]) -> Batch:
    """Take, call `deliver(batch)`, commit. An exception in `deliver` keeps the mail."""
    with take(inbox, name) as batch:
        if batch._files:
            deliver(batch)
            batch.commit()
        return batch

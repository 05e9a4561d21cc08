"""Killing a codexbridge subprocess at each step of its durable writes, or failing those
steps as a full or read-only disk would — installed in the child by
`child_site/sitecustomize.py` when CODEX_BRIDGE_TEST_CRASH is set.

    CODEX_BRIDGE_TEST_CRASH=trace:FILE   one line per step into FILE (how many there are)
    CODEX_BRIDGE_TEST_CRASH=kill:N       SIGKILL at the N-th step: a write is cut in half
                                         first (a torn write), any other step (open,
                                         rename, unlink, fsync, …) does not happen; N one
                                         past the last step kills it on its way out
    CODEX_BRIDGE_TEST_CRASH=full:N       the disk is full from the N-th step on: that
                                         write lands half and fails with ENOSPC, so does
                                         every later write, fsync, mkdir or new file
    CODEX_BRIDGE_TEST_CRASH=readonly     every step fails with EROFS
    CODEX_BRIDGE_TEST_CRASH_UNDER=DIR    only steps on files under DIR count (the state
                                         home, or just the inbox)

A step is a call that changes a file under DIR: `os.open` for writing, `os.write`,
`os.pwrite`, `os.ftruncate`, `os.fsync`, `os.fchmod`, `os.rename`, `os.replace`,
`os.unlink`, `os.mkdir`, `os.utime` — every write codexbridge makes goes through these
(host/private.py) — plus the store's named crash points (`store.reached`). Python's own
`open()` is not watched: codexbridge writes no state through it.

Why this is honest for a full disk: the kernel does the same two things at ENOSPC — a
write that fits only partly returns short, the next one fails — and a later fsync can
fail too; simulating it per call lets a test fill "the disk" exactly where the mailbox
is written, without filling or mounting anything on the machine (a small tmpfs would).
"""

from __future__ import annotations

import atexit
import errno
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

CRASH_ENV = "CODEX_BRIDGE_TEST_CRASH"
UNDER_ENV = "CODEX_BRIDGE_TEST_CRASH_UNDER"

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class _Plan:
    def __init__(self, spec: str, under: str) -> None:
        self.mode, _, arg = spec.partition(":")
        self.trace = arg if self.mode == "trace" else None
        self.at = int(arg) if self.mode in ("kill", "full") else 0
        self.under = os.path.realpath(under).rstrip(os.sep) + os.sep
        self.count = 0
        self.full = self.mode == "readonly"


def install_in_child() -> None:
    spec = os.environ.get(CRASH_ENV, "")
    under = os.environ.get(UNDER_ENV, "")
    if not spec or not under:
        return
    plan = _Plan(spec, under)
    real: dict[str, Callable[..., Any]] = {name: getattr(os, name) for name in (
        "open", "write", "pwrite", "ftruncate", "fsync", "fchmod", "rename", "replace",
        "unlink", "remove", "mkdir", "utime", "readlink", "kill")}

    def ours(path: object) -> bool:
        if isinstance(path, int):
            try:
                path = real["readlink"](f"/proc/self/fd/{path}")
            except OSError:
                return False
        try:
            full = os.path.abspath(os.fsdecode(path))  # type: ignore[arg-type]
        except TypeError:
            return False
        return (full + os.sep).startswith(plan.under)

    def die() -> None:
        real["kill"](os.getpid(), signal.SIGKILL)

    def fail(code: int) -> OSError:
        return OSError(code, os.strerror(code))

    def step(what: str, target: object) -> bool:
        """Count one step; True when this step is the one that must go wrong."""
        plan.count += 1
        if plan.trace is not None:
            fd = real["open"](plan.trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                real["write"](fd, f"{plan.count} {what} {target}\n".encode())
            finally:
                os.close(fd)
            return False
        if plan.mode == "full" and plan.count >= plan.at:
            plan.full = True
        return plan.count == plan.at or plan.full

    def writing(name: str) -> Callable[..., Any]:
        def write(fd: int, data: Any, *rest: Any) -> int:
            if not ours(fd) or not step(name, fd):
                return int(real[name](fd, data, *rest))
            view = memoryview(data)
            if plan.mode == "readonly":
                raise fail(errno.EROFS)
            if len(view) > 1 and plan.count == plan.at:
                real[name](fd, view[: len(view) // 2], *rest)  # a torn write
            if plan.mode == "kill":
                die()
            raise fail(errno.ENOSPC)
        return write

    def opening(path: Any, flags: int, *rest: Any) -> int:
        if flags & _WRITE_FLAGS and ours(path) and step("open", path):
            if plan.mode == "kill":
                die()
            if plan.mode == "readonly":
                raise fail(errno.EROFS)
            if flags & os.O_CREAT and not os.path.lexists(path):
                raise fail(errno.ENOSPC)  # no room for a new file
        return int(real["open"](path, flags, *rest))

    def other(name: str, *, needs_space: bool) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            paths = [a for a in args[:2] if isinstance(a, (str, bytes, os.PathLike, int))]
            if name in ("fchmod", "ftruncate", "fsync", "utime", "unlink", "remove",
                        "mkdir"):
                paths = paths[:1]
            if any(ours(p) for p in paths) and step(name, paths[0]):
                if plan.mode == "kill":
                    die()
                if plan.mode == "readonly":
                    raise fail(errno.EROFS)
                if needs_space:
                    raise fail(errno.ENOSPC)
            return real[name](*args, **kwargs)
        return call

    os.open = opening  # type: ignore[assignment]
    os.write = writing("write")  # type: ignore[assignment]
    os.pwrite = writing("pwrite")  # type: ignore[assignment]
    for name, space in (("ftruncate", False), ("fsync", True), ("fchmod", False),
                        ("rename", False), ("replace", False), ("unlink", False),
                        ("remove", False), ("mkdir", True), ("utime", False)):
        setattr(os, name, other(name, needs_space=space))

    from codexbridge.inbox import store

    def reached(point: str) -> None:
        if step(f"point {point}", "") and plan.mode == "kill":
            die()

    store.reached = reached

    if plan.mode == "kill":
        def on_exit() -> None:
            if step("exit", ""):
                sys.stdout.flush()
                sys.stderr.flush()
                die()  # killed on its way out: its exit status never reaches anyone
        atexit.register(on_exit)

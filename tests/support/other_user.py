"""Another local user on this machine: the attacker of tests/security/.

A second uid is all an attack on a shared machine needs, so the tests do not add a user
to /etc/passwd (that would change the machine outside the test's temp dirs): a child
process is started as root with `user=`/`group=` set to a uid nobody on this machine
has. It runs the system's own Python with the standard library only, from `-c` source:
the checkout and its .venv may sit under a 0700 directory (/root) the other user cannot
enter, which is what the attacker would face too.

Root is needed to switch uid: CI runs as root, so there a missing root fails the test;
elsewhere it skips.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

# Python the other user can run: the system's, not the checkout's (it may live in a
# 0700 home).
PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3")


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _free_uid(start: int = 54321) -> int:
    uid = start
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


class OtherUser:
    """A uid that is not ours, running stdlib Python source as that user."""

    def __init__(self) -> None:
        self.uid = _free_uid()
        self.gid = self.uid
        self.python = self._find_python()

    def _find_python(self) -> str:
        for candidate in PYTHONS:
            if not os.path.exists(candidate):
                continue
            done = self._run([candidate, "-c", "pass"], timeout=60)
            if done.returncode == 0:
                return candidate
        raise RuntimeError(f"no Python the other user may run among {PYTHONS}")

    def _run(self, argv: list[str], *, env: Mapping[str, str] | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, user=self.uid, group=self.gid, extra_groups=[],
                              env=dict(env or {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}),
                              cwd="/", capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)

    def run_python(self, source: str, *args: str, env: Mapping[str, str] | None = None,
                   timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run `source` as the other user (`sys.argv[1:]` = args)."""
        return self._run([self.python, "-c", source, *args], env=env, timeout=timeout)


def other_user() -> OtherUser:
    """The other user, or skip (fail in CI) when this process cannot switch uid."""
    if os.geteuid() != 0:
        msg = "switching to another uid needs root (CI runs as root)"
        if _in_ci():
            pytest.fail(f"CI=true and {msg}", pytrace=False)
        pytest.skip(msg)
    return OtherUser()


@contextmanager
def reachable_dir(prefix: str = "cbsec-") -> Iterator[Path]:
    """A temp dir of ours under /tmp that the other user may enter (0711) but not list
    or write — so what protects our files inside it is their own modes, not a 0700
    parent of pytest's. Removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        os.chmod(path, 0o711)  # ours: made just above
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)

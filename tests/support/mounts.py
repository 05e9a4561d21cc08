"""A read-only or a full disk for one command, and for nothing else on the machine.

The command runs in a mount namespace of its own (`unshare --mount`, private
propagation: util-linux's default): a read-only bind of a directory over itself, or a
tiny tmpfs that fills up, exists only for that process and is gone when it exits — the
machine's mounts are never changed. Root is needed for both (CI runs as root).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from .cli import CliResult


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_namespaces() -> None:
    if os.geteuid() == 0 and shutil.which("unshare"):
        return
    msg = "a private mount namespace needs root and util-linux's unshare"
    if _in_ci():
        pytest.fail(f"CI=true and {msg}", pytrace=False)
    pytest.skip(msg)


def run_cli_mounted(args: Sequence[str], *, read_only: Sequence[Path] = (),
                    full: Sequence[Path] = (), env: Mapping[str, str] | None = None,
                    timeout: float = 90.0) -> CliResult:
    """`codexbridge ARGS` with each of `read_only` bound read-only over itself and each
    of `full` a 64 KiB tmpfs (mode 0700) already filled to the last byte."""
    require_namespaces()
    steps = [f"mount --bind -o ro {shlex.quote(str(p))} {shlex.quote(str(p))}"
             for p in read_only]
    for p in full:
        q = shlex.quote(str(p))
        steps += [f"mount -t tmpfs -o size=64k,mode=0700 tmpfs {q}",
                  f"(dd if=/dev/zero of={q}/.fill bs=4k 2>/dev/null || true)"]
    script = " && ".join([*steps, 'exec "$@"'])
    argv = ["unshare", "--mount", "sh", "-c", script, "sh",
            sys.executable, "-m", "codexbridge", *args]
    full_env = dict(os.environ)
    full_env.pop("CI_FORCE_COLOR", None)
    full_env.update(env or {})
    done = subprocess.run(argv, env=full_env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    return CliResult(done.returncode, done.stdout, done.stderr)

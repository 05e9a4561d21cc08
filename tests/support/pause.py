"""Stopping a codexbridge subprocess at one of the mailbox store's crash points, to
SIGKILL it there. The shipped store only calls `store.reached(point)` (a no-op); this
replaces it in the child (through `child_site/sitecustomize.py`)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

PAUSE_ENV = "CODEX_BRIDGE_TEST_PAUSE"
SITE_DIR = Path(__file__).resolve().parent / "child_site"
REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def child_pythonpath(env: Mapping[str, str]) -> str:
    """PYTHONPATH for a child: the child site and the repository first, then the rest."""
    path = [str(SITE_DIR), str(REPO_ROOT)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    return os.pathsep.join(path)


def pause_env(point: str, seconds: float, base: Mapping[str, str] | None = None,
              ) -> dict[str, str]:
    """An environment whose codexbridge processes stop at `point` for `seconds`,
    announcing `codexbridge-test-pause: POINT pid=N` on stderr first."""
    env = dict(os.environ if base is None else base)
    env[PAUSE_ENV] = f"{point}={seconds:g}"
    env["PYTHONPATH"] = child_pythonpath(env)
    return env


def install_in_child() -> None:
    from codexbridge.inbox import store

    point, _, seconds = os.environ.get(PAUSE_ENV, "").partition("=")

    def reached(where: str) -> None:
        if where == point:
            os.write(2, f"codexbridge-test-pause: {where} pid={os.getpid()}\n".encode())
            time.sleep(float(seconds))

    store.reached = reached

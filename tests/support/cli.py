"""Running the real `codexbridge` CLI as a separate process, as a user would."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CI_FORCE_COLOR", None)
    if extra:
        env.update(extra)
    return env


def run_cli(*args: str, env: Mapping[str, str] | None = None, input: str | None = None,
            timeout: float = 90.0) -> CliResult:
    proc = subprocess.run([sys.executable, "-m", "codexbridge", *args], env=_env(env),
                          input=input, capture_output=True, text=True, timeout=timeout,
                          check=False)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


async def arun_cli(*args: str, env: Mapping[str, str] | None = None,
                   timeout: float = 90.0) -> CliResult:
    """The same, without blocking the event loop (a peer client can act meanwhile)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "codexbridge", *args, env=_env(env),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return CliResult(proc.returncode, out.decode(), err.decode())

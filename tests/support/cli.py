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
    return await (await astart_cli(*args, env=env)).result(timeout)


class Started:
    """A `codexbridge` command running in its own process, its stderr read as it comes:
    what it said there is the signal that it got somewhere."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.err = b""

    async def said(self, needle: str, timeout: float = 30.0) -> str:
        """The next line on stderr that holds `needle`."""
        assert self.proc.stderr is not None

        async def look() -> str:
            assert self.proc.stderr is not None
            while line := await self.proc.stderr.readline():
                self.err += line
                if needle in line.decode():
                    return line.decode()
            raise AssertionError(f"the command ended without saying {needle!r}: "
                                 f"{self.err.decode()}")

        return await asyncio.wait_for(look(), timeout)

    async def result(self, timeout: float = 90.0) -> CliResult:
        try:
            out, err = await asyncio.wait_for(self.proc.communicate(), timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            raise
        assert self.proc.returncode is not None
        return CliResult(self.proc.returncode, out.decode(), (self.err + err).decode())


async def astart_cli(*args: str, env: Mapping[str, str] | None = None) -> Started:
    return Started(await asyncio.create_subprocess_exec(
        sys.executable, "-m", "codexbridge", *args, env=_env(env),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE))

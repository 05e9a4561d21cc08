"""The programs the bridge runs: codex and Claude Code — and whether Codex's own shell
finds `codexbridge`. Facts (found where, which version, which `--listen` schemes), how
they are gathered (each program is run with a short timeout), and their rows.

    codex, codex-version, listen-schemes   the codex binary against the supported range
                                           (newer is OK, older WARN), `--listen ws:// unix://`
    claude, claude-version                 Claude Code, the same way (optional: INFO)
    codex-shell                            does a login shell, as Codex runs its commands,
                                           find `codexbridge`; else is Codex told the path
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import BridgeError
from ..host.binaries import (
    CLAUDE_OLDEST,
    CLAUDE_VERSION,
    CODEX_OLDEST,
    CODEX_VERSION,
    VersionFit,
    find_claude,
    find_codex,
    in_checkout,
    install_hint,
    parse_version,
    pinned_claude,
    pinned_codex,
    supported_range,
    tools_dir,
    version_fit,
)
from . import parse
from .parse import ListenSchemes
from .report import FAIL, INFO, OK, WARN, Check

TIMEOUT = 3.0


def run(argv: list[str], timeout: float) -> tuple[str, str | None]:
    """(stdout+stderr, None) or (whatever was printed, why it failed).

    In its own process group, so a timeout also ends what a wrapper script started (an
    npm `codex` is node starting the native binary) instead of waiting on its pipe.
    """
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        return "", exc.strerror or str(exc)
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "", f"no answer within {timeout:g} s"
    text = raw.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        tail = text.strip().splitlines()[-1:] or [""]
        return text, f"exit status {proc.returncode} {tail[0]}".strip()
    return text, None


@dataclass(frozen=True, slots=True)
class BinaryFacts:
    """codex or Claude Code: `path` None when not found (`error` says why); `source` is
    the lookup step that found it; `listen` / `help_error` for codex only."""

    path: str | None = None
    error: str | None = None
    source: str | None = None
    version: str | None = None
    version_error: str | None = None
    listen: ListenSchemes | None = None
    help_error: str | None = None


def _lookup_step(path: str, env_var: str, command: str, pinned: Path | None) -> str:
    """Which step of binaries._find gave `path` (same order: variable, PATH, .tools/)."""
    if os.environ.get(env_var):
        return env_var
    if shutil.which(command) == path:
        return "PATH"
    if pinned is not None and str(pinned) == path:
        return "the pinned copy in .tools/"
    return "lookup"


def _binary(find: Callable[[], str], env_var: str, command: str,
            pinned: Callable[[], Path | None], timeout: float) -> BinaryFacts:
    try:
        path = find()
    except BridgeError as exc:
        return BinaryFacts(error=exc.message)
    out, error = run([path, "--version"], timeout)
    return BinaryFacts(path, None, _lookup_step(path, env_var, command, pinned()),
                       None if error else parse_version(out), error)


def codex(timeout: float = TIMEOUT) -> BinaryFacts:
    facts = _binary(find_codex, "CODEX_BRIDGE_CODEX_BIN", "codex", pinned_codex, timeout)
    if not facts.path:
        return facts
    out, error = run([facts.path, "app-server", "--help"], timeout)
    return BinaryFacts(facts.path, facts.error, facts.source, facts.version,
                       facts.version_error, None if error else parse.listen_schemes(out),
                       error)


def claude(timeout: float = TIMEOUT) -> BinaryFacts:
    return _binary(find_claude, "CODEX_BRIDGE_CLAUDE_BIN", "claude", pinned_claude, timeout)


# --- the version rows -------------------------------------------------------------------

def pinned_fix(command: str, env_var: str) -> str:
    """How to get the tested `command` ("codex" / "claude") used: a checkout has its own
    copy in .tools/ (found after PATH, so named by the variable); an install has npm."""
    if in_checkout():
        pinned = tools_dir() / command / "node_modules" / ".bin" / command
        return (f"{install_hint(command)}; for the checkout's copy set {env_var}={pinned} "
                "(a codex or claude on PATH comes first)")
    return f"{install_hint(command)} (and unset {env_var} if it names another one)"


def version_row(name: str, what: str, f: BinaryFacts, supported: tuple[str, str], fix: str,
                judged_by: str) -> Check:
    """The `--version` row: OK inside the supported range (oldest, pin) and above it (a
    newer release is judged by what it speaks — `judged_by` names the row — never told
    to downgrade); WARN below it, where codexbridge is known not to be tested."""
    if f.version_error:
        return Check(name, WARN, f"could not run `{what} --version`: {f.version_error}",
                     f"check that {f.path} runs", {"error": f.version_error})
    if not f.version:
        return Check(name, WARN, f"`{what} --version` printed no version number",
                     f"check that {f.path} is {what}", {})
    return fit_row(name, f.version, supported, fix, judged_by)


def fit_row(name: str, version: str, supported: tuple[str, str], fix: str,
            judged_by: str, said: str = "",
            details: Mapping[str, object] | None = None) -> Check:
    oldest, pin = supported
    span = supported_range(oldest, pin)
    fit = version_fit(version, oldest, pin)
    info = {**(details or {}), "version": version, "oldest": oldest, "tested": pin,
            "fit": fit.value}
    lead = f"{said}{version}"
    if fit in (VersionFit.TESTED, VersionFit.IN_RANGE):
        return Check(name, OK, f"{lead}, within the supported range {span}", details=info)
    if fit is VersionFit.NEWER:
        return Check(name, OK, f"{lead}, newer than the tested range {span}: {judged_by}",
                     details=info)
    if fit is VersionFit.UNKNOWN:
        return Check(name, INFO, f"{lead}: not a release number codexbridge can place "
                     f"against the supported range {span}; {judged_by}", details=info)
    return Check(name, WARN, f"{lead} is older than the oldest supported, {oldest} "
                 f"(supported: {span})", fix, info)


def _found_row(name: str, f: BinaryFacts) -> Check:
    return Check(name, OK, f"{f.path} (found via {f.source or 'lookup'})",
                 details={"path": f.path, "source": f.source})


# --- codex ------------------------------------------------------------------------------

def codex_rows(f: BinaryFacts) -> list[Check]:
    if not f.path:
        return [Check("codex", FAIL, f.error or "codex not found",
                      f"install codex {CODEX_VERSION}: {install_hint('codex')}; or set "
                      "CODEX_BRIDGE_CODEX_BIN to its path")]
    rows = [_found_row("codex", f)]
    rows.append(version_row("codex-version", "codex", f, (CODEX_OLDEST, CODEX_VERSION),
                            pinned_fix("codex", "CODEX_BRIDGE_CODEX_BIN"),
                            "the protocol row judges whether it fits"))
    rows.append(_listen_row(f))
    return rows


def _listen_row(f: BinaryFacts) -> Check:
    if f.help_error:
        return Check("listen-schemes", WARN,
                     f"could not run `codex app-server --help`: {f.help_error}",
                     f"check that {f.path} runs", {"error": f.help_error})
    listen = f.listen or ListenSchemes()
    details = listen.as_dict() if f.listen else {}
    install = f"install codex {CODEX_VERSION}: {install_hint('codex')}"
    if not listen.listen_option:
        return Check("listen-schemes", FAIL,
                     "`codex app-server --help` shows no --listen option: this codex cannot "
                     "serve the TUI and the bridge together", install, details)
    if not listen.unix:
        return Check("listen-schemes", FAIL,
                     "`codex app-server --listen` does not list unix://: `codexbridge serve` "
                     "cannot start at its defaults (a private unix socket), and --url "
                     "unix://… will not work", install, details)
    if not listen.ws:
        return Check("listen-schemes", WARN,
                     "`codex app-server --listen` lists unix:// but not ws://: `codexbridge "
                     "serve --port/--host/--tls-cert` cannot start (some codex builds removed "
                     "WebSocket listening); serve at its defaults works", install, details)
    return Check("listen-schemes", OK, "`codex app-server --listen` lists ws:// and unix://",
                 details=details)


# --- Claude Code --------------------------------------------------------------------------

def claude_rows(f: BinaryFacts) -> list[Check]:
    if not f.path:
        return [Check("claude", INFO,
                      f"Claude Code not found ({f.error or 'not on PATH'}): the CLI "
                      "side works without it; Claude sessions need it for the Stop hook",
                      f"install Claude Code {CLAUDE_VERSION}: {install_hint('claude')}; or "
                      "set CODEX_BRIDGE_CLAUDE_BIN to its path")]
    return [_found_row("claude", f),
            version_row("claude-version", "claude", f, (CLAUDE_OLDEST, CLAUDE_VERSION),
                        f"the Stop-hook framing, block cap and asyncRewake were measured "
                        f"on {CLAUDE_VERSION}: "
                        + pinned_fix("claude", "CODEX_BRIDGE_CLAUDE_BIN"),
                        "the claude-compat rows judge whether it fits")]


# --- Codex's shell --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CodexShell:
    """`bash` (None: none here), `found` (where a login shell finds codexbridge),
    `registered` (the command `setup codex` registered with codex, if any)."""

    bash: str | None
    found: str | None
    registered: str | None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def codex_shell(registered_command: str | None) -> CodexShell:
    """Does a login shell, as Codex runs its commands (`bash -lc`, measured), find
    `codexbridge`?"""
    bash = shutil.which("bash")
    found = None
    if bash:
        env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "USER", "LANG")}
        try:
            done = subprocess.run([bash, "-lc", "command -v codexbridge"], env=env,
                                  capture_output=True, text=True, timeout=10,
                                  stdin=subprocess.DEVNULL, check=False)
            found = done.stdout.strip() or None
        except (OSError, subprocess.TimeoutExpired):
            found = None
    return CodexShell(bash, found, registered_command)


def codex_shell_rows(f: CodexShell) -> list[Check]:
    if f.found:
        return [Check("codex-shell", OK, f"Codex's commands find codexbridge ({f.found})")]
    if f.registered:
        return [Check("codex-shell", INFO, "Codex's commands run in a login shell that does "
                      "not find `codexbridge` (its PATH comes from /etc/profile); codexbridge's "
                      f"MCP server tells Codex the absolute path ({f.registered})",
                      details=f.as_dict())]
    return [Check("codex-shell", WARN, "Codex's commands run in a login shell that does not "
                  "find `codexbridge`, and no codexbridge MCP server is registered with codex "
                  "to tell it where it is", "`codexbridge setup codex` (or link the command "
                  "into a directory on the login PATH, e.g. /usr/local/bin)",
                  details=f.as_dict())]

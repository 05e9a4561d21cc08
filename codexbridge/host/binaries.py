"""Finding the pinned codex and claude binaries.

Order: the `CODEX_BRIDGE_*_BIN` variable, the command on PATH, the checkout's pinned
npm folder (`.tools/`, filled by `scripts/install-binaries`; an installed wheel has
none). The checkout holds the version matrix (`scripts/binaries.lock`): the pin in
`.tools/codex`, the oldest supported and the newest published in `.tools/codex-X.Y.Z`;
`CODEX_BRIDGE_PINNED_CODEX=X.Y.Z` (and `..._CLAUDE`) picks one of those copies, which is
how the test suite runs against each version of the matrix. In the pinned folder we
prefer the native binary over the npm wrapper so signals and process-group kills reach
the real process (docs/protocol-notes.md, "Processes").
"""

from __future__ import annotations

import enum
import os
import platform
import re
import shutil
from pathlib import Path

from ..errors import BinaryNotFoundError

# The supported range, as scripts/binaries.lock says (a unit test keeps them equal): the
# pin is what codexbridge is tested with first, the oldest is tested in the CI matrix too.
CODEX_VERSION = "0.171.0"
CODEX_OLDEST = "0.169.0"
CLAUDE_VERSION = "2.1.332"
CLAUDE_OLDEST = "2.1.332"
INSTALL_HINT = "scripts/install-binaries"
# For an install without a checkout (pipx, a wheel): the pinned versions from npm.
NPM_INSTALL = {"codex": f"npm install -g @openai/codex@{CODEX_VERSION}",
               "claude": f"npm install -g @anthropic-ai/claude-code@{CLAUDE_VERSION}"}
_VERSION = re.compile(r"\b(\d+\.\d+\.\d+(?:[-+.][0-9A-Za-z.-]+)?)\b")


def parse_version(text: str) -> str | None:
    """The first x.y.z in `codex --version` ("codex-cli 0.169.0") or `claude --version`
    ("2.1.332 (Claude Code)") output."""
    found = _VERSION.search(text)
    return found.group(1) if found else None


class VersionFit(enum.Enum):
    """Where a version stands against a supported range (oldest .. pin)."""

    TESTED = "tested"  # the pin or the oldest: the CI matrix runs both
    IN_RANGE = "in-range"  # between them
    NEWER = "newer"  # newer than the pin: fine when its protocol is compatible
    OLDER = "older"  # older than the oldest supported
    UNKNOWN = "unknown"  # no x.y.z to compare


def _triple(version: str) -> tuple[int, int, int] | None:
    found = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version.strip())
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def version_fit(version: str, oldest: str, pin: str) -> VersionFit:
    if version in (oldest, pin):
        return VersionFit.TESTED
    v, lo, hi = _triple(version), _triple(oldest), _triple(pin)
    if v is None or lo is None or hi is None:
        return VersionFit.UNKNOWN
    if v < lo:
        return VersionFit.OLDER
    return VersionFit.NEWER if v > hi else VersionFit.IN_RANGE


def supported_range(oldest: str, pin: str) -> str:
    """"0.169.0 – 0.171.0", or the one version when the range is a point."""
    return pin if oldest == pin else f"{oldest} – {pin}"


def repo_root() -> Path:
    """The checkout this package runs from (codexbridge/host/ → the repository)."""
    return Path(__file__).resolve().parent.parent.parent


def tools_dir() -> Path:
    raw = os.environ.get("CODEX_BRIDGE_TOOLS_DIR")
    return Path(raw) if raw else repo_root() / ".tools"


def _codex_triple() -> str | None:
    machine = platform.machine().lower()
    system = platform.system()
    if system == "Linux":
        arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64",
                "arm64": "aarch64"}.get(machine)
        return f"{arch}-unknown-linux-musl" if arch else None
    if system == "Darwin":
        return "aarch64-apple-darwin" if machine == "arm64" else "x86_64-apple-darwin"
    return None


def matrix_dir(tool: str, pin: str) -> Path:
    """The checkout's copy of `tool` ("codex" / "claude") the run uses: the pin's folder,
    or `<tool>-X.Y.Z` when `CODEX_BRIDGE_PINNED_<TOOL>` names another version."""
    wanted = os.environ.get(f"CODEX_BRIDGE_PINNED_{tool.upper()}", "").strip()
    if wanted and wanted != pin:
        return tools_dir() / f"{tool}-{wanted}"
    return tools_dir() / tool


def _pinned(tool: str, pin: str, native: str | None) -> Path | None:
    """The checkout's `tool`: its native binary (glob `native` in node_modules), else the
    npm wrapper; None when neither is an executable."""
    base = matrix_dir(tool, pin) / "node_modules"
    found = sorted(base.glob(native)) if native else []
    return next((p for p in [*found, base / ".bin" / tool] if os.access(p, os.X_OK)), None)


def pinned_codex() -> Path | None:
    triple = _codex_triple()
    return _pinned("codex", CODEX_VERSION,
                   f"@openai/codex-*/vendor/{triple}/bin/codex" if triple else None)


def pinned_claude() -> Path | None:
    return _pinned("claude", CLAUDE_VERSION, "@anthropic-ai/claude-code-*/claude")


def in_checkout() -> bool:
    """codexbridge runs from its git checkout (scripts/ beside the package), not from an
    installed wheel — where scripts/, .tools/ and docs/ do not exist."""
    return (repo_root() / "scripts" / "install-binaries").is_file()


def install_hint(command: str) -> str:
    """How to install the tested `command` ("codex" or "claude"), in backticks: the
    pinned npm package; in a checkout, its own script (into .tools/) first."""
    npm = f"`{NPM_INSTALL[command]}`"
    if in_checkout():
        return f"`{repo_root() / INSTALL_HINT}` (into the checkout's .tools/) or {npm}"
    return npm


def _find(env_var: str, command: str, pinned: Path | None, what: str) -> str:
    explicit = os.environ.get(env_var)
    if explicit:
        if os.access(explicit, os.X_OK):
            # Absolute, because the child may be started in another directory.
            return os.path.abspath(explicit)
        raise BinaryNotFoundError(f"{env_var}={explicit} is not an executable file")
    on_path = shutil.which(command)
    if on_path:
        return on_path
    if pinned is not None:
        return str(pinned)
    raise BinaryNotFoundError(
        f"{what} not found: install the version codexbridge is tested with "
        f"({install_hint(command)}), or set {env_var} to its path",
        details={"binary": command, "install": NPM_INSTALL[command], "env": env_var})


def find_codex() -> str:
    return _find("CODEX_BRIDGE_CODEX_BIN", "codex", pinned_codex(), "codex")


def find_claude() -> str:
    return _find("CODEX_BRIDGE_CLAUDE_BIN", "claude", pinned_claude(), "Claude Code")

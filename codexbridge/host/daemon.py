"""codex's own managed app-server daemon (`codex app-server daemon start`): where its
socket is, whether it answers, and the line that attaches a TUI to it.

Measured on codex 0.169.0 (docs/fitting-in.md, "The codex daemon"): the socket is
`<CODEX_HOME>/app-server-control/app-server-control.sock` (a symlink into
`/tmp/codex-daemon-<uid>/`, removed by `daemon stop`); it speaks the same WebSocket
JSON-RPC as `--listen unix://`. The plain `codex` TUI attaches to a running daemon by
itself (and starts one when none runs); `codex --remote unix://<socket>` is the
explicit form. The path is computed, not asked of `codex app-server daemon version`:
that costs a codex start (~30 ms) on every `talk` command.
"""

from __future__ import annotations

import os
import shlex
import socket
from collections.abc import Mapping
from pathlib import Path

SOCKET_DIR = "app-server-control"
SOCKET_NAME = "app-server-control.sock"
# `CODEX_BRIDGE_DAEMON=off`: never attach to the daemon unless a URL names it.
SWITCH_ENV = "CODEX_BRIDGE_DAEMON"


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    """`$CODEX_HOME`, else `~/.codex` — the home whose daemon `codex` itself would use."""
    env = os.environ if env is None else env
    raw = env.get("CODEX_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".codex"


def socket_path(home: Path) -> Path:
    return home / SOCKET_DIR / SOCKET_NAME


def socket_url(path: Path | str) -> str:
    return f"unix://{path}"


def enabled(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return env.get(SWITCH_ENV, "").strip().lower() not in ("off", "0", "no", "false")


def listening(path: Path | str, timeout: float = 0.5) -> bool:
    """Something accepts connections on the unix socket `path` (a stale symlink, a
    socket file nobody listens on, or no file at all: False). Costs well under 1 ms."""
    target = os.fspath(path)
    if not os.path.exists(target):  # follows the symlink: a dangling one is "not there"
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(target)
        except OSError:
            return False
    return True


def running_url(env: Mapping[str, str] | None = None) -> str | None:
    """`unix://<socket>` of this CODEX_HOME's daemon when it answers, else None (also
    when `CODEX_BRIDGE_DAEMON=off`)."""
    if not enabled(env):
        return None
    path = socket_path(codex_home(env))
    return socket_url(path) if listening(path) else None


def attach_line(url: str, project: str | None = None, *, token: str | None = None) -> str:
    """The TUI command for `url`; `token`: the server wants the capability token, which
    the TUI reads from the variable the line sets to this shell word (`token_word`)."""
    line = f"codex --remote {shlex.quote(url)}"
    if project:
        line += f" -C {shlex.quote(project)}"
    if token:
        line = (f"CODEX_BRIDGE_TOKEN={token} " + line
                + " --remote-auth-token-env CODEX_BRIDGE_TOKEN")
    return line


def token_word(token_file: str | None) -> str:
    """The token as a pasted line gets it: read from serve's 0600 token file (on this
    machine; copied with the line elsewhere), or a placeholder when there is no file."""
    return f"$(cat {shlex.quote(token_file)})" if token_file else "<token>"


def is_daemon_url(url: str | None) -> bool:
    """`url` is some CODEX_HOME's daemon socket (`unix://…/app-server-control/…sock`)."""
    return bool(url) and str(url).startswith("unix://") and str(url).endswith(
        f"/{SOCKET_DIR}/{SOCKET_NAME}")


def open_tui(url: str | None, project: str | None = None) -> str:
    """How to open the Codex TUI on the app-server at `url`, as a sentence: plain `codex`
    for codex's own daemon (it attaches by itself), `codex --remote URL` for any other
    server (a `codexbridge serve`); both when the server is not known."""
    where = shlex.quote(project) if project else "DIR"
    if url is None:
        return (f"open the Codex TUI with `codex -C {where}` (it attaches to codex's own "
                f"daemon; on a `codexbridge serve`: `codex --remote <url> -C {where}`)")
    if is_daemon_url(url):
        return (f"open the Codex TUI with `codex -C {where}` (plain `codex` attaches to "
                "codex's own daemon by itself)")
    return f"open the Codex TUI with `{attach_line(url, project or 'DIR')}`"


def start_hint() -> str:
    return ("start codex's own app-server with `codex app-server daemon start` (or just "
            "run `codex`, which starts it and attaches)")

"""Which app-server to talk to: `--url`, else `CODEX_BRIDGE_URL`, else the running
serve's bridge.json, else the user's own codex daemon (its unix socket in CODEX_HOME).

Never a guess between two: when a serve and a daemon both run, serve wins (someone
started it on purpose, and its TUI was told to attach to it) and a one-line note on
stderr says so and how to pick the daemon instead. `CODEX_BRIDGE_DAEMON=off` turns the
daemon lookup off. The bearer token comes from `CODEX_BRIDGE_TOKEN` or the token file
serve recorded; the daemon's socket needs none (its directory is the user's, 0700).

`choose()` is the decision, on plain values; `resolve_endpoint()` gathers them.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

from ..errors import ConnectError
from ..host.paths import bridge_file, read_bridge_file


class Endpoint(NamedTuple):
    url: str
    token: str | None
    source: str


class Choice(NamedTuple):
    url: str
    source: str  # what named it: --url, CODEX_BRIDGE_URL, bridge.json's path, codex daemon (…)
    from_record: bool  # serve's token file applies
    note: str | None  # why this one, when another server also runs


def daemon_source(home: str) -> str:
    return f"codex daemon ({home})"


def choose(url: str | None, env_url: str | None, record: dict[str, Any] | None,
           serve_alive: bool | None, daemon_url: str | None, *, bridge_path: str,
           daemon_home: str) -> Choice | None:
    """The endpoint in force, or None when nothing names or runs one.

    `serve_alive` is None when the record names no pid (kept: an old record still
    counts); `daemon_url` is the daemon's socket URL only when it answers.
    """
    if url:
        return Choice(url, "--url", False, None)
    if env_url:
        return Choice(env_url, "CODEX_BRIDGE_URL", False, None)
    record_url = record.get("url") if record else None
    if isinstance(record_url, str) and serve_alive is not False:
        note = None
        if daemon_url:
            note = (f"using `codexbridge serve` at {record_url} ({bridge_path}); codex's own "
                    f"daemon also runs at {daemon_url}: pass --url {daemon_url} (or set "
                    "CODEX_BRIDGE_URL) to talk to it instead")
        return Choice(record_url, bridge_path, True, note)
    if daemon_url:
        note = None
        if isinstance(record_url, str):
            note = (f"{bridge_path} is stale (its serve is gone); using codex's own daemon "
                    f"at {daemon_url}")
        return Choice(daemon_url, daemon_source(daemon_home), False, note)
    if isinstance(record_url, str):  # stale, nothing else: fail at connect, as before
        return Choice(record_url, bridge_path, True, None)
    return None


def _token_file(record: dict[str, object]) -> str | None:
    path = record.get("token_file")
    if not isinstance(path, str):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _serve_alive(record: dict[str, Any] | None) -> bool | None:
    pid = record.get("pid") if record else None
    if not isinstance(pid, int) or pid <= 0:
        return None
    from ..host.procs import pid_alive

    return pid_alive(pid)


_noted: set[str] = set()


def _say_once(note: str) -> None:
    # Once per process: the MCP server resolves on every tool call.
    if note not in _noted:
        _noted.add(note)
        print(f"codexbridge: {note}", file=sys.stderr)


def resolve_endpoint(url: str | None = None) -> Endpoint:
    from ..host import daemon

    token = os.environ.get("CODEX_BRIDGE_TOKEN") or None
    env_url = os.environ.get("CODEX_BRIDGE_URL") or None
    record = read_bridge_file()
    home = daemon.codex_home()
    running = None if (url or env_url) else daemon.running_url()
    alive = _serve_alive(record)
    picked = choose(url, env_url, record, alive, running, bridge_path=str(bridge_file()),
                    daemon_home=str(home))
    if picked is None:
        raise ConnectError(
            "no app-server to talk to: no `codexbridge serve` runs (looked for "
            f"{bridge_file()}) and codex's daemon is not running (no "
            f"{daemon.socket_path(home)}); {daemon.start_hint()}, or start "
            "`codexbridge serve` first, or pass --url / set CODEX_BRIDGE_URL",
            details={"bridge_file": str(bridge_file()),
                     "daemon_socket": str(daemon.socket_path(home)),
                     "daemon_lookup": daemon.enabled()})
    if picked.note:
        _say_once(picked.note)
    if token is None and record and (picked.from_record or record.get("url") == picked.url):
        token = _token_file(record)  # our own serve, found or named explicitly
    if picked.source.startswith("codex daemon"):
        token = None  # a unix socket of the user's own: no bearer to present
    return Endpoint(picked.url, token, picked.source)

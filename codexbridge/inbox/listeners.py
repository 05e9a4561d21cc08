"""Who listens as which mailbox name: `NAME.session.json`.

The Stop hook (and the watcher) rewrite it on every run, so `inbox list` can show each
listener's cwd, session and last-seen time, and `inbox push` can warn when a name has
never been listened on. The writer half is on the hook's fast path: stdlib only.
"""

from __future__ import annotations

import json
import os

from ..host.jsonfile import read_object
from ..host.private import write_private
from .clock import iso_utc
from .location import SESSION_SUFFIX, session_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def listener_record(name: str, payload: dict[str, Any], via: str,
                    now: str | None = None) -> dict[str, Any]:
    """The session.json content for a hook run that received `payload` on stdin."""
    return {
        "name": name,
        "cwd": _str_or_none(payload.get("cwd")) or os.getcwd(),
        "session_id": _str_or_none(payload.get("session_id")),
        "transcript_path": _str_or_none(payload.get("transcript_path")),
        "last_seen": now or iso_utc(),
        "via": via,
        "claude_pid": _str_or_none(os.environ.get("CLAUDE_PID")),
        # The session's own address (its cross-session inbox socket) and where it keeps
        # its state: how a reply finds the exact session that asked, and how live
        # delivery reaches it.
        "messaging_socket": _str_or_none(os.environ.get("CLAUDE_CODE_MESSAGING_SOCKET")),
        "config_dir": _str_or_none(os.environ.get("CLAUDE_CONFIG_DIR")),
        # bypassPermissions sessions hold peer messages for the user: not pushed to.
        "permission_mode": _str_or_none(payload.get("permission_mode")),
    }


def record_listener(inbox: str, name: str, payload: dict[str, Any], via: str) -> None:
    """Atomically replace NAME.session.json (temp file + rename, mode 0600)."""
    data = json.dumps(listener_record(name, payload, via), ensure_ascii=False, indent=2)
    write_private(session_path(inbox, name), data.encode("utf-8") + b"\n")


def read_listeners(inbox: str) -> dict[str, dict[str, Any]]:
    """name → its session.json content, for every name that was ever listened on."""
    out: dict[str, dict[str, Any]] = {}
    try:
        entries = sorted(os.listdir(inbox))
    except FileNotFoundError:
        return out
    for entry in entries:
        if not entry.endswith(SESSION_SUFFIX) or entry.startswith("."):
            continue
        name = entry[: -len(SESSION_SUFFIX)]
        path = os.path.join(inbox, entry)
        data = read_object(path)
        if data is None:
            if not os.path.exists(path):
                continue  # removed since the listing
            # Damaged (not a JSON object, or nested past reading): none of it is used;
            # the note says which file (doctor: the next stop rewrites it), and the
            # name stays known.
            data = {"name": name, "error": f"unreadable session file ({path})"}
        # claude-codex-bridge writes {name, cwd, lastSeen}; show its listeners too.
        if "last_seen" not in data and isinstance(data.get("lastSeen"), str):
            data["last_seen"] = data["lastSeen"]
        out[name] = data
    return out


def closest_name(name: str, known: list[str]) -> str | None:
    """The known name a typo most likely meant, if any is close."""
    import difflib

    matches = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if matches:
        return matches[0]
    lowered = {k.lower(): k for k in known}
    return lowered.get(name.lower())

"""What Claude Code handed codexbridge's hooks last time: `<state home>/claude-seen.json`.

`doctor`'s claude-compat rows judge a Claude Code newer than the tested one by evidence,
not by its version number: the names of the top-level fields each hook event's stdin
JSON carried, and what the session's registry (`$CLAUDE_CONFIG_DIR/sessions/<pid>.json`,
the entry live delivery reads) advertised — its `peerProtocol`, its field names, the
Claude Code `version`. Names only, never values: the file holds no session content.

    {"hooks": {"Stop": {"fields": [...], "claude_version": "…", "seen": "<iso>"},
               "SessionStart": {...}},
     "peer": {"socket_env": true, "pid_env": true, "registry": true,
              "registry_fields": [...], "protocol": 1, "socket_matches": true,
              "claude_version": "…", "seen": "<iso>"}}

The Stop hook records it on every run, so this is on its fast path: stdlib only, two
small reads, and a write only when something changed or the day did (so "seen on"
stays true to the day). A failure here is the caller's to swallow: it must never cost a
delivery.
"""

from __future__ import annotations

import json
import os

from ..claude.files import SessionEntry
from ..host.clock import iso_utc
from ..host.jsonfile import read_object
from ..host.private import state_home, write_private
from ..jsontypes import JsonRecord, obj
from ..messages import listeners

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TypedDict

    from ..jsontypes import JsonObject

    class Seen(TypedDict):
        path: str
        exists: bool
        record: JsonObject | None  # None when unreadable

SEEN_NAME = "claude-seen.json"
UNNAMED = "(no hook_event_name)"  # where input without an event name is recorded
SOCKET_ENV = "CLAUDE_CODE_MESSAGING_SOCKET"
# Claude Code gives every hook these (docs/protocol-notes.md, "Stop hook"); with none of
# them the hook was run by hand (`echo '{…}' | codexbridge inbox hook`), which proves
# nothing about Claude Code and must not pass for drift.
CLAUDE_MARKS = ("CLAUDECODE", "CLAUDE_PID", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID")


def seen_path() -> str:
    return os.path.join(state_home(), SEEN_NAME)


def registry_path(env: Mapping[str, str]) -> str | None:
    """The session's registry entry, as live delivery finds it (`messages/live.py`)."""
    return listeners.registry_path(env.get("CLAUDE_CONFIG_DIR"), env.get("CLAUDE_PID"))


def peer_facts(env: Mapping[str, str], registry: SessionEntry | None) -> JsonObject:
    """What the hook's environment and the session's registry say about live delivery's
    address and protocol (names and the protocol number only)."""
    entry = registry or SessionEntry(None)
    protocol = entry.peer_protocol
    socket = env.get(SOCKET_ENV) or None
    return {"socket_env": socket is not None, "pid_env": env.get("CLAUDE_PID", "").isdigit(),
            "registry": bool(entry.fields), "registry_fields": [*entry.fields],
            "protocol": protocol if isinstance(protocol, int | str) else None,
            "socket_matches": bool(socket) and entry.socket == socket,
            "claude_version": entry.version}


class Stamped(JsonRecord):
    """Evidence as the file keeps it: when it was last seen."""

    seen: str | None = None


class HookSeen(Stamped):
    """`hooks.EVENT`: the input field names one hook event carried."""

    fields: tuple[str, ...] = ()
    claude_version: str | None = None


class SeenFile(JsonRecord):
    """The file: `peer` as `peer_facts` made it (and its `seen`), `hooks` by event."""

    peer: JsonObject | None = None
    hooks: JsonObject = {}  # noqa: RUF012 (a record is read-only: never changed in place)


def merged(old: Mapping[str, object] | None, event: str, fields: list[str],
           peer: JsonObject, now: str) -> JsonObject | None:
    """`old` with this run's evidence in it, or None when it would say nothing new (the
    same names, the same peer facts, already seen today)."""
    was = SeenFile.read(obj(old))
    entry: JsonObject = {"fields": [*fields], "claude_version": peer["claude_version"]}
    day = now[:10]
    before = HookSeen.parse(was.hooks.get(event))
    prior = was.peer
    if (before is not None and prior is not None
            and before.fields == tuple(fields) and before.claude_version == entry["claude_version"]
            and {k: prior.get(k) for k in peer} == peer
            and (before.seen or "")[:10] == day
            and (Stamped.read(prior).seen or "")[:10] == day):
        return None
    return {**obj(old), "hooks": {**was.hooks, event: {**entry, "seen": now}},
            "peer": {**peer, "seen": now}}


def note_seen(payload: Mapping[str, object], env: Mapping[str, str] | None = None) -> bool:
    """Record what this hook run received (True when the file was rewritten). A run that
    is not Claude Code's — empty input, none of its variables — records nothing."""
    env = os.environ if env is None else env
    if not payload or not any(env.get(k) for k in CLAUDE_MARKS):
        return False
    event = payload.get("hook_event_name")
    event = event if isinstance(event, str) and event else UNNAMED
    where = registry_path(env)
    found = read_object(where) if where else None
    registry = SessionEntry.from_json(found) if found is not None else None
    path = seen_path()
    record = merged(read_object(path), event, sorted(str(k) for k in payload),
                    peer_facts(env, registry), iso_utc())
    if record is None:
        return False
    write_private(path, json.dumps(record, indent=2, sort_keys=True).encode("utf-8") + b"\n")
    return True


def read_seen() -> Seen:
    """For doctor: {"path", "exists", "record"} (record None when unreadable)."""
    path = seen_path()
    return {"path": path, "exists": os.path.exists(path), "record": read_object(path)}

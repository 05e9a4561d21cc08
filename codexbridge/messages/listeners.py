"""Who listens as which mailbox name: the commands that make a Claude session listen,
and the record each run leaves (`NAME.session.json`) — the routing table a reply's
mailbox is chosen from (`routing.py`), kept beside the mail in the inbox directory.

The commands are `codexbridge inbox hook --as NAME` (the Stop / SessionStart hook) and
`… inbox watch --as NAME --timeout S` (the asyncRewake watcher): `hook_command` /
`watch_command` build them (for `install-hook`), `ours` recognises them in any settings
file (setup, doctor and handoff look for them).

The Stop hook (and the watcher) rewrite the record on every run, so `inbox list` can
show each listener's cwd, session and last-seen time, and `inbox push` can warn when a
name has never been listened on. The writer half is on the hook's fast path: stdlib
only, `shlex` imported only where a command is built or read.
"""

from __future__ import annotations

import json
import os
import sys

from ..host.clock import iso_utc
from ..host.jsonfile import read_object
from ..host.private import write_private
from ..jsontypes import JsonRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..jsontypes import JsonObject, NonEmpty

# The asyncRewake watcher's defaults (hooks/watcher.py; install-hook writes them into
# the command it registers): how long it waits for mail, and how often it looks.
WATCH_TIMEOUT = 600.0
WATCH_INTERVAL = 0.1


def python_invocation(python: str | None = None) -> str:
    """The current interpreter, absolute, running codexbridge as a module.

    `-P` (3.11+) keeps the hooked project's own directory off `sys.path`, so a folder
    there named `codexbridge` cannot shadow ours.
    """
    import shlex

    exe = os.path.abspath(python or sys.executable)  # not resolved: keep the venv path
    safe_path = " -P" if sys.version_info >= (3, 11) else ""
    return f"{shlex.quote(exe)}{safe_path} -m codexbridge"


def hook_command(name: str, python: str | None = None) -> str:
    import shlex

    return f"{python_invocation(python)} inbox hook --as {shlex.quote(name)}"


def watch_command(name: str, timeout: float = WATCH_TIMEOUT,
                  python: str | None = None) -> str:
    import shlex

    return (f"{python_invocation(python)} inbox watch --as {shlex.quote(name)} "
            f"--timeout {timeout:g}")


def ours(command: str) -> tuple[str, str] | None:
    """("hook"|"watch", mailbox) if `command` runs a codexbridge inbox hook, else None."""
    import shlex

    try:
        # punctuation_chars: `--as bridge; exit 0` must give "bridge", not "bridge;".
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    if not any(w == "codexbridge" or w.endswith("/codexbridge") for w in words):
        return None
    for i in range(len(words) - 1):
        if words[i] == "inbox" and words[i + 1] in ("hook", "watch"):
            name = "default"
            rest = words[i + 2:]
            for j, word in enumerate(rest):
                if word == "--as" and j + 1 < len(rest):
                    name = rest[j + 1]
                elif word.startswith("--as="):
                    name = word[len("--as="):]
            return words[i + 1], name
    return None


LISTENER_VERSION = 1  # NAME.session.json's format (files without one are version 1)
SESSION_SUFFIX = ".session.json"


def session_path(inbox: str, name: str) -> str:
    """NAME's listener record, beside its mail in the inbox directory."""
    return os.path.join(inbox, name + SESSION_SUFFIX)


def _pid(value: object) -> int | None:
    """A pid as the hook recorded it (digits, from $CLAUDE_PID) or as a number; None
    for anything else, 0 included (`kill(0, …)` would test our own process group)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return int(value) if str(value).isdigit() and int(value) > 0 else None


class Listener(JsonRecord, read_with={"claude_pid": _pid}):
    """One NAME.session.json, typed: the session that last listened as NAME. A field of
    the wrong type (or an empty string) reads as absent (a file another tool wrote, or
    an older hook's); a damaged file keeps its name known with `error` saying which
    file."""

    name: str = ""
    cwd: NonEmpty | None = None
    session_id: NonEmpty | None = None
    transcript_path: NonEmpty | None = None
    last_seen: NonEmpty | None = None
    via: NonEmpty | None = None
    claude_pid: int | None = None
    messaging_socket: NonEmpty | None = None
    config_dir: NonEmpty | None = None
    permission_mode: NonEmpty | None = None
    error: NonEmpty | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, object], name: str | None = None) -> Listener:
        """`data` as `read_listeners` gives it; `name`: the file's (else the one it
        records)."""
        return cls.read(data, name=name) if name else cls.read(data)



def listeners(inbox: str) -> dict[str, Listener]:
    """name → its listener record, typed (`read_listeners`, for code that shows them)."""
    return {name: Listener.from_json(data, name) for name, data in read_listeners(inbox).items()}


def read_listener(inbox: str, name: str) -> Listener | None:
    """NAME's listener record, typed (None: nobody has listened as NAME)."""
    data = read_listeners(inbox).get(name)
    return None if data is None else Listener.from_json(data, name)


class Heard(JsonRecord):
    """What a listener record keeps of the hook's input (Claude Code's names)."""

    cwd: NonEmpty | None = None
    session_id: NonEmpty | None = None
    transcript_path: NonEmpty | None = None
    permission_mode: NonEmpty | None = None


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def listener_record(name: str, payload: Mapping[str, object], via: str,
                    now: str | None = None) -> JsonObject:
    """The session.json content for a hook run that received `payload` on stdin."""
    heard = Heard.read(payload)
    return {
        "version": LISTENER_VERSION,
        "name": name,
        "cwd": heard.cwd or os.getcwd(),
        "session_id": heard.session_id,
        "transcript_path": heard.transcript_path,
        "last_seen": now or iso_utc(),
        "via": via,
        "claude_pid": _env("CLAUDE_PID"),
        # The session's own address (its cross-session inbox socket) and where it keeps
        # its state: how a reply finds the exact session that asked, and how live
        # delivery reaches it.
        "messaging_socket": _env("CLAUDE_CODE_MESSAGING_SOCKET"),
        "config_dir": _env("CLAUDE_CONFIG_DIR"),
        # bypassPermissions sessions hold peer messages for the user: not pushed to.
        "permission_mode": heard.permission_mode,
    }


def claude_config_dir(config_dir: object) -> str:
    """Where the listening Claude Code keeps its state: `$CLAUDE_CONFIG_DIR` as its hook
    saw it, else ~/.claude."""
    if isinstance(config_dir, str) and config_dir:
        return config_dir
    return os.path.join(os.path.expanduser("~"), ".claude")


def registry_path(config_dir: object, claude_pid: object) -> str | None:
    """The session's registry entry, `<config dir>/sessions/<pid>.json` (its address and
    protocol: what live delivery reads, and what doctor's compat rows judge); None
    without a pid."""
    pid = str(claude_pid or "")
    if not pid.isdigit():
        return None
    return os.path.join(claude_config_dir(config_dir), "sessions", f"{pid}.json")


def record_listener(inbox: str, name: str, payload: Mapping[str, object], via: str) -> None:
    """Atomically replace NAME.session.json (temp file + rename, mode 0600)."""
    data = json.dumps(listener_record(name, payload, via), ensure_ascii=False, indent=2)
    write_private(session_path(inbox, name), data.encode("utf-8") + b"\n")


def read_listeners(inbox: str) -> dict[str, JsonObject]:
    """name → its session.json content, for every name that was ever listened on."""
    out: dict[str, JsonObject] = {}
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

"""Is a process still there? Shared by serve (stale bridge.json), the rewake watcher (is
its Claude still running) and the tests' tmux TUI driver (did the TUI exit)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a zombie has exited; only its parent
    has not reaped it yet, as tmux does with a killed TUI)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        # Reaped between the kill(0) and the open (a zombie's parent collecting it — seen
        # once in a full suite run); with no /proc at all (macOS) kill(0) is all we know.
        return not os.path.isdir("/proc/self")
    except (OSError, IndexError):
        return True


def environ_names(pid: int) -> frozenset[str] | None:
    """The names in process `pid`'s environment as it started (/proc/PID/environ: only
    its own user may read it); None when it cannot be read (another user's, gone, no
    /proc)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return frozenset(item.split(b"=", 1)[0].decode("utf-8", "replace")
                     for item in data.split(b"\0") if b"=" in item)

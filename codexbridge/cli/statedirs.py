"""The state-dir check every command runs first, without click: the plugin's hot
commands (`cli/__init__.py`) run it before click is imported, `output.command` for the
rest."""

from __future__ import annotations


def check_state_dirs() -> None:
    """Refuse a state home or inbox dir that would lock the user out or mix our files
    into another agent's state (`host/private.unsafe_state_dir`) — before anything is
    written there. `doctor` reports the same as a FAIL row instead."""
    import contextlib
    import os

    from ..errors import UsageError
    from ..host.private import HOME_ENV, state_home, unsafe_state_dir

    problem = unsafe_state_dir(state_home(), HOME_ENV)
    if problem is None and os.environ.get("CODEX_BRIDGE_INBOX_DIR"):
        problem = unsafe_state_dir(os.environ["CODEX_BRIDGE_INBOX_DIR"],
                                   "CODEX_BRIDGE_INBOX_DIR")
    if problem:
        raise UsageError(f"refusing to use it: {problem}", details={"problem": problem})
    home = state_home()
    # repaired on start: the state home is the user's alone (doctor shows the rest)
    with contextlib.suppress(OSError):
        if os.stat(home).st_mode & 0o077:
            os.chmod(home, 0o700)

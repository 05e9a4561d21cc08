"""What a mailbox may be called, which one is meant when none is named, and the
directory mailboxes live in: the one rule the engine (routing a reply, `--reply-to`,
`--to`), the mailbox store (listing its files) and the hooks all decide from. It is
here, below both, because a mailbox name becomes a file name in the state home.

Names are `[A-Za-z0-9._-]{1,64}`, never `.` or `..`, checked by hand instead of with a
regex; stdlib only: the Stop hook's fast path imports this module.
"""

from __future__ import annotations

import os

from .private import state_home

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
MAX_LENGTH = 64
DEFAULT_MAILBOX = "default"
MAILBOX_ENV = "CODEX_BRIDGE_MAILBOX"
# `<x>.rejected.jsonl` is both mailbox x's rejected file and mailbox `x.rejected`'s mail
# file, so that one suffix is reserved.
RESERVED_SUFFIX = ".rejected"


def name_problem(name: str) -> str | None:
    """Why `name` is not a valid mailbox name, or None when it is."""
    if not name:
        return "a mailbox name cannot be empty"
    if len(name) > MAX_LENGTH:
        return f"a mailbox name is at most {MAX_LENGTH} characters (got {len(name)})"
    if name in (".", ".."):
        return f"{name!r} is not a mailbox name"
    bad = sorted(set(name) - ALLOWED)
    if bad:
        shown = " ".join(repr(ch) for ch in bad[:5])
        return f"mailbox names use only letters, digits, '.', '_' and '-' (found {shown})"
    if name.endswith(RESERVED_SUFFIX):
        return f"mailbox names cannot end in {RESERVED_SUFFIX!r} (that is the rejected-lines file)"
    return None


def validate_name(name: str) -> str:
    """Return `name` unchanged, or raise MailboxNameError (exit 2) saying what is wrong."""
    problem = name_problem(name)
    if problem is None:
        return name
    from ..errors import MailboxNameError  # lazily: errors imports typing (~3 ms)

    raise MailboxNameError(f"invalid mailbox name {name!r}: {problem}",
                           details={"name": name})


def default_mailbox(environ: Mapping[str, str] | None = None) -> str:
    """`$CODEX_BRIDGE_MAILBOX`, else `default` — used when --to / --as is not given."""
    env = os.environ if environ is None else environ
    return env.get(MAILBOX_ENV) or DEFAULT_MAILBOX


def mailbox_name(raw: str | None, env: Mapping[str, str] | None = None) -> str:
    """`raw`, else $CODEX_BRIDGE_MAILBOX, else `default` — validated."""
    return validate_name(raw if raw else default_mailbox(dict(env) if env else None))


def inbox_dir() -> str:
    """`$CODEX_BRIDGE_INBOX_DIR`, else `<state home>/inbox`."""
    return os.environ.get("CODEX_BRIDGE_INBOX_DIR") or os.path.join(state_home(), "inbox")

"""The mailbox a Claude Code session listens on when the plugin runs its hooks.

Per project, unless that would share: `<dir>-<6 hex>` (the directory's name and a hash of
its full path, so two projects called `web` never meet), and when another Claude
session that is still alive already holds that name, `<dir>-<6 hex>-<8 of the session
id>`. A name chosen for a session stays its name (resumes included): the claim is kept in
`<inbox>/.claims/<session id>` — the name on the first line, then the Claude pid and the
project. `$CODEX_BRIDGE_MAILBOX` overrides all of it: a name you chose is shared on
purpose.

`project_mailbox` and `decide` are pure; `claim` does the file work under one lock and
`claimed` is the one reader of a session's claim; `for_session` is the whole decision the
plugin's hooks need (decided again at SessionStart, read at every other hook).
"""

from __future__ import annotations

import os
import time

from ..host.locking import FileLock
from ..host.mailboxes import MAILBOX_ENV
from ..host.private import check_state_dirs, ensure_private_dir, write_private

# Every stop reads a claim through this module: it loads neither `typing` nor `hashlib`
# (the Stop hook's empty path has neither; `project_mailbox` imports hashlib when a name
# is decided, at SessionStart).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import NamedTuple

CLAIMS_DIR = ".claims"
SESSION_ENV = "CLAUDE_CODE_SESSION_ID"  # messages.routing's (that module loads typing)
BASE_MAX = 40
CLAIM_TTL = 30 * 24 * 3600.0  # a dead session's claim is kept this long (for --resume)
_ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def _clean(text: str) -> str:
    cleaned = "".join(ch if ch in _ALLOWED else "-" for ch in text).strip(".-")
    return cleaned[:BASE_MAX].rstrip(".-") or "project"


def project_mailbox(real_path: str) -> str:
    """`<basename>-<6 hex of sha256(path)>` for an absolute, resolved project path."""
    # lazy: the Stop hook's path (a claimed session) needs no OpenSSL
    import hashlib

    digest = hashlib.sha256(real_path.encode("utf-8", "surrogateescape")).hexdigest()[:6]
    return f"{_clean(os.path.basename(real_path.rstrip('/')) or 'root')}-{digest}"


def session_mailbox(base: str, session_id: str) -> str:
    # ASCII only: str.isalnum() also passes letters such as 'ª' that no mailbox name may hold.
    short = "".join(ch for ch in session_id if ch.isascii() and ch.isalnum())[:8] or "session"
    return f"{base}-{short}"


if TYPE_CHECKING:
    class Claim(NamedTuple):
        session: str
        name: str
        pid: int | None
else:  # the same record, made without importing typing
    from collections import namedtuple

    Claim = namedtuple("Claim", ("session", "name", "pid"))


def decide(base: str, session: str, claims: Iterable[Claim],
           alive: Mapping[int, bool]) -> str:
    """The name for `session`: its earlier one while no other live session holds it
    (stable across stops and resumes), else `base` unless a live other session holds
    it, else the per-session name."""
    mine: Claim | None = None
    taken: set[str] = set()
    for c in claims:
        if c.session == session:
            mine = c
        elif c.pid is not None and alive.get(c.pid, False):
            taken.add(c.name)
    if mine is not None and mine.name not in taken:
        return mine.name
    return base if base not in taken else session_mailbox(base, session)


def parse_claim(session: str, text: str) -> Claim | None:
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        return None
    pid = None
    if len(lines) > 1 and lines[1].strip().isdigit():
        pid = int(lines[1].strip())
    return Claim(session, lines[0].strip(), pid)


def render_claim(name: str, pid: int | None, project: str) -> str:
    return f"{name}\n{pid if pid is not None else ''}\n{project}\n"


# --- file work ---------------------------------------------------------------------------

def claims_dir(inbox: str) -> str:
    return os.path.join(inbox, CLAIMS_DIR)


def _read_claims(directory: str, now: float) -> list[Claim]:
    out: list[Claim] = []
    try:
        entries = os.listdir(directory)
    except FileNotFoundError:
        return out
    for entry in entries:
        if entry.startswith(".") or entry.endswith(".tmp"):
            continue
        path = os.path.join(directory, entry)
        try:
            if now - os.stat(path).st_mtime > CLAIM_TTL:
                os.unlink(path)
                continue
            with open(path, encoding="utf-8") as fh:
                parsed = parse_claim(entry, fh.read(4096))
        except OSError:
            continue
        if parsed:
            out.append(parsed)
    return out


def valid_session(session: str) -> bool:
    return bool(session) and len(session) <= 128 and all(
        ch.isalnum() or ch == "-" for ch in session)


def claimed(inbox: str, session: str) -> str | None:
    """The name `session` claimed before; None when it has no (readable) claim."""
    if not valid_session(session):
        return None  # it names a file: nothing but a session id's characters
    try:
        with open(os.path.join(claims_dir(inbox), session), encoding="utf-8") as fh:
            found = parse_claim(session, fh.read(4096))
    except OSError:
        return None
    return found.name if found is not None else None


def for_session(inbox: str, env: Mapping[str, str], cwd: str, *, start: bool) -> str:
    """The mailbox of the Claude session that `env` (Claude Code's, passed to its hooks)
    describes: `$CODEX_BRIDGE_MAILBOX` when set; else its claim, read — or, at
    SessionStart (`start`: a resumed session may find its name taken) or when it has
    none, decided and claimed for the project Claude works in."""
    chosen = env.get(MAILBOX_ENV)
    if chosen:
        return chosen
    session = env.get(SESSION_ENV, "")
    if not start and (kept := claimed(inbox, session)) is not None:
        return kept

    check_state_dirs()  # it writes a claim: into a state home that must be safe
    pid = env.get("CLAUDE_PID", "")
    return claim(inbox, env.get("CLAUDE_PROJECT_DIR") or cwd, session,
                 int(pid) if pid.isdigit() else None)


def claim(inbox: str, project: str, session: str, claude_pid: int | None) -> str:
    """This session's mailbox name, claimed under a lock so two sessions starting at
    once cannot both take the project's name."""
    from ..host.procs import pid_alive  # lazy: a Stop hook with a claim never claims

    base = project_mailbox(os.path.realpath(project))
    if not valid_session(session):
        return base  # not run by Claude Code (no session id): the project's name
    directory = claims_dir(inbox)
    ensure_private_dir(directory)
    with FileLock(os.path.join(directory, ".lock")):
        claims = _read_claims(directory, time.time())
        alive = {c.pid: pid_alive(c.pid) for c in claims if c.pid is not None}
        name = decide(base, session, claims, alive)
        write_private(os.path.join(directory, session),
                      render_claim(name, claude_pid, project).encode("utf-8"))
    return name

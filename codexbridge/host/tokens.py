"""Bearer and capability tokens: how strong one must be, how one is made, how one is
read from a file — one rule for every listener codexbridge opens (`serve`'s codex and
its TLS relay, `mcp --http`).

Loopback is not a boundary on a shared machine, so a token is what keeps another local
user out of a TCP listener; a guessable one keeps nobody out. `MIN_CHARS` is the floor
for a token a person chose (`openssl rand -hex 24` gives 48); one codexbridge makes has
256 bits.
"""

from __future__ import annotations

import os
import secrets
import stat

from ..errors import UsageError

MIN_CHARS = 16
MAKE_HINT = "openssl rand -hex 24"


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe text (43 characters)."""
    return secrets.token_urlsafe(32)


def check_strength(token: str, what: str) -> None:
    """UsageError when `token` (named `what`, e.g. "CODEX_BRIDGE_TOKEN") is too short to
    keep anyone out."""
    if len(token) < MIN_CHARS:
        unit = "character" if len(token) == 1 else "characters"
        raise UsageError(f"{what} is {len(token)} {unit}: a token keeps other users out only "
                         f"when it cannot be guessed; use at least {MIN_CHARS} "
                         f"(`{MAKE_HINT}`)",
                         details={"length": len(token), "minimum": MIN_CHARS})


def read_token_file(path: str, option: str) -> str:
    """The token in `path` (stripped), refusing a file other users may read or write —
    left as it is: it is not codexbridge's to chmod."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise UsageError(f"{option} {path}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o077 or st.st_uid != os.getuid():
            raise UsageError(
                f"{option} {path} is readable by other users (mode "
                f"{stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}): a token they can "
                f"read keeps nobody out; make it yours alone (`chmod 600 {path}`)",
                details={"path": path, "mode": f"{stat.S_IMODE(st.st_mode):04o}"})
        with os.fdopen(fd, encoding="utf-8") as fh:
            fd = -1
            token = fh.read().strip()
    finally:
        if fd >= 0:
            os.close(fd)
    if not token:
        raise UsageError(f"{option} {path} is empty")
    return token

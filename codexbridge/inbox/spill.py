"""Big mail reaches Claude as a preview and a file, never whole.

Whatever the Stop hook blocks with, or a live frame carries, goes into Claude's context.
A mail whose text is over `INLINE_MAX` (64 KiB) is written whole to a private file
(`<inbox>/NAME.spill/<mail id>.txt`, 0600) and handed over as its first `PREVIEW_CHARS`
characters plus that path. Files older than `KEEP_S` are swept when a new one is
written. Standard library only: this runs inside the Stop hook when it delivers.
"""

from __future__ import annotations

import os
import time

from ..host.private import ensure_private_dir, write_private
from .lines import Mail

INLINE_MAX = 64 * 1024  # bytes of one mail's text handed to Claude whole
PREVIEW_CHARS = 4000
KEEP_S = 7 * 24 * 3600.0


def spill_dir(inbox: str, name: str) -> str:
    return os.path.join(inbox, f"{name}.spill")


def preview_text(text: str, path: str) -> str:
    """What Claude is handed instead of a big mail (pure)."""
    size = len(text.encode("utf-8"))
    return (f"{text[:PREVIEW_CHARS]}\n\n[codexbridge: this message is {size} bytes; the "
            f"first {PREVIEW_CHARS} characters are above. The whole text is in {path} — "
            "read the parts you need from there.]")


def spilled(inbox: str, name: str, mails: list[Mail]) -> list[Mail]:
    """`mails`, each big one replaced by its preview (its whole text kept on disk)."""
    out: list[Mail] = []
    wrote = False
    for mail in mails:
        if len(mail.text.encode("utf-8")) <= INLINE_MAX:
            out.append(mail)
            continue
        directory = spill_dir(inbox, name)
        ensure_private_dir(directory)
        safe = "".join(ch for ch in (mail.mail_id or "") if ch.isalnum() or ch in "-_")
        path = os.path.join(directory, f"{safe or int(time.time() * 1000)}.txt")
        write_private(path, mail.text.encode("utf-8"), durable=True)
        wrote = True
        out.append(mail._replace(text=preview_text(mail.text, path)))
    if wrote:
        _sweep(spill_dir(inbox, name))
    return out


def _sweep(directory: str) -> None:
    cutoff = time.time() - KEEP_S
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    if entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)
                except FileNotFoundError:
                    continue
    except FileNotFoundError:
        return

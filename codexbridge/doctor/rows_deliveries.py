"""Doctor rows for what is in flight between the agents, and for Codex's own shell.

    deliveries   messages still on their way: carried (the courier runs), stuck (it does
                 not: nothing moves until something starts one), and failures the asker
                 may not have heard of (the mail saying so could not be left, or still
                 waits unread)
    codex-shell  whether a command Codex runs finds `codexbridge` (its login shell resets
                 PATH); when it does not, whether Codex is told the absolute path
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

from .report import INFO, OK, WARN, Check

Facts = dict[str, Any]
STUCK_AFTER = 120.0  # s without a courier before an unfinished delivery counts as stuck
UNREAD_AFTER = 600.0  # s a failure notice may wait unread before doctor says so


def gather_deliveries() -> Facts:
    from ..conversation import courier_link
    from ..conversation.records import DeliveryState, DeliveryStore
    from ..inbox import peek as reading
    from ..inbox.location import inbox_dir

    store = DeliveryStore()
    recent = store.recent(200)
    pending: dict[str, set[str]] = {}
    for name in {r.reply_to for r in recent if r.reply_to}:
        try:
            pending[name] = {m.mail_id for m in reading.peek(inbox_dir(), name).mails
                             if m.mail_id}
        except OSError:
            pending[name] = set()
    bad = (DeliveryState.FAILED, DeliveryState.ORPHANED)
    return {"now": time.time(), "courier": courier_link.running(),
            "unfinished": [r.as_dict() for r in store.unfinished()],
            "failed": [{**r.as_dict(), "notice_waiting": bool(
                r.reply_mail_id and r.reply_mail_id in pending.get(r.reply_to or "", set()))}
                for r in recent if r.state in bad]}


def delivery_rows(f: Facts) -> list[Check]:
    now = float(f["now"])
    stuck = [r for r in f["unfinished"]
             if not f["courier"] and now - float(r["updated_at"]) > STUCK_AFTER]
    unseen = [r for r in f["failed"] if r.get("direction") == "to-codex" and (
        (r.get("reply_to") and not r.get("reply_mail_id"))
        or (r.get("notice_waiting") and now - float(r["updated_at"]) > UNREAD_AFTER))]
    rows = []
    if stuck:
        ids = ", ".join(f"{r['id']} ({r['state']}, {_age(now, r['updated_at'])})"
                        for r in stuck[:5])
        rows.append(Check("deliveries", WARN, f"{len(stuck)} delivery(ies) stuck with no "
                          f"courier to carry them: {ids}",
                          f"`codexbridge talk status {stuck[0]['id']}` starts a courier, "
                          "which finds the message in the thread or codex's queue",
                          {"stuck": [r["id"] for r in stuck]}))
    if unseen:
        ids = ", ".join(f"{r['id']} ({r['state']}: {r.get('reason') or '?'})"
                        for r in unseen[:5])
        rows.append(Check("deliveries", WARN, f"{len(unseen)} failed delivery(ies) whose "
                          f"asker may not know: {ids}",
                          "`codexbridge talk status ID` shows each; the Claude session "
                          "that asked gets the notice at its next stop if it waits unread",
                          {"unseen": [r["id"] for r in unseen]}))
    if rows:
        return rows
    moving = len(f["unfinished"])
    finding = (f"{moving} in flight, carried by the courier" if moving and f["courier"]
               else f"{moving} in flight" if moving else "nothing in flight")
    if f["failed"]:
        finding += f"; {len(f['failed'])} recent failure(s), each told to its asker"
    return [Check("deliveries", OK, finding)]


def _age(now: float, at: Any) -> str:
    secs = max(0, int(now - float(at)))
    return f"{secs} s" if secs < 120 else f"{secs // 60} min"


def gather_codex_shell(registered_command: str | None) -> Facts:
    """Does a login shell, as Codex runs its commands (`bash -lc`, measured), find
    `codexbridge`? `registered_command`: the one `setup codex` registered, if any."""
    bash = shutil.which("bash")
    found = None
    if bash:
        env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "USER", "LANG")}
        try:
            done = subprocess.run([bash, "-lc", "command -v codexbridge"], env=env,
                                  capture_output=True, text=True, timeout=10,
                                  stdin=subprocess.DEVNULL, check=False)
            found = done.stdout.strip() or None
        except (OSError, subprocess.TimeoutExpired):
            found = None
    return {"bash": bash, "found": found, "registered": registered_command}


def codex_shell_rows(f: Facts) -> list[Check]:
    if f["found"]:
        return [Check("codex-shell", OK, f"Codex's commands find codexbridge ({f['found']})")]
    if f["registered"]:
        return [Check("codex-shell", INFO, "Codex's commands run in a login shell that does "
                      "not find `codexbridge` (its PATH comes from /etc/profile); codexbridge's "
                      f"MCP server tells Codex the absolute path ({f['registered']})",
                      details=f)]
    return [Check("codex-shell", WARN, "Codex's commands run in a login shell that does not "
                  "find `codexbridge`, and no codexbridge MCP server is registered with codex "
                  "to tell it where it is", "`codexbridge setup codex` (or link the command "
                  "into a directory on the login PATH, e.g. /usr/local/bin)", details=f)]

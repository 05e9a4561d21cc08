"""Claude's answers going back to the Codex threads that asked.

When a Claude session is handed mail that expects a reply (`inbox push --expect-reply`,
MCP `claude_message_send` with `expectReply`), the hander notes it (`note_handed`). At
the session's next stop its final message — the Stop input's `last_assistant_message`
— is the answer: `answer_pending` sends it into each asking thread as a reply turn,
through a detached `codexbridge talk send --in-reply-to` (a reply spends no hop and is
not answered in turn), and closes the request's delivery record. The Stop hook must
stay quick, so it only starts that process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from ..conversation import handling
from .lines import Mail

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def note_handed(session_id: str | None, mailbox: str, mails: list[Mail]) -> None:
    """`mails` were just handed to the session: remember what it is handling."""
    if not session_id:
        return
    fields = [{**m.extra, "id": m.mail_id} for m in mails]
    handling.note(session_id, mailbox, fields)
    asked = [str(f.get("request")) for f in fields if f.get("expect_reply")]
    if asked:
        from ..conversation.records import DeliveryState, DeliveryStore

        store = DeliveryStore()
        for request in asked:
            store.update(request, lambda r: r.move(DeliveryState.AWAITING_REPLY))


def answer_pending(session_id: str | None, answer: str | None) -> int:
    """At a stop: send `answer` to every request the session was handling; returns how
    many replies were started."""
    if not session_id:
        return 0
    marker = handling.take(session_id)
    if not marker:
        return 0
    requests: list[dict[str, Any]] = [r for r in marker.get("requests") or []
                                      if isinstance(r, dict) and r.get("thread")]
    if not requests:
        return 0
    from ..conversation.records import DeliveryState, DeliveryStore, preview

    store = DeliveryStore()
    started = 0
    for req in requests:
        request = str(req.get("request"))
        if not answer:
            store.update(request, lambda r: r.move(
                DeliveryState.FAILED, reason="the Claude session ended its turn without a "
                                             "final message: no answer to send back"))
            continue
        # Delivered only once the answer is a turn in the asking thread: the reply's
        # courier closes this record (or marks it failed, the answer kept beside it).
        def noted(r: Any, text: str = answer) -> None:
            r.reply_preview, r.reply_bytes = preview(text), len(text.encode("utf-8"))

        store.update(request, noted)
        _send_back(str(req["thread"]), request, req.get("conversation"), answer)
        started += 1
    return started


def _send_back(thread: str, request: str, conversation: Any, answer: str) -> None:
    """`codexbridge talk send --in-reply-to`, detached, the answer on its stdin."""
    from ..conversation.limits import clip, text_max

    answer = clip(answer, text_max(os.environ), "in the Claude Code session's transcript")
    with tempfile.TemporaryFile() as body:
        body.write(answer.encode("utf-8"))
        body.seek(0)
        argv = [sys.executable, "-m", "codexbridge", "talk", "send", "--thread", thread,
                "--in-reply-to", request, "-q"]
        if isinstance(conversation, str):
            argv += ["--conversation", conversation]
        from .location import log_dir

        os.makedirs(log_dir(), mode=0o700, exist_ok=True)
        # Its complaints (an app-server gone, a thread closed) land in the hook's log.
        with open(os.path.join(log_dir(), "inbox-hook.log"), "ab") as log:
            subprocess.Popen([*argv, "-"], stdin=body, stdout=subprocess.DEVNULL,
                             stderr=log, start_new_session=True, env=dict(os.environ))

"""What a Claude session was handed: the peer mail in front of it, and the requests in
that mail that expect an answer (`answers.py` sends the answer at the stop that gives it).

Whichever path put the mail in front of Claude — the Stop hook's block, the watcher's
wake, a live frame — calls `note_handed` (or `note_sent` for a frame not yet confirmed
taken in). Plain mail only updates the handling marker; only a request touches its
delivery record and the courier, so those are imported there: the Stop hook delivering
plain mail pays nothing for them (~60 ms of imports measured on this box).
"""

from __future__ import annotations

from collections.abc import Callable

from ..inbox.lines import Mail
from . import handling

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .records import ToClaude


def note_handed(session_id: str | None, mailbox: str, mails: list[Mail], *,
                transcript: str | None = None, offset: int = 0,
                claude_pid: int | None = None) -> None:
    """`mails` were just put in front of the session (they show up in `transcript` after
    byte `offset`): remember what it is handling, and have its requests watched."""
    if not session_id:
        return
    fields = [{**m.extra, "id": m.mail_id} for m in mails]
    fresh = handling.note(session_id, mailbox, fields, transcript, offset)
    asked = [r for r in fresh if any(
        (f.get("request") or f.get("id")) == r and f.get("expect_reply") for f in fields)]
    if not asked:
        return

    def handed(r: ToClaude) -> None:
        if not r.state.final:
            r.session_id, r.claude_pid = session_id, claude_pid or r.claude_pid
            r.await_reply()

    _watch(asked, handed)


def note_sent(session_id: str | None, claude_pid: int | None, mails: list[Mail]) -> None:
    """A live frame carrying `mails` went to the session `claude_pid` (not yet confirmed
    taken in): its requests are watched from now on — if that session ends first, the
    asking thread hears of it (and the mail goes back to the mailbox for the next one)."""
    asked = [str(m.extra.get("request")) for m in mails
             if m.extra.get("expect_reply") and m.extra.get("request")]
    if not asked or claude_pid is None:
        return

    def sent(r: ToClaude) -> None:
        if not r.state.final and r.answered_at is None:
            r.session_id, r.claude_pid = session_id or r.session_id, claude_pid

    _watch(asked, sent)


def _watch(requests: list[str], change: Callable[[ToClaude], None]) -> None:
    """Note `change` on each request's record and hand them to the courier, which
    watches the session until it answers. Imported here, not above: see the docstring."""
    from . import courier_link
    from .records import DeliveryStore, ToClaude

    store = DeliveryStore()
    for request in requests:
        store.update(request, change, ToClaude)
    courier_link.ensure(requests)

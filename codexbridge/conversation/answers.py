"""Claude's answer to a Codex request, recorded as a delivery into the asking thread.

Whichever side notices the answer — the Stop hook at the turn's end, the courier with a
notice when an answer cannot come — writes it here, and the courier carries it. Both
directions share it, so it lives below both: no hop is spent and nothing is routed back.
"""

from __future__ import annotations

import os

from ..host.private import write_private
from . import envelope
from .budget import max_hops
from .limits import clip, text_max
from .records import Delivery, DeliveryState, DeliveryStore, Direction, preview


def new_reply(store: DeliveryStore, thread_id: str, request: str, conversation: str | None,
              text: str, *, app_server: str | None, reply_to: str | None,
              notice: bool = False) -> Delivery:
    """Record Claude's answer to Codex's `request` as a delivery into the asking thread
    (no hop spent; nothing routed back), for the courier to queue and follow. `reply_to`:
    the answering session's mailbox, told if the answer cannot be delivered."""
    text = clip(text, text_max(os.environ), "in the Claude Code session's transcript")
    record = Delivery(id=envelope.request_token(), direction=Direction.TO_CODEX,
                      conversation=conversation or envelope.conversation_id(), hop=0,
                      max_hops=max_hops(dict(os.environ)), in_reply_to=request,
                      thread_id=thread_id, chosen_by="asking-thread",
                      text_preview=preview(text), reply_to=reply_to,
                      reply_to_how="the answering session" if reply_to else None,
                      app_server=app_server, notice=notice)
    record.move(DeliveryState.QUEUED)
    store.save(record)
    write_private(store.text_path(record.id), text.encode("utf-8"), durable=True)
    return record

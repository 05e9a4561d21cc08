"""What a message between the agents carries, and how it reads to the other agent. Pure.

Every message that reaches the peer opens with a short header: that it comes from a peer
AI agent through codexbridge — not from the human user — the conversation and the hop
n/N it spends, where the reply goes, and a request token `req_<epoch ms>_<6 chars>` the
peer is asked to echo. The same fields travel as structured fields of the mail and the
delivery record. In the Codex TUI the header is what the human sees above the message,
so it stays to three lines of under 80 characters.

Its header and end line are drawn by `frame.py` (the seal, the quoting of the words).
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple

from .frame import draw, frame

CLAUDE = "Claude Code"
CODEX = "Codex"


def request_token(now: float | None = None) -> str:
    """`req_<epoch ms>_<6 chars>`: sortable by time, unguessable enough to match on."""
    ms = int((time.time() if now is None else now) * 1000)
    return f"req_{ms}_" + draw(6)


def conversation_id() -> str:
    return "conv_" + os.urandom(6).hex()


def steer_text(sender: str, words: str) -> str:
    """What a peer adds to a running turn (`talk steer`): its words, framed."""
    return frame([f"from {sender} — a peer AI agent, not the human user (added to this turn)"],
                 words, f"end of the words from {sender}")


# --- the envelope of a message to Codex --------------------------------------------------

class Envelope(NamedTuple):
    sender: str  # CLAUDE or CODEX
    request: str  # the request token (= the delivery id)
    conversation: str
    hop: int  # 0 for a reply: a reply spends no hop
    max_hops: int
    reply_to: str | None = None  # where the answer goes, in words
    in_reply_to: str | None = None  # the request this answers

    @property
    def is_reply(self) -> bool:
        return self.in_reply_to is not None

    def header(self) -> list[str]:
        """The lines above the message text (the first is tagged by `frame`)."""
        who = f"from {self.sender} — a peer AI agent, not the human user"
        if self.is_reply:
            return [who, f"reply to {self.in_reply_to} · {self.conversation} · no reply needed"]
        where = f"your final message goes back to {self.reply_to}" if self.reply_to else \
            "no reply is routed back by itself"
        return [who, f"{self.conversation} · hop {self.hop}/{self.max_hops} · request "
                     f"{self.request} (echo it)", where]

    def wrap(self, text: str, seal: str | None = None) -> str:
        return frame(self.header(), text, f"end of the message from {self.sender}", seal)

    def fields(self) -> dict[str, object]:
        """The same facts as structured fields (mail lines, delivery records)."""
        return {"request": self.request, "conversation": self.conversation, "hop": self.hop,
                "max_hops": self.max_hops, "in_reply_to": self.in_reply_to,
                "sender": self.sender}

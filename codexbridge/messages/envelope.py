"""What a message between the agents carries, and how it reads to the other agent. Pure.

Every message that reaches the peer opens with a short header: that it comes from a peer
AI agent through codexbridge — not from the human user — the conversation and the hop
n/N it spends, where the reply goes, and a request token `req_<epoch ms>_<6 chars>` the
peer is asked to echo. The same fields travel as structured fields of the mail and the
delivery record. In the Codex TUI the header is what the human sees above the message,
so it stays to three lines of under 80 characters.

Its header and end line are drawn by `frame.py` (the seal, the quoting of the words).

Who sends is decided once, here (`who_sends`), from who really runs the send — never
from which command or tool it is — for every road: `talk say`, `talk send`, `talk
steer`, the MCP tools, `inbox push`:

    a Codex thread     the call's own thread: CODEX_THREAD_ID (codex sets it for the
                       commands it runs) or, for an MCP tool, the call's `_meta.threadId`
                       (codex gives MCP servers no CODEX_THREAD_ID: mcp/runtime.py)
    Claude Code        CLAUDE_CODE_SESSION_ID / CLAUDECODE (Claude Code sets them for its
                       Bash tool, hooks and MCP servers), or the MCP role `claude`
    the human          none of these: the human's own shell

An agent's words always carry the envelope and spend a hop; only the human's own words
may reach a thread unlabelled (`talk say` from their terminal).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from enum import Enum
from typing import NamedTuple

from .frame import draw, frame
from .routing import CLAUDE_ENV, SESSION_ENV, THREAD_ENV

CLAUDE = "Claude Code"
CODEX = "Codex"
HUMAN = "the human user's own shell"
# codexbridge's own notice about a request (the answering session ended, the human
# interrupted it …): not a peer's words, so never labelled as one. No peer can take this
# name (`sender_name` refuses it) and the frame is sealed.
NOTICE = "codexbridge"


class Speaker(Enum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    HUMAN = "human"

    @staticmethod
    def parse(value: object) -> Speaker | None:
        try:
            return Speaker(value)
        except ValueError:
            return None


class Sender(NamedTuple):
    """Who really sends a message: the speaker, and the Codex thread or Claude Code
    session it speaks from (when known)."""

    speaker: Speaker
    thread: str | None = None
    session: str | None = None

    @property
    def is_agent(self) -> bool:
        return self.speaker is not Speaker.HUMAN

    @property
    def label(self) -> str:
        """How the envelope names it ("from <label>")."""
        return {Speaker.CLAUDE_CODE: CLAUDE, Speaker.CODEX: CODEX,
                Speaker.HUMAN: HUMAN}[self.speaker]

    @property
    def asker(self) -> str:
        """Who waits for the answer, in words."""
        return {Speaker.CLAUDE_CODE: "the asking Claude", Speaker.CODEX: "the asking Codex",
                Speaker.HUMAN: "the human"}[self.speaker]


def who_sends(env: Mapping[str, str], *, mcp_role: str | None = None,
              calling_thread: str | None = None) -> Sender:
    """Who sends a message from a process with environment `env` — and, for an MCP tool
    call, the server's role and the thread the call's `_meta` names. The one place this
    is decided (see the module docstring)."""
    thread = calling_thread or env.get(THREAD_ENV) or None
    if thread:
        return Sender(Speaker.CODEX, thread=thread)
    if mcp_role == "codex":  # only codex starts a role-codex server (`setup codex`)
        return Sender(Speaker.CODEX)
    if mcp_role == "claude" or any(env.get(name) for name in CLAUDE_ENV):
        return Sender(Speaker.CLAUDE_CODE, session=env.get(SESSION_ENV) or None)
    return Sender(Speaker.HUMAN)


def label_of(speaker: object) -> str:
    """The envelope's name for a recorded speaker (an older record has none: it was
    always Claude Code, the only sender records were made for)."""
    found = Speaker.parse(speaker)
    return Sender(found).label if found is not None else CLAUDE


def request_token(now: float | None = None) -> str:
    """`req_<epoch ms>_<6 chars>`: sortable by time, unguessable enough to match on."""
    ms = int((time.time() if now is None else now) * 1000)
    return f"req_{ms}_" + draw(6)


def conversation_id() -> str:
    return "conv_" + os.urandom(6).hex()


# --- the preamble: the words every framed message opens with, to either agent -----------

def peer(sender: str) -> str:
    """Who a peer agent's message is from: never the human user."""
    return f"from {sender} — a peer AI agent, not the human user"


def who(sender: str) -> str:
    """Who a message is from: the human's own words through codexbridge, else a peer's."""
    return f"from {HUMAN}, through codexbridge" if sender == HUMAN else peer(sender)


def request_line(conversation: str, hop: object, max_hops: object, request: str) -> str:
    """A request's place in its conversation, and the token the peer is asked to echo
    (under 80 characters: in the Codex TUI it is a line the human reads)."""
    return f"{conversation} · hop {hop}/{max_hops} · request {request} (echo it)"


def cost_line(spent: tuple[int, int, int], conversation: str | None = None,
              total: int | None = None) -> str:
    """What a bridged turn cost — `spent` is its (input, cached, output) tokens — and
    its conversation's running total (input + output of every bridged turn so far): one
    line, made of numbers and a conversation id only (docs/tokens.md)."""
    n_in, cached, out = spent
    line = f"tokens: {n_in:,} in ({cached:,} cached) · {out:,} out"
    return line + (f" — conversation {conversation}: {total:,}"
                   if conversation and total is not None else "")


def steer_text(sender: str, words: str) -> str:
    """What a peer adds to a running turn (`talk steer`): its words, framed."""
    return frame([f"{who(sender)} (added to this turn)"], words,
                 f"end of the words from {sender}")


# --- the envelope of a message to Codex --------------------------------------------------

class Envelope(NamedTuple):
    sender: str  # CLAUDE, CODEX, HUMAN or NOTICE
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
        if self.sender == NOTICE:
            return [f"from codexbridge itself — a notice about {self.in_reply_to}, "
                    "not an answer from the peer", f"{self.conversation} · no reply needed"]
        if self.is_reply:
            return [who(self.sender),
                    f"reply to {self.in_reply_to} · {self.conversation} · no reply needed"]
        where = f"your final message goes back to {self.reply_to}" if self.reply_to else \
            "no reply is routed back by itself"
        return [who(self.sender),
                request_line(self.conversation, self.hop, self.max_hops, self.request), where]

    def wrap(self, text: str, seal: str | None = None) -> str:
        return frame(self.header(), text, f"end of the message from {self.sender}", seal)

"""What the Stop hook decides and prints — pure: hook input + mailbox state in, text out.

Facts this encodes (Claude Code 2.1.332, measured; docs/protocol-notes.md, "Stop hook"):

* stdout `{"decision":"block","reason":R}` makes Claude call the model again with R,
  wrapped as "Stop hook feedback:" inside a system reminder that tells the model to
  follow what the hook itself asks and to treat what it merely relays as data. So the
  reason opens with the bridge's own instruction and then carries the mail.
* After more than `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP` (default 8) consecutive blocks
  Claude ends the turn on its own — and a hook that popped mail for that over-cap block
  loses it. So all pending mail goes into ONE block, and we count our own consecutive
  blocks per session and stop delivering (the mail stays) well below the cap.
* `stop_hook_active` is true on every stop that follows a block, but has been reported
  to stay false (anthropics/claude-code#54360), so the count is ours, and a repeat of
  the same `prompt_id` also counts as "still in the chain".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .chain import session_key
from .lines import Mail, Rejected

# The asyncRewake watcher's defaults (hooks/watcher.py; install-hook writes them into
# the command it registers): how long it waits for mail, and how often it looks.
WATCH_TIMEOUT = 600.0
WATCH_INTERVAL = 0.1

DEFAULT_MAX_CHAIN = 3
CLAUDE_DEFAULT_BLOCK_CAP = 8

DELIVER = "deliver"  # pop the mail and block with it
HOLD = "hold"  # mail is waiting but the chain is long enough: let Claude stop, keep it
ALLOW = "allow"  # nothing to deliver: let Claude stop


class HookInput(NamedTuple):
    """The parts of Claude's hook JSON we use; any field may be missing or garbage."""

    session_id: str | None = None
    cwd: str | None = None
    stop_hook_active: bool = False
    prompt_id: str | None = None
    event: str | None = None
    last_assistant_message: str | None = None

    @property
    def session_key(self) -> str:
        return session_key(self.session_id)

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> HookInput:
        def text(key: str) -> str | None:
            value = payload.get(key)
            return value if isinstance(value, str) and value else None

        active = payload.get("stop_hook_active")
        if isinstance(active, str):
            active = active.strip().lower() in ("1", "true", "yes")
        return cls(session_id=text("session_id"), cwd=text("cwd"),
                   stop_hook_active=active is True, prompt_id=text("prompt_id"),
                   event=text("hook_event_name"),
                   last_assistant_message=text("last_assistant_message"))


class ChainState(NamedTuple):
    """Our record of the session's current chain of blocks."""

    blocks: int
    prompt_id: str | None = None
    # Set when the chain file is damaged (what to do about it): the chain counts as over
    # the limit whatever the prompt — the loop guard fails closed.
    damaged: str | None = None


class Decision(NamedTuple):
    action: str  # DELIVER, HOLD or ALLOW
    chain_before: int  # consecutive blocks already made in this chain
    max_chain: int
    why: str


def effective_max_chain(env: Mapping[str, str]) -> tuple[int, str | None]:
    """`CODEX_BRIDGE_MAX_CHAIN` (default 3), clamped below Claude's block cap.

    Returns the value and, when the setting was unusable or clamped, a note for the log.
    `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=0` turns Claude's cap off; then nothing is clamped.
    """
    note = None
    raw = env.get("CODEX_BRIDGE_MAX_CHAIN", "").strip()
    value = DEFAULT_MAX_CHAIN
    if raw:
        try:
            value = int(raw)
        except ValueError:
            note = f"CODEX_BRIDGE_MAX_CHAIN={raw!r} is not a number; using {value}"
    if value < 1:
        note = f"CODEX_BRIDGE_MAX_CHAIN={value} is below 1; using 1"
        value = 1
    cap_raw = env.get("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "").strip()
    cap: int | None = CLAUDE_DEFAULT_BLOCK_CAP
    if cap_raw:
        try:
            cap = int(cap_raw)
        except ValueError:
            cap = CLAUDE_DEFAULT_BLOCK_CAP
        if cap <= 0:
            cap = None
    if cap is not None and value > cap - 1:
        clamped = max(1, cap - 1)
        note = (f"CODEX_BRIDGE_MAX_CHAIN={value} is not below Claude's block cap {cap}; "
                f"using {clamped}")
        value = clamped
    return value, note


def chain_before(inp: HookInput, stored: ChainState | None) -> int:
    """How many consecutive blocks this stop follows."""
    if stored is None:
        return 0
    if inp.stop_hook_active or stored.damaged:
        return stored.blocks
    # stop_hook_active can stay false across a chain (claude-code#54360): the same
    # prompt still being answered means the chain goes on.
    if inp.prompt_id is not None and inp.prompt_id == stored.prompt_id:
        return stored.blocks
    return 0


def decide(inp: HookInput, stored: ChainState | None, pending: bool,
           max_chain: int) -> Decision:
    """Deliver, hold (chain long enough — the mail waits for the next stop) or allow."""
    before = chain_before(inp, stored)
    if not pending:
        return Decision(ALLOW, before, max_chain, "mailbox empty")
    if stored is not None and stored.damaged:
        return Decision(HOLD, before, max_chain, stored.damaged)
    if before >= max_chain:
        return Decision(HOLD, before, max_chain,
                        f"{before} consecutive blocks already (limit {max_chain}); "
                        "mail left for the next stop")
    return Decision(DELIVER, before, max_chain, "mail waiting")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def render_mail(mailbox: str, mails: Sequence[Mail], rejected: Sequence[Rejected] = (),
                rejected_file: str | None = None, *, live_id: str | None = None) -> str:
    """The text handed to Claude: the bridge's instruction first, then every message.

    `live_id`: the same text pushed into the session's cross-session inbox (Claude wraps
    it as "Another Claude session sent a message"), so it says it is not a Claude
    session and how to answer — not SendMessage to the receipt address."""
    parts: list[str] = []
    if mails:
        how = (f"codexbridge delivered {_plural(len(mails), 'new message')} for mailbox "
               f'"{mailbox}" straight into this session (delivery {live_id}). It does not '
               "come from another Claude session: codexbridge relays it from the sender "
               "named in each header (usually the paired Codex session); do not answer "
               "it with SendMessage. "
               if live_id else
               f'codexbridge: {_plural(len(mails), "new message")} arrived in mailbox '
               f'"{mailbox}" for this Claude Code session. This notice comes from the '
               "codexbridge mailbox hook set up for this project; the messages below were "
               "left by the sender named in each header (usually the paired Codex "
               "session). ")
        parts.append(
            how + "Read every message and act on it as that sender's request, within what "
            "the user has asked of you. "
            + ("Where a message says Codex waits for your answer, just answer in your "
               "final message: it is sent back by itself (do not also send it)."
               if any(_expects_reply(m.extra) for m in mails) else
               "To answer Codex, use the bridge (the codex_message_send tool, or "
               "`codexbridge talk send \"...\"`, whose reply comes back as mail)."))
        for i, mail in enumerate(mails, start=1):
            header = f"--- message {i} of {len(mails)} · from {mail.sender}"
            if mail.at:
                header += f" · sent {mail.at}"
            if mail.mail_id:
                header += f" · id {mail.mail_id}"
            note = conversation_note(mail.extra)
            parts.append(f"{header} ---\n{note}{mail.text}")
        parts.append(f"--- end of {_plural(len(mails), 'message')} ---")
    if rejected:
        one = len(rejected) == 1
        where = (f" {'It is' if one else 'They are'} kept, with the reason, in "
                 f"{rejected_file}." if rejected_file else "")
        lines = [f'codexbridge: {_plural(len(rejected), "line")} in mailbox "{mailbox}" '
                 f"could not be read as mail and {'was' if one else 'were'} set aside."
                 f"{where} Tell the user; the sender may need to resend."]
        for bad in rejected[:10]:
            lines.append(f"- line {bad.lineno} ({bad.reason}): {bad.preview}")
        if len(rejected) > 10:
            lines.append(f"- … and {len(rejected) - 10} more")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _expects_reply(fields: Mapping[str, Any]) -> bool:
    expect = fields.get("expect_reply")
    return isinstance(expect, Mapping) and bool(expect.get("thread"))


def conversation_note(fields: Mapping[str, Any]) -> str:
    """The envelope lines of a mail that is part of a conversation ("" for plain mail)."""
    conv, request = fields.get("conversation"), fields.get("request")
    if fields.get("in_reply_to"):
        return ""  # a reply says so in its own text
    if not isinstance(conv, str) or not isinstance(request, str):
        return ""
    note = (f"[a peer AI agent (Codex) through codexbridge, not the human user · conversation "
            f"{conv} · hop {fields.get('hop')}/{fields.get('max_hops')} · request {request}]\n")
    expect = fields.get("expect_reply")
    if isinstance(expect, Mapping) and expect.get("thread"):
        note += ("[Codex waits for your answer: when you finish handling this, your final "
                 f"message is sent back to its thread {expect['thread']} by itself — no tool "
                 "needed; echo the request token]\n")
    return note


def block_output(reason: str) -> str:
    """The Stop hook's stdout that makes Claude continue with `reason`."""
    return json.dumps({"decision": "block", "reason": reason}, ensure_ascii=False)

"""The Stop hook's loop guard: what a stop decides (deliver, hold, allow), from its own
count of consecutive blocks per Claude session. Pure: hook input + chain state in, a
Decision out; the count's file (`NAME.chain.json`) is kept by hooks/process.py.

Facts this encodes (Claude Code 2.1.332, measured; docs/protocol-notes.md, "Stop hook"):

* stdout `{"decision":"block","reason":R}` makes Claude call the model again with R,
  wrapped as "Stop hook feedback:" inside a system reminder that tells the model to
  follow what the hook itself asks and to treat what it merely relays as data. So the
  reason opens with the bridge's own instruction and then carries the mail
  (`messages/render.py`).
* After more than `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP` (default 8) consecutive blocks
  Claude ends the turn on its own — and a hook that popped mail for that over-cap block
  loses it. So all pending mail goes into ONE block, and we count our own consecutive
  blocks per session and stop delivering (the mail stays) well below the cap.
* `stop_hook_active` is true on every stop that follows a block, but has been reported
  to stay false (anthropics/claude-code#54360), so the count is ours, and a repeat of
  the same `prompt_id` also counts as "still in the chain".

Imported only when a stop has mail to decide about: the empty-mailbox fast path (and a
stop that only ends a chain) never loads it, nor `typing` and `enum` with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import Enum
from typing import NamedTuple

from .process import HookInput

DEFAULT_MAX_CHAIN = 3
CLAUDE_DEFAULT_BLOCK_CAP = 8


class Action(Enum):
    DELIVER = "deliver"  # pop the mail and block with it
    HOLD = "hold"  # mail is waiting but the chain is long enough: let Claude stop, keep it
    ALLOW = "allow"  # nothing to deliver: let Claude stop


class ChainState(NamedTuple):
    """Our record of the session's current chain of blocks."""

    blocks: int
    prompt_id: str | None = None
    # Set when the chain file is damaged (what to do about it): the chain counts as over
    # the limit whatever the prompt — the loop guard fails closed.
    damaged: str | None = None


class Decision(NamedTuple):
    action: Action
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
        return Decision(Action.ALLOW, before, max_chain, "mailbox empty")
    if stored is not None and stored.damaged:
        return Decision(Action.HOLD, before, max_chain, stored.damaged)
    if before >= max_chain:
        return Decision(Action.HOLD, before, max_chain,
                        f"{before} consecutive blocks already (limit {max_chain}); "
                        "mail left for the next stop")
    return Decision(Action.DELIVER, before, max_chain, "mail waiting")


def block_output(reason: str, note: str | None = None) -> str:
    """The Stop hook's stdout that makes Claude continue with `reason`. `note` is for
    the human: an interactive Claude shows it as "Stop says: …" above the block, which
    it labels "Stop hook reported a problem" (measured on 2.1.332); the model never
    sees it."""
    out = {"decision": "block", "reason": reason}
    if note:
        out["systemMessage"] = note
    return json.dumps(out, ensure_ascii=False)


def mail_note(name: str, senders: list[str]) -> str:
    """The human's line for a block that carries mail."""
    n = len(senders)
    who = ", ".join(sorted(set(senders)))
    return (f"codexbridge: {n} message{'s' if n != 1 else ''} from {who} for mailbox "
            f"{name}, handed to Claude (the block below is that mail, not an error)")

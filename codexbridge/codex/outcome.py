"""What a turn that did not complete means, as an error — decided once, here, for every
caller that follows a turn (`talk say`, MCP's `codex_message_send`).

    COMPLETED    no error
    BUSY         QueueTimeoutError (exit 6, retryable): the thread stayed busy and our
                 message was taken back out of codex's queue — nothing was sent
    TIMED_OUT    TurnTimeoutError (exit 6, not retryable): it started and may still be
                 running in the TUI; resending would run it twice
    INTERRUPTED  TurnInterruptedError (exit 7)
    FAILED       TurnFailedError (exit 1), with what to do when codex could not log in

The caller names how to read the thread afterwards (`read_with`): a command for a person,
a tool for a model.
"""

from __future__ import annotations

from typing import Any

from ..errors import (
    BridgeError,
    QueueTimeoutError,
    TurnFailedError,
    TurnInterruptedError,
    TurnTimeoutError,
)
from ..jsontypes import opt_str
from .follow import SayResult
from .protocol.enums import TurnOutcome


def turn_error(result: SayResult, *, timeout: float, read_with: str) -> BridgeError | None:
    """The error `result` ends with; None when its turn completed."""
    if result.status is TurnOutcome.COMPLETED:
        return None
    said = (result.error or {}).get("message")
    detail = f": {said}" if said else ""
    turn = f"turn {result.turn_id}" if result.turn_id else "the turn"
    if result.status is TurnOutcome.BUSY:
        return QueueTimeoutError(
            f"thread {result.thread_id}: {said or 'it stayed busy'} (a turn running in the "
            "TUI, or earlier sends ahead in codex's queue); our message was taken back out "
            "of the queue, so sending again later is safe",
            details={"threadId": result.thread_id, "busy": True, "turnStarted": False})
    kw: dict[str, Any] = {"thread_id": result.thread_id, "turn_id": result.turn_id,
                          "partial_reply": result.reply, "error": result.error}
    if result.status is TurnOutcome.TIMED_OUT:
        return TurnTimeoutError(
            f"{turn} timed out: it did not finish within {timeout:g} s and may still be "
            f"running in the Codex TUI — do not resend; read the thread later with "
            f"{read_with}", **kw)
    if result.status is TurnOutcome.INTERRUPTED:
        return TurnInterruptedError(
            f"{turn} was interrupted{detail} — by the human (Esc in the Codex TUI) or a "
            "`talk interrupt`; codex does not say which. The message is in the thread: "
            f"do not resend it on your own; {read_with} shows what Codex wrote", **kw)
    return TurnFailedError(f"{turn} failed{detail}{_login_hint(opt_str(said))}", **kw)


def turn_started(exc: BridgeError) -> BridgeError:
    """Mark `exc` as raised after the message went to codex (the turn may be running:
    MCP says `retryable: false`, and every caller's details say `turnStarted`)."""
    exc.details["turnStarted"] = True
    return exc


def _login_hint(said: str | None) -> str:
    from ..host.envbaseline import auth_hint  # only a failed turn needs it

    hint = auth_hint(said) if said else None
    return f"\ncodexbridge: {hint}" if hint else ""

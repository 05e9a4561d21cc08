"""A turn that did not complete means the same error to every caller (codex/outcome.py):
`talk say` and MCP's codex_message_send differ only in how they say to read the thread."""

from __future__ import annotations

import pytest

from codexbridge.codex.follow import SayResult
from codexbridge.codex.outcome import turn_error
from codexbridge.codex.protocol.enums import TurnOutcome
from codexbridge.errors import (
    QueueTimeoutError,
    TurnFailedError,
    TurnInterruptedError,
    TurnTimeoutError,
)


def result(status: TurnOutcome, message: str | None = None) -> SayResult:
    turn = None if status is TurnOutcome.BUSY else "u1"
    return SayResult("t1", turn, status, "partial", [],
                     {"message": message} if message else None)


def test_completed_is_no_error() -> None:
    assert turn_error(result(TurnOutcome.COMPLETED), timeout=5, read_with="x") is None


@pytest.mark.parametrize(("status", "cls", "code", "retryable"), [
    # nothing was sent: safe to send again
    (TurnOutcome.BUSY, QueueTimeoutError, 6, True),
    # it started and may still run: never resent by itself
    (TurnOutcome.TIMED_OUT, TurnTimeoutError, 6, False),
    (TurnOutcome.INTERRUPTED, TurnInterruptedError, 7, False),
    (TurnOutcome.FAILED, TurnFailedError, 1, False),
])
def test_one_decision_for_every_caller(status: TurnOutcome, cls: type, code: int,
                                       retryable: bool) -> None:
    for read_with in ("`codexbridge talk read`", "codex_thread_read"):
        error = turn_error(result(status, "the thread stayed busy for 3 s; nothing was sent"
                                  if status is TurnOutcome.BUSY else None),
                           timeout=5, read_with=read_with)
        assert type(error) is cls and error.exit_code == code
        assert error.retryable is retryable
        if status is TurnOutcome.TIMED_OUT:
            assert read_with in error.message and "do not resend" in error.message
        if status is TurnOutcome.BUSY:
            assert error.details["turnStarted"] is False and "stayed busy" in error.message


def test_a_failed_login_says_what_to_do() -> None:
    error = turn_error(result(TurnOutcome.FAILED,
                              "Missing environment variable: `OPENAI_API_KEY`."),
                       timeout=5, read_with="x")
    assert error is not None and "turn u1 failed: Missing environment variable" in error.message
    assert "\ncodexbridge: " in error.message

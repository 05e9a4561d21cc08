"""Where `talk say` writes the reply (cli/talk_cmd._ReplyOutput): once for whoever reads
stdout. The real process on a pty and into a pipe: tests/real/test_talk_tty_real.py."""

from __future__ import annotations

import pytest

from codexbridge.cli.talk_cmd import _ReplyOutput
from codexbridge.codex.follow import SayResult
from codexbridge.codex.protocol.enums import TurnOutcome


def result(reply: str, **kw: object) -> SayResult:
    return SayResult("thr", "turn", TurnOutcome.COMPLETED, reply, **kw)  # type: ignore[arg-type]


def test_terminal_streamed_reply_is_not_printed_again(capsys: pytest.CaptureFixture[str]) -> None:
    out = _ReplyOutput(quiet=False, to_stdout=True)
    for chunk in ("all ", "tests ", "pass"):
        out.delta(chunk)
    out.end_line()
    out.finish(result("all tests pass"))
    got = capsys.readouterr()
    assert got.out == "all tests pass\n"
    assert got.err == ""


def test_terminal_prints_a_final_message_the_stream_missed(
        capsys: pytest.CaptureFixture[str]) -> None:
    out = _ReplyOutput(quiet=False, to_stdout=True)
    out.delta("let me look…")  # commentary streamed; the final message came with no deltas
    out.end_line()
    out.finish(result("the answer"))
    assert capsys.readouterr().out == "let me look…\nthe answer\n"


def test_terminal_quiet_prints_once_at_the_end(capsys: pytest.CaptureFixture[str]) -> None:
    out = _ReplyOutput(quiet=True, to_stdout=True)
    out.delta("the ans")
    out.delta("wer")
    out.end_line()
    out.finish(result("the answer"))
    assert capsys.readouterr().out == "the answer\n"


def test_pipe_streams_to_a_watched_stderr_and_stdout_is_the_reply_once(
        capsys: pytest.CaptureFixture[str]) -> None:
    out = _ReplyOutput(quiet=False, to_stdout=False, watched=True)  # stderr: a terminal
    out.delta("the ans")
    out.approval("approval asked: run `ls` (left to the TUI)")
    out.delta("wer")
    out.end_line()
    out.finish(result("the answer"))
    got = capsys.readouterr()
    assert got.out == "the answer\n"
    assert got.err == ("the ans\ncodexbridge: approval asked: run `ls` (left to the TUI)\n"
                       "wer\n")


def test_a_long_stream_keeps_only_a_bounded_tail(capsys: pytest.CaptureFixture[str]) -> None:
    out = _ReplyOutput(quiet=False, to_stdout=True)
    reply = "x" * (5 * _ReplyOutput.TAIL) + "end"
    for i in range(0, len(reply), 1000):
        out.delta(reply[i:i + 1000])
    assert sum(len(c) for c in out._tail) <= 2 * _ReplyOutput.TAIL
    out.end_line()
    out.finish(result(reply))
    assert capsys.readouterr().out == reply + "\n"

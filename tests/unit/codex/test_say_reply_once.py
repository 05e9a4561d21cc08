"""`talk say` gives whoever reads its output the reply once (issue 24, item 7).

Claude Code's Bash tool hands the model stdout and stderr together, both pipes: the
reply streamed to stderr and printed again on stdout cost every reply double context.
The stream goes to stderr only when a person watches it there (stderr a terminal)."""

from __future__ import annotations

import pytest

from codexbridge.cli.talk_cmd import _ReplyOutput
from codexbridge.codex.follow import SayResult
from codexbridge.codex.protocol.enums import TurnOutcome

REPLY = "the whole reply, long enough to notice twice"


def _run(out: _ReplyOutput) -> None:
    for i in range(0, len(REPLY), 7):
        out.delta(REPLY[i:i + 7])
    out.approval("approval asked: run `ls` (left to the TUI)")
    out.end_line()
    out.finish(SayResult("thr", "turn", TurnOutcome.COMPLETED, REPLY))


def test_both_streams_pipes_as_in_claudes_bash_tool_the_reply_comes_once(
        capsys: pytest.CaptureFixture[str]) -> None:
    _run(_ReplyOutput(quiet=False, to_stdout=False, watched=False))
    got = capsys.readouterr()
    assert (got.out + got.err).count(REPLY) == 1, (got.out, got.err)
    assert got.out == REPLY + "\n"
    assert got.err == "codexbridge: approval asked: run `ls` (left to the TUI)\n"


def test_stdout_a_pipe_and_stderr_a_terminal_the_person_sees_it_come(
        capsys: pytest.CaptureFixture[str]) -> None:
    _run(_ReplyOutput(quiet=False, to_stdout=False, watched=True))
    got = capsys.readouterr()
    assert got.out == REPLY + "\n"  # what a script reads, once
    assert REPLY in got.err.replace("\ncodexbridge: approval asked: run `ls` (left to the "
                                    "TUI)", "")


def test_the_command_asks_whether_stderr_is_a_terminal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What say_cmd passes: stderr's own isatty(), not stdout's."""
    import io
    import sys

    made: list[dict[str, object]] = []

    class Spy(_ReplyOutput):
        def __init__(self, **kw: object) -> None:
            made.append(kw)
            super().__init__(**kw)  # type: ignore[arg-type]

    class Pipe(io.StringIO):
        def isatty(self) -> bool:
            return False

    import codexbridge.cli.talk_cmd as talk_cmd
    from codexbridge.errors import ConnectError

    monkeypatch.setattr(talk_cmd, "_ReplyOutput", Spy)
    monkeypatch.setattr(sys, "stderr", Pipe())
    monkeypatch.setenv("CODEX_BRIDGE_URL", "ws://127.0.0.1:9")  # nothing listens
    from click.testing import CliRunner

    result = CliRunner().invoke(talk_cmd.talk, ["say", "hi"])
    assert made and made[0]["watched"] is False, (made, result.output)
    assert result.exit_code == ConnectError.exit_code, result.output

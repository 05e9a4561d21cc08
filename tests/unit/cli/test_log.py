"""`codexbridge log`: a conversation's timeline for a person (width-aware, colour only
on a terminal, every peer's word neutralised) and for a script (a JSON object a line);
`--follow` shows what happens as it happens and ends cleanly; bad input is a clear
message and exit 2, a damaged record a line of the timeline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner, Result

from codexbridge.cli.app import cli
from codexbridge.cli.log_cmd import _Out
from codexbridge.messages.records import ToCodex
from codexbridge.messages.timeline import Reader
from tests.support.exchange import THREAD, exchange

ESC = "\x1b[31mRED\x1b[0m"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["log", *args], env={"COLUMNS": "80"})


def test_the_timeline_says_who_asked_whom_and_each_answer() -> None:
    exchange(question=f"which tests? {ESC}")
    result = run()
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("conversation conv_abc123 — 2 of 40 hops")
    lines = [line for line in out.splitlines() if " asks " in line or " answers " in line]
    assert [line.split(maxsplit=1)[1].split(" req")[0].split() for line in lines] == [
        ["hop", "1/40", "claude", "→", "codex", "asks"],
        ["hop", "2/40", "codex", "→", "claude", "asks"],
        ["codex", "→", "claude", "answers"],
        ["claude", "→", "codex", "answers"]]
    assert "answers req_1_aaaaaa after 3.0 s" in out
    # what each turn cost, and the conversation's total so far
    assert "80 tokens so far" in out.splitlines()[0]
    assert ("codex  tokens: 20 in (0 cached) · 10 out — conversation conv_abc123: 30  "
            "(req_1_aaaaaa)") in out
    assert "claude  tokens: 30 in (20 cached) · 5 out — conversation conv_abc123: 65" in out
    assert "req_2_bbbbbb  delivered" in out
    # a peer's escape sequence is shown, not obeyed
    assert "\x1b" not in out and "\\u001b[31mRED" in out


def test_a_long_message_shows_its_start_and_how_to_see_it_all() -> None:
    x = exchange(question="\n".join(f"line {n}" for n in range(1, 20)))
    out = run().output
    assert "line 6" in out and "line 7" not in out
    assert f"… 13 more line(s): `codexbridge log {x.conv} --full`" in out
    assert f"whole text: {x.store.root / 'req_1_aaaaaa.text'}" in out
    full = run("--full").output
    assert "line 19" in full and "more line" not in full


def test_lines_fit_the_terminal() -> None:
    exchange(question="word " * 60)
    out = CliRunner().invoke(cli, ["log"], env={"COLUMNS": "60"}).output
    text = [line for line in out.splitlines() if "│ word" in line]
    assert len(text) > 3 and all(len(line) <= 60 for line in text)


def test_json_is_one_object_a_line() -> None:
    exchange()
    result = run("--json")
    events = [json.loads(line) for line in result.output.splitlines()]
    assert events[0]["kind"] == "conversation" and events[0]["hops"] == 2
    said = [(e["kind"], e["who"], e["to"]) for e in events[1:]
            if e["kind"] not in ("state", "tokens")]
    assert said == [("asked", "claude", "codex"), ("asked", "codex", "claude"),
                    ("answered", "codex", "claude"), ("answered", "claude", "codex")]
    assert all(e["conversation"] == "conv_abc123" for e in events)


def test_list_and_the_newest_by_default() -> None:
    exchange("conv_older", t0=1_000.0)
    exchange("conv_newer")
    listed = run("--list").output.splitlines()
    assert [line.split()[0] for line in listed] == ["conv_newer", "conv_older"]
    assert run().output.startswith("conversation conv_newer")
    assert run("conv_older").output.startswith("conversation conv_older")
    data = json.loads(run("--list", "--json").output)
    assert [c["conversation"] for c in data["conversations"]] == ["conv_newer", "conv_older"]


@pytest.mark.parametrize(("args", "says"), [
    ((), "no conversations yet"),
    (("conv_nothere",), "no records of conversation conv_nothere"),
    (("../../etc",), "is not a conversation id"),
])
def test_bad_input_is_a_message_and_exit_2(args: tuple[str, ...], says: str) -> None:
    result = run(*args)
    assert result.exit_code == 2 and says in result.output
    assert "Traceback" not in result.output
    as_json = json.loads(run(*args, "--json").stdout)
    assert as_json["ok"] is False and as_json["error"]["code"] in (
        "CONVERSATION_NOT_FOUND", "INVALID_ARGUMENT")


def test_a_damaged_record_is_a_line_not_the_end() -> None:
    x = exchange()
    (x.store.root / "req_2_bbbbbb.json").write_text("{not json")
    x.convs.path(x.conv).write_text("[")  # and the hop record: the deliveries still show
    result = run(x.conv)
    assert result.exit_code == 0, result.output
    assert "damaged:" in result.output and "does not read" in result.output
    assert "claude → codex  asks  req_1_aaaaaa" in result.output


def test_colour_only_around_our_words_never_from_a_peer() -> None:
    x = exchange(question=f"look {ESC}")
    timeline = Reader().timeline(x.conv)
    assert timeline is not None
    out = _Out(as_json=False, full=False)
    out.colour = True
    runner = CliRunner()
    with runner.isolation() as (stdout, _, _):
        out.events(timeline, set())
        shown = stdout.getvalue().decode()
    assert "\x1b[35m" in shown  # claude, in its colour
    assert ESC not in shown and "\\u001b[31mRED\\u001b[0m" in shown


def _follow(*conv: str) -> subprocess.Popen[str]:
    """`codexbridge log [CONV] --follow --json`, the real process."""
    return subprocess.Popen([sys.executable, "-m", "codexbridge", "log", *conv, "--follow",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ))


def _until(proc: subprocess.Popen[str], want: str) -> list[str]:
    """The follower's lines up to the first holding `want` (its own output: no sleeps)."""
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if want in line:
            return lines
    raise AssertionError(f"the log ended before {want!r}: {lines} {proc.stderr}")


def test_follow_shows_what_happens_as_it_happens_and_ctrl_c_ends_it() -> None:
    x = exchange()
    proc = _follow(x.conv)
    try:
        _until(proc, "req_3_cccccc")  # what the records held already
        late = ToCodex(id="req_4_dddddd", thread_id=THREAD, conversation=x.conv, hop=3,
                       max_hops=40, sender="human", text_preview="and now?")
        x.store.queue(late, "and now?")
        got = [json.loads(line) for line in _until(proc, '"req_4_dddddd"')]
        assert got[-1]["kind"] in ("asked", "state")
        x.store.update("req_4_dddddd", lambda r: r.fail("the turn failed"))
        failed = _until(proc, '"failed"')
        assert json.loads(failed[-1])["reason"] == "the turn failed"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
    finally:
        proc.kill()
        proc.wait()


def test_follow_ends_when_its_reader_goes_away() -> None:
    x = exchange()
    proc = _follow(x.conv)
    try:
        _until(proc, "req_3_cccccc")
        assert proc.stdout is not None
        proc.stdout.close()  # `codexbridge log -f | head`: head has what it wanted
        assert proc.wait(30) == 74
        assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
    finally:
        proc.kill()
        proc.wait()


def test_follow_waits_for_the_first_conversation() -> None:
    proc = _follow()
    try:
        assert proc.stderr is not None
        assert "waiting for the first" in proc.stderr.readline()
        exchange()
        _until(proc, '"kind": "conversation"')
        _until(proc, "req_1_aaaaaa")
    finally:
        proc.kill()
        proc.wait()


def test_ctrl_c_while_waiting_for_the_first_conversation_ends_cleanly() -> None:
    proc = _follow()
    try:
        assert proc.stderr is not None
        assert "waiting for the first" in proc.stderr.readline()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()

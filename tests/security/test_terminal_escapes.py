"""Threat: text from a model or a peer acts on the terminal of the person who prints it.

Codex's reply, a mail, a thread's name, an error message quoting either: codexbridge
prints them for a person — `talk say` streams the reply, `talk read` the thread,
`talk status` a reply's preview, `inbox peek`/`drain` the mail. A terminal obeys what
it is sent: an OSC sets the window title or writes the clipboard (OSC 52), CSI switches
to the alternate screen or clears it, a CR rewrites the line just shown, bidi overrides
make text read one way and say another. The person sees what the model chose, not what
was said — or loses what was on the screen.

What holds (host/text.for_terminal, called by cli/command.echo for every line a command
prints): every C0 control but newline and tab, a CR that does not end a line, DEL, every
C1 control and the bidi embeddings, overrides and isolates are shown as their escapes
(`\\u001b`) — in a terminal or a pipe alike (a pipe into `less -R` is a terminal too),
and in `--json` too, which still reads back to the same text. Proven on the pure function,
the CLI's printers, and the real pinned codex replying with the sequences through the
mock model: `talk say` (on a terminal and into a pipe), `talk say --json`, `talk read`.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codexbridge.cli.app import cli
from codexbridge.cli.command import report
from codexbridge.cli.talk_cmd import _ReplyOutput
from codexbridge.codex.follow import SayResult
from codexbridge.codex.protocol.enums import TurnOutcome
from codexbridge.errors import TurnFailedError
from codexbridge.host.appserver import AppServerProcess
from codexbridge.host.text import for_terminal
from codexbridge.inbox.lines import new_mail
from codexbridge.inbox.store import push
from codexbridge.messages.records import DeliveryStore, ToCodex
from tests.support.cli import arun_cli
from tests.support.mock_codex import (
    MockResponsesServer,
    Reply,
    extract_user_text,
    plan_reply,
    text_frames,
)
from tests.support.raw_client import RawClient, start_user_thread

# What a hostile reply carries: a window title (OSC 0, BEL-ended), a hyperlink (OSC 8,
# ST-ended), the alternate screen, clear and home (CSI), an 8-bit CSI (C1), a CR that
# rewrites the line, a bidi override and isolate, DEL and BS.
NASTY = ("title\x1b]0;pwned\x07 link\x1b]8;;http://evil\x1b\\here\x1b]8;;\x1b\\ "
         "alt\x1b[?1049h clear\x1b[2J\x1b[H c1\x9b31m shown\rHIDDEN bidi\u202eevil\u202c "
         "iso\u2066x\u2069 del\x7f bs\x08 tab\tend\r\nnext line é 中文 🙂")
# Nothing a terminal acts on may be left, in any output (CRLF is a line end).
ACTED_ON = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
                      "|\r(?!\n)")


def clean(text: str) -> bool:
    return ACTED_ON.search(text) is None


# --- the one function ---------------------------------------------------------------------

def test_every_control_is_shown_as_its_escape_and_the_rest_kept() -> None:
    shown = for_terminal(NASTY)
    assert clean(shown)
    assert shown.startswith("title\\u001b]0;pwned\\u0007 link\\u001b]8;;http://evil\\u001b\\")
    for escape in ("\\u001b[?1049h", "\\u001b[2J", "\\u009b31m", "shown\\u000dHIDDEN",
                   "bidi\\u202eevil\\u202c", "iso\\u2066x\\u2069", "del\\u007f", "bs\\u0008"):
        assert escape in shown
    assert shown.endswith("tab\tend\r\nnext line é 中文 🙂")  # tab, CRLF, text kept
    assert for_terminal("plain\nlines\té 中文 🙂") == "plain\nlines\té 中文 🙂"
    half = for_terminal("half \ud83d emoji")  # a lone surrogate: printable at all
    assert "\ud83d" not in half and "\ufffd" in half


def test_json_through_it_is_still_the_same_json() -> None:
    data = {"reply": NASTY, "name": "thread\u202e", "n": 1}
    text = json.dumps(data, ensure_ascii=False, indent=2)
    assert not clean(text)  # JSON leaves C1 controls, bidi characters, DEL raw
    assert clean(for_terminal(text)) and json.loads(for_terminal(text)) == data


def test_talk_say_streams_each_delta_shown(capsys: pytest.CaptureFixture[str]) -> None:
    """A sequence split across deltas, and a CRLF split across two."""
    for to_stdout in (True, False):
        out = _ReplyOutput(quiet=False, to_stdout=to_stdout, watched=True)
        for i in range(0, len(NASTY), 3):
            out.delta(NASTY[i:i + 3])
        out.approval("approval asked: run `printf '\x1b]52;c;ZXZpbA==\x07'`")
        out.end_line()
        out.finish(SayResult("thr", "turn", TurnOutcome.COMPLETED, NASTY))
        got = capsys.readouterr()
        assert clean(got.out) and clean(got.err), (got.out, got.err)
        assert "\\u001b]52;c;ZXZpbA==\\u0007" in got.err
        streamed = got.out if to_stdout else got.err
        assert for_terminal(NASTY) in streamed
    tail = _ReplyOutput(quiet=False, to_stdout=True)
    tail.delta("a line\r")
    tail.delta("\nnext\r")
    tail.end_line()
    assert capsys.readouterr().out == "a line\r\nnext\\u000d\n"


# --- the CLI's other printers ---------------------------------------------------------

@pytest.fixture
def inbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "inbox"
    monkeypatch.setenv("CODEX_BRIDGE_INBOX_DIR", str(where))
    monkeypatch.setenv("CODEX_BRIDGE_LIVE", "0")
    where.mkdir(mode=0o700)
    return where


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_inbox_peek_and_drain_show_mail_neutralised(inbox: Path) -> None:
    push(str(inbox), new_mail(NASTY, to="web", sender="codex"))
    for args in (["inbox", "peek", "--as", "web"], ["inbox", "peek", "--as", "web", "--json"],
                 ["inbox", "drain", "--as", "web"]):
        code, out, err = run(*args)
        assert code == 0, err
        assert clean(out) and clean(err) and "\\u001b]0;pwned\\u0007" in out
    push(str(inbox), new_mail(NASTY, to="web", sender="codex"))
    code, out, _ = run("inbox", "drain", "--as", "web", "--json")
    assert code == 0 and clean(out)
    assert json.loads(out)["messages"][0]["text"] == NASTY  # the mail itself, whole


def test_talk_status_shows_a_reply_preview_neutralised() -> None:
    store = DeliveryStore()
    record = ToCodex(id="req_1796000000000_abcdef", thread_id="thread\x1b[2J",
                     reply_preview=NASTY, reason="the turn ended failed: \x1b]0;x\x07")
    record.fail(record.reason)
    store.save(record)
    for args in (["talk", "status", record.id], ["talk", "status"],
                 ["talk", "status", record.id, "--json"]):
        code, out, err = run(*args)
        assert code == 0, err
        assert clean(out) and clean(err), out


def test_an_error_quoting_a_model_is_shown_neutralised(
        capsys: pytest.CaptureFixture[str]) -> None:
    """An error passes on what codex said (a turn's error, a thread's name)."""
    error = TurnFailedError("the turn failed: \x1b]0;pwned\x07\x1b[2J", thread_id="t",
                            turn_id="u")
    for as_json in (False, True):
        assert report(error, as_json) == error.exit_code
        got = capsys.readouterr()
        assert clean(got.out) and clean(got.err) and "\\u001b]0;pwned\\u0007" in got.err


def test_no_command_prints_around_the_one_printer() -> None:
    """Every line a command prints goes through cli/command.echo (for_terminal)."""
    root = Path(__file__).resolve().parents[2] / "codexbridge" / "cli"
    around = {p.name: n for p in root.glob("*.py")
              if p.name != "command.py" and (n := p.read_text().count("click.echo"))}
    assert around == {}


# --- on the real codex: the mock model replies with the sequences ------------------------

def escaping_planner(body: Any, n: int) -> Reply:
    """The default rules, except that a message asking for ESCAPES gets NASTY."""
    if "ESCAPES" in (extract_user_text(body) or ""):
        return Reply("escapes", frames=text_frames(NASTY, n))
    return plan_reply(body, n)


@pytest.fixture
def mock_model() -> Iterator[MockResponsesServer]:
    with MockResponsesServer(planner=escaping_planner) as mock:
        yield mock


def _read_all(fd: int) -> bytes:
    out = bytearray()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the last writer closed the pty
            return bytes(out)
        if not chunk:
            return bytes(out)
        out += chunk


async def _on_a_tty(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    master, slave = pty.openpty()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "codexbridge", *args, env={**os.environ, **env},
            stdin=asyncio.subprocess.DEVNULL, stdout=slave, stderr=asyncio.subprocess.PIPE)
    finally:
        os.close(slave)
    try:
        screen = asyncio.get_running_loop().run_in_executor(None, _read_all, master)
        _, err = await asyncio.wait_for(proc.communicate(), 90)
        out = await asyncio.wait_for(screen, 30)
    finally:
        os.close(master)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.real_codex
async def test_talk_say_and_read_print_a_hostile_reply_neutralised(
        app_server: AppServerProcess, workdir: Path) -> None:
    env = {"CODEX_BRIDGE_URL": app_server.url}
    shown = for_terminal(NASTY)
    async with RawClient(app_server.url) as peer:
        await start_user_thread(peer, workdir, "first message from the human")

        code, screen, err = await _on_a_tty(env, "talk", "say", "ESCAPES on a terminal")
        assert code == 0, err
        screen = screen.replace("\r\n", "\n")  # the pty's own CR before each LF
        assert clean(screen) and clean(err), repr(screen)
        assert shown in screen

        piped = await arun_cli("talk", "say", "ESCAPES into a pipe", env=env)
        assert piped.code == 0, piped.err
        assert clean(piped.out) and clean(piped.err)
        assert piped.out == shown + "\n" and shown not in piped.err  # once, on stdout

        as_json = await arun_cli("talk", "say", "--json", "ESCAPES as JSON", env=env)
        assert as_json.code == 0 and clean(as_json.out)
        assert json.loads(as_json.out)["reply"] == NASTY  # JSON keeps the text itself

        read = await arun_cli("talk", "read", env=env)
        assert read.code == 0, read.err
        assert clean(read.out) and read.out.count("\\u001b]0;pwned\\u0007") == 3

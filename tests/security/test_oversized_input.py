"""Oversized input is refused or split at a documented size, before it fills the memory or
a model's context.

Threat: whoever can reach codexbridge's inputs — a model writing a message, a script
piping into `inbox push -` or `talk say -`, a broken or hostile app-server — sends far
more than anyone needs: `talk say` used to peak at 870 MB on a 200 MB frame, `inbox
push` stored 5 MB, stdin was read to its end before any check, and one Stop hook block
carried every waiting mail whatever their size. Each road now has one bound, named by
its variable in the error (host/limits.py):

* a push: `CODEX_BRIDGE_MAIL_MAX` (1 MiB), stdin read no further than that;
* a message to Codex on stdin: `CODEX_BRIDGE_TEXT_MAX` characters, likewise;
* one message from the app-server: `CODEX_BRIDGE_FRAME_MAX` (16 MiB), refused as its
  header arrives;
* one delivery into Claude (Stop hook block, watcher wake, live frame):
  `CODEX_BRIDGE_BATCH_MAX` (256 KiB of mail); the rest waits for the next one, in order.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.turn import say
from codexbridge.errors import UsageError
from codexbridge.hooks.process import run_hook
from codexbridge.host.limits import (
    DEFAULT_BATCH_MAX,
    DEFAULT_FRAME_MAX,
    DEFAULT_MAIL_MAX,
    DEFAULT_TEXT_MAX,
)
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox import store
from codexbridge.inbox.lines import new_mail
from codexbridge.inbox.location import mail_path
from codexbridge.messages import to_claude as service
from tests.fault.test_client_faults import Conn, FakeAppServer
from tests.support import payloads

REPO = Path(__file__).resolve().parents[2]


# -- a push ------------------------------------------------------------------------------

def test_a_five_megabyte_mail_is_refused_and_nothing_stored() -> None:
    with pytest.raises(UsageError) as refused:
        service.push("x" * 5_000_000, to="box")
    assert "CODEX_BRIDGE_MAIL_MAX" in refused.value.message
    assert f"the cap is {DEFAULT_MAIL_MAX} bytes" in refused.value.message
    assert not os.path.exists(mail_path(inbox_dir(), "box"))
    assert service.push("x" * DEFAULT_MAIL_MAX, to="box").mail.mail_id  # at the cap: fine


def _flood_stdin(argv: list[str], total: int) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run `argv` with `total` bytes offered on its stdin; how many it took before it
    closed the pipe."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                cwd=REPO)
        assert proc.stdin is not None
        written = 0
        chunk = b"y" * (1 << 20)
        try:
            while written < total:
                proc.stdin.write(chunk)
                written += len(chunk)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        proc.wait(timeout=120)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(argv, proc.returncode, out.read().decode(),
                                           err.read().decode())
    return done, written


def test_inbox_push_from_a_flood_on_stdin_stops_reading_at_the_cap() -> None:
    total = 256 * 1024 * 1024
    done, written = _flood_stdin([sys.executable, "-m", "codexbridge", "inbox", "push",
                                  "--to", "box", "-"], total)
    assert done.returncode == 2, done.stderr
    assert "CODEX_BRIDGE_MAIL_MAX" in done.stderr
    assert written < total  # it refused while the flood still came, not after reading it
    assert not os.path.exists(mail_path(inbox_dir(), "box"))


def test_talk_say_from_a_flood_on_stdin_stops_reading_at_the_cap() -> None:
    total = 256 * 1024 * 1024
    done, written = _flood_stdin([sys.executable, "-m", "codexbridge", "talk", "say", "-"],
                                 total)
    assert done.returncode == 2, done.stderr
    assert f"more than {DEFAULT_TEXT_MAX} characters" in done.stderr
    assert "CODEX_BRIDGE_TEXT_MAX" in done.stderr
    assert written < total


# -- one message from the app-server ---------------------------------------------------------

async def _say_against(fake: FakeAppServer) -> UsageError:
    """`say` against `fake`: the UsageError it must end with."""
    async with fake, AppServerClient(fake.url) as client:
        with pytest.raises(UsageError) as refused:
            await say(client, payloads.USER_THREAD, "hello", timeout=3600)
    return refused.value


@pytest.mark.timeout(60)
async def test_a_frame_that_claims_200_mb_is_refused_at_its_header() -> None:
    """The header alone says how big the frame is: nothing of it is read or kept."""
    async def script(conn: Conn) -> None:
        await conn.join_and_start_turn()
        transport = conn.ws.transport
        assert transport is not None
        transport.write(b"\x81\x7f" + struct.pack("!Q", 200_000_000) + b'{"method":')
        await conn.ws.wait_closed()

    refused = await _say_against(FakeAppServer(script))
    assert "CODEX_BRIDGE_FRAME_MAX" in str(refused) and f"{DEFAULT_FRAME_MAX:,}" in str(refused)


@pytest.mark.timeout(60)
async def test_a_reply_frame_just_over_the_default_cap_is_refused() -> None:
    async def script(conn: Conn) -> None:
        await conn.join_and_start_turn()
        await conn.complete_turn("z" * (DEFAULT_FRAME_MAX + 1))
        await conn.ws.wait_closed()

    refused = await _say_against(FakeAppServer(script))
    assert "raise CODEX_BRIDGE_FRAME_MAX" in str(refused)


# -- one delivery into Claude ----------------------------------------------------------------

class _Stdout(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.buffer = io.BytesIO()


def _stop(name: str, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """One Stop hook run; the block's reason, or None when it let Claude stop."""
    out = _Stdout()
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stdout", out)
        assert run_hook(name, {"session_id": "s1", "hook_event_name": "Stop",
                               "prompt_id": f"p{os.urandom(4).hex()}"}) == 0
    raw = out.buffer.getvalue().decode("utf-8")
    if not raw.strip():
        return None
    reason = json.loads(raw)["reason"]
    assert isinstance(reason, str)
    return reason


def test_one_stop_hook_block_carries_at_most_the_batch_cap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    inbox = inbox_dir()
    ids = []
    for i in range(24):  # 24 × 50 KB: each is handed whole (under 64 KiB), all 1.2 MB
        mail = new_mail(f"MAIL {i:02d} " + "m" * 50_000, to="box", sender="codex")
        store.push(inbox, mail)
        ids.append(mail.mail_id)
    seen: list[str] = []
    blocks = 0
    while (reason := _stop("box", monkeypatch)) is not None:
        blocks += 1
        assert len(reason.encode("utf-8")) <= DEFAULT_BATCH_MAX + 8 * 1024, len(reason)
        seen += [line.split(" ", 2)[1] if line.startswith("MAIL ") else "late"
                 for line in reason.splitlines() if line.startswith(("MAIL ", "LATE "))]
        # A mail pushed meanwhile waits behind what was already there.
        if blocks == 1:
            late = new_mail("LATE " + "l" * 10, to="box", sender="codex")
            store.push(inbox, late)
        assert blocks < 20
    # All of them, each once, in order: the late one did not overtake the rest.
    assert seen == [f"{i:02d}" for i in range(24)] + ["late"]
    assert blocks == 5 and reading.peek(inbox, "box").mails == []
    assert set(ids) <= store.delivered_ids(inbox, "box")

"""50 writer processes × 200 mails while drains run — some SIGKILLed mid-delivery.

Drains are the real `codexbridge inbox drain --json` processes. Some run with the
test-only pause (CODEX_BRIDGE_TEST_PAUSE) and are SIGKILLed at it: either right after
taking the file (nothing delivered yet: the next drain must recover the batch), or after
delivering and recording ids but before deleting the taken file (the next drain must
not deliver it again). At the end every pushed id must have been delivered exactly once.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox import store
from codexbridge.inbox.lines import new_mail
from codexbridge.inbox.location import has_pending, mail_path, taken_files
from tests.support.pause import pause_env

WRITERS = 50
PER_WRITER = 200
REPO = Path(__file__).resolve().parents[2]


def _drain(pause: str | None) -> tuple[list[str], str, dict[str, int]]:
    """One drain process; returns (delivered ids, how it ended, recovery counters)."""
    env = pause_env(pause, 60) if pause else dict(os.environ)
    # stdout goes to a file: a big batch would fill a pipe nobody reads while we wait
    # on stderr for the pause marker.
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "codexbridge", "inbox", "drain",
                                 "--as", "box", "--json"], env=env, stdout=out,
                                stderr=subprocess.PIPE, cwd=REPO)
        assert proc.stderr is not None
        ended = "normal"
        if pause:
            line = proc.stderr.readline()  # the pause marker, or EOF if nothing was taken
            if b"codexbridge-test-pause" in line:
                proc.send_signal(signal.SIGKILL)
                ended = f"killed {pause}"
        err = proc.stderr.read()
        proc.wait(timeout=60)
        if ended == "normal":
            assert proc.returncode == 0, err
        out.seek(0)
        data = out.read()
    if not data.strip():
        return [], ended, {}
    report = json.loads(data)
    return ([m["id"] for m in report["messages"]], ended,
            {"recovered_batches": report["recovered_batches"],
             "duplicates_skipped": report["duplicates_skipped"]})


def test_every_mail_delivered_exactly_once_despite_killed_drains() -> None:
    started = time.monotonic()
    writers = [subprocess.Popen(
        [sys.executable, "-m", "tests.stress.inbox_workers", "push", "--to", "box",
         "--count", str(PER_WRITER), "--tag", f"w{k:02d}", "--pause", "0.005"],
        stdout=subprocess.PIPE, cwd=REPO) for k in range(WRITERS)]

    delivered: list[str] = []
    endings: collections.Counter[str] = collections.Counter()
    recovery: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    writing = threading.Event()
    writing.set()

    def drainer(schedule: list[str | None]) -> None:
        i = 0
        while writing.is_set():
            pause = schedule[i % len(schedule)]
            i += 1
            if pause and not has_pending(inbox_dir(), "box"):
                time.sleep(0.02)
                continue
            ids, ended, counters = _drain(pause)
            with lock:
                delivered.extend(ids)
                endings[ended] += 1
                recovery.update(counters)

    threads = [threading.Thread(target=drainer, args=(s,)) for s in (
        [None, "after_take", None, "before_delete"],
        ["before_delete", None, "after_take", None])]
    for t in threads:
        t.start()
    pushed: list[str] = []
    for w in writers:
        out, _ = w.communicate(timeout=120)
        assert w.returncode == 0
        pushed.extend(out.decode().split())
    # On a busy machine the writers can finish before each kind of kill happened twice:
    # keep feeding small rounds of mail until they have (the drains need mail to kill).
    extra = 0
    while (endings["killed after_take"] < 2 or endings["killed before_delete"] < 2) \
            and extra < 200:
        if not has_pending(inbox_dir(), "box"):
            for _ in range(5):
                mail = new_mail(f"extra {extra}", to="box", sender="stress")
                store.push(inbox_dir(), mail)
                assert mail.mail_id is not None
                pushed.append(mail.mail_id)
                extra += 1
        time.sleep(0.05)
    writing.clear()
    for t in threads:
        t.join(timeout=120)

    # Final sweep: plain drains until nothing is left anywhere.
    for _ in range(10):
        ids, _, counters = _drain(None)
        delivered.extend(ids)
        recovery.update(counters)
        if not ids and not has_pending(inbox_dir(), "box"):
            break

    assert len(pushed) == WRITERS * PER_WRITER + extra == len(set(pushed))
    counts = collections.Counter(delivered)
    assert [i for i, n in counts.items() if n > 1] == []  # nothing twice
    assert set(pushed) - set(delivered) == set()  # nothing lost
    assert len(delivered) == len(pushed)
    assert reading.read_rejected(inbox_dir(), "box") == []  # no interleaved lines
    assert taken_files(inbox_dir(), "box") == []
    assert not os.path.exists(mail_path(inbox_dir(), "box"))
    assert endings["killed after_take"] >= 2, endings
    assert endings["killed before_delete"] >= 2, endings
    # Both recovery paths really ran: dead takers' batches were picked up, and mail a
    # killed drain had already delivered was recognised by id and skipped.
    assert recovery["recovered_batches"] > 0, recovery
    assert recovery["duplicates_skipped"] > 0, recovery
    print(f"\nstress: {len(delivered)} mails, drains {dict(endings)}, {dict(recovery)}, "
          f"{time.monotonic() - started:.1f}s")

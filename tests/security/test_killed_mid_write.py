"""kill -9 at every step of every durable write: nothing lost, nothing delivered twice, no
torn state left that hides later mail.

Threat: a codexbridge process dies at the worst moment — the OOM killer, a closed
terminal, Claude Code ending a hook, a power cut of the process — half-way through
writing its state. Whatever it left must not lose mail that was promised, hand the same
mail over twice, or leave a file that makes later mail (or later sends) fail: a torn
mailbox line swallowing the next mail, a delivery record the courier cannot carry, a
hop record read as damaged, a watcher claim nobody can take again.

How: each operation below runs as a real subprocess, first traced (every step of its
writes under the state home counted: each open for writing, write, fsync, rename,
unlink, … and the store's named crash points — tests/support/crash.py), then once per
step, SIGKILLed at that step (a write cut in half first: a torn write), and once more
on its way out. After each kill the next user of the state — a push, a drain, a stop,
the next watcher, the courier's reader — runs at its defaults (a clock moved past the
waits a dead writer's record is held for, never a setting changed), and the invariants
are checked.

The one window left, by design and documented in docs/reverse-channel.md ("Exactly
once"): a taker that printed its batch (`inbox drain`, the Stop hook: Claude reads a
killed hook's stdout) and is killed before the batch's ids are on disk has that batch
delivered again — at least once, never lost. The test allows exactly that, and only there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from codexbridge.handoff import ledger
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox import peek as reading
from codexbridge.inbox import store
from codexbridge.inbox.lines import Mail
from codexbridge.inbox.location import live_files, mail_path, taken_files
from codexbridge.messages import live
from codexbridge.messages import to_claude as service
from codexbridge.messages.conversations import Conversations
from codexbridge.messages.records import DeliveryStore, Direction
from tests.support.crash import CRASH_ENV, UNDER_ENV
from tests.support.helpers import push
from tests.support.pause import REPO_ROOT, child_pythonpath
from tests.unit.messages.test_live import FakeSession, listener_json, registry_json

pytestmark = pytest.mark.timeout(600)

SESSION = "11111111-2222-3333-4444-555555555555"


class Done(NamedTuple):
    code: int
    out: str
    err: str

    @property
    def killed(self) -> bool:
        return self.code == -signal.SIGKILL


def run_child(argv: list[str], home: Path, crash: str, *, stdin: str = "",
              env: dict[str, str] | None = None) -> Done:
    """`argv` as a child whose writes under `home` follow `crash` (crash.py)."""
    full = {**os.environ, **(env or {}), "CODEX_BRIDGE_HOME": str(home),
            CRASH_ENV: crash, UNDER_ENV: str(home)}
    full["PYTHONPATH"] = child_pythonpath(full)
    done = subprocess.run(argv, input=stdin, env=full, capture_output=True, text=True,
                          timeout=120, cwd=REPO_ROOT, check=False)
    return Done(done.returncode, done.stdout, done.stderr)


def codexbridge(*args: str) -> list[str]:
    return [sys.executable, "-m", "codexbridge", *args]


def python(source: str) -> list[str]:
    return [sys.executable, "-c", source]


class Op(NamedTuple):
    """One durable write: `setup` the state, the child that writes, `check` after."""

    argv: Callable[[Path], list[str]]
    setup: Callable[[Path], Any]
    check: Callable[[Path, Any, Done], None]
    stdin: Callable[[Path], str] = lambda _home: ""
    env: Callable[[Path], dict[str, str]] = lambda _home: {}


def each_step(op: Op, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """Run `op` killed at each of its steps (and on its way out), checking after each;
    yields the step numbers (the caller counts them)."""
    trace = tmp_path / "trace.txt"
    home = _fresh(tmp_path / "trace-home", monkeypatch)
    ctx = op.setup(home)
    done = run_child(op.argv(home), home, f"trace:{trace}", stdin=op.stdin(home),
                     env=op.env(home))
    assert not done.killed, done.err
    assert trace.exists(), f"it wrote nothing under the state home: exit {done.code} {done.err}"
    op.check(home, ctx, done)  # uncrashed, the same checks hold
    steps = trace.read_text().splitlines()
    assert steps, "the operation wrote nothing under the state home"
    for k in range(1, len(steps) + 2):  # the last: killed on its way out
        home = _fresh(tmp_path / f"k{k}", monkeypatch)
        ctx = op.setup(home)
        done = run_child(op.argv(home), home, f"kill:{k}", stdin=op.stdin(home),
                         env=op.env(home))
        where = steps[k - 1] if k <= len(steps) else "on its way out"
        assert done.killed, f"step {k} ({where}) did not kill it: {done.err}"
        try:
            op.check(home, ctx, done)
        except AssertionError as exc:
            raise AssertionError(f"killed at step {k}: {where}\n{exc}") from exc
        yield k


def _fresh(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home.mkdir(mode=0o700)
    monkeypatch.setenv("CODEX_BRIDGE_HOME", str(home))
    return home


def drained(name: str = "box") -> list[Mail]:
    """What the next taker gets: everything left, recovered batches first."""
    with store.take(inbox_dir(), name) as batch:
        batch.commit()
    return batch.mails


def nothing_left(name: str = "box") -> None:
    """No mail anywhere: not pending, not in a batch, not in flight (a put-back record
    stays a while, empty-handed, to catch a late arrival)."""
    inbox = inbox_dir()
    assert taken_files(inbox, name) == [] and reading.peek(inbox, name).mails == []
    for path in live_files(inbox, name):
        assert json.loads(Path(path).read_text())["state"] == "failed", path


def once_each(expected: list[str], got: list[str], *, twice_ok: set[str] = frozenset()
              ) -> None:
    """Every expected text arrived; none twice but those in `twice_ok`."""
    counts = Counter(got)
    assert [t for t in expected if counts[t] == 0] == [], got
    assert [t for t, n in counts.items() if n > 1 and t not in twice_ok] == [], got


def state_readable(home: Path) -> None:
    """No record a later reader would fail on or set aside as damaged."""
    for path in (home / "conversations").glob("conv_*.json"):
        conv = path.stem
        assert Conversations().get(conv) is not None, path
        Conversations().spend_hop(conv, {"direction": "test"}, 99)  # not refused as damaged
    deliveries = DeliveryStore()
    for path in (home / "deliveries").glob("*.json"):
        record = deliveries.get(path.stem)
        assert record is not None, f"{path} does not read as a delivery record"
    for owed in deliveries.pending():
        record = deliveries.get(owed)
        if record is not None and record.direction is Direction.TO_CODEX:
            # The courier carries it from its text: the record never goes without it.
            assert deliveries.text_path(owed).exists(), f"{owed} is owed but has no text"


# -- a push: the hop budget, the delivery record, the mailbox ------------------------------

def _push_setup(home: Path) -> None:
    push("MAIL 0")


def _push_check(home: Path, _ctx: object, done: Done) -> None:
    state_readable(home)
    assert service.push("MAIL B", to="box", new=True).mail.mail_id  # nothing blocks it
    with store.take(inbox_dir(), "box") as batch:
        batch.commit()
    texts = [m.text for m in batch.mails]
    once_each(["MAIL 0", "MAIL B"], texts)
    if done.code == 0:
        assert "MAIL A" in texts
    # A push killed mid-line leaves at most its own fragment, set aside on its own.
    assert len(batch.rejected) <= 1 and not (batch.rejected and "MAIL A" in texts)
    nothing_left()


PUSH = Op(argv=lambda _h: codexbridge("inbox", "push", "--to", "box", "--new",
                                      "--expect-reply", "--thread", "T1", "MAIL A"),
          setup=_push_setup, check=_push_check)


def test_a_push_killed_at_each_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(list(each_step(PUSH, tmp_path, monkeypatch))) >= 10


# -- take and commit: `inbox drain`, the Stop hook -------------------------------------------

TAKEN = ["MAIL 0", "MAIL 1", "MAIL 2"]


def _take_setup(home: Path) -> None:
    for text in TAKEN:
        push(text)
    with open(mail_path(inbox_dir(), "box"), "ab") as fh:
        fh.write(b"{not a mail}\n")


def _printed_by_drain(done: Done) -> list[str]:
    try:
        report = json.loads(done.out)
    except ValueError:
        return []  # killed before it printed (or half-way: nothing a reader could use)
    return [m["text"] for m in report["messages"]]


def _take_check(printed: Callable[[Done], list[str]]) -> Callable[[Path, object, Done], None]:
    def check(home: Path, _ctx: object, done: Done) -> None:
        shown = printed(done)
        later = drained()
        # At least once; twice only what the killed taker had already handed out.
        once_each(TAKEN, shown + [m.text for m in later], twice_ok=set(shown))
        assert len(reading.read_rejected(inbox_dir(), "box")) in (1, 2)
        push("MAIL NEXT")
        assert [m.text for m in drained()] == ["MAIL NEXT"]
        nothing_left()
    return check


DRAIN = Op(argv=lambda _h: codexbridge("inbox", "drain", "--as", "box", "--json"),
           setup=_take_setup, check=_take_check(_printed_by_drain))


def test_a_drain_killed_at_each_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                     ) -> None:
    assert len(list(each_step(DRAIN, tmp_path, monkeypatch))) >= 5


def _printed_by_hook(done: Done) -> list[str]:
    """What Claude got: it reads a Stop hook's stdout even when the hook was killed."""
    try:
        reason = json.loads(done.out)["reason"]
    except (ValueError, KeyError):
        return []
    return [t for t in TAKEN if t in reason]


def _hook_stdin(home: Path) -> str:
    return json.dumps({"session_id": SESSION, "hook_event_name": "Stop", "prompt_id": "p1",
                       "transcript_path": str(home / "t.jsonl")})


STOP_HOOK = Op(argv=lambda _h: codexbridge("inbox", "hook", "--as", "box"),
               setup=_take_setup, check=_take_check(_printed_by_hook), stdin=_hook_stdin)


def test_a_stop_hook_killed_at_each_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    assert len(list(each_step(STOP_HOOK, tmp_path, monkeypatch))) >= 5


# -- the watcher: its claim, its wake record ------------------------------------------------

def _later(seconds: float) -> Callable[[], float]:
    real = time.time
    return lambda: real() + seconds


def _watch_check(home: Path, _ctx: object, done: Done) -> None:
    transcript = home / "t.jsonl"
    woke = done.code == 2  # Claude takes a wake only from an exit 2
    if woke:
        with open(transcript, "a", encoding="utf-8") as fh:  # what Claude writes then
            fh.write(json.dumps({"type": "queue-operation", "operation": "enqueue",
                                 "content": done.err}) + "\n")
            fh.write(json.dumps({"type": "user", "message": {"content": done.err},
                                 "origin": {"kind": "task-notification"}}) + "\n")
    # The next watcher or stop settles what this one left, once its wait is over.
    real_time = live.time
    try:
        live.time = type("Clock", (), {"time": staticmethod(  # type: ignore[assignment]
            _later(live.WAKE_GRACE_S + 1)), "monotonic": staticmethod(time.monotonic)})
        live.reconcile(inbox_dir(), "box")
    finally:
        live.time = real_time  # type: ignore[assignment]
    woken = [t for t in TAKEN if woke and t in done.err]
    once_each(TAKEN, woken + [m.text for m in drained()])
    nothing_left()
    # And a new watcher can claim the mailbox and wake with the next mail.
    push("MAIL NEXT")
    again = run_child(codexbridge("inbox", "watch", "--as", "box", "--timeout", "20"), home,
                      "trace:/dev/null", stdin=_hook_stdin(home), env=_watch_env(home))
    assert again.code == 2 and "MAIL NEXT" in again.err, again.err


def _watch_setup(home: Path) -> None:
    for text in TAKEN:
        push(text)
    (home / "t.jsonl").write_text('{"type":"summary"}\n')


def _watch_env(_home: Path) -> dict[str, str]:
    # The wake, not the live road; and not a headless Claude (the watcher would leave).
    return {"CODEX_BRIDGE_LIVE": "0", "CLAUDE_CODE_ENTRYPOINT": "cli", "CLAUDE_PID": ""}


WATCH = Op(argv=lambda _h: codexbridge("inbox", "watch", "--as", "box", "--timeout", "20"),
           setup=_watch_setup, check=_watch_check, stdin=_hook_stdin, env=_watch_env)


def test_a_watcher_killed_at_each_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    assert len(list(each_step(WATCH, tmp_path, monkeypatch))) >= 8


# -- a live push: the in-flight record ------------------------------------------------------

def _live_setup(home: Path) -> FakeSession:
    inbox = Path(inbox_dir())
    inbox.mkdir(parents=True, mode=0o700)
    session_dir = home.parent / f"{home.name}-session"  # (a fake Claude: not our state)
    session_dir.mkdir()
    (session_dir / "cfg" / "sessions").mkdir(parents=True)
    (session_dir / "cfg" / "sessions" / f"{os.getpid()}.json").write_text(
        json.dumps(registry_json(session_dir)))
    (inbox / "box.session.json").write_text(json.dumps(listener_json(session_dir)))
    push("MAIL 0")
    return FakeSession(session_dir, "deliver")


def _live_check(home: Path, fake: FakeSession, done: Done) -> None:
    fake.close()
    shown = [t for f in fake.frames for t in ("MAIL 0", "MAIL L")
             if t in f["message"]["content"]]
    real_time = live.time
    try:
        live.time = type("Clock", (), {"time": staticmethod(  # type: ignore[assignment]
            _later(live.NEVER_TAKEN_S + 1)), "monotonic": staticmethod(time.monotonic)})
        live.reconcile(inbox_dir(), "box")
    finally:
        live.time = real_time  # type: ignore[assignment]
    once_each(["MAIL 0"], shown + [m.text for m in drained()])
    nothing_left()


LIVE = Op(argv=lambda _h: codexbridge("inbox", "push", "--to", "box", "MAIL L"),
          setup=_live_setup, check=_live_check)


def test_a_live_push_killed_at_each_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    assert len(list(each_step(LIVE, tmp_path, monkeypatch))) >= 10


# -- a delivery record and its text; the handoff ledger ---------------------------------------

REPLY = """
from codexbridge.codex.endpoint import Reach
from codexbridge.messages.records import DeliveryStore, new_reply
new_reply(DeliveryStore(), "T1", "req_1_abcdef", None, "THE ANSWER", reach=Reach(),
          reply_to=None)
"""

SEND = """
from codexbridge.codex.protocol.threads import ThreadInfo
from codexbridge.messages.to_codex import prepare
from tests.support import payloads
prepare("THE MESSAGE", ThreadInfo.from_wire(payloads.thread()), "caller", reply_to="box")
"""


def _records_check(home: Path, _ctx: object, done: Done) -> None:
    state_readable(home)


@pytest.mark.parametrize("source", [REPLY, SEND], ids=["reply", "send"])
def test_a_delivery_record_and_its_text_killed_at_each_step(
        source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    op = Op(argv=lambda _h: python(source), setup=lambda _h: None, check=_records_check)
    assert len(list(each_step(op, tmp_path, monkeypatch))) >= 8


LEDGER = """
from codexbridge.handoff import ledger
project = {project!r}
with ledger.locked(ledger.project_key(project), project) as state:
    ledger.remember(state, ledger.Past(id="h2", target="codex"))
"""


def _ledger_setup(home: Path) -> str:
    project = str(home / "project")
    os.mkdir(project)
    with ledger.locked(ledger.project_key(project), project) as state:
        ledger.remember(state, ledger.Past(id="h1", target="claude"))
    return project


def _ledger_check(home: Path, project: str, done: Done) -> None:
    state = ledger.load(ledger.project_key(project), project)  # never damaged
    ids = [h.id for h in state.history]
    assert ids in (["h1"], ["h1", "h2"]), ids
    with ledger.locked(ledger.project_key(project), project) as again:
        ledger.remember(again, ledger.Past(id="h3", target="claude"))


def test_the_handoff_ledger_killed_at_each_step(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    op = Op(argv=lambda home: python(LEDGER.format(project=str(home / "project"))),
            setup=_ledger_setup, check=_ledger_check)
    assert len(list(each_step(op, tmp_path, monkeypatch))) >= 4

"""`codexbridge inbox hook --as NAME`: the Claude Code Stop hook process.

Runs at every Claude stop, so the empty-mailbox path imports only the standard library
pieces it needs (os, sys, json, time, fcntl) — no click, no pydantic, no portalocker, not
even `typing`. The console entry (`codexbridge.cli.main`) dispatches here before it
imports click.

Contract with Claude Code: always exit 0; stdout is either empty (let Claude stop) or
one `{"decision":"block","reason":…}` object; our own problems go to
`<state dir>/logs/inbox-hook.log`, never to Claude.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

from ..claude.files import transcript_end
from ..host.clock import iso_utc
from ..host.jsonfile import loads_json
from ..host.mailboxes import default_mailbox, inbox_dir, name_problem
from ..host.private import ensure_private_dir, open_state, state_home, write_private
from ..host.text import writable
from ..inbox.location import (
    chain_path,
    has_live,
    has_pending,
    log_dir,
    rejected_path,
)
from ..jsontypes import JsonRecord
from ..messages.handling import path as handling_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject, NonEmpty

USAGE = """\
Usage: codexbridge inbox hook [--as NAME]

The Claude Code Stop hook. Reads the hook JSON on stdin, records this session as the
listener of mailbox NAME, and when mail is waiting prints {"decision":"block",...}
carrying all of it. Always exits 0; problems go to <state dir>/logs/inbox-hook.log.

  --as NAME   mailbox to read (default: $CODEX_BRIDGE_MAILBOX, else "default")

Settings: CODEX_BRIDGE_MAX_CHAIN (default 3, kept below CLAUDE_CODE_STOP_HOOK_BLOCK_CAP)
is how many consecutive blocks one turn may get before mail waits for the next stop.
"""

LOG_NAME = "inbox-hook.log"
LOG_MAX_BYTES = 1 << 20
LOCK_WAIT = 3.0  # s: a Claude stop never waits longer on a mailbox lock held elsewhere
MAX_STDIN = 4 << 20


class ArgError(Exception):
    pass


def parse_args(argv: list[str]) -> str | None:
    """The mailbox name, or None for --help. Raises ArgError on anything else."""
    name: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            return None
        if arg == "--as":
            if i + 1 >= len(argv):
                raise ArgError("--as needs a mailbox name")
            name = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--as="):
            name = arg[len("--as="):]
            i += 1
            continue
        raise ArgError(f"unexpected argument {arg!r}")
    name = default_mailbox() if name is None else name
    problem = name_problem(name)
    if problem:
        raise ArgError(f"invalid mailbox name {name!r}: {problem}")
    return name


def read_stdin() -> bytes:
    """Claude's hook JSON; nothing when a person runs the hook at a terminal."""
    stdin = sys.stdin
    if stdin is None or stdin.closed:
        return b""
    try:
        if stdin.isatty():
            return b""
        return stdin.buffer.read(MAX_STDIN)
    except (OSError, ValueError):
        return b""


def parse_payload(raw: bytes) -> JsonObject:
    """The hook JSON as a dict; empty or garbage input gives {}."""
    if not raw.strip():
        return {}
    try:
        data = loads_json(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    if b"\\u" in raw:
        # A lone surrogate escape (`\ud800`) is valid JSON but not text: a session id
        # or cwd holding one would fail every write of it (listener record, chain) and
        # stop the delivery. The fields we read are top-level strings.
        data = {writable(k): writable(v) if isinstance(v, str) else v for k, v in data.items()}
    return data


def log(message: str, with_traceback: bool = False) -> None:
    """Append to the hook log; never raises (there is nobody to tell)."""
    try:
        directory = log_dir()
        ensure_private_dir(directory)
        path = os.path.join(directory, LOG_NAME)
        try:
            if os.path.getsize(path) > LOG_MAX_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        text = f"{stamp}Z pid={os.getpid()} {message}\n"
        if with_traceback:
            import traceback

            text += traceback.format_exc()
        fd = open_state(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, text.encode("utf-8", errors="replace"))
        finally:
            os.close(fd)
    except Exception:
        pass


def _tell_person(message: str) -> None:
    """Errors also go to stderr when a person (not Claude) is running the hook."""
    try:
        if sys.stdin is not None and sys.stdin.isatty():
            sys.stderr.write(f"codexbridge inbox hook: {message}\n")
    except (OSError, ValueError):
        pass


def run_hook_cli(argv: list[str]) -> int:
    """Entry point. Always returns 0."""
    try:
        name = parse_args(argv)
    except ArgError as exc:
        log(f"hook not run: {exc}")
        _tell_person(str(exc))
        return 0
    if name is None:
        sys.stdout.write(USAGE)
        return 0
    try:
        payload = parse_payload(read_stdin())
        return run_hook(name, payload)
    except TimeoutError as exc:  # host.locking.LockTimeout: someone holds the mailbox
        log(f"mailbox {name!r}: {exc}; the mail stays for the next stop")
        _tell_person(f"mailbox busy ({exc}); the mail stays for the next stop")
        return 0
    except BaseException as exc:
        log(f"mailbox {name!r}: hook failed: {exc!r}", with_traceback=True)
        _tell_person(f"failed: {exc!r} (see the log in the state dir)")
        return 0


def run_hook(name: str, payload: JsonObject) -> int:
    inbox = inbox_dir()
    from ..messages.listeners import record_listener

    try:
        record_listener(inbox, name, payload, via="hook")
    except OSError as exc:
        log(f"mailbox {name!r}: could not record the listener: {exc!r}")
    try:  # the input's field names, for doctor's claude-compat rows (hooks/seen.py)
        from .seen import note_seen

        note_seen(payload)
    except Exception as exc:  # evidence for doctor must never cost a delivery
        log(f"could not record what Claude Code sent the hook: {exc!r}")
    inp = HookInput.read(payload)
    if inp.event == "SessionStart":
        # A handoff delta waiting for this (resumed) session: one stat when none is.
        from ..handoff.resume import on_session_start

        on_session_start(payload, log)
        return 0  # registered; mail waits for the first stop (a Stop hook's job)
    if has_live(inbox, name):
        # Mail pushed live: remember what reached the session (so it is never delivered
        # twice, and its requests are noted as handled), put back what did not (so this
        # stop delivers it). Before the answers below: a frame the session took during
        # this turn is answered by this turn's final message.
        from ..messages.live import reconcile

        try:
            reconcile(inbox, name, answer=inp.last_assistant_message)
        except Exception as exc:  # the mail stays in its record for the next try
            log(f"mailbox {name!r}: could not settle live deliveries: {exc!r}")
    session = inp.session_id
    if session and os.path.exists(handling_path(session)):
        # This stop may end the turn that took in peer mail: its final message answers
        # the requests that expect one (answers.settle decides which: those the message names,
        # and those whose mail the transcript shows this turn took in).
        from ..messages.answers import answer_pending

        answered = answer_pending(session, inp.last_assistant_message)
        if answered:
            log(f"mailbox {name!r}: sent {answered} answer(s) back to Codex")
    courier_owed()
    pending = has_pending(inbox, name)
    if not pending:
        # The fast path: nothing waiting, and no chain of ours to end for this session
        # (another session's leftover chain must not slow every stop down).
        if not os.path.exists(chain_path(inbox, name)):
            return 0
        if load_chain(inbox, name, inp.session_key) is None:
            return 0
    _decide_and_deliver(inbox, name, inp, pending)
    return 0


def courier_owed() -> None:
    """A delivery still owed to someone (an answer from Codex, a request being watched)
    with no courier to carry it — it died, or the machine restarted: start one. One
    listdir when nothing is owed."""
    owed = os.path.join(state_home(), "deliveries", ".pending")
    if not os.path.isdir(owed):
        return
    try:
        if not os.listdir(owed):
            return
        from ..messages import courier_link

        if not courier_link.running():
            courier_link.ensure([])
            log("restarted the courier: deliveries were still owed")
    except OSError as exc:
        log(f"could not look after the courier: {exc!r}")


# --- the chain of blocks (the loop guard's count: hooks/loop_guard.py) -------------------
#
# `NAME.chain.json` exists only while a chain of blocks runs: the hook writes it when it
# blocks and deletes its session's entry when it lets Claude stop. So the empty-mailbox
# fast path only has to check that the file is absent.

# Sessions whose chain never ended (Claude killed mid-chain) are forgotten past these.
MAX_SESSIONS = 32
MAX_AGE_S = 24 * 3600
UNKNOWN_SESSION = "unknown-session"
# What a damaged file counts as: over any CODEX_BRIDGE_MAX_CHAIN (fails closed).
DAMAGED_BLOCKS = 1 << 30


def _flag(value: object) -> bool:
    """`stop_hook_active`: true, or a string saying so ("1", "true", "yes")."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return value is True


class HookInput(JsonRecord, wire={"event": "hook_event_name"},
                read_with={"stop_hook_active": _flag}):
    """Claude Code's hook input, the parts we use — the one reader of it; any field may
    be missing or garbage (a stop with unreadable stdin still runs)."""

    session_id: NonEmpty | None = None
    cwd: NonEmpty | None = None
    stop_hook_active: bool = False
    prompt_id: NonEmpty | None = None
    event: NonEmpty | None = None
    last_assistant_message: NonEmpty | None = None
    transcript_path: NonEmpty | None = None

    @property
    def session_key(self) -> str:
        """The key a session's chain is counted under (garbage stdin still gets one)."""
        return self.session_id or UNKNOWN_SESSION


class _Damaged(Exception):
    """The chain file is there but cannot be read as ours."""


CHAIN_VERSION = 1  # NAME.chain.json's format (files without one are version 1)


class Chain(JsonRecord):
    """One session's chain of Stop-hook blocks in NAME.chain.json (the loop guard's
    count): `{"version": 1, "sessions": {SESSION: {"blocks", "prompt_id", "at"}}}`."""

    blocks: int = -1  # absent, or not a count: not a chain we wrote (`parse`)
    prompt_id: str | None = None
    at: str = ""

    @classmethod
    def parse(cls, value: object) -> Chain | None:
        """None when it is not shaped as we write it (a count that is not one)."""
        chain = super().parse(value)
        return chain if chain is not None and chain.blocks >= 0 else None

    def to_json(self) -> JsonObject:
        return {"blocks": self.blocks, "prompt_id": self.prompt_id, "at": self.at}


def _load_all(inbox: str, name: str) -> dict[str, Chain]:
    """Every session's chain; {} when there is no file. _Damaged when the file is there
    but unreadable, not JSON (or nested past reading), or not shaped as we write it."""
    try:
        with open(chain_path(inbox, name), encoding="utf-8") as fh:
            data = loads_json(fh.read())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise _Damaged(str(exc)) from None
    if not isinstance(data, dict):
        raise _Damaged("not a JSON object")
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _Damaged(f"version {version!r}")
    raw = data.get("sessions")
    chains = {sid: Chain.parse(e) for sid, e in raw.items()} if isinstance(raw, dict) \
        else None
    if chains is None or None in chains.values():
        raise _Damaged('not {"sessions": {SESSION: {"blocks": COUNT, ...}}}')
    return {sid: c for sid, c in chains.items() if c is not None}


def damage_note(inbox: str, name: str, why: str) -> str:
    """What the hook log says about a damaged chain file: which, and what to do."""
    import shlex  # only now: the Stop hook's usual path does without it

    path = chain_path(inbox, name)
    return (f"{path} is damaged ({why}): the loop guard cannot count this mailbox's chain "
            "of blocks, so no mail is delivered at a stop (it waits, nothing is lost) "
            f"until the file is gone — delete it: rm {shlex.quote(path)}")


def _store_all(inbox: str, name: str, sessions: dict[str, Chain]) -> None:
    path = chain_path(inbox, name)
    if not sessions:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    write_private(path, json.dumps({"version": CHAIN_VERSION, "sessions": {
        sid: chain.to_json() for sid, chain in sessions.items()}}).encode("utf-8"))


def load_chain(inbox: str, name: str,
               session_key: str) -> tuple[int, str | None] | tuple[int, str | None, str] | None:
    """(blocks so far, prompt_id of the chain) for this session, or None. A damaged file
    fails closed: (DAMAGED_BLOCKS, None, what to do) — over any limit, whatever the
    prompt (loop_guard.ChainState's `damaged`)."""
    try:
        entry = _load_all(inbox, name).get(session_key)
    except _Damaged as exc:
        return DAMAGED_BLOCKS, None, damage_note(inbox, name, str(exc))
    if entry is None:
        return None
    return entry.blocks, entry.prompt_id


def save_chain(inbox: str, name: str, session_key: str, blocks: int, prompt_id: str | None) -> None:
    """Count one more block. A damaged file is left as it is (the person deletes it)."""
    try:
        sessions = _load_all(inbox, name)
    except _Damaged:
        return
    stale = iso_utc(time.time() - MAX_AGE_S)
    sessions = {k: v for k, v in sessions.items() if v.at >= stale}
    sessions[session_key] = Chain(blocks, prompt_id, iso_utc())
    if len(sessions) > MAX_SESSIONS:
        oldest = sorted(sessions, key=lambda k: sessions[k].at)
        for key in oldest[: len(sessions) - MAX_SESSIONS]:
            del sessions[key]
    _store_all(inbox, name, sessions)


def clear_chain(inbox: str, name: str, session_key: str) -> None:
    """End the session's chain. A damaged file is left as it is: removing it by ourselves
    would reset every session's count (fail open) without anyone knowing why."""
    if not os.path.exists(chain_path(inbox, name)):
        return
    try:
        sessions = _load_all(inbox, name)
    except _Damaged:
        return
    if sessions.pop(session_key, None) is not None or not sessions:
        _store_all(inbox, name, sessions)


# --- delivering ----------------------------------------------------------------------------

def _decide_and_deliver(inbox: str, name: str, inp: HookInput, pending: bool) -> None:
    from . import loop_guard as guard

    stored = load_chain(inbox, name, inp.session_key)
    max_chain, note = guard.effective_max_chain(os.environ)
    if note:
        log(f"mailbox {name!r}: {note}")
    decision = guard.decide(inp, guard.ChainState(*stored) if stored else None, pending,
                            max_chain)
    if decision.action is guard.Action.DELIVER:
        if _deliver(inbox, name, inp):
            save_chain(inbox, name, inp.session_key, decision.chain_before + 1, inp.prompt_id)
            return
    elif decision.action is guard.Action.HOLD:
        log(f"mailbox {name!r}: session {inp.session_key}: {decision.why}")
    clear_chain(inbox, name, inp.session_key)


def _deliver(inbox: str, name: str, inp: HookInput) -> bool:
    """Block with every waiting mail (True), or find only duplicates left (False)."""
    from ..inbox.store import take_for_claude
    from ..messages.handed import note_handed
    from ..messages.render import render_mail, sender_of, spilled
    from .loop_guard import block_output, mail_note

    with take_for_claude(inbox, name, lock_timeout=LOCK_WAIT) as batch:
        if batch.empty:
            batch.commit()  # only already-delivered duplicates were left
            return False
        reason = render_mail(name, spilled(inbox, name, batch.mails), batch.rejected,
                             rejected_path(inbox, name))
        out = sys.stdout.buffer
        note = mail_note(name, [sender_of(m) for m in batch.mails]) if batch.mails else None
        out.write(block_output(reason, note).encode("utf-8") + b"\n")
        out.flush()
        batch.commit()
        transcript = inp.transcript_path
        note_handed(inp.session_id, name, batch.mails, transcript=transcript,
                    offset=transcript_end(transcript), claude_pid=claude_pid())
        if batch.duplicates or batch.recovered_files:
            log(f"mailbox {name!r}: recovered {batch.recovered_files} batch(es), "
                f"skipped {batch.duplicates} duplicate(s)")
        return True


def claude_pid() -> int | None:
    """The Claude Code process that ran this hook ($CLAUDE_PID), if it says."""
    raw = os.environ.get("CLAUDE_PID", "")
    return int(raw) if raw.isdigit() else None

"""The courier: one resident process per state home that carries every delivery between
the agents to its end, and tells the one who asked when it cannot.

Started on demand (`messages/courier_link.ensure`: by `talk send`, MCP sends, the
Stop hook sending Claude's answer back, a Codex request that expects an answer), it
stays while anything is in flight and leaves after `CODEX_BRIDGE_COURIER_IDLE` seconds
(60) with nothing to do. One process for all: a send pays no Python start-up of its
own, and whatever the courier waits for — an app-server that went away — it can wait for.

To Codex (`to-codex`): the message is in codex's queue already (its sender put it
there) or is queued now; the courier follows the turn, answers approvals by the
record's policy, and leaves Codex's answer as mail in the reply-to mailbox. It never
sends a message twice: whatever happened before, it first looks for it in the thread
and in codex's queue (`turn.follow_queued`). When the app-server goes away it waits up
to `CODEX_BRIDGE_SERVER_WAIT` seconds (60) for it to come back, rejoins and finds the
turn again; if it does not come back, the asker gets a DELIVERY FAILED mail naming the
request, what happened and what to run.

To Claude (`to-claude`, a Codex request that expects an answer): once a Claude session
was handed it, the courier watches that session; if it ends before answering, the
asking Codex thread gets a turn saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import sys
import time
from typing import Any, TypedDict, Unpack

from ..codex.client import AppServerClient
from ..codex.endpoint import Reach, recorded_endpoint
from ..codex.follow import ApprovalRecord, SayResult
from ..codex.protocol.enums import ApprovalOutcome, ApprovalPolicy, TurnOutcome
from ..codex.recover import turn_status
from ..codex.turn import SayProgress, follow_queued
from ..errors import BridgeError, ConnectError, RequestTimeoutError
from ..host.jsonfile import loads_json
from ..host.limits import clip, mail_max
from ..host.locking import FileLock, LockTimeout
from ..host.mailboxes import inbox_dir
from ..host.paths import state_dir
from ..host.private import write_private
from ..host.procs import pid_alive
from ..host.text import for_terminal
from . import courier_link, frame, live
from . import to_claude as inbox
from .answers import claude_tokens, watch_interrupt
from .conversations import count_tokens
from .records import (
    Cost,
    Delivery,
    DeliveryState,
    DeliveryStore,
    ToClaude,
    ToCodex,
    Tokens,
    close_request,
    envelope_of,
    new_reply,
    preview,
)
from .to_codex import get, take_over

CLIENT_NAME = "codexbridge-courier"
IDLE_ENV = "CODEX_BRIDGE_COURIER_IDLE"
DEFAULT_IDLE = 60.0
SERVER_WAIT_ENV = "CODEX_BRIDGE_SERVER_WAIT"
DEFAULT_SERVER_WAIT = 60.0
TICK = 1.0  # s: how often a handed request's session is looked at
LOCK_WAIT = 15.0  # s: a new courier waits this long for a leaving one to let go
# The app-server is gone (or never answered): worth waiting for.
UNREACHABLE = (ConnectError, RequestTimeoutError)


def _seconds(env: str, default: float) -> float:
    try:
        value = float(os.environ.get(env) or default)
    except ValueError:
        return default
    return value if value >= 0 else default


class Orphaned(Exception):
    """The message is nowhere: not in the thread, not in codex's queue."""


# --- the resident process --------------------------------------------------------------

class Courier:
    """Everything in flight for one state home, each delivery a task."""

    def __init__(self, store: DeliveryStore | None = None) -> None:
        self.store = store or DeliveryStore()
        self.tasks: dict[str, asyncio.Task[Any]] = {}
        self.quiet_since = time.monotonic()

    async def serve(self) -> int:
        """Carry what is unfinished and what senders hand over; leave when idle."""
        lock = FileLock(str(state_dir() / "courier.lock"), timeout=LOCK_WAIT)
        try:
            lock.__enter__()
        except LockTimeout:
            return 0  # another courier runs (and keeps running): it has the work
        _note_pid(lock.path)
        _log_to_stdout()
        path = courier_link.socket_path()
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # we hold the lock: whatever is there is stale
            server = await asyncio.start_unix_server(self._client, path)
            os.chmod(path, 0o600)
            courier_link.advertise(path)
            stopping = self._on_signals()
            try:
                self.adopt([r.id for r in self.store.unfinished()])
                await self._until_idle(stopping)
            finally:
                server.close()
                courier_link.withdraw(path)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            if stopping.is_set():
                # Told to stop (shutdown, logout): leave now. Every record stays as it is
                # and the next courier finds each message where codex has it.
                for task in self.tasks.values():
                    task.cancel()
                return 0
            # Handed over between our last look and the close: finish them too.
            while self.tasks:
                await asyncio.wait(list(self.tasks.values()))
        finally:
            lock.__exit__()
        return 0

    @staticmethod
    def _on_signals() -> asyncio.Event:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, stopping.set)
        return stopping

    async def _until_idle(self, stopping: asyncio.Event) -> None:
        idle = _seconds(IDLE_ENV, DEFAULT_IDLE)
        while not stopping.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stopping.wait(), TICK)
            if self.tasks:
                self.quiet_since = time.monotonic()
            elif time.monotonic() - self.quiet_since >= idle:
                # One more look: a record written by a sender that could not reach us.
                self.adopt([r.id for r in self.store.unfinished()])
                if not self.tasks:
                    return

    async def _client(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 5.0)
            message = loads_json(line) if line else {}
            ids = message.get("ids") if isinstance(message, dict) else None
            if isinstance(ids, list):
                self.adopt([i for i in ids if isinstance(i, str)])
            writer.write(b'{"ok": true}\n')
            await writer.drain()
        except (TimeoutError, OSError, ValueError):
            pass
        finally:
            writer.close()

    def adopt(self, ids: list[str]) -> None:
        for delivery_id in ids:
            if delivery_id in self.tasks:
                continue
            record = self.store.get(delivery_id)
            if record is None or record.state.final:
                continue
            task = asyncio.create_task(self._carry(record), name=f"courier-{delivery_id}")
            self.tasks[delivery_id] = task
            task.add_done_callback(functools.partial(self._done, delivery_id))

    def _done(self, delivery_id: str, _task: object = None) -> None:
        task = self.tasks.pop(delivery_id, None)
        self.quiet_since = time.monotonic()
        if task is not None and not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            _log(f"{delivery_id}: courier bug: {exc!r}")
            # A bug must not leave the asker waiting in silence.
            record = self.store.get(delivery_id)
            why = f"codexbridge's courier failed ({exc!r}); this is a bug in codexbridge — " \
                "please report it"
            if isinstance(record, ToCodex) and not record.state.final:
                _fail(self.store, record, why)
            elif isinstance(record, ToClaude) and not record.state.final:
                self.store.update(delivery_id, lambda r: r.fail(why))

    async def _carry(self, record: Delivery) -> None:
        if isinstance(record, ToCodex):
            done = await carry(self.store, record.id)
            _log(f"{done.id}: {done.state}" + (f" ({done.reason})" if done.reason else ""))
        else:
            notice = await watch_request(self.store, record.id)
            if notice is not None:
                self.adopt([notice])


def _note_pid(path: str) -> None:
    """The lock file names its holder, for people and doctor (the lock itself is the
    truth: a pid can be reused)."""
    with contextlib.suppress(OSError), open(path, "r+", encoding="ascii") as fh:
        fh.truncate(0)
        fh.write(f"{os.getpid()}\n")


_logger = logging.getLogger(__name__)


def _log(line: str) -> None:
    _logger.info("%s", for_terminal(line))  # a person tails courier.log: reasons quote codex


def _log_to_stdout() -> None:
    """The courier's own lines go to its stdout — logs/courier.log, where it was started
    (messages/courier_link.py) — stamped in UTC; not also up to the CLI's stderr
    handler, which writes to the same file."""
    if _logger.handlers:
        return
    handler = logging.StreamHandler(sys.stdout)
    stamp = logging.Formatter("%(asctime)sZ courier %(process)d: %(message)s",
                              datefmt="%Y-%m-%dT%H:%M:%S")
    stamp.converter = time.gmtime
    handler.setFormatter(stamp)
    _logger.addHandler(handler)
    _logger.setLevel(logging.INFO)
    _logger.propagate = False


# --- to Codex --------------------------------------------------------------------------

async def carry(store: DeliveryStore, delivery_id: str) -> ToCodex:
    """Carry one to-codex delivery to a final state — or leave it `awaiting-reply` when
    the turn outlives the record's `turn_timeout`. An MCP task's is only watched while
    its MCP server lives (that server follows the turn and its session takes the
    answer); carried from the moment the server is gone."""
    watched = await _while_asker_follows(store, delivery_id)
    if watched.state.final:
        return watched
    before = get(store, delivery_id, ToCodex).courier_pid
    # An answer read from a turn a courier before us left behind is a recovered one.
    recovered = before is not None and before != os.getpid() and not pid_alive(before)
    store.update(delivery_id, _carried_by_us, ToCodex)
    try:
        body = store.text_path(delivery_id).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        # (an older codexbridge wrote the record first: a sender killed between the two
        # left a record with no text) Nothing was sent; the asker hears it at once.
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        return await asyncio.to_thread(
            _fail, store, get(store, delivery_id, ToCodex),
            f"not delivered: the message's text ({store.text_path(delivery_id)}) cannot "
            f"be read ({why}), so nothing was sent — send it again")
    text = envelope_of(get(store, delivery_id, ToCodex)).wrap(body)
    while True:
        record = get(store, delivery_id, ToCodex)
        if record.state.final:
            return record
        try:
            async with _client(record) as client:
                result = await _run(client, store, record, text)
        except Orphaned as exc:
            return await asyncio.to_thread(_orphaned, store, record, str(exc))
        except UNREACHABLE as exc:
            lost = record.server_lost_at or time.time()
            if record.server_lost_at is None:
                store.update(delivery_id, functools.partial(_lost_at, at=lost), ToCodex)
            _log(f"{delivery_id}: lost the app-server ({exc.message}); waiting for it")
            if await _server_back(record, lost + _seconds(SERVER_WAIT_ENV,
                                                          DEFAULT_SERVER_WAIT)):
                continue  # rejoin, find the message again (never resent)
            return await asyncio.to_thread(_unreachable, store,
                                           get(store, delivery_id, ToCodex), exc, lost)
        except BridgeError as exc:
            return await asyncio.to_thread(_refused, store, get(store, delivery_id, ToCodex), exc)
        # Routing the answer may push it live into a Claude session (waiting up to a few
        # seconds for its transcript): off the loop, so the other deliveries go on.
        return await asyncio.to_thread(finish, store, delivery_id, result,
                                       recovered=recovered)


async def _while_asker_follows(store: DeliveryStore, delivery_id: str) -> ToCodex:
    """Until a blocking record is final or its caller (a task's MCP server, `courier_pid`)
    is gone — then it is ours (`take_over`)."""
    while True:
        record = get(store, delivery_id, ToCodex)
        if record.state.final or not record.blocking:
            return record
        if record.courier_pid is None or not pid_alive(record.courier_pid):
            return take_over(store, delivery_id) or record
        await asyncio.sleep(TICK)


def _carried_by_us(r: ToCodex) -> None:
    r.courier_pid = os.getpid()


def _orphaned(store: DeliveryStore, record: ToCodex, why: str) -> ToCodex:
    mail_id = _tell_failure(store, record, why)
    return _final(store, record.id, DeliveryState.ORPHANED, why, reply_mail_id=mail_id)


async def _run(client: AppServerClient, store: DeliveryStore, record: ToCodex,
               text: str) -> SayResult:
    progress = SayProgress(client_id=record.id, on_change=lambda what, p: _progress(
        store, record.id, what, p))
    progress.submission_id = record.submission_id
    answering = False

    def on_delta(_chunk: str) -> None:
        nonlocal answering
        if not answering:
            answering = True
            store.update(record.id, _answering)

    # Codex's own record decides: the message is followed where codex has it (its
    # sender queued it; it ran while we were away). It is queued only when codex has it
    # nowhere *and* nobody ever saw codex take it (its sender died, or its add got no
    # answer): a message codex had and no longer has was taken out on purpose — never
    # sent twice.
    handed = record.submission_id is not None or record.turn_id is not None
    told: list[asyncio.Task[Any]] = []

    def on_unattended(approval: ApprovalRecord, wait: float) -> None:
        # Leaving the mail may wait on a live push: off the loop, the turn goes on.
        told.append(asyncio.create_task(asyncio.to_thread(
            _tell_unattended, record, approval, wait)))

    result = await follow_queued(
        client, record.thread_id, progress, None if handed else text,
        approvals=ApprovalPolicy.parse(record.approvals) or ApprovalPolicy.TUI,
        approval_timeout=record.approval_timeout, timeout=record.turn_timeout,
        on_delta=on_delta, on_unattended=on_unattended if record.unattended else None)
    if told:
        await asyncio.gather(*told, return_exceptions=True)
    if result is None:
        raise Orphaned("codex no longer has the message (not in the thread, not in its "
                       "queue); it is not resent")
    if (result.status is TurnOutcome.COMPLETED and not result.reply and result.turn_id
            and not result.truncated):
        # A completed turn that seems to have said nothing: the follower bound it as it
        # ended (a courier that took over mid-turn) and its final message went by
        # unseen. codex's thread has it: read it there rather than deliver an empty
        # reply (seen in the journeys on both codex versions).

        found = await turn_status(client, record.thread_id, result.turn_id)
        if found.reply:
            result = result._replace(reply=found.reply,
                                     reply_bytes=len(found.reply.encode("utf-8")))
    return result


def _tell_unattended(record: ToCodex, approval: ApprovalRecord, wait: float) -> None:
    """An approval waits on a thread no Codex TUI is attached to: the asker hears it now,
    with what happens and how the human can still answer — not after the deadline."""
    when = _clock(time.time() + wait)
    _notify(record, f"codexbridge: Codex's turn on your request {record.id} (thread "
                    f"{record.thread_id}) asks for approval: {approval.summary}. No Codex "
                    "TUI is attached to that thread (it had been unloaded; codexbridge "
                    "resumed it), so nobody can answer it there now: codexbridge declines "
                    f"it (fail-closed, policy {record.approvals}) at {when}, in {wait:g} s, "
                    "unless the human reattaches first — `codex resume "
                    f"{record.thread_id}` shows the waiting approval — and answers it. The "
                    "turn goes on after the decline and its final message still comes back "
                    "to you.")


def _lost_at(r: ToCodex, at: float) -> None:
    r.server_lost_at = at


def _client(record: ToCodex) -> AppServerClient:
    """A client of the delivery's app-server, reached with what its record carries (the
    sender's URL, token, trusted CA): never this process's environment, which is that of
    whoever happened to start the courier."""
    ep = recorded_endpoint(record.app_server, record.app_server_token_file,
                           record.app_server_ca_file, record.app_server_ca_dir)
    return AppServerClient(ep.url, token=ep.token, client_name=CLIENT_NAME,
                           ca_file=ep.ca_file, ca_dir=ep.ca_dir)


async def _server_back(record: ToCodex, until: float) -> bool:
    """Wait (until the wall-clock time `until`) for the delivery's app-server to accept
    a connection again."""
    while time.time() < until:
        try:
            async with _client(record):
                return True
        except BridgeError:
            await asyncio.sleep(0.25)
    return False


def _answering(r: Delivery) -> None:
    """Codex's first words: the message was delivered (even if the news of the turn's
    start is still on its way) and the answer is coming."""
    r.take()
    r.await_reply()


def _progress(store: DeliveryStore, delivery_id: str, what: str, p: SayProgress) -> None:
    """Note codex's queue entry, the turn's start (`ToCodex.progress`), its first words."""
    if what == "answering":
        store.update(delivery_id, _answering)
    else:
        store.update(delivery_id, lambda r: r.progress(what, p.submission_id, p.turn_id,
                                                       p.approval),
                     ToCodex)


def _clock(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


def _unreachable(store: DeliveryStore, record: ToCodex, exc: BridgeError,
                 lost: float) -> ToCodex:
    waited = _seconds(SERVER_WAIT_ENV, DEFAULT_SERVER_WAIT)
    stage = ("while Codex was answering" if record.turn_id else
             "after codex took the message, before its turn was seen to start"
             if record.submission_id else "before codex took the message")
    where = record.app_server or "the app-server"
    reason = (f"the app-server ({where}) went away at {_clock(lost)} {stage} and did not "
              f"come back within {waited:g} s ({exc.message})")
    todo = ("start codex again (`codex -C <your project>` starts its daemon), then "
            f"`codexbridge talk read --thread {record.thread_id}` shows whether the turn "
            "finished; ask again if it did not — nothing was resent")
    return _fail(store, record, reason, todo)


def _refused(store: DeliveryStore, record: ToCodex, exc: BridgeError) -> ToCodex:
    if record.submission_id is None and record.turn_id is None:
        return _fail(store, record, f"not delivered: {exc.message}")
    return _fail(store, record, f"codexbridge lost track of the turn: {exc.message}",
                 f"`codexbridge talk read --thread {record.thread_id}` shows what the "
                 "thread kept")


def _fail(store: DeliveryStore, record: ToCodex, reason: str,
          todo: str | None = None) -> ToCodex:
    """End the record `failed` and tell whoever waits for it."""
    mail_id = _tell_failure(store, record, reason, todo)
    return _final(store, record.id, DeliveryState.FAILED, reason, reply_mail_id=mail_id)


def _tell_failure(store: DeliveryStore, record: ToCodex, reason: str,
                  todo: str | None = None) -> str | None:
    """The asker hears of it by itself: a Claude request's DELIVERY FAILED mail; for
    Claude's answer going back, the session that answered hears it did not arrive."""
    if record.in_reply_to:
        return _notify(record, f"codexbridge: your answer to Codex's request "
                               f"{record.in_reply_to} did not reach thread "
                               f"{record.thread_id} — {reason}. Your answer is kept in "
                               f"{store.text_path(record.id)}.")
    return _notify(record, f"DELIVERY FAILED: your request {record.id} to Codex (thread "
                           f"{record.thread_id}) — {reason}."
                   + (f" What to do: {todo}." if todo else ""))


def finish(store: DeliveryStore, delivery_id: str, result: SayResult, *,
           recovered: bool = False) -> ToCodex:
    """Route the outcome of the turn and close the record."""
    record = get(store, delivery_id, ToCodex)
    record.recovered = recovered or record.recovered  # (the mail says so too)
    message = (result.error or {}).get("message") if isinstance(result.error, dict) else None
    # What Codex's turn cost, whatever became of it (not yet for one still running).
    cost = None if result.status is TurnOutcome.TIMED_OUT else \
        count_tokens(store, delivery_id, Tokens.of_codex(result.usage))
    if result.status is TurnOutcome.TIMED_OUT:
        return _final(store, delivery_id, DeliveryState.AWAITING_REPLY,
                      f"the courier stopped following after {record.turn_timeout:g} s; "
                      "`talk status` recovers the answer when the turn ends")
    if (result.status is TurnOutcome.INTERRUPTED and result.turn_id and not message
            and record.server_lost_at is None):
        # (Esc and turn/interrupt end a turn with `error: null`, measured; an app-server
        # going away is noted on the record, and an error names its own cause.)
        return _interrupted(store, record, result, recovered)
    if result.status is not TurnOutcome.COMPLETED:
        reason = f"the turn ended {result.status}" + (f": {message}" if message else "")
        if record.server_lost_at is not None:
            reason += (f" (the app-server went away at {_clock(record.server_lost_at)} "
                       "during it)")
        mail_id = _tell_failure(store, record, f"it did not complete: {reason}"
                                + _approvals_note(result, record))
        return _final(store, delivery_id, DeliveryState.FAILED, reason,
                      turn_id=result.turn_id or record.turn_id, reply_mail_id=mail_id,
                      reply_preview=preview(result.reply), recovered=recovered)
    label = "RECOVERED reply" if recovered else "Reply"
    cut = (f"\n\n[codexbridge: Codex's reply was {result.reply_bytes} bytes; the first "
           f"{len(result.reply.encode('utf-8'))} were kept — `codexbridge talk read` shows "
           "the thread]" if result.truncated else "")
    steered = _steered_note(result, record)
    mail_id = None
    if not record.in_reply_to:
        mail_id = _notify(record, f"{label} from Codex (thread {record.thread_id}) to your "
                                  f"request {record.id}, conversation {record.conversation}"
                                  + (" — a turn the human steered" if steered else "")
                                  + f":{steered}"
                                  f"\n\n{_bounded(store, record.id, result.reply)}{cut}"
                                  f"{_approvals_note(result, record)}", cost)
    return _final(store, delivery_id, DeliveryState.DELIVERED,
                  "the turn was steered: " + _who_added(result) if steered else None,
                  turn_id=result.turn_id or record.turn_id, reply_preview=preview(result.reply),
                  reply_bytes=result.reply_bytes or len(result.reply.encode("utf-8")),
                  reply_mail_id=mail_id, recovered=recovered)


STEER_PREVIEW = 2000  # characters of the added words quoted to the asker


def _who_added(result: SayResult) -> str:
    """Who added to our turn, as far as the thread can tell: a codexbridge frame names an
    agent (`talk steer`); unframed words came as the human's own — the Codex TUI's Enter
    while a turn runs steers it (codex 0.169.0 and 0.171.0, measured)."""
    framed = [frame.is_framed(text) for text in result.added]
    if all(framed):
        return "another agent added to it through codexbridge (`talk steer`)"
    return ("the human typed into the Codex TUI and pressed Enter while Codex worked on "
            "your request, which adds to the running turn")


def _steered_note(result: SayResult, record: ToCodex) -> str:
    """What the asker must know when its turn was steered: the words added, and that
    the final message answers the turn as steered — it may answer those words rather
    than the request. No second turn is run for the request: the human redirected
    Codex on purpose, and running the question again behind them would undo that
    (docs/conversations.md, "The human steers, interrupts, quits")."""
    if not result.added:
        return ""
    words = []
    for text in result.added:
        text = frame.words_of(text)
        if len(text) > STEER_PREVIEW:
            text = text[:STEER_PREVIEW] + "…"
        words.append("\n".join("  | " + line for line in
                               frame.quoted(text).splitlines() or [""]))
    return (f"\n\n[codexbridge: {_who_added(result)}. Added to the turn:\n"
            + "\n".join(words)
            + "\nCodex's final message below answers the turn as steered — it may answer "
              "those words rather than your request. If your request is still open, ask "
              f"again (`codexbridge talk send --thread {record.thread_id} …`) or ask the "
              "user.]")


def _interrupted(store: DeliveryStore, record: ToCodex, result: SayResult,
                 recovered: bool) -> ToCodex:
    """Our turn started — the message is in the thread — and was interrupted while the
    app-server stayed up: the human pressed Esc in the Codex TUI (or a client sent
    `turn/interrupt`; codex does not say who). The asker is told exactly that; nothing
    was lost in transit, so nothing is to be resent as if it had been."""
    said = (f" What Codex had written before the stop: {preview(result.reply)!r}."
            if result.reply else " Codex had written nothing of an answer yet.")
    who = ("interrupted before Codex finished — by the human (Esc in the Codex TUI) or "
           "by `codexbridge talk interrupt`; codex does not say which")
    if record.in_reply_to:
        # Claude's answer to a Codex request: it is in the thread (the request is
        # delivered, close_request); only Codex's work on it was stopped.
        reason = f"the answer reached the thread; Codex's turn on it was {who}"
        mail_id = _notify(record, f"codexbridge: your answer to Codex's request "
                                  f"{record.in_reply_to} reached thread {record.thread_id} "
                                  f"— it is in the thread — but Codex's turn on it was "
                                  f"{who}.{said} Do not send the answer again: Codex has "
                                  "it, and will see it when the human next talks to it. "
                                  "Nothing more comes back for this request.")
        state = DeliveryState.DELIVERED
    else:
        reason = f"the turn was {who}"
        mail_id = _notify(record, f"INTERRUPTED: your request {record.id} to Codex (thread "
                                  f"{record.thread_id}) reached the thread, but Codex's "
                                  f"turn on it was {who}.{said} No answer will come back "
                                  "for it. What to do: the stop was deliberate — do not "
                                  "resend on your own; ask the user whether to send it "
                                  f"again (`codexbridge talk send --thread "
                                  f"{record.thread_id} …`) or what to do instead."
                                  + _approvals_note(result, record))
        state = DeliveryState.FAILED
    return _final(store, record.id, state, reason, turn_id=result.turn_id,
                  reply_mail_id=mail_id, reply_preview=preview(result.reply),
                  recovered=recovered)


def _approvals_note(result: SayResult, record: ToCodex) -> str:
    """What became of the approvals codex asked for during the turn: an answer shaped by
    a declined command must say why (nobody answered in the TUI, say)."""
    if not result.approvals:
        return ""
    lines = [f"- {a.summary}: {a.outcome}" for a in result.approvals]
    waited = any(a.outcome is ApprovalOutcome.DECLINED_AFTER_DEADLINE for a in result.approvals)
    why = (f" (policy {record.approvals}: the human decides in the Codex TUI; nobody "
           f"answered within {record.approval_timeout:g} s, so codexbridge declined — "
           "fail-closed)") if waited else f" (policy {record.approvals})"
    return ("\n\n[codexbridge: during this turn codex asked for approval" + why + ":\n"
            + "\n".join(lines) + "]")


def _bounded(store: DeliveryStore, delivery_id: str, reply: str) -> str:
    """The reply as mail can carry it: whole up to the mail cap (over 64 KiB the mailbox
    hands Claude a preview and a file, messages/render.py), else cut with the path of the
    whole text (kept beside the record, 0600)."""
    limit = mail_max(os.environ) // 4  # characters, so the mail stays under the byte cap
    if len(reply) <= limit:
        return reply
    path = store.root / f"{delivery_id}.reply"
    write_private(path, reply.encode("utf-8"))
    return clip(reply, limit, f"in the file {path}")


def _notify(record: ToCodex, text: str, cost: Cost | None = None) -> str | None:
    """Leave `text` in the reply-to mailbox; None when there is none (or it failed).
    `cost`: what Codex's turn cost, a field of the mail that the mailbox renders as a
    line of codexbridge's own (messages/render.py), never part of the text."""
    if not record.reply_to:
        return None
    try:
        receipt = inbox.push(text, to=record.reply_to, sender="codex", new=True, fields={
            "in_reply_to": record.in_reply_to or record.id,
            "conversation": record.conversation, "delivery_id": record.id,
            "recovered": record.recovered,
            **({"tokens": cost.as_dict()} if cost is not None else {})})
    except BridgeError:
        return None
    return receipt.mail.mail_id


class _End(TypedDict, total=False):
    """What the courier's end of a delivery writes on it, besides its state and why."""

    turn_id: str | None
    reply_preview: str
    reply_bytes: int
    reply_mail_id: str | None
    recovered: bool


def _final(store: DeliveryStore, delivery_id: str, state: DeliveryState,
           reason: str | None = None, **end: Unpack[_End]) -> ToCodex:
    def settle(r: ToCodex) -> None:
        r.courier_pid = None  # nobody follows it any more
        for key, value in end.items():
            setattr(r, key, value)
        r.settle(state, reason)

    updated = store.update(delivery_id, settle, ToCodex)
    record = updated or get(store, delivery_id, ToCodex)
    if record.in_reply_to and record.state.final and not record.notice:
        # what Claude spent answering it, from its transcript (written by now)
        count_tokens(store, record.in_reply_to, claude_tokens(store, record.in_reply_to))
        close_request(store, record.in_reply_to, record)
    return record


# --- to Claude -------------------------------------------------------------------------

async def watch_request(store: DeliveryStore, request: str) -> str | None:
    """Watch a Codex request a Claude session was handed until it is answered; if the
    session ends first, or the human interrupts the turn that had it (Esc: no Stop hook
    runs), tell the asking thread — returns the id of that notice."""

    while True:
        record = store.get(request, ToClaude)
        if record is None or not record.needs_courier:
            return None
        if record.claude_pid is not None and not pid_alive(record.claude_pid):
            return await asyncio.to_thread(_session_ended, store, record)
        notice = await asyncio.to_thread(watch_interrupt, record)
        if notice is not None:
            return notice
        await asyncio.sleep(TICK)


def _session_ended(store: DeliveryStore, record: ToClaude) -> str | None:
    """The session that had `record` is gone. Whatever live frame it was sent is settled
    first (taken in, or back to the mailbox), then: taken in → the request failed (Claude
    ended before answering); never taken in → it waits for the project's next session.
    Either way the asking thread gets one turn saying so."""
    if record.mailbox:

        with contextlib.suppress(Exception):  # the notice below matters more
            live.reconcile(inbox_dir(), record.mailbox)
    who = f"the Claude Code session (session {record.session_id}, pid {record.claude_pid})"
    taken = get(store, record.id).state is DeliveryState.AWAITING_REPLY
    why = (f"{who} that was handling it ended before it answered" if taken else
           f"{who} it was sent to ended before it took it in")

    def settle(r: ToClaude) -> None:
        if r.state.final or r.answered_at is not None:
            return
        if taken:
            r.fail(why)
        r.claude_pid = None  # told once; a later session may take it in again

    updated = store.update(record.id, settle, ToClaude)
    if updated is None or updated.answered_at is not None or not record.thread_id:
        return None
    then = ("Nothing more will come back for it; ask again once the session runs again "
            f"(in its project: `claude --resume {record.session_id}`)." if taken else
            f"It waits in mailbox {record.mailbox} for the next Claude Code session in "
            "that project (start `claude` there), which will answer it.")
    notice = new_reply(store, record.thread_id, record.id, record.conversation,
                       f"codexbridge: your request {record.id} to Claude Code got no answer "
                       f"— {why}. {then}", reach=Reach(), reply_to=None, notice=True)
    return notice.id


def main() -> None:
    """`python -m codexbridge.messages.courier`: the courier's own entry point, which
    `courier_link.start` runs detached — not a command of the CLI (a low room does not
    start a front end)."""
    raise SystemExit(asyncio.run(Courier().serve()))


if __name__ == "__main__":
    main()

"""Finding and joining threads, and waiting until one is idle.

Every decision (which thread, what counts as busy) is the pure core's
(`codex/protocol/threads.py`); this module sequences the requests. When the app-server in
use does not hold the thread asked for and another one here does (a serve beside
codex's daemon on one CODEX_HOME: codex lets one app-server write a thread), the error
names that one and the `--url` that reaches it (exit 3) instead of codex's "already has
an active writer".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from ..errors import (
    BridgeError,
    ConnectionLostError,
    NoRolloutError,
    NoThreadError,
    RpcError,
)
from ..host.daemon import open_tui
from .client import AppServerClient, Rpc
from .endpoint import SURVEY_TIMEOUT, Holding, Server, others
from .protocol.envelopes import Notification
from .protocol.generated import methods as m
from .protocol.generated.calls import Calls
from .protocol.generated.enums import ThreadStatusType
from .protocol.generated.results import ThreadReadResponse, ThreadResumeResponse
from .protocol.threads import (
    ThreadInfo,
    in_project,
    is_busy,
    looks_like_thread_id,
    resolve,
    visible,
)

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

if TYPE_CHECKING:  # (typing only: `talk say` imports this module)
    from typing import Protocol

    class Page(Protocol[T_co]):
        """A page of a cursor-paginated result (thread/loaded/list, thread/turns/list, …)."""

        @property
        def data(self) -> tuple[T_co, ...]: ...

        @property
        def next_cursor(self) -> str | None: ...


NO_ROLLOUT_HINT = ("the thread has no rollout yet: send one message in the Codex TUI first "
                   "(a thread can be joined once its first turn has started)")


async def pages(fetch: Callable[[str | None], Awaitable[Page[T]]],
                max_pages: int = 1000) -> AsyncIterator[T]:
    """The `data` entries of a cursor-paginated method, page by page: `fetch(cursor)`
    reads one page (cursor None: the first)."""
    cursor: str | None = None
    for _ in range(max_pages):
        page = await fetch(cursor)
        for entry in page.data:
            yield entry
        cursor = page.next_cursor
        if not cursor:
            return


async def paged(fetch: Callable[[str | None], Awaitable[Page[T]]]) -> list[T]:
    """Every `data` entry of a cursor-paginated method (`pages`, collected)."""
    return [entry async for entry in pages(fetch)]


def _newest_first(threads: list[ThreadInfo]) -> list[ThreadInfo]:
    return sorted(threads, key=lambda t: (t.updated_at or 0), reverse=True)


async def list_threads(rpc: Rpc, *, include_all: bool = False) -> list[ThreadInfo]:
    """Threads loaded in the app-server (works before any turn exists)."""
    return visible(await loaded(rpc), include_all)


async def loaded(rpc: Rpc) -> list[ThreadInfo]:
    """Every loaded thread that `thread/read` gives, newest first (one that fails to
    read is left out: it was unloaded meanwhile, or the answer held no thread)."""
    calls = Calls(rpc)
    ids = await paged(lambda cursor: calls.thread_loaded_list(cursor=cursor))
    reads = await asyncio.gather(*(calls.thread_read(thread_id=tid) for tid in ids),
                                 return_exceptions=True)
    return _newest_first([r.thread for r in reads
                          if isinstance(r, ThreadReadResponse) and r.thread is not None])


async def find_target(rpc: Rpc, selector: str | None, cwd: str | None = None) -> ThreadInfo:
    """The thread `selector` (id or exact name) means; see protocol.threads.resolve —
    among several, the one of the project this process runs in."""
    if selector and looks_like_thread_id(selector) and not cwd:
        # An explicit id needs no listing: one thread/read confirms it exists, which
        # saves a request per loaded thread on every `say --thread ID`.
        try:
            info = (await Calls(rpc).thread_read(thread_id=selector)).thread
        except RpcError:
            info = None  # not loaded (or not an id after all): the full resolution
        if info is not None:
            if info.state is ThreadStatusType.NOT_LOADED:  # read from disk: held
                await refuse_if_held_elsewhere(rpc, selector)  # by another server?
            return info
    url = getattr(rpc, "url", None)
    try:
        return resolve(await loaded(rpc), selector, cwd,
                       open_tui=open_tui(url if isinstance(url, str) else None),
                       here=_here())
    except NoThreadError as exc:
        await refuse_if_held_elsewhere(rpc, selector, cwd)
        if selector:
            raise
        stored = await _stored_for_project(rpc, cwd or _here())
        if not stored:
            raise
        raise _unloaded(exc, stored) from None


STORED_LOOK = 50  # threads of codex's history looked at for the project's last one


async def _stored_for_project(rpc: Rpc, here: str | None) -> list[ThreadInfo]:
    """The project's threads in codex's history (on disk, loaded or not), newest first:
    a TUI that was quit leaves its thread loaded for about two minutes, then codex's
    daemon unloads it (docs/protocol-notes.md) — it is still there, and resumable."""
    if not here:
        return []
    try:
        page = await Calls(rpc).thread_list(limit=STORED_LOOK)
    except BridgeError:
        return []  # (an older codex, a server without history): no hint, the error stands
    users = [t for t in page.data if t.is_user_thread]
    return _newest_first(in_project(users, here))


def _unloaded(exc: NoThreadError, stored: list[ThreadInfo]) -> NoThreadError:
    """No loaded thread here, but the project has threads codex unloaded (its TUI was
    quit): name the last one and what reaches it — `codex -C DIR` alone would start a
    new thread and lose the conversation."""
    last = stored[0]
    where = last.cwd or "the project"
    return NoThreadError(
        f"no Codex TUI holds a thread of {where} now (it was quit, and codex unloads a "
        f"thread about 2 minutes after its last client leaves); the project's last thread "
        f"is {last.id}" + (f" ({last.name})" if last.name else "")
        + f". To go on with it: `codexbridge talk send --thread {last.id} TEXT` resumes "
        "it and sends (its turn runs unseen until the human reattaches), and the human "
        f"reattaches with `codex resume --last` in {where} (or `codex resume {last.id}`). "
        f"`codex -C {where}` would start a new thread instead",
        details={**exc.details, "last_thread": last.as_dict(),
                 "stored": [t.as_dict() for t in stored[:5]]},
        retryable=False)


def _here() -> str | None:
    """Where the caller works: its project's thread wins among several."""
    try:
        return os.path.realpath(os.getcwd())
    except OSError:  # the directory was removed under us
        return None


async def _ask(server: Server, timeout: float) -> Holding:
    client = AppServerClient(server.url, token=server.token, request_timeout=timeout)
    try:
        await asyncio.wait_for(client.connect(), timeout)
    except (TimeoutError, BridgeError, OSError, ValueError):
        await client.close()
        return Holding(server, False, None, ())
    try:
        try:
            threads = tuple(await asyncio.wait_for(loaded(client), timeout))
        except (TimeoutError, BridgeError):
            threads = ()
        return Holding(server, True, client.initialized.codex_home, threads)
    finally:
        await client.close()


async def survey(servers: Sequence[Server], timeout: float) -> list[Holding]:
    """What each app-server holds (its loaded threads, its CODEX_HOME), asked at once."""
    return list(await asyncio.gather(*(_ask(s, timeout) for s in servers)))


def _fits(held: Holding, selector: str | None, cwd: str | None) -> bool:
    if selector:
        return held.has(selector)
    users = held.users
    return bool([t for t in users if t.cwd == cwd] if cwd else users)


async def refuse_if_held_elsewhere(rpc: Rpc, selector: str | None,
                                   cwd: str | None = None, why: str = "") -> None:
    """NoThreadError naming the other app-server here (serve or codex's daemon) that
    holds what was asked for, with the --url that reaches it; nothing when none does.
    Costs nothing when no other server runs (a file read and a socket check)."""
    url = getattr(rpc, "url", None)
    servers = others(url) if isinstance(url, str) else []
    if not servers:
        return
    held = [h for h in await survey(servers, SURVEY_TIMEOUT)
            if h.reachable and _fits(h, selector, cwd)]
    if len(held) != 1:
        return
    holder = held[0].server
    what = (f"thread {selector}" if selector
            else f"the user thread{f' with cwd {cwd}' if cwd else ''}")
    raise NoThreadError(
        f"{what} is not held by the app-server at {url} but by {holder.source} at "
        f"{holder.url}{why}: codex lets one app-server write a thread; pass --url "
        f"{holder.url} (or set CODEX_BRIDGE_URL) to talk to it",
        details={"heldBy": holder.url, "heldBySource": holder.source,
                 "candidates": [t.as_dict() for t in held[0].users]},
        retryable=False)


async def find_joinable(rpc: Rpc, selector: str | None, cwd: str | None = None, *,
                        wait: float = 0.0) -> ThreadInfo:
    """`find_target`, but waiting up to `wait` seconds for the thread to exist and be
    joinable — the TUI makes its thread at the human's first message, and it can be
    joined once that first turn has started (docs/protocol-notes.md, "Joining").
    Re-checked whenever a thread starts or changes status, never on a timer alone."""
    if wait <= 0:
        return await find_target(rpc, selector, cwd)
    loop = asyncio.get_running_loop()
    end = loop.time() + wait
    with rpc.subscribe() as sub:
        while True:
            try:
                target = await find_target(rpc, selector, cwd)
                await join(rpc, target.id)
                return target
            except (NoThreadError, NoRolloutError) as exc:
                if loop.time() >= end or exc.details.get("heldBy"):
                    raise
            # Something about threads changes when one starts or begins a turn.
            with contextlib.suppress(asyncio.TimeoutError):
                while True:
                    ev = await asyncio.wait_for(sub.get(), max(0.0, end - loop.time()))
                    if ev is None:
                        raise ConnectionLostError("the app-server connection closed while "
                                                  "waiting for a thread")
                    if ev.method in (m.THREAD_STARTED, m.THREAD_STATUS_CHANGED):
                        break


async def join(rpc: Rpc, thread_id: str) -> ThreadResumeResponse:
    """Subscribe this connection to the thread (`thread/resume`, history excluded)."""
    try:
        result = await Calls(rpc).thread_resume(thread_id=thread_id, exclude_turns=True)
    except NoRolloutError as exc:
        raise NoRolloutError(exc.rpc_code, f"{NO_ROLLOUT_HINT} [{exc.message}]",
                             exc.data) from None
    except RpcError as exc:
        if "active writer" not in exc.message:
            raise
        # Another app-server on this CODEX_HOME has the thread (codex: one writer).
        await refuse_if_held_elsewhere(rpc, thread_id, why=f" ({exc.message})")
        raise NoThreadError(
            f"thread {thread_id} is held by another app-server on this CODEX_HOME "
            f"({exc.message}): codex lets one app-server write a thread; pass the --url of "
            "the one the TUI uses (codex's own daemon: unix://$CODEX_HOME/"
            "app-server-control/app-server-control.sock)",
            details={"rpc_message": exc.message}, retryable=False) from None
    return result


async def rename(rpc: Rpc, thread_id: str, name: str) -> None:
    """Name the thread (`thread/name/set`); the TUI and `--thread NAME` see it."""
    await Calls(rpc).thread_name_set(thread_id=thread_id, name=name)


async def wait_idle(rpc: Rpc, thread_id: str, timeout: float | None) -> bool:
    """True once the thread runs no turn; False if `timeout` seconds pass first.

    Listens for `thread/status/changed` (sent to every initialized connection, joined or
    not) after one `thread/read`; the subscription comes first, so a change between the
    read and the wait is not missed.
    """
    with rpc.subscribe() as sub:
        thread = (await Calls(rpc).thread_read(thread_id=thread_id)).thread
        if thread is None or not thread.busy:
            return True

        async def until_idle() -> None:
            while True:
                ev = await sub.get()
                if ev is None:
                    raise ConnectionLostError(
                        f"the app-server connection closed while waiting for thread "
                        f"{thread_id} to be idle")
                if (isinstance(ev, Notification) and ev.method == m.THREAD_STATUS_CHANGED
                        and ev.params.get("threadId") == thread_id
                        and not is_busy(ev.params.get("status"))):
                    return

        try:
            await asyncio.wait_for(until_idle(), timeout)
        except TimeoutError:
            return False
        return True

"""The per-thread FIFO: order, independence of threads, waiters that give up."""

from __future__ import annotations

import asyncio

import pytest

from codexbridge.mcp.turn_queue import QueueTimeout, TurnQueue


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_same_thread_runs_in_arrival_order() -> None:
    q = TurnQueue()
    order: list[str] = []

    async def job(name: str, hold: float) -> None:
        t = await q.acquire("T", 10, label=name)
        order.append(f"start {name}")
        await asyncio.sleep(hold)
        order.append(f"end {name}")
        q.release(t)

    tasks = []
    for i, name in enumerate("abcde"):
        tasks.append(asyncio.create_task(job(name, 0.01 * (5 - i))))
        await settle()
    await asyncio.gather(*tasks)
    assert order == [f"{e} {n}" for n in "abcde" for e in ("start", "end")]
    assert q.snapshot() == {}


async def test_different_threads_do_not_wait_for_each_other() -> None:
    q = TurnQueue()
    a = await q.acquire("A", 1)
    b = await asyncio.wait_for(q.acquire("B", 1), 0.1)
    assert q.snapshot() == {"A": [f"#{a.serial}"], "B": [f"#{b.serial}"]}
    q.release(a)
    q.release(b)


async def test_timed_out_waiter_leaves_without_reordering() -> None:
    q = TurnQueue()
    head = await q.acquire("T", 1, label="head")
    got: list[str] = []

    async def waiter(name: str, timeout: float) -> None:
        try:
            t = await q.acquire("T", timeout, label=name)
        except QueueTimeout as exc:
            got.append(f"{name} gave up ({exc.ahead} ahead)")
            return
        got.append(name)
        q.release(t)

    w1 = asyncio.create_task(waiter("w1", 5))
    await settle()
    w2 = asyncio.create_task(waiter("w2", 0.05))  # gives up while head still runs
    await settle()
    w3 = asyncio.create_task(waiter("w3", 5))
    await settle()
    assert q.snapshot()["T"] == ["head", "w1", "w2", "w3"]
    await asyncio.sleep(0.1)
    assert got == ["w2 gave up (2 ahead)"]
    # nobody jumped the head, and w1 is still before w3
    assert q.snapshot()["T"] == ["head", "w1", "w3"]
    q.release(head)
    await asyncio.gather(w1, w2, w3)
    assert got == ["w2 gave up (2 ahead)", "w1", "w3"]


async def test_cancelled_waiter_leaves_and_cancelled_holder_passes_on() -> None:
    q = TurnQueue()
    head = await q.acquire("T", 1)
    w = asyncio.create_task(q.acquire("T", 5, label="w"))
    after = asyncio.create_task(q.acquire("T", 5, label="after"))
    await settle()
    w.cancel()
    with pytest.raises(asyncio.CancelledError):
        await w
    assert q.snapshot()["T"][1:] == ["after"]
    q.release(head)
    t = await asyncio.wait_for(after, 1)
    q.release(t)
    q.release(t)  # idempotent
    assert q.snapshot() == {}


async def test_zero_timeout_when_busy_and_immediate_when_free() -> None:
    q = TurnQueue()
    t = await q.acquire("T", 0)
    with pytest.raises(QueueTimeout):
        await q.acquire("T", 0)
    q.release(t)
    q.release(await q.acquire("T", 0))

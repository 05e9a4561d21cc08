"""The artifact store: ids, ownership, signed cursors, pages, TTL, byte cap."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codexbridge.errors import ArtifactNotFoundError, InvalidCursorError
from codexbridge.mcp.artifacts import (
    ArtifactStore,
    StoreFull,
    utf8_cut,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make(root: Path, clock: Clock, role: str = "claude", *, ttl: float = 3600,
         max_bytes: int = 1 << 20) -> ArtifactStore:
    return ArtifactStore(root, role, ttl=ttl, max_bytes=max_bytes, clock=clock)


def read_all(store: ArtifactStore, art_id: str, page: int) -> tuple[str, int]:
    parts, cursor, pages = [], None, 0
    while True:
        got = store.read(art_id, cursor, page)
        parts.append(got.text)
        pages += 1
        assert got.nbytes <= max(page, 64)
        if got.next_cursor is None:
            return "".join(parts), pages
        cursor = got.next_cursor


def test_pages_join_back_byte_exact_across_multibyte_characters(tmp_path: Path,
                                                                clock: Clock) -> None:
    store = make(tmp_path, clock)
    text = "".join(f"{i:05d} ascii é 中文 🙂\n" for i in range(3000))
    art = store.create(text, kind="codex_reply")
    assert art.size == len(text.encode("utf-8"))
    for page in (64, 100, 1000, 4097):
        joined, pages = read_all(store, art.id, page)
        assert joined.encode("utf-8") == text.encode("utf-8")
        assert pages >= art.size // page


def test_files_are_private_and_ids_unguessable(tmp_path: Path, clock: Clock) -> None:
    store = make(tmp_path, clock)
    a, b = store.create("x" * 10, kind="k"), store.create("x" * 10, kind="k")
    assert a.id != b.id and a.id.startswith("art_") and len(a.id) == 28
    for name in os.listdir(store.dir):
        assert stat.S_IMODE(os.stat(store.dir / name).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.dir).st_mode) == 0o700
    assert "key" not in a.public()


def test_other_role_cannot_read(tmp_path: Path, clock: Clock) -> None:
    mine = make(tmp_path, clock, "claude").create("secret", kind="k")
    theirs = make(tmp_path, clock, "codex")
    with pytest.raises(ArtifactNotFoundError):
        theirs.read(mine.id, None, 1000)
    # even a copy of the metadata in the other role's dir does not change the owner
    os.makedirs(theirs.dir, exist_ok=True)
    for suffix in (".json", ".txt"):
        src = make(tmp_path, clock, "claude").dir / f"{mine.id}{suffix}"
        (theirs.dir / f"{mine.id}{suffix}").write_bytes(src.read_bytes())
    with pytest.raises(ArtifactNotFoundError):
        theirs.read(mine.id, None, 1000)


def test_cursor_is_bound_to_its_artifact_and_unforgeable(tmp_path: Path, clock: Clock) -> None:
    store = make(tmp_path, clock)
    a = store.create("a" * 1000, kind="k")
    b = store.create("b" * 1000, kind="k")
    cursor = store.read(a.id, None, 100).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidCursorError):
        store.read(b.id, cursor, 100)  # another artifact's cursor
    raw = bytearray(cursor.encode())
    raw[5] = ord("A") if raw[5] != ord("A") else ord("B")
    for bad in (bytes(raw).decode(), "c1.!!!", "garbage", cursor[:-2], ""):
        if bad == "":
            assert store.read(a.id, bad, 100).offset == 0  # empty = from the start
            continue
        with pytest.raises(InvalidCursorError):
            store.read(a.id, bad, 100)
    # an offset past the end is refused even with a valid MAC
    with pytest.raises(InvalidCursorError):
        store.read(a.id, store.make_cursor(a, 5000), 100)


def test_ttl_expires_and_sweeps(tmp_path: Path, clock: Clock) -> None:
    store = make(tmp_path, clock, ttl=60)
    art = store.create("hello", kind="k")
    clock.now += 59
    assert store.read(art.id, None, 100).text == "hello"
    clock.now += 2
    with pytest.raises(ArtifactNotFoundError, match="expired"):
        store.read(art.id, None, 100)
    assert not (store.dir / f"{art.id}.txt").exists()
    other = store.create("x", kind="k")
    clock.now += 61
    store.create("y", kind="k")  # a create sweeps the expired ones
    assert not (store.dir / f"{other.id}.json").exists()


def test_byte_cap_evicts_oldest_and_refuses_oversize(tmp_path: Path, clock: Clock) -> None:
    store = make(tmp_path, clock, max_bytes=2500)
    first = store.create("1" * 1000, kind="k")
    clock.now += 1
    second = store.create("2" * 1000, kind="k")
    clock.now += 1
    third = store.create("3" * 1000, kind="k")  # 3000 > 2500: the oldest goes
    with pytest.raises(ArtifactNotFoundError):
        store.get(first.id)
    assert store.get(second.id) and store.get(third.id)
    assert store.usage()["bytes"] == 2000
    with pytest.raises(StoreFull):
        store.create("x" * 2501, kind="k")


def test_malformed_ids_are_not_found(tmp_path: Path, clock: Clock) -> None:
    store = make(tmp_path, clock)
    for bad in ("../../etc/passwd", "art_short", "", "art_" + "a" * 23 + "/"):
        with pytest.raises(ArtifactNotFoundError):
            store.read(bad, None, 100)


def test_utf8_cut() -> None:
    data = "aé中🙂".encode()
    assert [utf8_cut(data, n) for n in range(len(data) + 1)] == [0, 1, 1, 3, 3, 3, 6, 6, 6, 6,
                                                                 10]

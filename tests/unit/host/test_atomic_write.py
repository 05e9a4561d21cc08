"""One atomic writer (host/private.write_atomic): a reader sees the old file or the new
one whole; exactly the mode asked for; `durable` syncs the file and its directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codexbridge.host import private
from codexbridge.messages.records import DeliveryStore, ToCodex


def test_mode_is_exact_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        private.write_atomic(tmp_path / "settings.json", b"{}", mode=0o644)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "settings.json").stat().st_mode) == 0o644
    private.write_private(tmp_path / "box" / "mail", b"x")
    assert stat.S_IMODE((tmp_path / "box" / "mail").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "box").stat().st_mode) == 0o700


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "record.json"
    target.write_bytes(b"old")

    def full_disk(_fd: int, _data: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(private.os, "write", full_disk)
    with pytest.raises(OSError):
        private.write_atomic(target, b"new", mode=0o600)
    monkeypatch.undo()
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["record.json"]


def test_durable_syncs_the_file_then_its_directory(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(private.os, "fsync", fsync)
    private.write_atomic(tmp_path / "a", b"1", mode=0o600)
    assert synced == []  # the default skips both syncs
    private.write_atomic(tmp_path / "b", b"2", mode=0o600, durable=True)
    assert synced == ["file", "dir"]


def test_delivery_records_are_written_durably(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # "nothing lost" rests on the record: a saved delivery survives an OS crash
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(private.os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    store = DeliveryStore(tmp_path)
    store.save(ToCodex(id="req_1", thread_id="T", conversation="c", hop=1, max_hops=4))
    assert len(calls) == 2

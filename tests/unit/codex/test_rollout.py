"""A turn's cost read back from codex's rollout (codex/rollout.py, docs/tokens.md): the
`token_usage_record` lines of that turn only, once each, once its end is written, and only
from a regular file of ours no one else can write."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from codexbridge.codex.rollout import _open_ours, _Turn, turn_usage
from codexbridge.messages.records import Tokens

TURN, OTHER = "01a23b67-5ef5-7dd2-9624-cfeef40c8d54", "01a23b67-5d68-76d1-911f-cb44627e9aa8"


def _usage(turn: str, response: str, n_in: int, cached: int, out: int) -> str:
    u = {"input_tokens": n_in, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
         "output_tokens": out, "reasoning_output_tokens": 0, "total_tokens": n_in + out}
    return json.dumps({"type": "token_usage_record", "payload": {
        "thread_id": "t", "turn_id": turn, "response_id": response, "usage": u,
        "turn_token_usage": u, "thread_token_usage": {**u, "input_tokens": 99999}}})


def _event(kind: str, turn: str) -> str:
    return json.dumps({"type": "event_msg", "payload": {"type": kind, "turn_id": turn}})


def _rollout(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "rollout-x.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    path.chmod(0o600)
    return path


def _read(path: Path | str | None, turn: str = TURN, wait: float = 0.0) -> Tokens | None:
    calls = asyncio.run(turn_usage(str(path) if path else None, turn, wait=wait))
    return None if calls is None else Tokens.of_codex(calls) or Tokens(0, 0, 0)


def test_sums_the_turns_calls_once_each_and_nothing_else(tmp_path: Path) -> None:
    path = _rollout(
        tmp_path, _event("task_started", OTHER), _usage(OTHER, "resp_1", 500, 0, 50),
        _event("task_complete", OTHER), _event("task_started", TURN),
        _usage(TURN, "resp_2", 1234, 1000, 56), "{not json " + TURN,
        json.dumps({"type": "token_usage_record", "payload": {"turn_id": TURN,
                                                              "usage": "?"}}),
        _usage(TURN, "resp_3", 1234, 1000, 56), _usage(TURN, "resp_3", 1234, 1000, 56),
        _event("task_complete", TURN), _usage(OTHER + "x", "resp_4", 9, 9, 9))
    assert _read(path) == Tokens(2468, 2000, 112)  # `usage` per call, never the totals


def test_an_interrupted_turn_counts_what_it_ran(tmp_path: Path) -> None:
    path = _rollout(tmp_path, _usage(TURN, "r1", 10, 0, 5), _event("turn_aborted", TURN))
    assert _read(path) == Tokens(10, 0, 5)


def test_a_turn_whose_end_is_not_written_is_not_counted_in_part(tmp_path: Path) -> None:
    path = _rollout(tmp_path, _usage(TURN, "r1", 10, 0, 5))
    assert _read(path, wait=0.0) is None


def test_waits_for_the_end_codexs_writer_adds_a_moment_later(tmp_path: Path) -> None:
    path = _rollout(tmp_path, _usage(TURN, "r1", 10, 0, 5))

    async def scenario() -> Tokens | None:
        reading = asyncio.create_task(turn_usage(str(path), TURN, wait=60.0))
        await asyncio.sleep(0)  # (the reader has looked once: no end yet)
        with path.open("a") as fh:
            fh.write(_event("task_complete", TURN) + "\n")
        calls = await reading
        return None if calls is None else Tokens.of_codex(calls)

    assert asyncio.run(scenario()) == Tokens(10, 0, 5)


def test_no_path_or_no_file_counts_nothing(tmp_path: Path) -> None:
    assert _read(None) is None
    assert _read(tmp_path / "absent.jsonl") is None


def test_a_file_without_a_line_of_the_turn_is_not_waited_on(tmp_path: Path) -> None:
    # (a codex that writes another format must not hold every reply for the wait: a
    # wait here would outlast the test's timeout)
    path = _rollout(tmp_path, _event("task_started", OTHER), _usage(OTHER, "r", 1, 0, 1))
    assert _read(path, wait=3600.0) is None


def test_a_file_others_can_write_or_a_symlink_is_not_believed(tmp_path: Path) -> None:
    path = _rollout(tmp_path, _usage(TURN, "r1", 10, 0, 5), _event("task_complete", TURN))
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    assert _read(link) is None
    path.chmod(0o620)
    assert _read(path) is None
    path.chmod(0o600)
    assert _read(path) == Tokens(10, 0, 5)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo, 0o600)
    assert _read(fifo) is None  # (never blocks on a FIFO)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file away")
def test_a_file_of_another_user_is_not_believed(tmp_path: Path) -> None:
    path = _rollout(tmp_path, _usage(TURN, "r1", 10, 0, 5), _event("task_complete", TURN))
    os.chown(path, 65534, 65534)
    assert _read(path) is None


def test_each_look_reads_what_codex_appended_a_line_half_written_included(
        tmp_path: Path) -> None:
    path = _rollout(tmp_path, _event("task_started", TURN))
    fd = _open_ours(str(path))
    assert fd is not None
    turn = _Turn(fd, TURN)
    try:
        turn.look()
        assert turn.started and not turn.ended and not turn.calls
        usage, done = _usage(TURN, "r1", 10, 0, 5) + "\n", _event("task_complete", TURN) + "\n"
        with path.open("a") as fh:
            fh.write(usage[:25])  # codex's writer mid-line
        turn.look()
        assert not turn.calls
        with path.open("a") as fh:
            fh.write(usage[25:] + done)
        turn.look()
        assert turn.ended and Tokens.of_codex(list(turn.calls.values())) == Tokens(10, 0, 5)
    finally:
        turn.close()

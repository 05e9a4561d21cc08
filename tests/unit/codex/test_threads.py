"""Which thread does the person mean (protocol-notes "Which thread"): pure selection."""

from __future__ import annotations

from typing import Any

import pytest

from codexbridge.codex.protocol.generated.enums import ThreadStatusType
from codexbridge.codex.protocol.generated.results import ThreadStatus
from codexbridge.codex.protocol.threads import (
    ThreadInfo,
    is_busy,
    looks_like_thread_id,
    resolve,
    status_of,
    visible,
)
from codexbridge.errors import AmbiguousThreadError, NoThreadError
from tests.support import payloads

A = "0199a5c2-0000-7000-8000-00000000000a"
B = "0199a5c2-0000-7000-8000-00000000000b"
C = "0199a5c2-0000-7000-8000-00000000000c"


def info(thread_id: str, **kw: Any) -> ThreadInfo:
    return ThreadInfo.from_wire(payloads.thread(thread_id, **kw))


USER = info(payloads.USER_THREAD)
TITLE = ThreadInfo.from_wire(payloads.title_thread())


def test_from_wire_reads_a_real_thread() -> None:
    expected = ThreadInfo(id=payloads.USER_THREAD, name="Mock title", cwd=payloads.WORKDIR,
                          status=ThreadStatus(type="idle"), ephemeral=False,
                          thread_source="user", preview="first turn", updated_at=1796018498,
                          path=f"{payloads.CODEX_HOME}/sessions/2026/11/30/rollout-2026-11-30T"
                               f"05-46-10-{payloads.USER_THREAD}.jsonl")
    assert expected == USER
    assert USER.is_user_thread and not TITLE.is_user_thread


def test_status_labels() -> None:
    active = info(A, status={"type": "active", "activeFlags": ["waitingOnApproval"]})
    assert active.status_label == "active(waitingOnApproval)" and active.busy
    assert active.state is ThreadStatusType.ACTIVE
    assert info(A, status={"type": "active", "activeFlags": []}).status_label == "active"
    assert ThreadInfo.from_wire({"id": A, "status": "idle"}).status_label == "idle"
    assert ThreadInfo.from_wire({"id": A}).status_label == "unknown"
    # a newer codex's status prints as what it is
    assert ThreadInfo.from_wire({"id": A, "status": {"type": "new"}}).status_label == "new"


def test_from_wire_tolerates_missing_and_odd_fields() -> None:
    t = ThreadInfo.from_wire({"id": A, "name": 5, "cwd": None, "updatedAt": "x",
                              "preview": None, "brandNew": {"x": 1}})
    assert t == ThreadInfo(id=A)
    assert t.status_label == "unknown" and not t.busy
    assert ThreadInfo.from_wire({}).id == ""
    assert t.as_dict() == {"id": A, "name": None, "cwd": None, "status": "unknown",
                           "ephemeral": False, "threadSource": None, "preview": ""}


def test_status_of() -> None:
    active = status_of({"type": "active", "activeFlags": ["waitingOnApproval"]})
    assert active is not None and (active.state, active.active_flags) == (
        ThreadStatusType.ACTIVE, ("waitingOnApproval",))
    idle = status_of("idle")
    assert idle is not None and (idle.state, idle.active_flags) == (ThreadStatusType.IDLE, ())
    empty = status_of({})
    assert empty is not None and empty.state is None and status_of(None) is None
    new = status_of({"type": "somethingNew"})
    assert new is not None and new.state is None and new.label == "somethingNew"
    assert is_busy({"type": "active", "activeFlags": []}) and not is_busy({"type": "idle"})
    assert not is_busy(None) and not is_busy(42)


def test_user_threads() -> None:
    # A client-started thread has threadSource null unless it set one (protocol-notes).
    assert info(A, thread_source=None).is_user_thread
    assert not info(A, ephemeral=True).is_user_thread
    assert not info(A, thread_source="subagent").is_user_thread


def test_visible_hides_ephemeral_title_threads_unless_all() -> None:
    threads = [USER, TITLE]
    assert visible(threads, include_all=False) == [USER]
    assert visible(threads, include_all=True) == threads


def test_looks_like_thread_id() -> None:
    assert looks_like_thread_id(payloads.USER_THREAD)
    assert looks_like_thread_id(payloads.USER_THREAD.upper())
    assert not looks_like_thread_id("Mock title")
    assert not looks_like_thread_id(payloads.USER_THREAD + "0")


def test_the_only_user_thread_is_chosen() -> None:
    assert resolve([USER, TITLE], None) == USER


def test_no_user_thread_says_to_open_the_tui() -> None:
    with pytest.raises(NoThreadError, match="send it one message first"):
        resolve([TITLE], None)
    with pytest.raises(NoThreadError):
        resolve([], None)


def test_several_user_threads_are_ambiguous_and_listed() -> None:
    a, b = info(A, name="alpha"), info(B, name="beta", cwd="/other")
    with pytest.raises(AmbiguousThreadError) as exc:
        resolve([a, b, TITLE], None)
    assert [c["id"] for c in exc.value.candidates] == [A, B]
    assert A in str(exc.value) and "name=beta" in str(exc.value) and "cwd=/other" in str(exc.value)
    assert exc.value.exit_code == 4


def test_cwd_narrows_the_choice() -> None:
    a, b = info(A, cwd="/p1"), info(B, cwd="/p2")
    assert resolve([a, b], None, cwd="/p2") == b
    with pytest.raises(NoThreadError, match="with cwd /p3") as exc:
        resolve([a, b], None, cwd="/p3")
    assert A in str(exc.value)  # candidates are listed


def test_select_by_id_even_a_helper_thread() -> None:
    assert resolve([USER, TITLE], payloads.TITLE_THREAD) == TITLE
    assert resolve([USER, TITLE], payloads.USER_THREAD) == USER


def test_names_match_exactly_never_partially() -> None:
    a, b = info(A, name="alpha"), info(B, name="alphabet")
    assert resolve([a, b], "alpha") == a
    for wrong in ("alph", "Alpha", "alpha ", "bet"):
        with pytest.raises(NoThreadError) as exc:
            resolve([a, b], wrong)
        assert {c["id"] for c in exc.value.details["candidates"]} == {A, B}


def test_duplicate_names_are_ambiguous() -> None:
    a, b = info(A, name="same"), info(B, name="same")
    with pytest.raises(AmbiguousThreadError) as exc:
        resolve([a, b, info(C, name="other")], "same")
    assert {c["id"] for c in exc.value.candidates} == {A, B}


def test_names_of_helper_threads_do_not_match() -> None:
    helper = info(A, name="Mock title", ephemeral=True, thread_source="thread_title")
    assert resolve([helper, USER], "Mock title") == USER


def test_as_dict() -> None:
    assert USER.as_dict() == {"id": payloads.USER_THREAD, "name": "Mock title",
                              "cwd": payloads.WORKDIR, "status": "idle", "ephemeral": False,
                              "threadSource": "user", "preview": "first turn"}


def test_among_several_the_callers_project_wins_never_a_guess() -> None:
    # Two projects, each with a TUI on one daemon: a Claude session in ~/web talks to the
    # thread of ~/web; from a directory of neither, it is ambiguous as before.
    web = info(A, cwd="/home/u/web")
    api = info(B, cwd="/home/u/api")
    assert resolve([web, api], None, here="/home/u/web") == web
    assert resolve([web, api], None, here="/home/u/web/src/auth") == web
    with pytest.raises(AmbiguousThreadError):
        resolve([web, api], None, here="/home/u")
    with pytest.raises(AmbiguousThreadError):
        resolve([web, api], None, here="/home/u/webshop")  # a prefix is not a parent
    twice = info(C, cwd="/home/u/web")
    with pytest.raises(AmbiguousThreadError):
        resolve([web, twice, api], None, here="/home/u/web")  # two threads there: ask

"""The tolerant readers of what codex returns, and the turn tracker fed the schema.

* `Thread.from_wire` (codex/protocol/generated/results.py, what `ThreadInfo` is) reads any
  thread object — schema-drawn, one step off, or junk in every known field — exactly as
  the tolerance rules say (the reference reader below spells them out: the record
  `talk say` and `talk list` always gave).
* The generated results never raise on anything, and a list keeps at most what it got.
* `TurnTracker` never raises on any notification or server request, and loses nothing:
  every structural event of its turn comes out, and every delta byte is either handed
  on or counted in `dropped_bytes`.
"""

from __future__ import annotations

import copy
import json
from typing import Any, get_args

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from codexbridge.codex.protocol.envelopes import Notification, ServerRequest, classify
from codexbridge.codex.protocol.generated import methods as m
from codexbridge.codex.protocol.generated.results import (
    AgentMessageDeltaNotification,
    ThreadItemsListResponse,
    ThreadReadResponse,
    ThreadTurnsListResponse,
)
from codexbridge.codex.protocol.threads import ThreadInfo
from codexbridge.codex.protocol.turn import Approval, Completed, Delta, TurnEvent, TurnTracker

from . import schemagen as sg
from .strategies import json_values, lone_surrogate_json

THREAD_FIELDS = ("id", "name", "cwd", "status", "ephemeral", "threadSource", "preview",
                 "updatedAt")
schema_threads = sg.definition("v2/ThreadReadResponse.json", "Thread")
junk_threads = st.fixed_dictionaries({}, optional={
    **{k: json_values for k in THREAD_FIELDS},
    "status": json_values | st.fixed_dictionaries(
        {}, optional={"type": json_values, "activeFlags": json_values})})


# --- ThreadInfo: the tolerance rules, spelled out -------------------------------------

def _reference(thread: dict[str, Any]) -> tuple[Any, ...]:
    """What a thread object reads as: text ids, a wrong type → the default, a status
    that is a bare string taken as its type, flags that are not strings dropped."""
    raw = thread.get("status")
    kind = raw.get("type") if isinstance(raw, dict) else raw
    flags = raw.get("activeFlags") if isinstance(raw, dict) else None
    updated = thread.get("updatedAt")
    tid = thread.get("id")

    def string(key: str) -> str | None:
        value = thread.get(key)
        return value if isinstance(value, str) else None

    return ("" if tid is None else str(tid), string("name"), string("cwd"),
            kind if isinstance(kind, str) and kind else None,
            tuple(f for f in flags if isinstance(f, str)) if isinstance(flags, list) else (),
            bool(thread.get("ephemeral", False)), string("threadSource"),
            str(thread.get("preview") or ""),
            updated if isinstance(updated, int) and not isinstance(updated, bool) else None)


@given(schema_threads | sg.near_valid(schema_threads) | junk_threads)
@example({"id": None})  # was "None" on the old lean path, "" in the model
@example({"updatedAt": True})  # a bool is no timestamp
@example({"status": {"type": "active", "activeFlags": [1, "waitingOnApproval"]}})
def test_a_thread_reads_by_the_tolerance_rules(thread: Any) -> None:
    if not isinstance(thread, dict):
        return  # a thread/read whose thread is not an object has none (test_models)
    t = ThreadInfo.from_wire(thread)
    status = t.status
    assert (t.id, t.name, t.cwd, status.type if status else None,
            status.active_flags if status else (), t.ephemeral, t.thread_source, t.preview,
            t.updated_at) == _reference(thread)
    assert isinstance(t.id, str) and isinstance(t.status_label, str)
    assert ThreadReadResponse.from_wire({"thread": thread}).thread == t


@given(json_values)
def test_thread_read_response_never_raises(value: Any) -> None:
    result = ThreadReadResponse.from_wire(value)
    assert result.thread is None or isinstance(result.thread.id, str)


@given(st.lists(json_values | schema_threads, max_size=6))
def test_list_results_never_raise(data: list[Any]) -> None:
    assert len(ThreadTurnsListResponse.from_wire({"data": data}).data) <= len(data)
    assert len(ThreadItemsListResponse.from_wire({"data": data}).data) <= len(data)


# --- the turn tracker fed the schema --------------------------------------------------

THREAD, OTHER = "thr-1", "thr-2"
TURN, OTHER_TURN = "turn-1", "turn-2"
TRACKED = [m.ITEM_AGENT_MESSAGE_DELTA, m.ITEM_COMPLETED, m.ITEM_STARTED, m.TURN_COMPLETED,
           m.TURN_STARTED, m.ERROR, m.SERVER_REQUEST_RESOLVED]


@st.composite
def aimed(draw: st.DrawFn, messages: st.SearchStrategy[Any]) -> Any:
    """A message whose thread / turn ids are ours or another's, so the tracker acts."""
    msg = copy.deepcopy(draw(messages))
    params = msg.get("params") if isinstance(msg, dict) else None
    if isinstance(params, dict):
        for key, pool in (("threadId", [THREAD, OTHER]), ("conversationId", [THREAD]),
                          ("turnId", [TURN, OTHER_TURN])):
            if key in params:
                params[key] = draw(st.sampled_from(pool))
        if isinstance(params.get("turn"), dict) and "id" in params["turn"]:
            params["turn"]["id"] = draw(st.sampled_from([TURN, OTHER_TURN]))
    return msg


valid_stream = (sg.notifications().any_message(TRACKED)
                | sg.notifications().any_message() | sg.server_requests().any_message())
stream = st.lists(aimed(valid_stream | sg.near_valid(valid_stream)), max_size=12)


def _envelopes(messages: list[Any]) -> list[Notification | ServerRequest]:
    out = []
    for msg in messages:
        env = classify(json.loads(json.dumps(msg)))
        if isinstance(env, (Notification, ServerRequest)):
            out.append(env)
    return out


def _ours(env: Notification | ServerRequest) -> bool:
    p = env.params
    return p.get("threadId", p.get("conversationId")) == THREAD


def _turn_of(p: dict[str, Any]) -> Any:
    if isinstance(p.get("turnId"), str):
        return p["turnId"]
    turn = p.get("turn")
    return turn.get("id") if isinstance(turn, dict) and isinstance(turn.get("id"), str) \
        else None


@given(stream, st.integers(0, 12), st.sampled_from([8, 64, 64 * 1024]))
@example([{"method": m.TURN_COMPLETED, "params": {"threadId": THREAD, "turnId": TURN,
                                                  "turn": "garbled"}}], 0, 64)  # crashed
@example([{"method": m.ITEM_AGENT_MESSAGE_DELTA,
           "params": {"threadId": THREAD, "turnId": TURN, "itemId": "i",
                      "delta": "\ud800"}}], 1, 64)  # a lone surrogate crashed the count
@example([{"method": m.ITEM_AGENT_MESSAGE_DELTA,
           "params": {"threadId": THREAD, "turnId": TURN, "itemId": "i",
                      "delta": None}}], 0, 64)  # no text: the test counted "None"
def test_tracker_never_raises_and_loses_nothing(messages: list[Any], bind_at: int,
                                                buffer_limit: int) -> None:
    envs = _envelopes(messages)
    tracker = TurnTracker(THREAD, buffer_limit=buffer_limit)
    events = []
    for i, env in enumerate(envs):
        if i == bind_at:
            events += tracker.bind(TURN)
        events += tracker.feed(env)
    if tracker.turn_id is None:
        events += tracker.bind(TURN)
    # every kind the tracker may emit (a user message added to the turn, too: `Added`)
    assert all(isinstance(e, get_args(TurnEvent))
               for e in events)
    ours = [e for e in envs if _ours(e)]
    # Structural events of our turn are never dropped.
    completions = [e for e in ours if isinstance(e, Notification)
                   and e.method == m.TURN_COMPLETED and _turn_of(e.params) == TURN]
    assert sum(isinstance(e, Completed) for e in events) == len(completions)
    approvals = [e for e in ours if isinstance(e, ServerRequest)
                 and _turn_of(e.params) in (None, TURN)]
    assert sum(isinstance(e, Approval) for e in events) == len(approvals)
    # Delta bytes: handed on, or counted as dropped from the early buffer.
    # (a delta that is not a string — null, a number — carries no text: the reader
    # gives it as "", as it reads any field of the wrong type)
    sent = sum(len(AgentMessageDeltaNotification.from_wire(e.params).delta.encode(
                   "utf-8", "surrogatepass"))
               for e in ours if isinstance(e, Notification)
               and e.method == m.ITEM_AGENT_MESSAGE_DELTA and _turn_of(e.params) == TURN)
    got = sum(len(e.text.encode("utf-8", "surrogatepass")) for e in events
              if isinstance(e, Delta))
    # (dropped_bytes also counts other turns' deltas buffered before the bind)
    assert got <= sent <= got + tracker.dropped_bytes
    assert isinstance(tracker.reply, str)


@given(lone_surrogate_json)
def test_tracker_reply_with_lone_surrogates(text: str) -> None:
    delta = json.loads(text)
    tracker = TurnTracker(THREAD, capture_limit=4)
    tracker.bind(TURN)
    for method, params in ((m.ITEM_AGENT_MESSAGE_DELTA, {"itemId": "i", "delta": delta}),
                           (m.ITEM_COMPLETED, {"item": {"type": "agentMessage", "id": "i",
                                                        "text": delta}})):
        tracker.feed(Notification(method, {"threadId": THREAD, "turnId": TURN, **params}))
    assert isinstance(tracker.reply, str)


@pytest.mark.parametrize("buffer_limit", [0, 5])
def test_buffer_overflow_is_counted(buffer_limit: int) -> None:
    tracker = TurnTracker(THREAD, buffer_limit=buffer_limit)
    tracker.feed(Notification(m.ITEM_AGENT_MESSAGE_DELTA, {
        "threadId": THREAD, "turnId": TURN, "itemId": "i", "delta": "héllo!"}))
    events = tracker.bind(TURN)
    assert tracker.dropped_bytes + sum(len(e.text.encode()) for e in events
                                       if isinstance(e, Delta)) == len("héllo!".encode())

"""Every message codexbridge builds validates against `schemas/` (issue 2, item 3).

The real AppServerClient and talk functions run against an in-memory app-server under
the `schema_guard` fixture, so what is checked is exactly what the code puts on the wire:
initialize/initialized, thread/loaded/list and thread/read (paged), thread/resume with
excludeTurns, turn/start with text_elements and an optional cwd, thread/turns/list and
thread/items/list with cursors, and the answer to every server request under every
approval policy. The schema module's own behaviour (precise paths, unknown methods) is
tested at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codexbridge.codex import transport
from codexbridge.codex.client import AppServerClient
from codexbridge.codex.history import read_history
from codexbridge.codex.protocol.approvals import POLICIES, TABLE
from codexbridge.codex.protocol.enums import ApprovalPolicy
from codexbridge.codex.threads import find_target, list_threads
from codexbridge.codex.turn import say
from codexbridge.errors import SchemaViolation, ThreadNotLoadedError
from tests.support import payloads
from tests.support.memory_appserver import MemoryAppServer, memory_pair
from tests.support.schema_check import GUARD_ENV, SchemaGuard
from tests.support.schema_guard import (  # the fixture, until conftest registers the plugin
    REPO_ROOT,
    SITE_DIR,
    schema_guard_fixture,  # noqa: F401
)
from tests.support.schemas import repo_schemas, schema_dir

schema = repo_schemas()
SERVER_REQUESTS = sorted(schema.server_request_methods())


def _methods(guard: SchemaGuard) -> set[str]:
    return {m["method"] for m in guard.sent if "method" in m}


async def test_handshake_list_and_resolve(schema_guard: SchemaGuard) -> None:
    server = MemoryAppServer()
    async with AppServerClient("ws://memory", connector=server.connector) as client:
        threads = await list_threads(client, include_all=True)
        target = await find_target(client, None)
        by_name = await find_target(client, "Mock title")
        by_id = await find_target(client, payloads.USER_THREAD)
    assert [t.id for t in threads] == [payloads.USER_THREAD, payloads.TITLE_THREAD]
    assert target.id == by_name.id == by_id.id == payloads.USER_THREAD
    assert {"initialize", "initialized", "thread/loaded/list", "thread/read"} <= \
        _methods(schema_guard)
    # paging: page_size=1 and two loaded threads → the second page carries a cursor
    assert any(r["params"].get("cursor") for r in server.requests("thread/loaded/list"))
    assert schema_guard.checked == len(server.received)


@pytest.mark.parametrize("turn_cwd", [None, "/home/dev/elsewhere"])
async def test_say_resume_and_turn_start(schema_guard: SchemaGuard,
                                         turn_cwd: str | None) -> None:
    server = MemoryAppServer()
    deltas: list[str] = []
    async with AppServerClient("ws://memory", connector=server.connector) as client:
        result = await say(client, payloads.USER_THREAD, "hello ✓ from the bridge",
                                turn_cwd=turn_cwd, on_delta=deltas.append, timeout=5)
    assert result.status == "completed" and result.reply == "MOCK REPLY: done"
    assert "".join(deltas) == "MOCK REPLY: done"  # the early delta was buffered, replayed
    (resume,) = server.requests("thread/resume")
    assert resume["params"] == {"threadId": payloads.USER_THREAD, "excludeTurns": True}
    # Through codex's queue, unless the turn needs an override the queue cannot carry.
    (start,) = server.requests("turn/start" if turn_cwd else "thread/queue/add")
    assert start["params"]["input"] == [{"type": "text", "text": "hello ✓ from the bridge",
                                         "text_elements": []}]
    assert start["params"].get("cwd") == turn_cwd
    assert start["params"]["clientUserMessageId"].startswith("cb_")
    assert not schema_guard.violations


@pytest.mark.parametrize("policy", POLICIES)
async def test_say_answers_every_server_request_validly(
        schema_guard: SchemaGuard, policy: ApprovalPolicy) -> None:
    unknown = "item/brandNew/requestSomething"
    server = MemoryAppServer(server_requests=[*SERVER_REQUESTS, unknown])
    lines: list[str] = []
    async with AppServerClient("ws://memory", connector=server.connector) as client:
        result = await say(client, payloads.USER_THREAD, "do things", approvals=policy,
                                approval_timeout=0.01, on_approval=lines.append, timeout=10)
    assert result.status == "completed"
    # every request got exactly one answer, and the guard checked each one
    assert len(server.answers) == len(SERVER_REQUESTS) + 1
    assert not server._outstanding
    by_method = {m: server.answers[i] for i, m in enumerate([*SERVER_REQUESTS, unknown])}
    assert by_method[unknown]["error"]["code"] == -32601
    refused = [m for m in SERVER_REQUESTS if TABLE[m].fail_closed is None]
    for m in refused:
        assert "error" in by_method[m], m
    for m in set(SERVER_REQUESTS) - set(refused):
        assert "result" in by_method[m], m
    if policy == "accept":
        assert by_method["item/commandExecution/requestApproval"]["result"] == \
            {"decision": "accept"}
        assert by_method["execCommandApproval"]["result"] == {"decision": "approved"}
    else:
        assert by_method["item/commandExecution/requestApproval"]["result"] == \
            {"decision": "decline"}
    # Records are kept for requests about the thread; the unknown method and the two
    # connection-level ones (no threadId) are answered at once without one.
    connection_level = {m for m in SERVER_REQUESTS
                        if "threadId" not in payloads.server_request_params()[m]
                        and "conversationId" not in payloads.server_request_params()[m]}
    assert connection_level == {"attestation/generate", "account/chatgptAuthTokens/refresh"}
    assert sorted(a.method for a in result.approvals) == \
        sorted(set(SERVER_REQUESTS) - connection_level)
    assert not schema_guard.violations


async def test_read_history_pages_turns_and_items(schema_guard: SchemaGuard) -> None:
    t1, t2 = payloads.TURN_1, payloads.TURN_2
    turns = [payloads.turn(t1, items_view="notLoaded"), payloads.turn(t2, items_view="notLoaded")]
    items = [payloads.item_entry(t1, payloads.user_message("first turn")),
             payloads.item_entry(t1, payloads.agent_message("MOCK REPLY: first turn")),
             payloads.item_entry(t2, payloads.user_message("second", "item-u2")),
             payloads.item_entry(t2, payloads.command_item()),
             payloads.item_entry(t2, payloads.agent_message("MOCK REPLY: second", "msg_2"))]
    server = MemoryAppServer(turns=turns, items=items, page_size=2)
    async with AppServerClient("ws://memory", connector=server.connector) as client:
        history = await read_history(client, payloads.USER_THREAD, page_size=2)
    assert [(h.id, h.status, len(h.items)) for h in history] == [(t1, "completed", 2),
                                                                  (t2, "completed", 3)]
    assert history[1].items[2] == items[4]["item"]  # items arrive unchanged
    item_reqs = server.requests("thread/items/list")
    assert [r["params"].get("cursor") for r in item_reqs] == [None, "2", "4"]
    assert item_reqs[0]["params"] == {"threadId": payloads.USER_THREAD, "limit": 2,
                                      "sortDirection": "asc"}
    assert [r["params"].get("cursor") for r in server.requests("thread/turns/list")] == \
        [None]
    assert not schema_guard.violations


# -- the guard itself ---------------------------------------------------------------------


async def test_guard_reports_a_bad_request() -> None:
    guard = SchemaGuard()
    undo = transport.observe(guard.wrap)
    server = MemoryAppServer()
    try:
        client = AppServerClient("ws://memory", connector=server.connector)
        await client.connect()
        with pytest.raises(ThreadNotLoadedError):  # sent anyway: the guard only reports
            await client.request("thread/read", {"thread": payloads.USER_THREAD})
        await client.close()
    finally:
        undo()
    assert guard.violations and "thread/read" in guard.violations[0]
    assert guard.checked == 3  # initialize, initialized, thread/read
    (violation,) = guard.violations
    assert "at $.params: 'threadId' is a required property" in violation


async def test_guard_checks_an_answer_against_the_request_it_answers() -> None:
    guard = SchemaGuard()
    near, far = memory_pair()
    link = guard.wrap(near)
    await far.send(json.dumps({"id": 0, "method": "applyPatchApproval", "params": {}}))
    await link.recv()  # the guard learns that request 0 is applyPatchApproval
    for answer in ({"id": 0, "result": {"decision": "denied"}},
                   {"id": 0, "result": {"decision": {"denied": {"rejection": "no"}}}},
                   {"id": 9, "error": {"code": "x", "message": "m"}}):
        await link.send(json.dumps(answer))
    assert len(guard.violations) == 2
    assert "at $.result.decision" in guard.violations[0]
    assert "at $.error.code" in guard.violations[1]


def test_guard_reaches_a_codexbridge_subprocess(tmp_path: Path) -> None:
    """The CLI tests run codexbridge as a child process: the guard must follow it there."""
    report = tmp_path / "report.jsonl"
    env = {**os.environ, GUARD_ENV: str(report),
           "PYTHONPATH": os.pathsep.join([str(SITE_DIR), str(REPO_ROOT)])}
    code = (
        "import asyncio, json\n"
        "from codexbridge.codex import transport\n"
        "from tests.support.memory_appserver import memory_pair\n"
        "async def main():\n"
        "    near, _far = memory_pair()\n"
        "    link = transport.observed(near)  # what every connector's transport goes through\n"
        "    await link.send(json.dumps({'method': 'initialized'}))\n"
        "    await link.send(json.dumps({'id': 1, 'method': 'thread/read', 'params': {}}))\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=30)
    lines = [json.loads(x) for x in report.read_text().splitlines()]
    violations = [x["violation"] for x in lines if "violation" in x]
    assert sum(x.get("checked", 0) for x in lines) == 2
    assert len(violations) == 1 and "'threadId' is a required property" in violations[0]
    guard = SchemaGuard()
    assert guard.read_child_reports(report) == 2 and len(guard.violations) == 1


# -- the schema module ------------------------------------------------------------------


def _initialize_params() -> dict[str, Any]:
    return {"clientInfo": {"name": "codexbridge", "title": "Codex Bridge", "version": "0.1.0"},
            "capabilities": {"experimentalApi": False}}


@pytest.mark.parametrize("message", [
    {"id": 1, "method": "initialize", "params": _initialize_params()},
    {"id": 2, "method": "thread/resume",
     "params": {"threadId": payloads.USER_THREAD, "excludeTurns": True}},
    {"id": 3, "method": "turn/start",
     "params": {"threadId": payloads.USER_THREAD, "cwd": "/w",
                "input": [{"type": "text", "text": "hi", "text_elements": []}]}},
    {"id": 4, "method": "thread/loaded/list", "params": {}},
    {"id": "5", "method": "thread/read", "params": {"threadId": payloads.USER_THREAD}},
    {"id": 6, "method": "thread/turns/list",
     "params": {"threadId": payloads.USER_THREAD, "limit": 50, "sortDirection": "asc",
                "itemsView": "notLoaded", "cursor": "opaque"}},
    {"id": 7, "method": "thread/items/list",
     "params": {"threadId": payloads.USER_THREAD, "limit": 50, "sortDirection": "asc",
                "cursor": "opaque"}},
    {"id": 8, "method": "thread/items/list",
     "params": {"threadId": payloads.USER_THREAD, "turnId": payloads.TURN_1,
                "cursor": {"type": "item", "itemId": "msg_1"}}},
    {"id": 9, "method": "thread/start", "params": {"cwd": "/w", "threadSource": "user"}},
    {"id": 10, "method": "thread/name/set",
     "params": {"threadId": payloads.USER_THREAD, "name": "alpha"}},
])
def test_requests_we_build_validate(message: dict[str, Any]) -> None:
    schema.validate_client_request(message)
    schema.validate_outgoing(message)


@pytest.mark.parametrize("message, path, fragment", [
    ({"id": 1, "method": "turn/start", "params": {"input": []}},
     "$.params", "'threadId' is a required property"),
    ({"id": 1, "method": "thread/resume", "params": {"threadId": 5}},
     "$.params.threadId", "is not of type 'string'"),
    ({"id": 1, "method": "turn/start",
      "params": {"threadId": "t", "input": [{"type": "text"}]}},
     "$.params.input[0]", "not valid under any"),
    ({"id": 1, "method": "thread/bogus", "params": {}}, "$.method", "not a client request"),
    ({"id": True, "method": "thread/loaded/list", "params": {}}, "$.id", "not valid"),
    ({"id": 1, "method": "thread/read"}, "$", "'params' is a required property"),
    ({"id": 1, "params": {}}, "$.method", "missing"),
])
def test_violations_name_the_failing_path(message: dict[str, Any], path: str,
                                          fragment: str) -> None:
    with pytest.raises(SchemaViolation) as info:
        schema.validate_client_request(message)
    exc = info.value
    assert exc.path == path, exc.errors
    assert fragment in str(exc)
    assert exc.exit_code == 70 and exc.details["errors"][0]["path"] == path


def test_notifications() -> None:
    schema.validate_client_notification({"method": "initialized"})
    assert schema.client_notification_methods() == {"initialized"}
    with pytest.raises(SchemaViolation, match="not a client notification"):
        schema.validate_client_notification({"method": "initialised"})


def test_outgoing_answers_and_garbage() -> None:
    schema.validate_outgoing({"id": 0, "result": {"decision": "decline"}},
                             {0: "item/commandExecution/requestApproval"}.get)
    # an answer to a request we did not see: only the envelope is checked
    schema.validate_outgoing({"id": 0, "result": {"anything": 1}})
    schema.validate_outgoing({"id": 0, "error": {"code": -32601, "message": "no"}})
    with pytest.raises(SchemaViolation):
        schema.validate_outgoing({"id": 0, "result": {"decision": "nope"}},
                                 lambda _id: "item/fileChange/requestApproval")
    for bad in ([1], {"id": True, "result": {}}, {"id": 1}, {"error": "x"}):
        with pytest.raises(SchemaViolation):
            schema.validate_outgoing(bad)


def test_server_request_map_comes_from_the_schema() -> None:
    responses = schema.server_request_responses()
    assert responses["item/commandExecution/requestApproval"] == \
        "CommandExecutionRequestApprovalResponse.json"
    assert responses["account/chatgptAuthTokens/refresh"] == \
        "ChatgptAuthTokensRefreshResponse.json"
    for name in responses.values():
        assert (schema_dir(experimental=True) / name).is_file()
    assert "initialize" in schema.client_request_methods()
    # the experimental bundle we speak: 110 stable requests and 79 more (codex 0.171.0)
    assert len(schema.client_request_methods()) == 189
    assert len(repo_schemas(experimental=False).client_request_methods()) == 110


def test_schema_costs_nothing_until_used() -> None:
    # `talk say` and the courier send typed calls and read typed results (generated
    # calls.py / results.py), and neither jsonschema nor pydantic comes with them.
    code = ("import sys, codexbridge.codex.protocol.schema, codexbridge.codex.turn,"
            " codexbridge.messages.courier, codexbridge.cli.talk_cmd;"
            " print(sorted(m for m in ('jsonschema', 'pydantic',"
            " 'codexbridge.codex.protocol.generated.calls',"
            " 'codexbridge.codex.protocol.generated.results')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO_ROOT, timeout=30).stdout
    assert out.strip() == str(["codexbridge.codex.protocol.generated.calls",
                               "codexbridge.codex.protocol.generated.results"])

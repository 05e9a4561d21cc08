"""The mock model on its own: rule set as pure functions, then the HTTP/SSE surface."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from codexbridge.doctor.offline_stack import isolated_env, mock_env, write_codex_home
from codexbridge.messages.envelope import CLAUDE, Envelope
from tests.support.mock_codex import MockResponsesServer, big_text, extract_user_text, plan_reply


def body(user_text: str, *, tools: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "model": "mock-model", "stream": True,
        "input": [
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": "system"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "<environment_context/>"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": user_text}]},
        ],
        "tools": [{"type": "function", "name": "exec_command"}] if tools else [],
        **extra,
    }


def events(frames: list[bytes]) -> list[dict[str, Any]]:
    out = []
    for frame in frames:
        head, data = frame.decode().split("\n", 1)
        parsed = json.loads(data.removeprefix("data: "))
        assert head == f"event: {parsed['type']}"
        out.append(parsed)
    return out


def reply_text(frames: list[bytes]) -> str:
    evs = events(frames)
    deltas = "".join(e["delta"] for e in evs if e["type"] == "response.output_text.delta")
    [done] = [e for e in evs if e["type"] == "response.output_item.done"]
    assert done["item"]["content"][0]["text"] == deltas
    return deltas


def test_user_text_is_the_last_user_message() -> None:
    assert extract_user_text(body("hi there")) == "hi there"
    assert extract_user_text({"input": []}) is None
    assert extract_user_text("nonsense") is None


def test_plain_reply_in_8_char_deltas() -> None:
    reply = plan_reply(body("hello world"), 1)
    assert reply.rule == "reply" and reply.delta_delay == 0
    evs = events(reply.frames)
    assert [e["type"] for e in evs[:2]] == ["response.created", "response.output_item.added"]
    assert evs[-1]["type"] == "response.completed"
    assert evs[-1]["response"]["usage"]["total_tokens"] == 1290
    deltas = [e["delta"] for e in evs if e["type"] == "response.output_text.delta"]
    assert all(len(d) <= 8 for d in deltas)
    assert reply_text(reply.frames) == "MOCK REPLY: hello world"


def test_ids_are_unique_per_call() -> None:
    first, second = (events(plan_reply(body("x"), n).frames) for n in (1, 2))
    assert first[1]["item"]["id"] != second[1]["item"]["id"]


def test_title_request_gets_the_schema_object() -> None:
    fmt = {"type": "json_schema", "name": "t", "strict": True,
           "schema": {"type": "object", "properties": {"title": {"type": "string"}}}}
    reply = plan_reply(body("RUN: rm -rf /", tools=False, text={"format": fmt}), 3)
    assert reply.rule == "json_schema"
    assert json.loads(reply_text(reply.frames)) == {"title": "Mock title"}


def test_tool_output_is_echoed() -> None:
    req = body("RUN: touch x")
    req["input"].append({"type": "function_call_output", "call_id": "call_1",
                         "output": "y" * 500})
    reply = plan_reply(req, 4)
    assert reply.rule == "tool_output"
    assert reply_text(reply.frames) == "MOCK DONE: " + "y" * 200


@pytest.mark.parametrize(("text", "rule", "escalated"), [
    ("RUN: touch /tmp/x", "run", True),
    ("please RUN_SANDBOXED: touch /tmp/x", "run_sandboxed", False),
])
def test_commands(text: str, rule: str, escalated: bool) -> None:
    reply = plan_reply(body(text), 5)
    assert reply.rule == rule
    evs = events(reply.frames)
    added, done = evs[1]["item"], evs[2]["item"]
    assert added == done and added["type"] == "function_call" and added["name"] == "exec_command"
    args = json.loads(added["arguments"])
    assert args["cmd"] == "touch /tmp/x"
    assert (args.get("sandbox_permissions") == "require_escalated") is escalated
    if escalated:
        assert args["justification"] == "Mock model wants to run: touch /tmp/x"


def test_run_without_tools_is_plain_text() -> None:
    assert plan_reply(body("RUN: ls", tools=False), 6).rule == "reply"


def test_big_reply_is_exact_and_chunked() -> None:
    reply = plan_reply(body("BIG:20000"), 7)
    assert reply.rule == "big"
    text = reply_text(reply.frames)
    assert text == big_text(20000) and len(text.encode()) == 20000
    deltas = [e for e in events(reply.frames) if e["type"] == "response.output_text.delta"]
    assert len(deltas) == 3


def test_big_text_is_numbered_lines() -> None:
    assert big_text(0) == ""
    assert len(big_text(1)) == 1
    lines = big_text(64 * 3).splitlines()
    assert [line[:12] for line in lines] == ["BIG 00000000", "BIG 00000001", "BIG 00000002"]


def test_fail_and_slow() -> None:
    fail = plan_reply(body("x FAIL_TURN y"), 8)
    assert fail.status == 500 and fail.json_body is not None
    slow = plan_reply(body("SLOW please"), 9)
    assert slow.rule == "reply" and slow.delta_delay == 0.25


# -- over HTTP -------------------------------------------------------------------------

def post(mock: MockResponsesServer, path: str, payload: Any) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    conn.request("POST", path, json.dumps(payload),
                 {"Content-Type": "application/json", "Authorization": "Bearer k"})
    return conn.getresponse()


def test_http_surface() -> None:
    with MockResponsesServer() as mock:
        assert mock.url == f"http://127.0.0.1:{mock.port}/v1"
        resp = post(mock, "/v1/responses?api-version=1", body("over http"))
        assert resp.status == 200
        assert resp.getheader("Content-Type") == "text/event-stream"
        raw = resp.read().decode()
        frames = [f.encode() + b"\n\n" for f in raw.split("\n\n") if f]
        assert reply_text(frames) == "MOCK REPLY: over http"

        assert post(mock, "/v1/responses", body("FAIL_TURN")).status == 500
        assert post(mock, "/v1/elsewhere", {}).status == 404
        conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
        conn.request("GET", "/v1/models")
        assert json.loads(conn.getresponse().read())["object"] == "list"

        calls = mock.model_calls
        assert [c.rule for c in calls] == ["reply", "fail"]
        assert calls[0].headers["authorization"] == "Bearer k"
        assert calls[0].user_text == "over http"
        assert [r.rule for r in mock.requests][2:] == ["not_found", "models"]


def test_wait_for_request_sees_later_requests() -> None:
    with MockResponsesServer() as mock:
        threading.Timer(0.2, lambda: post(mock, "/v1/responses", body("late")).read()).start()
        got = mock.wait_for_request(lambda r: r.user_text == "late", timeout=5)
        assert got.rule == "reply"
        with pytest.raises(TimeoutError):
            mock.wait_for_request(lambda r: r.user_text == "never", timeout=0.1)


def test_stop_is_quick_with_open_keepalive_connection() -> None:
    mock = MockResponsesServer().start()
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    conn.request("POST", "/v1/responses", json.dumps(body("keep")))
    conn.getresponse().read()
    mock.stop()  # returns although the client keeps its connection open...
    assert conn.sock is not None and conn.sock.recv(1) == b""  # ...which stop closed
    mock.stop()  # idempotent


def test_runs_as_a_module_until_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.mock_codex",
                             "--port", "0"], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[3])
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        conn = http.client.HTTPConnection(url.split("//")[1].split("/")[0], timeout=10)
        conn.request("POST", "/v1/responses", json.dumps(body("cli")))
        assert "MOCK REPLY: cli" in conn.getresponse().read().decode()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        proc.kill()


def test_codex_home_config(tmp_path: Path) -> None:
    work = tmp_path / 'we"ird dir'
    work.mkdir()
    home = write_codex_home(tmp_path / "home", "http://127.0.0.1:9/v1", [work])
    import tomllib

    config = tomllib.loads((home / "config.toml").read_text())
    assert config["model_provider"] == "mock"
    assert config["approval_policy"] == "on-request"
    provider = config["model_providers"]["mock"]
    assert provider["base_url"] == "http://127.0.0.1:9/v1"
    assert provider["wire_api"] == "responses"
    assert provider["request_max_retries"] == provider["stream_max_retries"] == 0
    assert config["projects"][str(work)]["trust_level"] == "trusted"
    assert config["features"] == {"plugins": False, "remote_plugin": False, "apps": False,
                                  "hooks": False}

    env = isolated_env(home, user_home=tmp_path, base={
        "PATH": "/bin", "OPENAI_API_KEY": "sk-real", "HTTPS_PROXY": "http://p", "X": "1"})
    assert env == {"PATH": "/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", **mock_env(home)}
    assert env["MOCK_API_KEY"] == "dummy-key" and env["CODEX_HOME"] == str(home)


def test_hold_stops_the_stream_after_its_first_delta_until_released() -> None:
    with MockResponsesServer() as mock:
        got: list[str] = []

        def read() -> None:
            resp = post(mock, "/v1/responses", body("wait for me HOLD:k1"))
            got.append(resp.read().decode())

        reader = threading.Thread(target=read)
        reader.start()
        mock.wait_held("k1", timeout=5)
        assert reader.is_alive() and not got  # first delta out, the rest held
        mock.release("k1")
        reader.join(5)
        frames = [f.encode() + b"\n\n" for f in got[0].split("\n\n") if f]
        assert reply_text(frames) == "MOCK REPLY: wait for me HOLD:k1"
        with pytest.raises(TimeoutError):
            mock.wait_held("k1", timeout=0.05)  # nobody waits on it any more
        # a released key lets later streams through at once
        assert post(mock, "/v1/responses", body("again HOLD:k1")).status == 200


def test_the_envelope_header_is_read_not_echoed() -> None:
    text = Envelope(CLAUDE, "req_1_abcdef", "conv_1", 1, 4).wrap("run the tests")
    assert reply_text(plan_reply(body(text), 1).frames) == "MOCK REPLY: run the tests"
    assert reply_text(plan_reply(body("[codexbridge] alone"), 1).frames) == (
        "MOCK REPLY: [codexbridge] alone")

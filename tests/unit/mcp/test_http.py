"""`mcp --http`: the address, the token rules (no token refused at any address, a weak one
refused, a token file others may read refused) and the bearer gate in front of the SDK's
streamable-HTTP app; the TLS relay's token check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codexbridge.errors import UsageError
from codexbridge.host.tls_relay import token_ok
from codexbridge.mcp import http

TOKEN = "tok-0123456789abcdef"


def test_parse_listen() -> None:
    assert http.parse_listen("127.0.0.1:8790") == ("127.0.0.1", 8790)
    assert http.parse_listen(":0") == ("127.0.0.1", 0)
    got = http.parse_listen("[::1]:9")
    assert got == ("::1", 9) and got.url_host == "[::1]"
    for bad in ("8790", "host:", "h:70000", "h:x"):
        with pytest.raises(UsageError, match="HOST:PORT"):
            http.parse_listen(bad)


def test_token_rules(tmp_path: Path) -> None:
    for host in ("127.0.0.1", "localhost", "::1", "0.0.0.0"):
        with pytest.raises(UsageError, match="without a bearer token"):
            http.check_exposure(http.Listen(host, 1), None)
    assert http.check_exposure(http.Listen("0.0.0.0", 1), TOKEN) == TOKEN
    assert http.check_exposure(http.Listen("127.0.0.1", 1), TOKEN) == TOKEN
    with pytest.raises(UsageError, match="at least 16"):
        http.check_exposure(http.Listen("127.0.0.1", 1), "short")
    assert http.load_token(None, {http.TOKEN_ENV: TOKEN}) == TOKEN
    assert http.load_token(None, {}) is None
    f = tmp_path / "tok"
    f.write_text(TOKEN + "\n")
    f.chmod(0o600)
    assert http.load_token(str(f), {}) == TOKEN
    f.chmod(0o640)
    with pytest.raises(UsageError, match="readable by other users"):
        http.load_token(str(f), {})
    f.chmod(0o600)
    f.write_text("")
    with pytest.raises(UsageError, match="empty"):
        http.load_token(str(f), {})
    with pytest.raises(UsageError, match="missing"):
        http.load_token(str(tmp_path / "missing"), {})


async def _call(app: http.App, headers: list[tuple[bytes, bytes]],
                kind: str = "http") -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    await app({"type": kind, "headers": headers}, receive, send)
    return sent


async def test_bearer_gate() -> None:
    reached: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    gate = http.bearer_gate(inner, TOKEN)
    refused = await _call(gate, [])
    assert refused[0]["status"] == 401
    assert (b"www-authenticate", b'Bearer realm="codexbridge"') in refused[0]["headers"]
    assert (await _call(gate, [(b"authorization", b"Bearer wrong")]))[0]["status"] == 401
    assert await _call(gate, [(b"Authorization", f"Bearer {TOKEN}".encode())]) == []
    await _call(gate, [], kind="lifespan")  # the SDK's session manager starts there
    assert reached == ["http", "lifespan"]


def test_relay_token_check() -> None:
    assert token_ok(f"Bearer {TOKEN}", TOKEN)
    assert not token_ok(None, TOKEN) and not token_ok("Bearer x", TOKEN)


def test_bind_reports_a_taken_port() -> None:
    sock = http.bind(http.Listen("127.0.0.1", 0))
    try:
        port = sock.getsockname()[1]
        with pytest.raises(UsageError, match="cannot listen"):
            http.bind(http.Listen("127.0.0.1", port))
    finally:
        sock.close()


def test_refused_without_a_token_exits_2() -> None:
    from tests.support.cli import run_cli

    for address in ("0.0.0.0:0", "127.0.0.1:0"):
        res = run_cli("mcp", "--role", "codex", "--http", address,
                      env={"CODEX_BRIDGE_MCP_TOKEN": ""})
        assert res.code == 2 and "without a bearer token" in res.err
    assert run_cli("mcp", "--role", "codex", "--token-file", "x").code == 2


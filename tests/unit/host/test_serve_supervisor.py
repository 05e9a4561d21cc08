"""`serve`'s own robustness, without codex: a port a closed connection left in TIME_WAIT
is free again at once, and a busy one is still refused."""

from __future__ import annotations

import socket

from codexbridge.host.serve import port_free


def _server_closes_first(port: int) -> None:
    """One connection the server side closes first, as codex does at a WebSocket close:
    that leaves (127.0.0.1:port, client) in TIME_WAIT for ~60 s."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as codex's
        listener.bind(("127.0.0.1", port))
        listener.listen(1)
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = listener.accept()
        conn.close()  # the server's side closes first: its end goes to TIME_WAIT
        assert client.recv(1) == b""
        client.close()


def test_a_port_left_in_time_wait_is_free() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    _server_closes_first(port)
    assert port_free("127.0.0.1", port) is True


def test_a_listening_port_is_not_free() -> None:
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        assert port_free("127.0.0.1", listener.getsockname()[1]) is False


def test_serve_help_says_what_happens_when_the_app_server_dies() -> None:
    from click.testing import CliRunner

    from codexbridge.cli.serve_cmd import serve
    from codexbridge.host.serve import RESTART_LIMIT, RESTART_WINDOW

    out = " ".join(CliRunner().invoke(serve, ["--help"]).output.split())
    assert (f"serve starts a new one on the same address and updates bridge.json, with one "
            f"line on stderr each time — at most {RESTART_LIMIT} times within "
            f"{RESTART_WINDOW:g} s") in out

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

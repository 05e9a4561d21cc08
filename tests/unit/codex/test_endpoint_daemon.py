"""Which app-server `talk`, `mcp` and `doctor` use: --url > CODEX_BRIDGE_URL > a running
serve's bridge.json > codex's own daemon (its socket in CODEX_HOME); never a silent
guess when two run."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codexbridge.codex import endpoint
from codexbridge.codex.endpoint import Holding, Server, by_threads, choose, resolve_endpoint
from codexbridge.codex.protocol.threads import ThreadInfo
from codexbridge.errors import ConnectError
from codexbridge.host import daemon
from codexbridge.host.paths import BridgeRecord, bridge_file, write_private_json

BRIDGE = "/s/bridge.json"
DAEMON = "unix:///h/app-server-control/app-server-control.sock"
SERVE = {"url": "ws://127.0.0.1:8787", "pid": 42}


def pick(url: str | None = None, env: str | None = None, record: dict | None = None,
         alive: bool | None = None, running: str | None = None) -> endpoint.Choice | None:
    typed = None if record is None else BridgeRecord(record["url"], pid=record.get("pid"))
    return choose(url, env, typed, alive, running, bridge_path=BRIDGE, daemon_home="/h")


def test_the_order_of_the_sources() -> None:
    assert pick("ws://a", "ws://b", SERVE, True, DAEMON)[:2] == ("ws://a", "--url")
    assert pick(None, "ws://b", SERVE, True, DAEMON)[:2] == ("ws://b", "CODEX_BRIDGE_URL")
    assert pick(record=SERVE, alive=True)[:3] == (SERVE["url"], BRIDGE, endpoint.EndpointKind.SERVE)
    got = pick(running=DAEMON)
    assert got is not None and got.url == DAEMON and got.source == "codex daemon (/h)"
    assert got.note is None and got.kind is not endpoint.EndpointKind.SERVE
    assert pick() is None


def test_serve_and_daemon_both_running_is_serve_until_both_are_asked() -> None:
    got = pick(record=SERVE, alive=True, running=DAEMON)
    assert got is not None and got.url == SERVE["url"] and got.kind is endpoint.EndpointKind.SERVE
    assert got.note is None  # resolve_endpoint asks both and notes it (by_threads)


def test_a_stale_bridge_json_gives_way_to_the_daemon() -> None:
    got = pick(record=SERVE, alive=False, running=DAEMON)
    assert got is not None and got.url == DAEMON and "stale" in str(got.note)
    # nothing else runs: the stale record as before (the connect error says so)
    got = pick(record=SERVE, alive=False)
    assert got is not None and got.url == SERVE["url"] and got.note is None
    # a record without a pid still counts (older serve)
    got = pick(record={"url": "ws://x"}, alive=None, running=DAEMON)
    assert got is not None and got.url == "ws://x"


@pytest.fixture
def fake_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A CODEX_HOME whose daemon socket is a listening unix socket (short path: /tmp)."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="cbd-", dir="/tmp"))
    path = daemon.socket_path(home)
    path.parent.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.delenv("CODEX_BRIDGE_DAEMON", raising=False)
    try:
        yield home
    finally:
        server.close()
        import shutil

        shutil.rmtree(home, ignore_errors=True)


def test_resolve_finds_the_daemon_socket(fake_daemon: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ep = resolve_endpoint()
    assert ep.url == f"unix://{daemon.socket_path(fake_daemon)}"
    assert ep.source == f"codex daemon ({fake_daemon})" and ep.token is None
    assert capsys.readouterr().err == ""  # only one candidate: nothing to say


def test_resolve_with_a_live_serve_too_asks_both_and_notes_it_once(
        fake_daemon: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The note is logged (the CLI shows it on stderr as `codexbridge: …`).
    monkeypatch.setattr(endpoint, "_noted", set())
    monkeypatch.setattr(endpoint, "SURVEY_TIMEOUT", 0.3)  # the fake socket never answers
    write_private_json(bridge_file(), {"url": "ws://127.0.0.1:1", "pid": os.getpid()})
    assert resolve_endpoint().url == "ws://127.0.0.1:1"  # neither answers: serve
    assert resolve_endpoint().url == "ws://127.0.0.1:1"
    err = caplog.text
    assert sum(r.getMessage().startswith("two app-servers run") for r in caplog.records) == 1
    sock = f"unix://{daemon.socket_path(fake_daemon)}"
    assert f"codex's own daemon at {sock} does not answer" in err
    assert f"--url {sock} (or set CODEX_BRIDGE_URL)" in err


def _info(tid: str, name: str | None = None, user: bool = True) -> ThreadInfo:
    return ThreadInfo.from_wire({"id": tid, "name": name, "ephemeral": not user,
                                   "threadSource": "user" if user else "thread_title",
                                   "status": {"type": "idle"}})


def _held(kind: str, url: str, threads: tuple[ThreadInfo, ...] = (), reachable: bool = True,
          home: str = "/h") -> Holding:
    return Holding(Server(url, None, kind, kind), reachable, home, threads)


def test_two_servers_the_one_holding_the_tui_thread_is_used() -> None:
    """A leftover serve beside the daemon the TUI uses: the daemon, said on stderr with
    the --url that picks serve; the thread asked for decides when both hold some."""
    tui = (_info("T1"),)
    empty_serve, daemon_tui = _held("serve", "ws://s"), _held("daemon", DAEMON, tui)
    pick, note = by_threads(empty_serve, daemon_tui)
    assert pick is daemon_tui
    assert note.startswith("two app-servers run on one CODEX_HOME (/h): `codexbridge serve` "
                           "at ws://s holds no user thread; codex's own daemon at "
                           f"{DAEMON} holds 1 user thread (T1). Using codex's own daemon "
                           "(it holds the user threads, the TUI's); pass --url ws://s")
    busy_serve = _held("serve", "ws://s", (_info("S1", "mine"),))
    assert by_threads(busy_serve, daemon_tui, "T1")[0] is daemon_tui
    assert by_threads(busy_serve, daemon_tui, "mine")[0] is busy_serve
    assert by_threads(busy_serve, daemon_tui)[0] is busy_serve  # both hold some: serve
    helpers = _held("serve", "ws://s", (_info("H", user=False),))
    assert by_threads(helpers, daemon_tui)[0] is daemon_tui  # title threads do not count
    assert by_threads(empty_serve, _held("daemon", DAEMON))[0] is empty_serve
    gone = _held("serve", "ws://s", tui, reachable=False)
    pick, note = by_threads(gone, _held("daemon", DAEMON))
    assert pick.server.kind == "daemon" and "ws://s does not answer" in note
    _, note = by_threads(empty_serve, _held("daemon", DAEMON, tui, home="/other"))
    assert "one CODEX_HOME" not in note and "doctor" not in note


def test_open_tui_leads_with_plain_codex_for_the_daemon() -> None:
    assert daemon.is_daemon_url(DAEMON) and not daemon.is_daemon_url("unix:///tmp/x.sock")
    assert daemon.open_tui(DAEMON, "/p") == ("open the Codex TUI with `codex -C /p` (plain "
                                             "`codex` attaches to codex's own daemon by "
                                             "itself)")
    assert daemon.open_tui("ws://127.0.0.1:8787") == \
        "open the Codex TUI with `codex --remote ws://127.0.0.1:8787 -C DIR`"
    assert daemon.open_tui(None).startswith("open the Codex TUI with `codex -C DIR`")


def test_the_switch_and_a_dead_socket(fake_daemon: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_BRIDGE_DAEMON", "off")
    with pytest.raises(ConnectError) as info:
        resolve_endpoint()
    msg = info.value.message
    assert "codex app-server daemon start" in msg and "codexbridge serve" in msg
    # codex's own daemon leads, in the diagnosis and in the fix; serve is the alternative
    assert msg.index("codex's daemon") < msg.index("codexbridge serve")
    assert msg.index("codex app-server daemon start") < msg.rindex("codexbridge serve")
    monkeypatch.delenv("CODEX_BRIDGE_DAEMON")
    assert daemon.running_url() is not None


def test_listening_is_false_for_nothing_a_file_and_a_dangling_link(tmp_path: Path) -> None:
    assert daemon.listening(tmp_path / "none.sock") is False
    plain = tmp_path / "plain"
    plain.write_text("")
    assert daemon.listening(plain) is False
    link = tmp_path / "link.sock"
    link.symlink_to(tmp_path / "gone")
    assert daemon.listening(link) is False


def test_a_socket_nobody_accepts_on_is_not_running() -> None:
    import tempfile

    d = tempfile.mkdtemp(prefix="cbd-", dir="/tmp")
    path = os.path.join(d, "s.sock")
    # a process binds it and exits: the file stays, nobody listens
    subprocess.run([sys.executable, "-c", "import socket,sys; s=socket.socket(socket.AF_UNIX);"
                    " s.bind(sys.argv[1])", path], check=True)
    try:
        assert os.path.exists(path) and daemon.listening(path) is False
    finally:
        os.unlink(path)
        os.rmdir(d)


def test_codex_home_and_attach_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert daemon.codex_home() == Path.home() / ".codex"
    assert daemon.codex_home({"CODEX_HOME": "/x"}) == Path("/x")
    assert daemon.attach_line("unix:///a b/s.sock", "/p q") == \
        "codex --remote 'unix:///a b/s.sock' -C '/p q'"
    assert daemon.enabled({"CODEX_BRIDGE_DAEMON": "OFF"}) is False
    assert daemon.enabled({}) is True


def test_bridge_json_from_before_versions_and_a_damaged_one(caplog: pytest.LogCaptureFixture
                                                           ) -> None:
    """An older serve's record (no version, no pid) reads as version 1; a damaged one is
    no serve, with a note naming the file — never a traceback."""
    bridge_file().parent.mkdir(parents=True, exist_ok=True)
    write_private_json(bridge_file(), {"url": "ws://127.0.0.1:1", "cwd": 7})
    old = BridgeRecord.read()
    assert old is not None and old.version == 1 and old.pid is None and old.cwd is None
    old.save()
    assert BridgeRecord.read() == BridgeRecord("ws://127.0.0.1:1")
    from codexbridge.errors import DamagedStateError

    for text in ("{torn", "[]", '{"pid": 1}', '{"url": "ws://x", "version": -1}'):
        bridge_file().write_text(text)
        with pytest.raises(DamagedStateError, match=str(bridge_file())):
            BridgeRecord.read()
        notes: list[str] = []
        assert BridgeRecord.current(notes.append) is None and str(bridge_file()) in notes[0]

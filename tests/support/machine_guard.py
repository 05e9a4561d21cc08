"""The machine as the suite found it: nothing outside the tests' own temp dirs changes.

CI runs the suite as root, so a test that points the product at a wrong path can break
the machine for everyone (one run chmodded `/` to 0700). This plugin reads `/`, the
home directory of whoever runs the suite and `/tmp` — each directory and its entries'
mode, owner and group, never following a symlink — when the session starts, and again
when it ends:

* `/` and the home: nothing changed, appeared or went away;
* `/tmp`: nothing that was there changed; nothing new is left behind except pytest's own
  `pytest-of-<user>` (it keeps the last runs' temp dirs on purpose).

What the real binaries put in the temp dir (Claude Code's `claude-<uid>`, codex's
daemon and sandbox dirs, tmux's sockets) and codexbridge's runtime dir (its sockets)
go into one run dir: the session sets TMPDIR, TMUX_TMPDIR and XDG_RUNTIME_DIR to it (the
environments the tests build for the binaries pass them on) and removes it at the end —
so "left behind" means a test's own leftover. A default runtime dir
(`/tmp/codexbridge-<uid>`, for a process that got neither) and codex's daemon socket dir
(`/tmp/codex-daemon-<uid>`, which codex puts under /tmp whatever TMPDIR says) are removed
when the session made them and left them empty.

With CI=true a difference fails the run; elsewhere (where other processes share /tmp)
it is printed as a warning.

Under pytest-xdist the controller alone guards: its workers start after it has set the
run dir's variables, inherit them, and put their temp dirs under its basetemp — a worker
taking its own snapshot would see its sibling's run as something left behind.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

Entry = tuple[int, int, int]  # mode, uid, gid
Snapshot = dict[str, tuple[Entry | None, dict[str, Entry]]]

_KEY = pytest.StashKey[tuple[Snapshot, list[str]]]()
_RUN = pytest.StashKey[str]()


def _entry(path: str) -> Entry | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_mode, st.st_uid, st.st_gid


def _watched() -> list[str]:
    home = os.path.realpath(os.environ.get("HOME") or os.path.expanduser("~"))
    return list(dict.fromkeys(["/", home, "/tmp"]))


def snapshot(dirs: list[str]) -> Snapshot:
    taken: Snapshot = {}
    for directory in dirs:
        children: dict[str, Entry] = {}
        try:
            names = os.listdir(directory)
        except OSError:
            names = []
        for name in names:
            entry = _entry(os.path.join(directory, name))
            if entry is not None:
                children[name] = entry
        taken[directory] = (_entry(directory), children)
    return taken


def differences(before: Snapshot, after: Snapshot) -> list[str]:
    found: list[str] = []
    for directory, (was, children) in before.items():
        now, now_children = after[directory]
        if was != now:
            found.append(f"{directory}: {_show(was)} -> {_show(now)}")
        for name, entry in children.items():
            later = now_children.get(name)
            if later is None:
                if directory != "/tmp":
                    found.append(f"{Path(directory, name)}: removed")
            elif later != entry:
                found.append(f"{Path(directory, name)}: {_show(entry)} -> {_show(later)}")
        for name in sorted(set(now_children) - set(children)):
            if directory == "/tmp" and name == f"pytest-of-{getpass.getuser()}":
                continue
            found.append(f"{Path(directory, name)}: left behind ({_show(now_children[name])})")
    return found


def _show(entry: Entry | None) -> str:
    if entry is None:
        return "missing"
    mode, uid, gid = entry
    return f"mode {mode & 0o7777:04o} uid {uid} gid {gid}"


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if _is_worker(config):
        return
    dirs = _watched()
    config.stash[_KEY] = (snapshot(dirs), dirs)
    run = tempfile.mkdtemp(prefix="cbt-", dir="/tmp")
    config.stash[_RUN] = run
    os.environ["TMPDIR"] = os.environ["TMUX_TMPDIR"] = run
    # codexbridge's runtime dir (its sockets) too: without XDG_RUNTIME_DIR it is
    # $TMPDIR/codexbridge-<uid> (what codex's MCP servers get: it passes TMPDIR on, not
    # XDG_RUNTIME_DIR)
    runtime = os.path.join(run, "run")
    os.mkdir(runtime, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = runtime
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    if not config.option.basetemp:
        # pytest's temp dirs in the run dir too, with a path no longer than its default
        # one: a unix socket in a test's tmp_path must fit its ~104 bytes
        config.option.basetemp = os.path.join(run, "p")


def _clean_up(config: pytest.Config, before: Snapshot) -> None:
    run = config.stash.get(_RUN, None)
    if run is not None:
        shutil.rmtree(run, ignore_errors=True)
    made = before["/tmp"][1] if "/tmp" in before else None
    if made is None:
        return
    # codex's own short alias dir for its daemon's socket: under /tmp whatever TMPDIR says
    # (`/tmp/codex-daemon-<uid>/<sha256>` and its `.lock`, hard-coded in codex; seen in
    # 0.169 and 0.171), and left behind when a test's daemon is stopped. Made by this
    # session, it is this session's: its dead sockets and their locks go; a socket that
    # still answers is a daemon a test left running, and stays to be reported.
    daemon_dir = os.path.join("/tmp", f"codex-daemon-{os.getuid()}")
    if f"codex-daemon-{os.getuid()}" not in made and os.path.isdir(daemon_dir):
        for name in os.listdir(daemon_dir):
            path = os.path.join(daemon_dir, name)
            if not name.endswith(".lock") and not _answers(path):
                for dead in (path, path + ".lock"):
                    with contextlib.suppress(OSError):
                        os.unlink(dead)
    # codexbridge's runtime dir for a process that got neither XDG_RUNTIME_DIR nor TMPDIR
    for name in (f"codexbridge-{os.getuid()}", f"codex-daemon-{os.getuid()}"):
        if name not in made:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join("/tmp", name))  # only when empty


def _answers(path: str) -> bool:
    """Something listens on the unix socket `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stashed = session.config.stash.get(_KEY, None)
    if stashed is None:
        return
    before, dirs = stashed
    _clean_up(session.config, before)
    found = differences(before, snapshot(dirs))
    if not found:
        return
    ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    lines = ["the machine changed outside the tests' temp dirs:", *found]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("=", "machine guard: " + ("FAILED" if ci else "warning"),
                           red=ci, yellow=not ci)
        for line in lines:
            reporter.write_line(line)
    if ci and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

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
(`/tmp/codexbridge-<uid>`, for a process that got neither) is removed when the session
made it and left it empty.

With CI=true a difference fails the run; elsewhere (where other processes share /tmp)
it is printed as a warning.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
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


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
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
    runtime = f"codexbridge-{os.getuid()}"
    if "/tmp" in before and runtime not in before["/tmp"][1]:
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join("/tmp", runtime))  # only when empty


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

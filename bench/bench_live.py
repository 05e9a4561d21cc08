"""Push → Claude's next model request: live delivery vs the asyncRewake watcher.

    .venv/bin/python bench/bench_live.py [--rounds 8]

One idle interactive Claude Code 2.1.332 in tmux (offline, against the mock Messages
API), hooked for mailbox `bench` with the watcher (`install-hook --rewake`). Each round
pushes one mail with `codexbridge inbox push` twice — once live (the default), once with
`CODEX_BRIDGE_LIVE=0` so the watcher wakes the session (the session runs with it off
too, else its watcher would take the live road) — alternating, and times the push
process's start to the mock seeing the mail in a model request. Printed as medians and
their ratio, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codexbridge.host.binaries import pinned_claude  # noqa: E402
from codexbridge.host.locking import lock, unlock  # noqa: E402
from codexbridge.host.mailboxes import inbox_dir  # noqa: E402
from codexbridge.inbox.location import watcher_path  # noqa: E402
from codexbridge.messages.listeners import read_listeners  # noqa: E402
from codexbridge.setup.claude import install_hooks as install  # noqa: E402
from tests.support.claude_env import offline_env, seed_interactive  # noqa: E402
from tests.support.mock_claude import MockMessages  # noqa: E402

BOX = "bench"


def wait(probe: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not probe():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_live: timed out waiting for {what}")
        time.sleep(0.02)


def watcher_armed() -> bool:
    """The watcher holds its lock (a Stop hook started a new one after the last turn)."""
    path = watcher_path(inbox_dir(), BOX)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        if lock(fd, blocking=False):
            unlock(fd)
            return False
        return True
    finally:
        os.close(fd)


def one(mock: MockMessages, text: str, live: bool) -> float:
    env = {**os.environ, "CODEX_BRIDGE_LIVE": "1" if live else "0"}
    before = len(mock.requests)
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "codexbridge", "inbox", "push", "--to", BOX, text],
                   env=env, check=True, capture_output=True)
    got = mock.wait_for(lambda r: r.index >= before and text in r.tail_text(), 30)
    if got is None:
        raise SystemExit(f"bench_live: {text!r} never reached the model")
    return time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    claude = os.environ.get("CODEX_BRIDGE_CLAUDE_BIN") or str(pinned_claude() or "")
    tmux = shutil.which("tmux")
    if not claude or not tmux:
        print("bench_live: needs the pinned claude (scripts/install-binaries) and tmux",
              file=sys.stderr)
        return 3
    root = Path(tempfile.mkdtemp(prefix="cb-bench-live-"))
    os.environ["CODEX_BRIDGE_HOME"] = str(root / "state")
    home, config, project = root / "home", root / "home" / ".claude", root / "project"
    project.mkdir(parents=True)
    sock = f"cbbench-{os.getpid()}"
    pid = None
    with MockMessages() as mock:
        try:
            install(str(project), BOX, rewake=True, watch_timeout=300)
            seed_interactive(config, project)
            env = offline_env(home, config, mock.url, term="xterm-256color")
            # the session's own live switch off: its watcher (the baseline) wakes it by
            # asyncRewake, as it did before it learned to take the live road itself
            env["CODEX_BRIDGE_LIVE"] = "0"
            subprocess.run([tmux, "-L", sock, "new-session", "-d", "-s", "main", "-x", "200",
                            "-y", "50", "-c", str(project), claude, "--permission-mode",
                            "manual"], env=env, check=True)
            pid = int(subprocess.run([tmux, "-L", sock, "display-message", "-p", "-t", "main",
                                      "#{pane_pid}"], env=env, check=True,
                                     capture_output=True, text=True).stdout)
            wait(lambda: (read_listeners(inbox_dir()).get(BOX) or {}).get("messaging_socket"),
                 60, "the session to register")
            live_t: list[float] = []
            watch_t: list[float] = []
            for i in range(args.rounds):
                for live, sink in ((True, live_t), (False, watch_t)):
                    wait(watcher_armed, 60, "the watcher to re-arm")
                    time.sleep(0.3)  # let the finished turn's Stop hook exit (not timed)
                    sink.append(one(mock, f"BENCH {'LIVE' if live else 'WATCH'} {i}", live))
        finally:
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
            subprocess.run([tmux, "-L", sock, "kill-server"], check=False,
                           capture_output=True)
            shutil.rmtree(root, ignore_errors=True)
    lm, wm = statistics.median(live_t), statistics.median(watch_t)
    print(f"push -> model request, {args.rounds} rounds each, alternating (process start "
          "included)")
    print(f"    live (cross-session inbox)   median {lm * 1000:7.1f} ms  "
          f"min {min(live_t) * 1000:7.1f}  max {max(live_t) * 1000:7.1f}")
    print(f"    asyncRewake watcher          median {wm * 1000:7.1f} ms  "
          f"min {min(watch_t) * 1000:7.1f}  max {max(watch_t) * 1000:7.1f}")
    print(f"    ratio live / watcher         {lm / wm:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

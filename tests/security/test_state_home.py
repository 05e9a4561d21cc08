"""Threat: codexbridge's state home used to touch what is not codexbridge's.

codexbridge keeps mail, delivery records and tokens in its state home
(`CODEX_BRIDGE_HOME`, default ~/.codex-bridge). It must be the user's alone, and it
must never become a lever on anything else:

* an existing directory that is loose (others may enter), another user's, or a symlink
  inside the home is refused with the exact fix (exit 73) — never chmodded: codexbridge
  changes the mode only of what it created itself (CODEX_BRIDGE_HOME=/ once made
  `doctor` chmod `/` to 0700);
* a symlink inside the home is never followed: not to chmod its target, not to write
  mail into another user's file;
* `doctor` reads only: it creates and changes nothing;
* what codexbridge writes there, another local user can neither list, read nor change.

No test here points the product at `/` or a real home: `/` is judged by the pure
function, and "a loose existing directory" is a temp dir of the test's own.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from codexbridge.host.private import unsafe_state_dir
from tests.support.cli import CliResult, run_cli
from tests.support.helpers import push_cli
from tests.support.other_user import OtherUser

UNSAFE = 73  # StateError's exit code (errors.py)


def push(home: Path, *args: str, text: str = "hello") -> CliResult:
    """A new mail to mailbox `web` of state home `home` (no live delivery)."""
    return push_cli("web", text, "--new", *args,
                    env={"CODEX_BRIDGE_HOME": str(home), "CODEX_BRIDGE_LIVE": "0"})


def modes(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry under `root` (and root): its mode and owner, read without following."""
    found = {".": (root.lstat().st_mode, root.lstat().st_uid)}
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(dirpath, name)
            st = path.lstat()
            found[str(path.relative_to(root))] = (st.st_mode, st.st_uid)
    return found


def test_a_fresh_home_is_made_private_and_a_push_lands(tmp_path: Path) -> None:
    home = tmp_path / "a" / "b" / ".codex-bridge"
    done = push(home)
    assert done.code == 0, done.err
    for made in (tmp_path / "a", tmp_path / "a" / "b", home, home / "inbox"):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700, made  # all of them: we made them
    mail = home / "inbox" / "web.jsonl"
    assert stat.S_IMODE(mail.stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o755, 0o770, 0o701])
def test_an_existing_loose_home_is_refused_and_left_as_it_is(tmp_path: Path, mode: int) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(mode)
    before = modes(home)
    done = push(home)
    assert done.code == UNSAFE, done.err
    assert f"is mode {mode:04o}" in done.err and f"Fix: chmod 700 {home}" in done.err
    assert modes(home) == before  # not chmodded, nothing written


def test_a_loose_subfolder_is_refused_not_tightened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "inbox").mkdir()
    (home / "inbox").chmod(0o755)
    before = modes(home)
    done = push(home)
    assert done.code == UNSAFE and f"chmod 700 {home / 'inbox'}" in done.err
    assert modes(home) == before


def test_a_symlinked_subfolder_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    elsewhere.chmod(0o755)
    (home / "inbox").symlink_to(elsewhere)
    done = push(home)
    assert done.code == UNSAFE and "is a symlink" in done.err, done.err
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755 and not any(elsewhere.iterdir())


def test_a_symlinked_mailbox_never_writes_into_its_target(
        tmp_path: Path, attacker: OtherUser) -> None:
    home = tmp_path / "home"
    assert push(home, text="first").code == 0
    victim = tmp_path / "victim.txt"  # another user's 0644 file
    victim.write_text("theirs\n")
    os.chown(victim, attacker.uid, attacker.gid)
    victim.chmod(0o644)
    mailbox = home / "inbox" / "web.jsonl"
    mailbox.unlink()
    mailbox.symlink_to(victim)
    done = push(home, text="second")
    assert done.code == UNSAFE and "is a symlink" in done.err, done.err
    assert victim.read_text() == "theirs\n"
    st = victim.stat()
    assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o644, attacker.uid)


def test_another_users_home_is_refused(tmp_path: Path, attacker: OtherUser) -> None:
    home = tmp_path / "theirs"
    home.mkdir(mode=0o700)
    os.chown(home, attacker.uid, attacker.gid)
    done = push(home)
    assert done.code == UNSAFE and f"uid {attacker.uid}" in done.err, done.err
    assert home.stat().st_uid == attacker.uid and not any(home.iterdir())


def test_doctor_reads_only(tmp_path: Path) -> None:
    """Neither a missing home nor a loose one is created or changed by doctor; its
    scratch space (codex's schema, for the protocol row) is a private temp dir that it
    removes."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    user = tmp_path / "user"
    user.mkdir()
    missing = tmp_path / "never-made"
    env = {"HOME": str(user), "TMPDIR": str(scratch)}
    done = run_cli("doctor", "--json", env={**env, "CODEX_BRIDGE_HOME": str(missing)})
    assert done.code in (0, 1), done.err
    assert not missing.exists()
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o755)
    (loose / "inbox").mkdir(mode=0o755)
    (loose / "inbox").chmod(0o755)
    before = modes(loose)
    done = run_cli("doctor", "--json", env={**env, "CODEX_BRIDGE_HOME": str(loose)})
    row = {r["name"]: r for r in json.loads(done.out)["checks"]}["state"]
    assert row["status"] == "FAIL" and f"chmod 700 {loose}" in row["fix"]
    assert modes(loose) == before
    assert not any(scratch.iterdir())
    # (codex itself, run for its version and schema, keeps its own ~/.codex/tmp)
    assert [p.name for p in user.iterdir()] in ([], [".codex"])


def test_what_codexbridge_writes_another_user_can_neither_read_nor_change(
        attacker: OtherUser, reachable: Path) -> None:
    home = reachable / "home"
    assert push(home, text="a secret for Claude").code == 0
    mailbox = home / "inbox" / "web.jsonl"
    probe = """
import os, sys
home, mailbox = sys.argv[1], sys.argv[2]
for what, act in (("list", lambda: os.listdir(home)),
                  ("read", lambda: open(mailbox, "rb").read()),
                  ("append", lambda: open(mailbox, "ab").write(b"forged\\n")),
                  ("create", lambda: open(os.path.join(home, "inbox", "x.jsonl"), "wb"))):
    try:
        act()
    except PermissionError:
        print(what, "denied")
    else:
        print(what, "ALLOWED")
"""
    seen = attacker.run_python(probe, str(home), str(mailbox))
    assert seen.stdout.split("\n")[:4] == ["list denied", "read denied", "append denied",
                                            "create denied"], seen.stdout + seen.stderr
    assert b"forged" not in mailbox.read_bytes()


def test_slash_and_the_home_directory_itself_are_never_a_state_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "resolves to /" in (unsafe_state_dir("/") or "")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert "your home directory itself" in (unsafe_state_dir(str(tmp_path)) or "")
    before = modes(tmp_path)
    done = run_cli("inbox", "list", env={"HOME": str(tmp_path),
                                         "CODEX_BRIDGE_HOME": str(tmp_path)})
    assert done.code == 2 and "refusing to use it" in done.err
    assert modes(tmp_path) == before

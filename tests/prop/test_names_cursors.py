"""Names and cursors: short strings from outside (a flag, an env var, a model's tool call).

A mailbox name either passes and stays one file inside the inbox, or is refused with
exit-2 MailboxNameError saying why; names setup derives from paths and session ids are
always valid. An artifact cursor is either one we issued (its offset back) or refused
with InvalidCursorError; paging with cursors gives back the artifact's text exactly.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from codexbridge.errors import ArtifactNotFoundError, InvalidCursorError, MailboxNameError
from codexbridge.host.mailboxes import default_mailbox, name_problem, validate_name
from codexbridge.inbox.location import mail_path, rejected_path
from codexbridge.mcp.artifacts import CURSOR_PREFIX, MIN_PAGE, ArtifactStore
from codexbridge.setup.mailbox import project_mailbox, session_mailbox

from .strategies import nasty_text

names = (nasty_text | st.text(st.sampled_from("ab.-_/\\\x00 "), max_size=70)
         | st.sampled_from([".", "..", "a.rejected", "x" * 64, "x" * 65, "default", ""]))


@given(names)
@example("../etc")
@example("a\nb")
def test_a_name_is_one_file_in_the_inbox_or_refused(name: str) -> None:
    problem = name_problem(name)
    if problem is not None:
        try:
            validate_name(name)
        except MailboxNameError as exc:
            assert exc.exit_code == 2 and problem in str(exc)
        else:
            raise AssertionError(f"{name!r} was refused by name_problem only")
        return
    assert validate_name(name) == name
    inbox = "/state/inbox"
    for path in (mail_path(inbox, name), rejected_path(inbox, name)):
        assert os.path.dirname(path) == inbox
        assert os.path.normpath(path) == path
    assert mail_path(inbox, name) != rejected_path(inbox, name)


@given(st.dictionaries(st.sampled_from(["CODEX_BRIDGE_MAILBOX", "OTHER"]), names))
def test_the_default_mailbox_comes_from_the_environment(env: dict[str, str]) -> None:
    name = default_mailbox(env)
    assert name == (env.get("CODEX_BRIDGE_MAILBOX") or "default")


paths = st.builds(lambda parts: "/" + "/".join(parts),
                  st.lists(nasty_text.filter(lambda p: "/" not in p and "\x00" not in p),
                           max_size=4))


@given(paths, nasty_text)
@example("/", "")
@example("/home/a/..", "../../x")
@example("/", "ª")  # was: a mailbox name no command would accept
def test_derived_names_are_valid(path: str, session: str) -> None:
    base = project_mailbox(path)
    assert name_problem(base) is None, base
    per_session = session_mailbox(base, session)
    assert name_problem(per_session) is None, per_session


# --- cursors -----------------------------------------------------------------------------

def _store(root: str) -> ArtifactStore:
    return ArtifactStore(Path(root), "claude", ttl=3600.0, max_bytes=1 << 20)


cursor_text = (st.text(max_size=40) | st.builds(lambda t: CURSOR_PREFIX + t, st.text(max_size=40))
               | st.builds(lambda t: CURSOR_PREFIX + t,
                           st.text(st.sampled_from("ABCDEFGHabcdefgh0123456789-_="),
                                   min_size=30, max_size=36)))


@given(cursor_text, st.text(min_size=1, max_size=200))
@example(CURSOR_PREFIX + "é" * 32, "x")
def test_a_foreign_cursor_is_refused(cursor: str, text: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        store = _store(root)
        art = store.create(text, kind="reply")
        try:
            offset = store.parse_cursor(art, cursor)
        except InvalidCursorError as exc:
            assert str(exc)
            return
        # Only one of ours can pass: 2^-k odds of a forged MAC passing are not drawn.
        raise AssertionError(f"accepted a cursor we never issued: {cursor!r} -> {offset}")


@given(st.text(max_size=3000), st.integers(0, 5000), st.data())
def test_pages_give_back_the_text_and_tampering_is_refused(text: str, page: int,
                                                           data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as root:
        store = _store(root)
        art = store.create(text, kind="reply")
        got, cursor, pages = [], None, 0
        while True:
            chunk = store.read(art.id, cursor, page)
            got.append(chunk.text)
            pages += 1
            assert len(chunk.text.encode("utf-8")) <= max(MIN_PAGE, page)
            if chunk.next_cursor is None:
                break
            cursor = chunk.next_cursor
            assert store.parse_cursor(art, cursor) == chunk.offset + chunk.nbytes
        assert "".join(got) == text
        if cursor is None:
            return
        # One character changed: refused, or (base64's unused low bits) the same offset.
        i = data.draw(st.integers(len(CURSOR_PREFIX), len(cursor) - 1))
        ch = data.draw(st.sampled_from("AQgw_-0z"))
        forged = cursor[:i] + ch + cursor[i + 1:]
        with contextlib.suppress(InvalidCursorError):
            assert store.parse_cursor(art, forged) == store.parse_cursor(art, cursor)


@given(st.text(max_size=40))
def test_a_made_up_artifact_id_is_not_found(art_id: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        store = _store(root)
        try:
            store.read(art_id, None, 1000)
        except ArtifactNotFoundError as exc:
            assert str(exc)
        else:
            raise AssertionError(f"read an artifact that was never made: {art_id!r}")

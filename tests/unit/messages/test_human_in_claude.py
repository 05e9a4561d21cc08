"""Two Claude sessions in one project, and what Claude reads about live mail (issue 24,
items 9 and 10).

Item 9: Codex asks without naming a mailbox and two Claude sessions listen in the
project. The session already in this conversation — the one that talked with the asking
thread last — gets it; with none, the refusal is retryable and names, for each session,
what to choose by and the exact retry.

Item 10: live mail reaches Claude's model under Claude Code's own line "Another Claude
session sent a message:" and its paragraph about peers (we cannot change either). Our
text says where the mail is from once, and does not contradict them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codexbridge.errors import AmbiguousSessionError
from codexbridge.inbox.lines import new_mail
from codexbridge.messages.records import DeliveryStore, Direction, ToClaude, ToCodex
from codexbridge.messages.render import render_mail
from codexbridge.messages.to_claude import Directory, resolve_mailbox


def two_sessions(tmp_path: Path) -> tuple[Directory, str]:
    project = tmp_path / "project"
    project.mkdir()
    listeners = {name: {"name": name, "cwd": str(project), "session_id": f"sess-{name}",
                        "last_seen": seen, "claude_pid": None}
                 for name, seen in (("project-aaaaaa", "2026-12-02T10:00:00Z"),
                                    ("project-bbbbbb", "2026-12-02T11:00:00Z"))}
    return Directory(str(tmp_path / "inbox"), listeners, []), str(project)


def talked(thread: str, mailbox: str, direction: Direction = Direction.TO_CLAUDE) -> None:
    rid = f"req_{len(DeliveryStore().recent(100)) + 1}_x"
    rec = ToClaude(id=rid, conversation="conv_c", hop=1, max_hops=4, thread_id=thread,
                   mailbox=mailbox) if direction is Direction.TO_CLAUDE else \
        ToCodex(id=rid, conversation="conv_c", hop=1, max_hops=4, thread_id=thread,
                reply_to=mailbox)
    rec.queue()
    DeliveryStore().save(rec)


@pytest.mark.parametrize("direction", [Direction.TO_CLAUDE, Direction.TO_CODEX],
                         ids=["codex-asked-it", "it-asked-codex"])
def test_the_session_already_in_the_conversation_gets_the_request(
        tmp_path: Path, direction: Direction) -> None:
    known, project = two_sessions(tmp_path)
    talked("T-other", "project-bbbbbb")  # another thread's partner: not this one's
    talked("T1", "project-aaaaaa", direction)
    assert resolve_mailbox(None, known, project, env={}, thread="T1") == "project-aaaaaa"


def test_with_none_in_the_conversation_the_refusal_says_what_to_choose_by_and_retry(
        tmp_path: Path) -> None:
    known, project = two_sessions(tmp_path)
    with pytest.raises(AmbiguousSessionError) as info:
        resolve_mailbox(None, known, project, env={}, thread="T1")
    err = info.value
    assert err.retryable is True  # sending again with a mailbox is the fix
    message = str(err)
    assert "nothing was sent" in message and '"mailbox": "project-bbbbbb"' in message
    assert "never talked with this thread" in message and "not running" in message
    candidates = err.details["candidates"]
    # the most recently active first, each with its facts and its retry
    assert [c["mailbox"] for c in candidates] == ["project-bbbbbb", "project-aaaaaa"]
    first = candidates[0]
    assert first["retry"] == {"mailbox": "project-bbbbbb"}
    assert first["status"] == "not running" and first["talked_with_this_thread"] is None
    assert first["last_seen"] == "2026-12-02T11:00:00Z"
    assert first["session_id"] == "sess-project-bbbbbb"


# -- item 10 -------------------------------------------------------------------------------

# What Claude Code itself puts around a live frame (measured on 2.1.332: the `user` record
# of origin `peer`, and what the model request carries).
CLAUDE_CODE_LINE = "Another Claude session sent a message:"


def test_live_mail_says_where_it_is_from_once_without_contradicting_claude_code() -> None:
    mail = new_mail("which branch has the fix?", to="box", sender="codex",
                    extra={"request": "req_1_a", "conversation": "conv_c", "hop": 1,
                           "max_hops": 4, "expect_reply": {"thread": "T1"}})
    text = render_mail("box", [mail], live_id="f00")
    lowered = text.lower()
    # Claude Code's line says a Claude session sent it; ours must not deny that: the
    # frame was written by a process of this user's (codexbridge), relaying Codex
    assert "not from another claude session" not in lowered
    assert "does not come from another claude session" not in lowered
    assert "relay" in lowered and "codex" in lowered
    # the origin is said once in our opening (the header says it per message)
    assert text.count("sent through Claude Code's cross-session inbox") == 1

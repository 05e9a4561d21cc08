"""Mailbox names: what is accepted, what is refused and how."""

from __future__ import annotations

import pytest

from codexbridge.errors import MailboxNameError
from codexbridge.host.mailboxes import default_mailbox, name_problem, validate_name


@pytest.mark.parametrize("name", ["bridge", "a", "web-2", "A.b_c-D", "x" * 64, ".hidden",
                                  "...", "0"])
def test_valid_names(name: str) -> None:
    assert name_problem(name) is None
    assert validate_name(name) == name


@pytest.mark.parametrize(("name", "why"), [
    ("", "empty"),
    ("x" * 65, "at most 64"),
    (".", "not a mailbox name"),
    ("..", "not a mailbox name"),
    ("../etc", "'/'"),
    ("a/b", "'/'"),
    ("sp ace", "' '"),
    ("naïve", "'ï'"),
    ("tab\t", "'\\t'"),
    ("nul\x00", "'\\x00'"),
    ("box.rejected", "rejected-lines file"),
])
def test_invalid_names_say_why(name: str, why: str) -> None:
    problem = name_problem(name)
    assert problem is not None and why in problem
    with pytest.raises(MailboxNameError) as info:
        validate_name(name)
    assert info.value.exit_code == 2
    assert repr(name) in info.value.message


def test_default_mailbox_from_env() -> None:
    assert default_mailbox({}) == "default"
    assert default_mailbox({"CODEX_BRIDGE_MAILBOX": "web"}) == "web"
    assert default_mailbox({"CODEX_BRIDGE_MAILBOX": ""}) == "default"

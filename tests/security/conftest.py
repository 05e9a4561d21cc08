"""tests/security/: the threat model, one file per threat (see README.md beside this).

`attacker` is another local user (tests/support/other_user.py); `reachable` a temp dir of
ours the attacker may enter, so that only the modes codexbridge gives protect what it
puts there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.other_user import OtherUser, other_user, reachable_dir


@pytest.fixture
def attacker() -> OtherUser:
    return other_user()


@pytest.fixture
def reachable() -> Iterator[Path]:
    with reachable_dir() as path:
        yield path

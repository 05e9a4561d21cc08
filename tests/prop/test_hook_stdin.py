"""The Stop hook's stdin: whatever Claude Code (or a person, or a broken wrapper) pipes in.

The contract: exit 0 always; stdout empty or exactly one block object; waiting mail is
delivered exactly once whatever the payload holds (a garbled payload costs the session
id, never the mail); and the hook itself never fails on it (the log says no "hook
failed").
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from codexbridge.hooks.process import LOG_NAME, parse_payload, run_hook_cli
from codexbridge.inbox import store
from codexbridge.inbox.lines import new_mail
from codexbridge.inbox.location import log_dir, mail_path
from codexbridge.messages.frame import quoted

from .strategies import deep_json, json_values, junk_bytes, lone_surrogate_json, nasty_text

FIELDS = ["session_id", "cwd", "transcript_path", "stop_hook_active", "prompt_id",
          "hook_event_name", "last_assistant_message", "permission_mode"]
field_value = (json_values | nasty_text | st.sampled_from(
    ["Stop", "SubagentStop", "true", "1", "", "../../etc", "a/b", "."]))
payload_objects = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8),
                                  field_value, max_size=len(FIELDS) + 2)
payload_bytes = (
    st.builds(lambda o, ascii_: json.dumps(o, ensure_ascii=ascii_).encode(),
              payload_objects, st.booleans())
    | junk_bytes
    | st.builds(str.encode, deep_json())
    # a field whose string is a lone surrogate escape: valid JSON, not text
    | st.builds(lambda k, s: ('{"' + k + '":' + s + '}').encode(),
                st.sampled_from(FIELDS), lone_surrogate_json))


class _Stdin:
    """What the hook reads: bytes on a pipe (never a terminal)."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)
        self.closed = False

    def isatty(self) -> bool:
        return False


class _Stdout(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.buffer = io.BytesIO()


@contextmanager
def _hook_world(stdin: bytes) -> Iterator[tuple[str, _Stdout]]:
    """A fresh state home, the hook's stdin and a captured stdout."""
    saved = (os.environ.get("CODEX_BRIDGE_HOME"), sys.stdin, sys.stdout)
    with tempfile.TemporaryDirectory() as home:
        os.chmod(home, 0o700)
        os.environ["CODEX_BRIDGE_HOME"] = home
        out = _Stdout()
        sys.stdin, sys.stdout = _Stdin(stdin), out  # type: ignore[assignment]
        try:
            yield home, out
        finally:
            if saved[0] is None:
                os.environ.pop("CODEX_BRIDGE_HOME", None)
            else:
                os.environ["CODEX_BRIDGE_HOME"] = saved[0]
            sys.stdin, sys.stdout = saved[1], saved[2]


def _log_text() -> str:
    try:
        with open(os.path.join(log_dir(), LOG_NAME), encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""


@given(payload_bytes)
@example(b'{"session_id":"a\\ud800"}')  # was: the listener record failed to write
@example(b'{"cwd":' + b"[" * 50_000 + b"]" * 50_000 + b"}")  # was: RecursionError
def test_payload_is_a_dict_of_text(raw: bytes) -> None:
    payload = parse_payload(raw)
    assert isinstance(payload, dict)
    for key, value in payload.items():
        key.encode("utf-8")
        if isinstance(value, str):
            value.encode("utf-8")


def _block(out: _Stdout) -> dict[str, Any] | None:
    text = out.buffer.getvalue().decode("utf-8") + out.getvalue()
    if not text:
        return None
    lines = text.rstrip("\n").split("\n")  # (not splitlines: U+0085 is in a reason)
    assert len(lines) == 1, text
    block = json.loads(lines[0])
    assert block["decision"] == "block" and isinstance(block["reason"], str)
    return block


@given(payload_bytes, nasty_text.filter(str.strip))
@example(b'{"session_id":"a\\ud800","prompt_id":"\\udc00"}', "hello")
@example(b'{"hook_event_name":"SessionStart","session_id":"../x"}', "hello")
@example(b"", "0\x85")  # a NEL inside the reason is not a second line
def test_waiting_mail_is_delivered_once_whatever_the_payload(raw: bytes, text: str) -> None:
    with _hook_world(raw) as (home, out):
        inbox = os.path.join(home, "inbox")
        store.push(inbox, new_mail(text, to="box", sender="codex"))
        assert run_hook_cli(["--as", "box"]) == 0
        first = _block(out)
        assert "hook failed" not in _log_text()
        payload = parse_payload(raw)
        if payload.get("hook_event_name") == "SessionStart":
            # SessionStart only registers the listener: the mail waits for a stop.
            assert first is None and os.path.exists(mail_path(inbox, "box"))
            return
        # (the words as the frame carries them: controls shown as escapes, look-alike
        # framing lines quoted — messages/frame.py)
        assert first is not None and quoted(text).strip() in first["reason"]
        assert not os.path.exists(mail_path(inbox, "box"))
        # The next stop has nothing to hand over: the mail went out exactly once.
        out.buffer.seek(0)
        out.buffer.truncate()
        sys.stdin = _Stdin(raw)  # type: ignore[assignment]
        assert run_hook_cli(["--as", "box"]) == 0
        assert _block(out) is None
        assert "hook failed" not in _log_text()


@given(st.lists(st.text(max_size=12), max_size=4))
def test_hook_arguments_never_fail(argv: list[str]) -> None:
    with _hook_world(b"{}") as (_home, out):
        assert run_hook_cli(argv) == 0
        printed = out.buffer.getvalue().decode("utf-8") + out.getvalue()
        assert printed == "" or printed.startswith("Usage:")

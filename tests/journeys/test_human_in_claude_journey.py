"""The human at Claude's TUI while Codex waits for Claude's answer (issue 24, items 2, 9).

    Esc at a permission prompt   Codex asks Claude something that needs a tool; Claude's
                                 turn waits on the human's approval; the human presses
                                 Esc. No Stop hook fires (measured on 2.1.332).
    Esc mid-answer               Claude's answer is on screen, still streaming; Esc.

In both, the asking Codex thread is told at once that the human interrupted the turn
that had its request — and when the human then asks Claude something else ("never mind,
what is 2+2?"), that turn's words never go to Codex as the answer.

    Two Claude sessions          a second `claude` in the same project: Codex's next
                                 request goes to the session already in its conversation
                                 (the one that talked to this thread last), not an error.

Both real TUIs at their defaults (conftest's `journey`).
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.support.helpers import wait_until
from tests.support.tmux_tui import PROCEED, STAY_IN_AUTO

from .conftest import Journey, fresh_text
from .steps import Gate, ask_claude

pytestmark = [pytest.mark.real_codex, pytest.mark.real_claude, pytest.mark.tmux]

INTERRUPTED = "the human interrupted"
LATENCY: dict[str, float] = {}  # what each Esc cost until Codex was told (bench/run reads it)


class MidAnswer:
    """Holds Claude's answer to the request carrying `key` after its first words are
    out: Claude is mid-answer, its words on screen, until released."""

    def __init__(self, j: Journey, key: str) -> None:
        self.j, self.key = j, key
        self.held, self.open = threading.Event(), threading.Event()

    def __enter__(self) -> MidAnswer:
        def hold(req: object) -> None:
            if self.key in getattr(req, "tail_text", lambda: "")() and not self.open.is_set():
                self.held.set()
                self.open.wait(120)
        self.j.world.claude_mock.mid_stream = hold
        return self

    def __exit__(self, *exc: object) -> None:
        self.open.set()
        self.j.world.claude_mock.mid_stream = None


def told_of_interrupt(j: Journey, rid: str, esc_at: float) -> str:
    """The turn in the asking thread that says the human interrupted Claude's turn on
    `rid`; records the latency from the Esc to Codex's model getting it."""
    call = j.world.codex_mock.wait_for_request(
        lambda c: bool(c.user_text) and rid in str(c.user_text)
        and INTERRUPTED in str(c.user_text), 60)
    assert call is not None, j.explain(f"Codex told that {rid} was interrupted")
    LATENCY[rid] = call.received_at - esc_at
    print(f"\nEsc → Codex told ({rid}): {LATENCY[rid]:.2f} s")
    return str(call.user_text)


def at_prompt(j: Journey) -> None:
    """Until Claude Code's permission prompt for the tool waits on the human. Behind a
    gateway auto mode first says once that it cannot run its safety check (measured on
    2.1.332); the human keeps auto mode (Enter), as `approve_claude` does, and the
    prompt follows."""
    pane = j.claude["project"]

    def prompt() -> bool:
        screen = pane.capture()
        if STAY_IN_AUTO in screen and PROCEED not in screen:
            pane.key("Enter")
            # a key that lands while the dialog settles is ignored (approve_claude): look
            # again after the redraw, and press again only if it is still there
            time.sleep(0.3)
            return False
        return PROCEED in screen and STAY_IN_AUTO not in screen
    wait_until(prompt, 60, "Claude's permission prompt", lambda: j.explain("the prompt"))


def stopped_after(j: Journey, prompt: str) -> bool:
    """Claude's transcript shows the turn `prompt` started ended with its Stop hooks run
    (a `stop_hook_summary` record after the prompt's)."""
    for path in (j.world.home / ".claude" / "projects").glob("*/*.jsonl"):
        seen = False
        for line in path.read_text(errors="replace").splitlines():
            if prompt in line and '"type":"user"' in line.replace(" ", ""):
                seen = True
            elif seen and "stop_hook_summary" in line:
                return True
    return False


def nothing_else_answers(j: Journey, rid: str) -> None:
    """The human then asks Claude something else: that turn's answer is Claude's to the
    human, never sent to Codex as the answer to `rid`."""
    claude = j.claude["project"]
    since = j.claude_mark()
    claude.send("never mind, what is 2+2?")
    j.claude_saw("never mind, what is 2+2?", since)
    j.on_screen(claude, "what is 2+2?", 60)
    wait_until(lambda: stopped_after(j, "never mind, what is 2+2?"), 60,
               "the 2+2 turn's Stop hook", lambda: j.explain("the 2+2 turn's stop"))
    replies = [r for r in j.records() if r.get("in_reply_to") == rid]
    assert all(r.get("notice") for r in replies), replies
    assert not any("2+2" in t and rid in t for t in j.codex_user_texts())
    record = j.record(rid)
    assert record["state"] == "failed" and INTERRUPTED in record["reason"], record


@pytest.mark.claude_states
def test_esc_at_claudes_permission_prompt_tells_codex(journey: Journey) -> None:
    j = journey
    # a Bash call Claude Code asks the human about at its defaults (as the other
    # journeys' `talk send` does); the human presses Esc instead of answering
    question = "CALL_TOOL Bash " + json.dumps(
        {"command": "codexbridge talk send 'ESC-AT-PROMPT never sent'"})
    rid = ask_claude(j, question)
    claude = j.claude["project"]
    at_prompt(j)  # Claude's turn waits on the human's approval
    esc_at = time.monotonic()
    claude.key("Escape")
    told = told_of_interrupt(j, rid, esc_at)
    assert "permission prompt" in told and "talk send --in-reply-to" in told
    # the tool the human did not allow never ran: nothing was sent to Codex
    assert not any(r.get("text_preview") == "ESC-AT-PROMPT never sent" for r in j.records())
    nothing_else_answers(j, rid)


@pytest.mark.claude_states
@pytest.mark.parametrize("when", ["mid-answer", "before-words"])
def test_esc_while_claude_answers_tells_codex(journey: Journey, when: str) -> None:
    """Esc with Claude's answer on screen, still streaming — or before its first words
    (the model request still out)."""
    j = journey
    question = f"Codex asks (Esc {when}): which branch has the fix?"
    claude = j.claude["project"]
    with (MidAnswer(j, f"Esc {when}") if when == "mid-answer"
          else Gate(j, f"Esc {when}")) as held:
        rid = ask_claude(j, question)
        if isinstance(held, MidAnswer):
            assert held.held.wait(60), j.explain("Claude mid-answer")
            j.on_screen(claude, f"CLAUDE ANSWER to {rid}")  # its words are on screen
        else:
            held.wait_held()
        esc_at = time.monotonic()
        claude.key("Escape")
        told_of_interrupt(j, rid, esc_at)
    nothing_else_answers(j, rid)


def test_live_mail_names_its_origin_once_as_claudes_model_gets_it(journey: Journey) -> None:
    """Item 10, measured where it counts — the model request: Claude Code's own line
    ("Another Claude session sent a message:") and its paragraph on peers, and ours
    between them, which agrees with them instead of saying the opposite."""
    j = journey
    question = "Codex asks (origin lines): is the origin said once?"
    since = j.claude_mark()
    rid = ask_claude(j, question)
    got = j.claude_saw(question, since)
    # this frame as the model got it: from Claude Code's own line to its peer paragraph
    # (what came before it — an interrupted turn's mail — is not this frame)
    text = fresh_text(got)
    frame = text[text.rindex("Another Claude session sent a message:"):]
    assert question in frame and "This came from another Claude session" in frame
    assert "not from another Claude session" not in frame
    assert "does not come from another Claude session" not in frame
    assert frame.count("sent through Claude Code's cross-session inbox") == 1  # ours, once
    assert "from codex — a peer AI agent, not the human user" in frame
    j.final(rid)


def test_a_second_claude_in_the_project_does_not_make_codex_guess(journey: Journey) -> None:
    """Item 9: the human opens a second `claude` in the same project. Codex's next
    request names no mailbox: it goes to the session already in this conversation (the
    one that talked with this thread last), and is answered there — no
    AMBIGUOUS_SESSION."""
    j = journey
    first = j.listener("project", j.claude["project"].pid)
    second = j.world.claude_tui("project")
    second.wait_ready(60)
    wait_until(lambda: j.listener("project", second.pid), 30,
               "the second Claude session to listen", lambda: second.capture())
    assert j.listener("project", second.pid) != first
    question = "Codex asks (two Claude sessions): which one answers?"
    rid = ask_claude(j, question)
    assert j.record(rid)["mailbox"] == first, j.record(rid)
    final = j.final(rid)
    assert final["state"] == "delivered", final
    assert question not in j.screen(second)

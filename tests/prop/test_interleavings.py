"""Every interleaving of the human, Claude and Codex: the rule of docs/conversations.md.

A request ends answered by the turn that took it in, or its asker is told why not —
never answered with someone else's words, never twice. Hypothesis draws what the human
does while a request is open, and the real code follows it:

* Claude asks Codex: `talk.turn.say` (what the courier and `talk say` run) against the
  in-memory app-server, while the human at the Codex TUI starts a turn first, steers
  (Enter), queues (Tab) or interrupts (Esc) — the keys as codex 0.171 turns them into
  protocol events (reference codex-app-server.md §16).
* Codex asks Claude: the Stop hook's decision (`messages/answers.settle`) and the
  courier's look at a watched session (`answers.interrupted`) over a fake transcript,
  while mail arrives idle, behind a running turn or beside a tool call, the human types
  prompts, and turns end at a stop or at the human's Esc (claude-code.md §15).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from codexbridge.codex.client import AppServerClient
from codexbridge.codex.follow import SayResult
from codexbridge.codex.protocol.enums import TurnOutcome
from codexbridge.codex.turn import say
from tests.support import payloads
from tests.support.memory_appserver import MemoryAppServer, Scripted

THREAD = payloads.USER_THREAD
OURS = "CLAUDE ASKS: is the index rebuilt?"
OUR_ANSWER = "CODEX ANSWERS CLAUDE"


@dataclass(frozen=True)
class Human:
    """One thing the human does at the Codex TUI while Claude's request is open."""
    key: str  # "steer" | "queue" | "interrupt"
    n: int

    @property
    def text(self) -> str:
        return f"HUMAN {self.key} {self.n}: look at the tests too"


def _script(text: str) -> Scripted:
    if text == OURS:
        return Scripted(reply=OUR_ANSWER, hold="ours")
    if text.startswith("HUMAN first"):
        return Scripted(reply=f"CODEX ANSWERS {text}", hold="first")
    return Scripted(reply=f"CODEX ANSWERS {text}")


humans = st.lists(st.builds(Human, st.sampled_from(["steer", "queue", "interrupt"]),
                            st.integers(0, 99)), max_size=4)


async def _until(probe: object, what: str) -> None:
    """Let the client and server tasks run until `probe()` holds (bounded by steps, not
    by time: the in-memory pair needs a handful of loop turns per frame)."""
    for _ in range(10_000):
        if probe():  # type: ignore[operator]
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


async def _walk(first: bool, actions: list[Human]) -> tuple[SayResult, MemoryAppServer,
                                                             list[Human]]:
    server = MemoryAppServer(script=_script)
    async with AppServerClient("ws://memory", connector=server.connector) as client:
        if first:  # the human's own turn runs when Claude's message arrives
            await server.human_queues(THREAD, "HUMAN first: fix the build")
        task = asyncio.create_task(say(client, THREAD, OURS, timeout=60))
        await _until(lambda: server.requests("thread/queue/add"), "our message queued")
        if first:
            await server.release("first")
        await _until(lambda: ("start", OURS) in server.turn_log, "our turn started")
        done: list[Human] = []
        for action in actions:
            done.append(action)
            if action.key == "steer":
                await server.human_steers(THREAD, action.text)
            elif action.key == "queue":
                await server.human_queues(THREAD, action.text)
            else:
                await server.human_interrupts(THREAD)
                break
        else:
            await server.release("ours")
        result = await task
    return result, server, done


@given(first=st.booleans(), actions=humans)
def test_claudes_request_to_codex_is_answered_by_its_own_turn_or_claude_is_told_why(
        first: bool, actions: list[Human]) -> None:
    result, server, done = asyncio.run(_walk(first, actions))
    interrupted = any(a.key == "interrupt" for a in done)
    steers = [a.text for a in done if a.key == "steer"]
    told = json.dumps({k: v for k, v in result.as_dict().items() if k != "reply"},
                      ensure_ascii=False)
    # never someone else's words: no answer to a turn of the human's is Claude's reply
    assert "CODEX ANSWERS HUMAN" not in result.reply, result
    if interrupted:
        # the human stopped it: Claude's asker hears that, not a reply
        assert result.status is TurnOutcome.INTERRUPTED, result
        assert OUR_ANSWER not in result.reply
        return
    assert result.status is TurnOutcome.COMPLETED, result
    assert result.reply == OUR_ANSWER
    # the human's words inside Claude's turn are named to Claude, each of them
    for words in steers:
        assert words in told, (words, told)
    # and a turn the human queued ran as its own turn, after ours
    queued = [a.text for a in done if a.key == "queue"]
    starts = [text for what, text in server.turn_log if what == "start"]
    assert starts.count(OURS) == 1
    for words in queued:
        assert starts.index(words) > starts.index(OURS)


# --- Codex asks Claude ----------------------------------------------------------------
#
# A Claude session's transcript as Claude Code 2.1.332 writes it (claude-code.md §13–15):
# mail handed while Claude is idle starts a turn (a `user` record); mail handed while a
# turn runs waits as a `queue-operation` and becomes the next turn's `user` record; mail
# handed during a tool call is an `attachment` of the running turn. A turn ends at a stop
# (the Stop hook runs, with the turn's final message) or at the human's Esc (no hook; an
# "[Request interrupted by user]" record). The hook's decision (`answers.settle`) must
# claim each request at the stop of the turn that took it in, and never at a later one.


@dataclass
class Session:
    """The fake session: its transcript file, the turn running, the mail waiting."""
    path: str
    running: bool = False
    waiting: list[str] | None = None  # mail ids queued behind the running turn
    turn: int = 0  # turns started so far
    took: dict[str, int] | None = None  # request → the turn that took its mail in

    def write(self, record: dict[str, object]) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")

    def start_turn(self, content: str) -> None:
        self.turn += 1
        self.running = True
        self.write({"type": "user", "message": {"role": "user", "content": content}})


claude_events = st.lists(st.one_of(
    st.tuples(st.just("mail"), st.sampled_from(["live", "tool"])),
    st.tuples(st.just("prompt"), st.just("")),
    st.tuples(st.just("stop"), st.just("")),
    st.tuples(st.just("esc"), st.just("")),
    st.tuples(st.just("tick"), st.just("")),  # the courier looks at the watched session
), max_size=12)


@given(events=claude_events)
def test_codexs_request_to_claude_is_claimed_only_by_the_turn_that_took_it_in(
        events: list[tuple[str, str]], tmp_path_factory: object) -> None:
    from codexbridge.claude.files import transcript_end
    from codexbridge.messages import answers, handling

    directory = tmp_path_factory.mktemp("transcript")  # type: ignore[attr-defined]
    session = Session(str(directory / "t.jsonl"), waiting=[], took={})
    session.write({"type": "system", "subtype": "init"})
    sid = f"s{directory.name}"
    interrupted: set[int] = set()  # turns the human ended with Esc
    claimed: dict[str, int] = {}  # request → the turn whose stop claimed it
    told: set[str] = set()  # requests whose asker was told the human interrupted them
    n = 0

    def hand(mail: str, how: str) -> None:
        offset = transcript_end(session.path)
        handling.note(sid, "web", [{"id": mail, "request": mail, "conversation": "c",
                                    "expect_reply": {"thread": THREAD}}],
                      session.path, offset)
        if not session.running:  # idle: the mail is a turn of its own
            session.start_turn(f"mail {mail}")
            assert session.took is not None
            session.took[mail] = session.turn
        elif how == "tool":  # beside a tool result of the running turn
            session.write({"type": "attachment", "attachment": {"type": "queued_command",
                                                                "prompt": f"mail {mail}"}})
            assert session.took is not None
            session.took[mail] = session.turn
        else:  # behind the running turn
            session.write({"type": "queue-operation", "operation": "enqueue",
                           "content": f"mail {mail}"})
            assert session.waiting is not None
            session.waiting.append(mail)

    def tell(entries: list[dict[str, object]]) -> None:
        for entry in entries:
            request = str(entry["request"])
            assert request not in told and request not in claimed, "ended twice"
            told.add(request)

    def look() -> None:
        for k in range(1, n + 1):
            entry = answers.interrupted(sid, f"req_{k}_x")
            if entry is not None:
                tell([entry])

    def after_turn() -> None:
        session.running = False
        assert session.waiting is not None and session.took is not None
        if session.waiting:  # Claude dequeues what waited: the next turn takes it in
            session.start_turn(" ".join(f"mail {m}" for m in session.waiting))
            for m in session.waiting:
                session.took[m] = session.turn
            session.waiting.clear()

    for kind, how in events:
        if kind == "mail":
            n += 1
            hand(f"req_{n}_x", how)
        elif kind == "prompt" and not session.running:
            session.start_turn("never mind, what is 2+2?")
        elif kind == "stop" and session.running:
            answer = f"ANSWER OF TURN {session.turn}"
            session.write({"type": "assistant", "message": {"role": "assistant",
                                                            "content": answer}})
            settled = answers.settle(sid, answer)
            for request in settled.answered:
                assert request["request"] not in claimed, "claimed twice"
                claimed[str(request["request"])] = session.turn
            tell(settled.interrupted)
            after_turn()
        elif kind == "tick":
            look()
        elif kind == "esc" and session.running:
            interrupted.add(session.turn)
            session.write({"type": "user", "message": {
                "role": "user", "content": [{"type": "text",
                                             "text": "[Request interrupted by user]"}]}})
            after_turn()
    look()  # the courier's next look (or the next stop) after the last event
    assert session.took is not None
    for request, turn in claimed.items():
        # answered only by the turn that took the mail in — never by a later one
        assert session.took.get(request) == turn, (request, turn, session.took)
        assert turn not in interrupted
    for request, turn in session.took.items():
        if turn in interrupted:  # its turn was ended by the human: the asker is told
            assert request in told and request not in claimed, (request, told, claimed)
        else:
            assert request not in told, request

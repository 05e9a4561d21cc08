"""Conversations between a live Claude Code session and a live Codex thread, end to end.

Real binaries on both sides — Claude Code 2.1.332 against the mock Messages API, codex
0.169.0 `app-server` against the mock Responses API — with codexbridge's hooks installed
exactly as `codexbridge install-hook` writes them. A RawClient stands in for the TUI.

    Claude → Codex (`claude -p`, Stop hook)   the mock model runs `codexbridge talk send`
        through the Bash tool; the receipt names the calling session's mailbox; the turn
        runs in the human's thread with the envelope header; the courier leaves Codex's
        answer as mail (in_reply_to, conversation, delivery_id); the Stop hook hands it
        to the same Claude run, whose next model request carries it.
    Claude → Codex (tmux, idle session)      the same send from an interactive Claude that
        then goes idle; Codex's held turn finishes later and the asyncRewake watcher
        wakes Claude with the answer.
    Codex → Claude (`--expect-reply`)         the Stop hook hands Claude the request; at
        Claude's next stop its final message goes back into the asking thread as a
        reply turn that spends no hop, and the request's delivery record ends delivered.

Nothing waits on a bare sleep: the tests wait for model requests, app-server
notifications and files.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codexbridge.hooks.watcher import parse_claim
from codexbridge.host.appserver import AppServerProcess as AppServer
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.host.procs import pid_alive
from codexbridge.inbox import peek as reading
from codexbridge.inbox.lines import Mail
from codexbridge.inbox.location import watcher_path
from codexbridge.messages.listeners import session_path
from codexbridge.setup.claude import install_hooks as install
from tests.support.claude_fixtures import ClaudeHarness, TmuxClaude
from tests.support.helpers import wait_until
from tests.support.mock_claude import MockMessages, RecordedRequest
from tests.support.mock_codex import MockResponsesServer, words_of
from tests.support.raw_client import Message, RawClient, start_user_thread

pytestmark = [pytest.mark.real_claude, pytest.mark.real_codex]

# The interpreter that has codexbridge installed (the repo's .venv): Claude's Bash tool
# runs it by absolute path, as a user's CLAUDE.md / skill would.
PYTHON = sys.executable
ENVELOPE_FROM_CLAUDE = re.compile(
    r"\[codexbridge [a-z0-9]{6}\] from Claude Code — a peer AI agent, not the human user\n")
# The courier inherits Claude's environment (it runs from Claude's Bash tool): with live
# delivery off, these tests prove the Stop hook's and the watcher's paths for replies.
# Live delivery of a reply is proven in tests/real/test_live_delivery_real.py.
HOOK_PATH = {"CODEX_BRIDGE_LIVE": "0"}


# --- helpers ---------------------------------------------------------------------------

@pytest.fixture
def cproject(tmp_path: Path) -> Path:
    """Claude's project dir (the `claude_project` fixture would collide with `workdir`)."""
    path = tmp_path / "claude-project"
    path.mkdir()
    return path


def bash_call(command: str) -> str:
    """The text that makes the mock Messages API call the Bash tool with `command`."""
    return "CALL_TOOL Bash " + json.dumps({"command": command})


def talk_send(thread_id: str, text: str) -> str:
    return shlex.join([PYTHON, "-m", "codexbridge", "talk", "send", "--thread", thread_id,
                       "--json", text])


def cli(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = subprocess.run([PYTHON, "-m", "codexbridge", *args, "--json"],
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=30, check=False)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    data = json.loads(proc.stdout)
    assert isinstance(data, dict)
    return data


def courier_log() -> str:
    path = Path(os.environ["CODEX_BRIDGE_HOME"], "logs", "courier.log")
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def mails(name: str) -> list[Mail]:
    return reading.peek(inbox_dir(), name).mails


def reply_mail(name: str) -> Mail | None:
    """The courier's reply mail in mailbox `name`, once it is there."""
    return next((m for m in mails(name) if m.extra.get("in_reply_to")), None)


def delivery(delivery_id: str) -> dict[str, Any]:
    path = Path(os.environ["CODEX_BRIDGE_HOME"], "deliveries", f"{delivery_id}.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def final_delivery(delivery_id: str, timeout: float = 20) -> dict[str, Any]:
    """`talk status ID --wait`: the record once it reaches a final state."""
    data = cli("talk", "status", delivery_id, "--wait", str(timeout))["delivery"]
    assert isinstance(data, dict)
    return data


def courier_gone(record: dict[str, Any]) -> None:
    """The record's courier process has exited (none outlives its delivery)."""
    pid = record.get("courier_pid")
    if isinstance(pid, int):
        wait_until(lambda: True if not pid_alive(pid) else None, 10, f"courier {pid} to exit")


def live_watcher(name: str, *, other_than: int | None = None, timeout: float = 20) -> int:
    """Pid of the asyncRewake watcher holding mailbox `name` (a new one if `other_than`)."""
    path = Path(watcher_path(inbox_dir(), name))

    def probe() -> int | None:
        pid = parse_claim(path.read_bytes()) if path.exists() else None
        return pid if pid is not None and pid != other_than and pid_alive(pid) else None
    return wait_until(probe, timeout, f"a watcher on mailbox {name!r}")


def conversation_file(conv: str) -> dict[str, Any]:
    path = Path(os.environ["CODEX_BRIDGE_HOME"], "conversations", f"{conv}.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def tool_result_texts(req: RecordedRequest) -> list[str]:
    msgs = req.messages
    if not msgs or msgs[-1].get("role") != "user" or not isinstance(msgs[-1]["content"], list):
        return []
    out = []
    for block in msgs[-1]["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = block.get("content")
            out.append(content if isinstance(content, str) else "\n".join(
                str(b.get("text", "")) for b in content or [] if isinstance(b, dict)))
    return out


def receipt_in(req: RecordedRequest) -> dict[str, Any] | None:
    """The `talk send --json` receipt a Bash tool result carries, if any."""
    for text in tool_result_texts(req):
        start = text.find("{")
        if start < 0:
            continue
        try:
            data, _ = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(data, dict) and "delivery_id" in data:
            return data
    return None


def user_message_text(note: Message) -> str | None:
    """The text of a userMessage `item/started` notification, else None."""
    if note.get("method") != "item/started":
        return None
    item = (note.get("params") or {}).get("item") or {}
    if item.get("type") != "userMessage":
        return None
    return "".join(str(part.get("text", "")) for part in item.get("content") or []
                   if isinstance(part, dict))


def turn_completed(thread_id: str, turn_id: str | None = None
                   ) -> Callable[[Message], bool]:
    """`turn/completed` in the thread (of that turn, when `turn_id` is given)."""
    def match(note: Message) -> bool:
        params = note.get("params") or {}
        return (note.get("method") == "turn/completed" and params.get("threadId") == thread_id
                and turn_id in (None, (params.get("turn") or {}).get("id")))
    return match


# --- 1. Claude → Codex, the reply handed over by the Stop hook --------------------------

async def test_claude_asks_codex_and_the_stop_hook_brings_the_reply(
        claude: ClaudeHarness, cproject: Path, mock_messages: MockMessages,
        app_server: AppServer, workdir: Path) -> None:
    """`claude -p` with the Stop hook only. The session registers as mailbox "web" at its
    first stop, where the hook hands it mail from Codex; acting on it, the model runs
    `talk send` through Bash, which finds the calling session's mailbox by itself.
    While the model "reads" the receipt (the mock holds that request), Codex answers;
    at the next stop the hook hands the answer to the same run."""
    name = "web"
    install(str(cproject), name)
    ask = "Claude here: which tests cover the auth module?"
    seen_reply: list[Mail] = []

    def on_request(req: RecordedRequest) -> None:
        # The request after the Bash call: hold it until Codex's answer is in the mailbox,
        # as a real model would still be busy when a fast peer answers.
        if receipt_in(req) is not None and not seen_reply:
            seen_reply.append(wait_until(lambda: reply_mail(name), 30, "Codex's reply mail"))

    mock_messages.on_request = on_request
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first message from the human")
        since = tui.mark()
        pushed = cli("inbox", "push", "--to", name, bash_call(talk_send(user.thread_id, ask)))
        proc = await asyncio.to_thread(claude.run_p, cproject, "hello", "--allowedTools",
                                       "Bash", env={"CODEX_BRIDGE_URL": app_server.url,
                                                    **HOOK_PATH},
                                       timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert mock_messages.errors == []
        # The TUI stand-in saw the bridge's turn in the human's thread, envelope first.
        note = await tui.wait_for(lambda n: user_message_text(n) is not None, since=since,
                                  timeout=10)
        assert note["params"]["threadId"] == user.thread_id
        text = user_message_text(note) or ""
        assert ENVELOPE_FROM_CLAUDE.match(text) and words_of(text) == ask
        done = await tui.wait_for(turn_completed(user.thread_id, note["params"]["turnId"]),
                                  since=since, timeout=10)
        assert done["params"]["turn"]["status"] == "completed"

    calls = mock_messages.model_calls
    # hello → stop (mail: the Bash call) → Bash → receipt → stop (mail: Codex's reply) → end
    assert len(calls) == 4, [c.tail_text()[:120] for c in calls]
    assert "CALL_TOOL Bash" in (calls[1].stop_feedback() or "")
    receipt = receipt_in(calls[2])
    assert receipt is not None, calls[2].tail_text()
    did = receipt["delivery_id"]
    assert receipt["thread_id"] == user.thread_id and receipt["chosen_by"] == "caller"
    assert receipt["reply_to"] == name and receipt["reply_to_how"] == "calling session"
    assert receipt["warnings"] == []
    # Asking back while handling Codex's mail stays in that mail's conversation: hop 2.
    conv = receipt["conversation"]
    assert conv == pushed["conversation"] and (pushed["hop"], receipt["hop"]) == (1, 2)
    hops = conversation_file(conv)["hops"]
    # (the push is the test's own, from a plain shell: who_sends names it the human's)
    assert [(h["n"], h["direction"]) for h in hops] == [(1, "human→claude"),
                                                        (2, "claude→codex")]
    assert hops[1]["delivery"] == did and hops[1]["reply_to"] == name
    assert f"request {did} (echo it)" in text
    assert f'your final message goes back to mailbox "{name}"' in text
    # The listener the receipt matched is this very session.
    listener = json.loads(Path(session_path(inbox_dir(), name)).read_text())
    assert listener["session_id"] == calls[0].session_id == calls[2].session_id
    # The reply mail, as the courier left it.
    (mail,) = seen_reply
    assert mail.sender == "codex"
    assert mail.extra["in_reply_to"] == did and mail.extra["delivery_id"] == did
    assert mail.extra["conversation"] == conv
    assert mail.extra["recovered"] is False
    codex_answer = f"MOCK REPLY: {words_of(text)}"  # the mock answers the words
    assert codex_answer in mail.text
    # … and the Stop hook handed it to the same Claude run.
    feedback = calls[3].stop_feedback() or ""
    assert f'mailbox "{name}"' in feedback and codex_answer in feedback
    assert calls[3].session_id == calls[0].session_id
    assert mails(name) == []
    record = final_delivery(did)
    assert record["state"] == "delivered" and record["reply_mail_id"] == mail.mail_id
    assert [h["state"] for h in record["history"]][-1] == "delivered"
    courier_gone(record)


# --- 2. Claude → Codex from an interactive session that goes idle; the watcher wakes it --

@pytest.mark.tmux
async def test_an_idle_claude_is_woken_by_codexs_reply(
        claude: ClaudeHarness, cproject: Path, mock_messages: MockMessages,
        app_server: AppServer, workdir: Path, mock_model: MockResponsesServer) -> None:
    """Interactive Claude in tmux, hooked by `install-hook --rewake`. The user's prompt
    makes the model run `talk send` through Bash; Codex's turn is held, so Claude ends
    its turn and sits idle; once the turn is let go, the courier's reply mail wakes
    Claude through the watcher and the woken turn's model request carries the answer."""
    name = "tui"
    install(str(cproject), name, rewake=True, watch_timeout=120)
    claude.seed_interactive(cproject)
    session = TmuxClaude(claude, cproject, env={"CODEX_BRIDGE_URL": app_server.url,
                                                **HOOK_PATH})
    ask = "HOLD:idle-wake Claude here: please review the migration"
    try:
        async with RawClient(app_server.url) as tui:
            user = await start_user_thread(tui, workdir, "first message from the human")
            since = tui.mark()
            session.start("--permission-mode", "manual", "--allowedTools", "Bash")
            assert await asyncio.to_thread(session.wait_for_screen, "❯", 30), session.screen()
            # The SessionStart watcher registers the session as the mailbox's listener.
            first_watcher = await asyncio.to_thread(live_watcher, name)
            listener = json.loads(Path(session_path(inbox_dir(), name)).read_text())
            await asyncio.to_thread(session.type, bash_call(talk_send(user.thread_id, ask)))

            # Claude gets the receipt and ends its turn while Codex's turn is still held.
            seen = await asyncio.to_thread(mock_messages.wait_for,
                                           lambda r: receipt_in(r) is not None, 30)
            assert seen is not None, session.screen()
            receipt = receipt_in(seen)
            assert receipt is not None
            await asyncio.to_thread(mock_model.wait_held, "idle-wake", 20)
            assert await asyncio.to_thread(session.wait_for_screen, "TOOL_RESULT_SEEN", 15)
            # Idle: the turn's Stop hook has run and re-armed a watcher.
            await asyncio.to_thread(live_watcher, name, other_than=first_watcher)
            did = receipt["delivery_id"]
            # The courier follows the held turn: Codex's first delta is out, so the
            # record says awaiting-reply (never backwards, even when that delta beats
            # the answer to thread/queue/add on an idle thread).
            # (the turn's start and its first delta reach the courier in either order;
            # the record settles on awaiting-reply once both have)
            following = await asyncio.to_thread(
                wait_until, lambda: delivery(did) if delivery(did)["turn_id"] and delivery(
                    did)["state"] == "awaiting-reply" else None, 10,
                "the courier to follow the turn",
                lambda: (json.dumps(delivery(did), indent=1), courier_log()))
            assert [h["state"] for h in following["history"]] == [
                "queued", "delivering", "awaiting-reply"]
            note = await tui.wait_for(lambda n: user_message_text(n) is not None,
                                      since=since, timeout=5)
            assert following["turn_id"] == note["params"]["turnId"]
            assert mails(name) == []
            before = len(mock_messages.requests)

            mock_model.release("idle-wake")
            done = await tui.wait_for(turn_completed(user.thread_id), since=since,
                                      timeout=15)
            woken = await asyncio.to_thread(
                mock_messages.wait_for,
                lambda r: r.index >= before and "MOCK REPLY: " in r.tail_text(), 15)
            assert woken is not None, session.screen()
    finally:
        mock_model.release("idle-wake")
        session.stop()

    assert done["params"]["turn"]["status"] == "completed"
    text = user_message_text(note) or ""
    assert ENVELOPE_FROM_CLAUDE.match(text) and words_of(text) == ask
    assert receipt["reply_to"] == name and receipt["reply_to_how"] == "calling session"
    assert receipt["thread_id"] == user.thread_id and receipt["hop"] == 1
    assert receipt["state"] in ("queued", "delivering", "awaiting-reply")  # not final
    # The woken turn: a new model request of the same interactive session, carrying the
    # courier's mail with Codex's whole answer.
    tail = woken.tail_text()
    assert "Stop hook feedback" in tail and f'mailbox "{name}"' in tail
    assert f"Reply from Codex (thread {user.thread_id}) to your request {did}" in tail
    assert f"MOCK REPLY: {words_of(text)}" in tail
    assert woken.session_id == seen.session_id == listener["session_id"]
    assert woken.headers.get("user-agent", "").endswith("(external, cli)")  # the TUI
    assert mails(name) == []
    record = final_delivery(did)
    assert record["state"] == "delivered" and record["reply_mail_id"]
    courier_gone(record)


@pytest.mark.tmux
@pytest.mark.parametrize("road", ["live", "wake"])
async def test_codex_asks_an_idle_claude_through_its_watcher_and_the_answer_comes_back(
        claude: ClaudeHarness, cproject: Path, mock_messages: MockMessages,
        app_server: AppServer, workdir: Path, road: str) -> None:
    """Mail the pusher did not deliver live (its live delivery is off: the switch under
    test) reaches an idle interactive Claude through the session's watcher — by the live
    road at the session's defaults (the human sees the mail in full in the TUI), by the
    asyncRewake wake when the session's live delivery is off too (a collapsed "Stop hook
    feedback"). Either way the woken turn answers, and its stop sends the answer into
    the asking thread once, both records delivered."""
    name = "tui"
    install(str(cproject), name, rewake=True, watch_timeout=120)
    claude.seed_interactive(cproject)
    session = TmuxClaude(claude, cproject, env={"CODEX_BRIDGE_URL": app_server.url,
                                                **(HOOK_PATH if road == "wake" else {})})
    question = f"Codex asks (the watcher's {road} road): is the index rebuilt?"
    try:
        async with RawClient(app_server.url) as tui:
            user = await start_user_thread(tui, workdir, "first message from the human")
            session.start("--permission-mode", "manual")
            assert await asyncio.to_thread(session.wait_for_screen, "❯", 30), session.screen()
            await asyncio.to_thread(live_watcher, name)  # idle, its watcher armed
            since, before = tui.mark(), len(mock_messages.requests)
            pushed = cli("inbox", "push", "--to", name, "--expect-reply", "--thread",
                         user.thread_id, question, env=HOOK_PATH)
            request = pushed["request"]
            woken = await asyncio.to_thread(
                mock_messages.wait_for,
                lambda r: r.index >= before and question in r.tail_text(), 30)
            assert woken is not None, session.screen()
            note = await tui.wait_for(
                lambda n: f"reply to {request}" in (user_message_text(n) or ""),
                since=since, timeout=30)
            await tui.wait_for(turn_completed(user.thread_id, note["params"]["turnId"]),
                               since=since, timeout=30)
            replies = [n for n in tui.notifications[since:]
                       if f"reply to {request}" in (user_message_text(n) or "")]
            screen = session.screen()
    finally:
        session.stop()
    tail = woken.tail_text()
    assert f"request {request}" in tail
    if road == "live":  # a live frame: shown in full to the human
        assert "Another Claude session sent a message" in tail, tail[-1500:]
        assert question in " ".join(screen.split()), screen
    else:  # the watcher's wake
        assert "Stop hook feedback" in tail, tail[-1500:]
    assert len(replies) == 1  # answered once
    record = final_delivery(request)
    assert record["state"] == "delivered" and record["reply_preview"]
    assert words_of(user_message_text(note) or "").endswith(record["reply_preview"])
    answers = [d for d in cli("talk", "status")["deliveries"] if d["in_reply_to"] == request]
    assert len(answers) == 1 and final_delivery(answers[0]["id"])["state"] == "delivered"
    assert mails(name) == []


# --- 3. Codex → Claude with expect-reply: Claude's final message goes back -------------

async def test_codex_asks_claude_and_the_answer_comes_back_as_a_turn(
        claude: ClaudeHarness, cproject: Path, mock_messages: MockMessages,
        app_server: AppServer, workdir: Path) -> None:
    """`inbox push --expect-reply --thread TID`; `claude -p` with the Stop hook handles
    the mail at its first stop, answers, and at its next stop the hook sends that final
    message into the asking thread (detached `talk send --in-reply-to`): the TUI
    stand-in sees it as a userMessage there. The reply spends no hop."""
    name = "web"
    install(str(cproject), name)
    question = "Codex asks: is the auth refactor safe to merge?"
    async with RawClient(app_server.url) as tui:
        user = await start_user_thread(tui, workdir, "first message from the human")
        since = tui.mark()
        pushed = cli("inbox", "push", "--to", name, "--expect-reply", "--thread",
                     user.thread_id, question)
        request, conv = pushed["request"], pushed["conversation"]
        assert pushed["expect_reply_from"] == user.thread_id and pushed["hop"] == 1
        assert delivery(request)["state"] == "queued"
        proc = await asyncio.to_thread(claude.run_p, cproject, "hello",
                                       env={"CODEX_BRIDGE_URL": app_server.url}, timeout=60)
        assert proc.returncode == 0, proc.stderr
        answer = claude.result_json(proc)["result"]
        note = await tui.wait_for(lambda n: answer in (user_message_text(n) or ""),
                                  since=since, timeout=15)
        done = await tui.wait_for(turn_completed(user.thread_id, note["params"]["turnId"]),
                                  since=since, timeout=15)

    calls = mock_messages.model_calls
    # hello → stop (the request handed over) → the answer → stop (answer sent back)
    assert len(calls) == 2, [c.tail_text()[:120] for c in calls]
    feedback = calls[1].stop_feedback() or ""
    assert question in feedback and f"request {request}" in feedback
    assert f"sent back to its thread {user.thread_id} by itself" in feedback
    assert answer.startswith("MOCK_REPLY #2: ")
    # In the asking thread: the answer under a reply envelope, then Codex's turn on it.
    assert note["params"]["threadId"] == user.thread_id
    text = user_message_text(note) or ""
    header = text.partition("\n\n")[0]
    assert ENVELOPE_FROM_CLAUDE.match(text) and words_of(text) == answer
    assert f"reply to {request}" in header and f"· {conv} ·" in header
    assert re.search(r"\bhop \d+/\d+", header) is None  # a reply spends none
    assert done["params"]["turn"]["status"] == "completed"
    # The request's record ends delivered, with the answer.
    record = final_delivery(request)
    assert record["direction"] == "to-claude" and record["state"] == "delivered"
    assert record["reply_preview"] == answer
    assert [h["state"] for h in record["history"]] == ["queued", "awaiting-reply",
                                                       "delivered"]
    # The reply went as its own delivery: no hop, nothing routed back to Claude.
    replies = [d for d in cli("talk", "status")["deliveries"] if d["in_reply_to"] == request]
    assert len(replies) == 1, replies
    reply = final_delivery(replies[0]["id"])
    assert reply["direction"] == "to-codex" and reply["state"] == "delivered"
    assert reply["hop"] == 0 and reply["conversation"] == conv
    # the answering session's mailbox, told only if the answer cannot reach the thread
    assert reply["reply_to"] == name and reply["reply_mail_id"] is None
    assert reply["thread_id"] == user.thread_id
    courier_gone(reply)
    assert mails(name) == []
    hops = conversation_file(conv)["hops"]
    assert [(h["n"], h["direction"], h["delivery"]) for h in hops] == [
        (1, "human→claude", request)]  # (pushed from the test's plain shell)

"""The loop guard stops loops, not conversations (issue 24, item 5).

A real review goes back and forth a dozen times at the default budget; a loop is caught
by what it does (the same request again and again); the `hop n/N` shown is the
conversation's recorded budget; the budget is read at every request from the state
home (`talk budget N`), so running sessions pick a change up; and the refusal names a
way on that works from inside the refused turn (`--new-conversation`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from codexbridge.codex.protocol.threads import ThreadInfo
from codexbridge.errors import HopLimitError, LoopDetectedError, UsageError
from codexbridge.host.limits import DEFAULT_MAX_HOPS, max_hops
from codexbridge.messages.conversations import (
    Conversations,
    current_conversation,
    digest,
)
from codexbridge.messages.to_codex import blocking_request, prepare

THREAD = ThreadInfo(id="thr-1", name=None, cwd="/work/project", status="idle")


def test_a_twelve_exchange_review_fits_the_default_budget(tmp_path: Path) -> None:
    convs = Conversations(tmp_path / "c")
    conv = None
    for n in range(1, 13):
        direction = "codex→claude" if n % 2 else "claude→codex"
        hop = convs.spend_hop(conv, {"direction": direction}, max_hops({}),
                              words=f"review point {n}: what about the error path in part {n}?")
        conv = hop.conversation
        assert (hop.n, hop.max_hops) == (n, DEFAULT_MAX_HOPS)
    assert DEFAULT_MAX_HOPS >= 3 * 12  # room to spare: a guard against loops, not reviews


def test_the_same_request_a_third_time_is_a_loop(tmp_path: Path) -> None:
    convs = Conversations(tmp_path / "c")
    conv = convs.spend_hop(None, {"direction": "claude→codex"}, 40,
                           words="Please review auth.py (request req_1_aaaaaa)").conversation
    convs.spend_hop(conv, {"direction": "codex→claude"}, 40, words="looks fine to me")
    convs.spend_hop(conv, {"direction": "claude→codex"}, 40,
                    words="please  review AUTH.py! (request req_2_bbbbbb)")
    convs.spend_hop(conv, {"direction": "codex→claude"}, 40, words="Looks fine to me.")
    with pytest.raises(LoopDetectedError) as err:
        convs.spend_hop(conv, {"direction": "claude→codex"}, 40,
                        words="please review auth.py (request req_3_cccccc)")
    assert err.value.exit_code == 9 and err.value.mcp_code == "LOOP_DETECTED"
    assert "hops 1, 3" in err.value.message and "nothing was sent" in err.value.message
    data = convs.get(conv)
    assert data is not None and len(data.hops) == 4  # nothing spent on the refusal
    # numbers are progress, not noise
    convs.spend_hop(conv, {}, 40, words="test 1 fails")
    convs.spend_hop(conv, {}, 40, words="test 2 fails")


def test_digest_ignores_what_changes_on_every_round_of_a_loop() -> None:
    assert digest("Fix it, please. (req_1764579600000_k3x9qa, conv_1a2b3c4d5e6f)") == \
        digest("fix it please")
    assert digest("turn 019b2c3d-1111-2222-3333-444455556666 failed") == digest("turn failed")
    assert digest("line 41") != digest("line 42")


def test_the_hop_line_shows_the_conversations_recorded_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A conversation started under a budget of 6: a later sender whose own setting is
    the default sends hop 2/6 — not 2/40, which was shown before."""
    first = blocking_request("first question", "thr-1", env={"CODEX_BRIDGE_MAX_HOPS": "6"})
    conv = first.record.conversation
    assert "hop 1/6" in first.words
    receipt = prepare("second question", THREAD, "caller", conversation=conv, env={})
    assert (receipt.delivery.hop, receipt.delivery.max_hops) == (2, 6)
    later = blocking_request("third question", "thr-1", env={}, conversation=conv)
    assert "hop 3/6" in later.words and later.record.max_hops == 6


def test_a_budget_set_in_the_state_home_reaches_a_running_conversation(
        tmp_path: Path) -> None:
    """`talk budget N` writes where the budget is recorded, read at every request: the
    sessions already running (whose environment never changes) and a conversation that
    was just refused both go on, with the new N shown."""
    env = {"CODEX_BRIDGE_MAX_HOPS": "2"}
    one = blocking_request("q1", "thr-1", env=env)
    conv = one.record.conversation
    blocking_request("q2", "thr-1", env=env, conversation=conv)
    with pytest.raises(HopLimitError) as err:
        blocking_request("q3", "thr-1", env=env, conversation=conv)
    assert "--new-conversation" in err.value.message
    assert "newConversation: true" in err.value.message
    assert "talk budget N" in err.value.message
    result = CliRunner().invoke(_talk(), ["budget", "5"])
    assert result.exit_code == 0, result.output
    three = blocking_request("q3", "thr-1", env=env, conversation=conv)
    assert "hop 3/5" in three.words
    shown = CliRunner().invoke(_talk(), ["budget", "--json"])
    assert json.loads(shown.output)["max_hops"] == 5
    assert CliRunner().invoke(_talk(), ["budget", "--reset"]).exit_code == 0
    assert Conversations().setting() is None


def test_a_refused_turn_goes_on_in_a_new_conversation(tmp_path: Path) -> None:
    env = {"CODEX_BRIDGE_MAX_HOPS": "1", "CODEX_BRIDGE_CONVERSATION": "conv_abc123"}
    blocking_request("q1", "thr-1", env=env)
    with pytest.raises(HopLimitError):
        blocking_request("q2", "thr-1", env=env)
    fresh = blocking_request("q2", "thr-1", env=env, new_conversation=True)
    assert fresh.record.conversation != "conv_abc123" and fresh.record.hop == 1
    assert current_conversation(None, env, new=True) is None
    with pytest.raises(UsageError):
        current_conversation("conv_abc123", env, new=True)


def _talk():  # type: ignore[no-untyped-def]
    from codexbridge.cli.talk_cmd import talk

    return talk


def test_the_setting_outlives_the_sweep_of_old_conversations(tmp_path: Path) -> None:
    import os
    import time

    convs = Conversations(tmp_path / "c")
    convs.set_setting(60)
    old = time.time() - 30 * 24 * 3600
    os.utime(convs.settings_path, (old, old))
    convs.spend_hop(None, {}, 40)  # a send sweeps conversations past their TTL
    assert convs.setting() == 60

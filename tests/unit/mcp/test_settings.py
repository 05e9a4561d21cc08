"""Start-up settings, the error-code table, and `codexbridge mcp` refusing bad starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from codexbridge import errors as E
from codexbridge.codex.outcome import turn_started
from codexbridge.mcp import settings
from codexbridge.mcp.results import CODES, error_envelope, ok_envelope


def test_role_from_flag_or_env() -> None:
    assert settings.resolve_role("claude", {}) == "claude"
    assert settings.resolve_role(None, {"CODEX_BRIDGE_MCP_ROLE": "codex"}) == "codex"
    assert settings.resolve_role("claude", {"CODEX_BRIDGE_MCP_ROLE": "codex"}) == "claude"
    with pytest.raises(E.UsageError, match="no role"):
        settings.resolve_role(None, {})
    with pytest.raises(E.UsageError, match="CODEX_BRIDGE_MCP_ROLE='both'"):
        settings.resolve_role(None, {"CODEX_BRIDGE_MCP_ROLE": "both"})


def test_defaults_and_env_overrides() -> None:
    s = settings.load("claude", {})
    assert (s.inline_max, s.capture_max, s.approvals) == (65536, 10 * 1024 * 1024, "tui")
    s = settings.load("codex", {"CODEX_BRIDGE_INLINE_MAX": "2048",
                                "CODEX_BRIDGE_ARTIFACT_TTL": "90",
                                "CODEX_BRIDGE_APPROVALS": "decline",
                                "CODEX_BRIDGE_QUEUE_WAIT": "0"})
    assert (s.inline_max, s.artifact_ttl, s.approvals, s.queue_wait) == (2048, 90.0, "decline",
                                                                         0.0)


@pytest.mark.parametrize(("env", "needle"), [
    ({"CODEX_BRIDGE_APPROVALS": "accept"}, "accept is refused over MCP"),
    ({"CODEX_BRIDGE_APPROVALS": "yes"}, "expected tui or decline"),
    ({"CODEX_BRIDGE_INLINE_MAX": "lots"}, "not a whole number"),
    ({"CODEX_BRIDGE_INLINE_MAX": "10"}, "below the minimum"),
    ({"CODEX_BRIDGE_INLINE_MAX": "9000", "CODEX_BRIDGE_CAPTURE_MAX": "4096"}, "INLINE_MAX"),
    ({"CODEX_BRIDGE_CAPTURE_MAX": "99999999999"}, "ARTIFACT_STORE_MAX"),
])
def test_bad_settings_are_start_up_errors(env: dict[str, str], needle: str) -> None:
    with pytest.raises(E.UsageError, match=needle):
        settings.load("claude", env)


def test_every_code_is_documented_in_docs_mcp_md() -> None:
    from pathlib import Path

    root = Path(__file__).parents[3]
    doc = (root / "docs" / "mcp.md").read_text(encoding="utf-8")
    for code in CODES:
        assert f"`{code}`" in doc, code
    # ... because the table is rendered from the error tree, and not stale (the results
    # table, which runs every tool, is test_docs_match_code's):
    check = subprocess.run([sys.executable, str(root / "scripts" / "render-docs"), "--check",
                            "--block", "exit-codes", "--block", "mcp-error-codes"],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr


def test_error_codes_come_from_the_error_tree_and_started_turns_never_retry() -> None:
    amb = E.AmbiguousThreadError("two", [{"id": "a"}, {"id": "b"}])
    assert error_envelope(amb)["error"] == {
        "code": "AMBIGUOUS_THREAD", "message": "two", "retryable": False,
        "details": {"candidates": [{"id": "a"}, {"id": "b"}]}}
    assert error_envelope(E.NoThreadError("none"))["error"]["retryable"] is True
    assert error_envelope(E.NoRolloutError(-32600, "no rollout found"))["error"]["code"] \
        == "NO_ROLLOUT"
    assert error_envelope(E.ConnectError("refused"))["error"]["code"] == "CODEX_CONNECT_FAILED"
    refused = E.TurnStartFailedError(-32600, "bad turn")
    assert error_envelope(refused)["error"]["retryable"] is True
    lost = error_envelope(turn_started(E.ConnectionLostError("gone")))
    assert lost["error"]["code"] == "CODEX_CONNECTION_LOST"
    assert lost["error"]["retryable"] is False and lost["error"]["details"]["turnStarted"]
    timeout = error_envelope(turn_started(E.RequestTimeoutError("slow")))
    assert timeout["error"]["code"] == "CODEX_CONNECTION_LOST"
    assert ok_envelope({"x": 1}) == {"ok": True, "data": {"x": 1}, "warnings": []}
    # every class's code is documented, with its retryable flag
    for cls in (E.UsageError, E.QueueTimeoutError, E.NoMailboxError, E.InternalError):
        assert CODES[cls.mcp_code][0] is cls.retryable


def run_mcp(*args: str, env: dict[str, str] | None = None,
            input: str = "") -> subprocess.CompletedProcess[str]:
    import os

    full = {k: v for k, v in os.environ.items() if not k.startswith("CODEX_BRIDGE_MCP")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "codexbridge", "mcp", *args], env=full,
                          input=input, capture_output=True, text=True, timeout=60, check=False)


def test_missing_or_unknown_role_exits_2_with_a_clear_message() -> None:
    proc = run_mcp()
    assert proc.returncode == 2
    assert "no role: pass --role claude|codex or set CODEX_BRIDGE_MCP_ROLE" in proc.stderr
    proc = run_mcp("--role", "both")
    assert proc.returncode == 2 and "--role='both'" in proc.stderr
    proc = run_mcp(env={"CODEX_BRIDGE_MCP_ROLE": "codex", "CODEX_BRIDGE_APPROVALS": "accept"})
    assert proc.returncode == 2 and "accept is refused over MCP" in proc.stderr
    assert proc.stdout == ""  # nothing on the MCP wire


def test_help_and_role_errors_do_not_import_the_sdk() -> None:
    code = ("import sys\nfrom codexbridge.cli import main\n"
            "try:\n    main(['mcp', {args}])\nexcept SystemExit:\n    pass\n"
            "print('SDK' if any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules)"
            " else 'LEAN')")
    for args in ("'--help'", "'--role', 'nope'"):
        proc = subprocess.run([sys.executable, "-c", code.format(args=args)],
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.stdout.strip().splitlines()[-1] == "LEAN", proc.stdout + proc.stderr

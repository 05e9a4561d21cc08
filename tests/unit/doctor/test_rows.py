"""doctor: facts → rows, every status path; the report's verdict and layout."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from codexbridge.codex.endpoint import EndpointKind
from codexbridge.codex.protocol.generated.results import Thread, ThreadStatus
from codexbridge.doctor import binaries, claude_side, codex_side
from codexbridge.doctor.binaries import BinaryFacts
from codexbridge.doctor.claude_side import Mailbox, MailboxFacts, ProjectFacts, SettingsFile
from codexbridge.doctor.codex_side import (
    CodexHomeLayer,
    ConfigToml,
    EndpointFacts,
    HooksJson,
    ServeFacts,
)
from codexbridge.doctor.parse import ClaudeHook, CodexConfig, HookKind, ListenSchemes
from codexbridge.doctor.records import StateFacts, state_rows
from codexbridge.doctor.report import (
    FAIL,
    INFO,
    OK,
    WARN,
    Check,
    as_json,
    check_failed,
    healthy,
    render_text,
)
from codexbridge.host.binaries import CLAUDE_OLDEST, CLAUDE_VERSION, CODEX_OLDEST, CODEX_VERSION
from codexbridge.host.paths import BridgeRecord


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


# --- codex ---------------------------------------------------------------------------------

CODEX_OK = BinaryFacts(path="/opt/codex", source="PATH", version=CODEX_VERSION,
                       listen=ListenSchemes(True, True, True))


def test_codex_all_ok() -> None:
    got = by_name(binaries.codex_rows(CODEX_OK))
    assert [c.status for c in got.values()] == [OK, OK, OK]
    assert "/opt/codex" in got["codex"].finding and "PATH" in got["codex"].finding
    assert got["codex-version"].details == {"version": CODEX_VERSION, "tested": CODEX_VERSION,
                                            "oldest": CODEX_OLDEST, "fit": "tested"}


def test_codex_missing_is_fail_with_the_lookup_message() -> None:
    [row] = binaries.codex_rows(BinaryFacts(error="codex not found: set X"))
    assert (row.name, row.status) == ("codex", FAIL)
    assert "codex not found: set X" in row.finding and row.fix


@pytest.mark.parametrize(("facts", "status", "words"), [
    # inside the supported range, and newer than it (judged by its protocol, never told to
    # downgrade); older than the oldest supported is the one WARN
    ({"version": CODEX_OLDEST}, OK, "within the supported range"),
    ({"version": "0.170.0"}, OK, f"within the supported range {CODEX_OLDEST} – {CODEX_VERSION}"),
    ({"version": "9.0.0"}, OK, "newer than the tested range"),
    ({"version": "0.1.0"}, WARN, f"older than the oldest supported, {CODEX_OLDEST}"),
    ({"version": "0.171.0-alpha.3"}, INFO, "not a release number"),
    ({"version": None}, WARN, "no version number"),
    ({"version": None, "version_error": "no answer within 3 s"}, WARN, "no answer within 3 s"),
])
def test_codex_version_paths(facts: dict[str, Any], status: str, words: str) -> None:
    row = by_name(binaries.codex_rows(replace(CODEX_OK, **facts)))["codex-version"]
    assert row.status == status and words in row.finding


@pytest.mark.parametrize(("listen", "help_error", "status", "words"), [
    (ListenSchemes(True, False, True), None, WARN, "not ws://"),
    (ListenSchemes(False, False, False), None, FAIL, "no --listen option"),
    (ListenSchemes(True, True, False), None, FAIL, "does not list unix://"),
    (None, "exit status 2 error: unrecognized", WARN, "could not run"),
])
def test_listen_scheme_paths(listen: Any, help_error: str | None, status: str,
                             words: str) -> None:
    row = by_name(binaries.codex_rows(replace(CODEX_OK, listen=listen,
                                              help_error=help_error)))["listen-schemes"]
    assert row.status == status and words in row.finding


# --- serve / app-server --------------------------------------------------------------------

RECORD = BridgeRecord("ws://127.0.0.1:8787", pid=4242, app_server_pid=4243, cwd="/p",
                      codex_version=CODEX_VERSION, started_at="2026-01-01T00:00:00+00:00",
                      token_file="/home/u/.codex-bridge/ws-token")
SERVE_OK = ServeFacts("/s", "/s/bridge.json", True, RECORD, True, True)
EP_OK = EndpointFacts(url="ws://127.0.0.1:8787", source="/s/bridge.json",
                      kind=EndpointKind.SERVE, reachable=True,
                      user_agent=f"codexbridge-doctor/{CODEX_VERSION} (Linux)",
                      server_version=CODEX_VERSION, codex_home="/h/.codex")


def serve_rows(serve: ServeFacts, ep: EndpointFacts) -> list[Check]:
    return [codex_side.bridge_row(serve), codex_side.endpoint_row(serve, ep)]


def test_serve_and_app_server_ok() -> None:
    got = by_name(serve_rows(SERVE_OK, EP_OK))
    assert got["bridge-json"].status == OK and "4242" in got["bridge-json"].finding
    assert got["app-server"].status == OK
    assert CODEX_VERSION in got["app-server"].finding
    assert "token_file" not in got["bridge-json"].details["record"]


def test_no_bridge_file_and_nothing_configured() -> None:
    got = by_name(serve_rows(replace(SERVE_OK, exists=False, record=None),
                                        EndpointFacts()))
    assert got["bridge-json"].status == INFO
    assert got["app-server"].status == WARN
    assert "codexbridge serve" in str(got["app-server"].fix)


def test_stale_bridge_file_is_warn_not_fail() -> None:
    serve = replace(SERVE_OK, serve_alive=False, app_server_alive=False)
    ep = EndpointFacts(url=RECORD.url, source="/s/bridge.json",
                       kind=EndpointKind.SERVE, connect_error="connection refused")
    got = by_name(serve_rows(serve, ep))
    assert got["bridge-json"].status == WARN and "stale" in got["bridge-json"].finding
    assert "rm /s/bridge.json" in str(got["bridge-json"].fix)
    assert got["app-server"].status == WARN and "stale" in got["app-server"].finding


def test_bridge_file_odd_records() -> None:
    assert serve_rows(replace(SERVE_OK, record=None), EP_OK)[0].status == WARN
    no_pid = replace(SERVE_OK, record=BridgeRecord("ws://x"))
    assert "no serve pid" in serve_rows(no_pid, EP_OK)[0].finding
    gone = serve_rows(replace(SERVE_OK, app_server_alive=False), EP_OK)[0]
    assert gone.status == WARN and "4243" in gone.finding


@pytest.mark.parametrize(("source", "kind", "fix_words"), [
    ("CODEX_BRIDGE_URL", EndpointKind.ENV, "unset CODEX_BRIDGE_URL"),
    ("--url", EndpointKind.URL, "check the URL"),
    ("/s/bridge.json", EndpointKind.SERVE, "restart"),
])
def test_unreachable_is_fail_naming_the_url(source: str, kind: EndpointKind,
                                            fix_words: str) -> None:
    ep = EndpointFacts(url="ws://127.0.0.1:9", source=source, kind=kind,
                       connect_error="refused")
    row = serve_rows(SERVE_OK, ep)[1]
    assert row.status == FAIL and "ws://127.0.0.1:9" in row.finding and source in row.finding
    assert fix_words in str(row.fix)


def test_unauthorized_points_at_the_token() -> None:
    ep = EndpointFacts(url="ws://127.0.0.1:9", source="--url", kind=EndpointKind.URL,
                       connect_error="server rejected WebSocket connection: HTTP 401")
    row = serve_rows(SERVE_OK, ep)[1]
    assert row.status == FAIL and "CODEX_BRIDGE_TOKEN" in str(row.fix)


def test_server_version_drift_and_unknown() -> None:
    row = serve_rows(SERVE_OK, replace(EP_OK, server_version="0.1.0"))[1]
    assert row.status == WARN and "0.1.0" in row.finding and "older than" in row.finding
    assert row.fix and f"@openai/codex@{CODEX_VERSION}" in row.fix
    row = serve_rows(SERVE_OK, replace(EP_OK, server_version="9.0.0"))[1]
    assert row.status == OK and "newer than the tested range" in row.finding
    row = serve_rows(SERVE_OK, replace(EP_OK, server_version=None))[1]
    assert row.status == OK and "not in the userAgent" in row.finding


def test_token_is_never_in_the_row() -> None:
    row = serve_rows(SERVE_OK, replace(EP_OK, token=True))[1]
    assert row.details["token"] is True
    assert "secret" not in repr(row.as_dict())


# --- threads -------------------------------------------------------------------------------

def thread(tid: str, user: bool = True, name: str | None = None) -> Thread:
    return Thread(id=tid, name=name, cwd="/p", status=ThreadStatus.from_wire({"type": "idle"}),
                  ephemeral=not user, thread_source="user" if user else "thread_title")


def test_threads_paths() -> None:
    base = EndpointFacts(reachable=True, url="ws://127.0.0.1:8787")
    [none] = codex_side.thread_rows(replace(base, threads=(thread("e1", user=False),)))
    assert none.status == WARN and "1 ephemeral" in none.finding
    assert "codex --remote ws://127.0.0.1:8787" in str(none.fix)
    [one] = codex_side.thread_rows(replace(base, threads=(thread("t1", name="work"),)))
    assert one.status == OK and 't1 "work"' in one.finding
    [two] = codex_side.thread_rows(replace(base, threads=(thread("t1"), thread("t2"),
                                                          thread("e1", user=False))))
    assert two.status == INFO and "t1" in two.finding and "t2" in two.finding
    assert "--thread" in str(two.fix) and two.details["ephemeral"] == 1
    [err] = codex_side.thread_rows(replace(base, threads_error="boom"))
    assert err.status == WARN and "boom" in err.finding
    [skip] = codex_side.thread_rows(EndpointFacts())
    assert skip.status == INFO and "not checked" in skip.finding


# --- approval diverters --------------------------------------------------------------------

def layer(hooks: dict[str, Any] | None = None, config: dict[str, Any] | None = None,
          **kw: Any) -> CodexHomeLayer:
    """`config` holds ConfigToml's fields (path, exists, error) and CodexConfig's."""
    config = dict(config or {})
    file = {k: config.pop(k) for k in ("path", "exists", "error") if k in config}
    facts = CodexConfig(**{"approvals_reviewer": "user", "approval_policy": "on-request",
                           **config})
    return CodexHomeLayer(**{
        "home": "/h/.codex", "used_by": ("yours",), "suffix": "", "exists": True,
        "hooks_json": HooksJson(**{"path": "/h/.codex/hooks.json", **(hooks or {})}),
        "config": ConfigToml(**{"path": "/h/.codex/config.toml", "exists": True, **file},
                             facts=facts), **kw})


def test_diverters_all_clear() -> None:
    got = by_name(codex_side.diverter_rows([layer()]))
    assert [c.status for c in got.values()] == [OK, OK, OK]
    assert set(got) == {"codex-hooks", "approvals-reviewer", "approval-policy"}


def test_permission_request_hook_is_warn_without_printing_the_command() -> None:
    hooks = layer({"exists": True, "permission_request_hooks": 2})
    got = by_name(codex_side.diverter_rows([hooks]))
    row = got["codex-hooks"]
    assert row.status == WARN and "2 PermissionRequest hooks" in row.finding
    assert "/h/.codex/hooks.json" in row.finding and "--disable" in str(row.fix)
    inline = by_name(codex_side.diverter_rows([layer(config={"permission_request_hooks": 1})]))
    assert inline["codex-hooks"].status == WARN and "[hooks]" in inline["codex-hooks"].finding


def test_hook_with_hooks_feature_off_is_info() -> None:
    got = by_name(codex_side.diverter_rows([layer({"permission_request_hooks": 1},
                                            {"hooks_enabled": False})]))
    assert got["codex-hooks"].status == INFO and "turns hooks off" in got["codex-hooks"].finding


@pytest.mark.parametrize("reviewer", ["auto_review", "guardian_subagent"])
def test_diverting_reviewer_is_warn(reviewer: str) -> None:
    row = by_name(codex_side.diverter_rows([layer(config={"approvals_reviewer": reviewer})]))[
        "approvals-reviewer"]
    assert row.status == WARN and reviewer in row.finding
    assert "approvals_reviewer=user" in str(row.fix)


def test_profile_key_is_named() -> None:
    row = by_name(codex_side.diverter_rows([layer(config={
        "approvals_reviewer": "auto_review",
        "approvals_reviewer_key": "profiles.fast.approvals_reviewer"})]))["approvals-reviewer"]
    assert "profiles.fast.approvals_reviewer" in row.finding


def test_policy_never_is_info_and_unset_is_ok() -> None:
    got = by_name(codex_side.diverter_rows([layer(config={"approval_policy": "never"})]))
    assert got["approval-policy"].status == INFO and "never asks" in got["approval-policy"].finding
    got = by_name(codex_side.diverter_rows([layer(config={"approval_policy": None})]))
    assert got["approval-policy"].status == OK and "not set" in got["approval-policy"].finding


def test_unreadable_files_and_missing_home() -> None:
    got = by_name(codex_side.diverter_rows([layer({"exists": True, "error": "not valid JSON (x)"},
                                            {"error": "not valid TOML (y)"})]))
    assert got["codex-hooks"].status == WARN and "not checked" in got["codex-hooks"].finding
    assert got["approvals-reviewer"].status == WARN and "not valid TOML" in got[
        "approvals-reviewer"].finding
    assert "approval-policy" not in got
    got = by_name(codex_side.diverter_rows([layer(config={"exists": False})]))
    assert got["approvals-reviewer"].status == OK and "no config.toml" in got[
        "approvals-reviewer"].finding
    [missing] = codex_side.diverter_rows([layer(exists=False)])
    assert missing.status == INFO and "does not exist" in missing.finding


def test_server_layer_gets_its_own_rows() -> None:
    got = by_name(codex_side.diverter_rows([layer(), layer({"permission_request_hooks": 1},
                                                     suffix="@server", home="/srv/.codex")]))
    assert got["codex-hooks"].status == OK and got["codex-hooks@server"].status == WARN
    assert "/srv/.codex" in got["codex-hooks@server"].finding


# --- Claude --------------------------------------------------------------------------------

def test_claude_binary_paths() -> None:
    [missing] = binaries.claude_rows(BinaryFacts(error="Claude Code not found"))
    assert missing.status == INFO and "works without it" in missing.finding
    got = by_name(binaries.claude_rows(BinaryFacts("/c", source="PATH",
                                                   version=CLAUDE_VERSION)))
    assert got["claude"].status == OK and got["claude-version"].status == OK
    newer = by_name(binaries.claude_rows(BinaryFacts("/c", version="9.0.0")))["claude-version"]
    assert newer.status == OK and "claude-compat" in newer.finding
    old = by_name(binaries.claude_rows(BinaryFacts("/c", version="1.0.0")))["claude-version"]
    assert old.status == WARN and CLAUDE_OLDEST in old.finding


def settings(path: str, hooks: list[ClaudeHook], **kw: Any) -> SettingsFile:
    return SettingsFile(path, "project", hooks=tuple(hooks), **kw)


def hook(kind: str, mailbox: str, event: str = "Stop", **kw: Any) -> ClaudeHook:
    return ClaudeHook(event, HookKind(kind), mailbox, kind == "watch", **kw)


def project(directory: str, *files: SettingsFile) -> ProjectFacts:
    return ProjectFacts(directory, files)


def test_project_hook_found_with_mailbox_watcher_and_listener() -> None:
    p = project("/p", settings("/p/.claude/settings.json", [
        hook("hook", "web"), hook("watch", "web"), hook("watch", "web", "SessionStart")]))
    [row] = claude_side.project_rows(p, {"web": {"last_seen": "2026-01-01T00:00:00Z"}})
    assert row.status == OK and '"web"' in row.finding
    assert "asyncRewake watcher on SessionStart, Stop" in row.finding
    assert "2026-01-01T00:00:00Z" in row.finding
    [row] = claude_side.project_rows(
        project("/p", settings("/s", [hook("hook", "x")])), {})
    assert "no session has run it yet" in row.finding


def test_project_without_hook_is_info_and_watcher_only_is_warn() -> None:
    [row] = claude_side.project_rows(project("/p", settings("/p/s.json", [])), {})
    assert row.status == INFO and "install-hook --project /p" in str(row.fix)
    [row] = claude_side.project_rows(project("/p", settings("/p/s.json",
                                                            [hook("watch", "w")])), {})
    assert row.status == WARN and "without a Stop hook" in row.finding


def test_invalid_settings_is_warn_and_its_hooks_do_not_count() -> None:
    p = project("/p", settings("/p/.claude/settings.json", [hook("hook", "a")],
                               error="not valid JSON: Expecting value"))
    got = claude_side.project_rows(p, {})
    assert [c.name for c in got] == ["claude-settings", "claude-hook"]
    assert got[0].status == WARN and "silently under -p" in got[0].finding
    assert got[1].status == INFO


def test_missing_interpreter_is_warn() -> None:
    p = project("/p", settings("/s", [hook("hook", "a", interpreter="/gone/python",
                                           interpreter_ok=False)]))
    got = claude_side.project_rows(p, {})
    assert got[0].status == WARN and "/gone/python" in got[0].finding
    assert got[1].status == OK


# --- mailboxes and the chain ---------------------------------------------------------------

def box(name: str, pending: int = 0, rejected: int = 0, listener: Any = None,
        in_flight: int = 0, reach: Any = None) -> Mailbox:
    return Mailbox(name, pending, rejected, in_flight, listener,
                   f"/i/{name}.rejected.jsonl", reach)


LISTENER = {"cwd": "/p", "session_id": "s-1", "last_seen": "2026-01-01T00:00:00Z"}


def test_mailbox_paths() -> None:
    got = by_name(claude_side.mailbox_rows(MailboxFacts("/i", (
        box("web", 2, listener=LISTENER, in_flight=1),
        box("wbe", 1),
        box("idle"),
        box("bad", rejected=3, listener=LISTENER),
        box("broken", listener={"error": "unreadable session file"}),
    ))))
    assert got["mailbox:web"].status == OK
    assert "2 pending" in got["mailbox:web"].finding and "s-1" in got["mailbox:web"].finding
    assert "1 being delivered" in got["mailbox:web"].finding
    typo = got["mailbox:wbe"]
    assert typo.status == WARN and "typo" in typo.finding and 'did you mean "web"' in typo.finding
    assert got["mailbox:idle"].status == INFO
    bad = got["mailbox:bad"]
    assert bad.status == WARN and "3 rejected lines" in bad.finding
    assert "/i/bad.rejected.jsonl" in str(bad.fix)
    assert got["mailbox:broken"].status == WARN


def test_mail_for_a_hooked_name_nobody_ran_yet_is_info_and_a_hook_name_is_a_guess() -> None:
    boxes = MailboxFacts("/i", (box("web", 1), box("wbe", 1)))
    got = by_name(claude_side.mailbox_rows(boxes, hooked=["web"]))
    assert got["mailbox:web"].status == INFO and "first stop" in got["mailbox:web"].finding
    assert got["mailbox:wbe"].status == WARN
    assert 'did you mean "web"' in got["mailbox:wbe"].finding


def test_mailbox_none_and_error() -> None:
    [row] = claude_side.mailbox_rows(MailboxFacts("/i"))
    assert row.status == INFO and "no mailboxes" in row.finding
    [row] = claude_side.mailbox_rows(MailboxFacts("/i", error="Permission denied"))
    assert row.status == WARN and "Permission denied" in row.finding


def test_chain_paths() -> None:
    [ok] = claude_side.chain_rows({}, {})
    assert ok.status == OK and "at most 3" in ok.finding and "of 8" in ok.finding
    [clamped] = claude_side.chain_rows({"CODEX_BRIDGE_MAX_CHAIN": "10",
                                 "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "4"}, {})
    assert clamped.status == WARN and "using 3" in clamped.finding
    [from_settings] = claude_side.chain_rows({"CODEX_BRIDGE_MAX_CHAIN": "2"},
                                      {"CODEX_BRIDGE_MAX_CHAIN": "9"})
    assert from_settings.status == WARN and from_settings.details["from_settings"] == [
        "CODEX_BRIDGE_MAX_CHAIN"]
    [junk] = claude_side.chain_rows({"CODEX_BRIDGE_MAX_CHAIN": "lots", "OTHER": "x"}, {})
    assert junk.status == WARN and "not a number" in junk.finding
    assert "OTHER" not in junk.details["env"]


# --- report --------------------------------------------------------------------------------

def test_verdict_json_and_text() -> None:
    checks = [Check("a", OK, "fine"), Check("b", WARN, "hmm", "do x"), Check("c", INFO, "fyi")]
    assert healthy(checks)
    data = as_json(checks)
    assert data["ok"] is True and data["counts"] == {"FAIL": 0, "WARN": 1, "OK": 1, "INFO": 1}
    assert data["checks"][1] == {"name": "b", "status": "WARN", "finding": "hmm",
                                 "fix": "do x", "details": {}}
    text = render_text(checks)
    assert "WARN  b  hmm" in text and "fix: do x" in text and "nothing blocks" in text
    checks.append(Check("d", FAIL, "broken"))
    assert not healthy(checks) and as_json(checks)["ok"] is False
    assert "FAIL rows block" in render_text(checks)


def test_check_failed_names_the_error() -> None:
    row = check_failed("threads", RuntimeError("kaput"))
    assert row.status == WARN and "RuntimeError: kaput" in row.finding


def test_mailbox_reach_live_next_stop_and_protocol_drift() -> None:
    live = box("web", listener=LISTENER,
               reach={"live": True, "session": "idle", "reason": None, "drift": False})
    later = box("api", listener=LISTENER,
                reach={"live": False, "session": None, "drift": False,
                       "reason": 'the user\'s setting crossSessionInbound="hold" wins'})
    drift = box("ops", listener=LISTENER,
                reach={"live": False, "session": None, "drift": True,
                       "reason": "Claude Code's cross-session protocol changed (peerProtocol 2)"})
    by = {c.name: c for c in claude_side.mailbox_rows(MailboxFacts("/i", (live, later, drift)))}
    assert by["mailbox:web"].status == OK and "goes live" in by["mailbox:web"].finding
    assert by["mailbox:api"].status == OK and "crossSessionInbound" in by["mailbox:api"].finding
    assert by["mailbox:ops"].status == WARN and "peerProtocol 2" in by["mailbox:ops"].finding
    assert by["mailbox:ops"].fix and "Stop hook" in by["mailbox:ops"].fix


def test_the_plugin_counts_as_the_hook() -> None:
    [row] = claude_side.project_rows(project("/p"), {}, plugin_enabled=True)
    assert row.name == "claude-hook" and row.status == OK and "plugin" in row.finding


def test_a_bad_url_is_a_fail_naming_it_not_no_server() -> None:
    row = codex_side.endpoint_row(ServeFacts(), EndpointFacts(
        bad_url="--url 'ws://[::1' is not an app-server URL"))
    assert row.status == FAIL and "ws://[::1" in row.finding
    assert row.fix and "--url" in row.fix


def test_codex_mcp_env_rows() -> None:
    """A token variable codex's config names for an MCP server (`setup codex --url`):
    FAIL when the app-server in force runs without it — codex then offers the model none
    of that server's tools (docs/fitting-in.md, "Two machines")."""
    from codexbridge.doctor.codex_side import McpEnvFacts, mcp_env_rows

    need = (("codexbridge", "CODEX_BRIDGE_MCP_TOKEN"),)
    assert mcp_env_rows(McpEnvFacts()) == []
    [ok] = mcp_env_rows(McpEnvFacts(need, "/h", "serve", 42,
                                    frozenset({"CODEX_BRIDGE_MCP_TOKEN", "PATH"})))
    assert ok.status == "OK" and "`codexbridge serve`'s app-server (pid 42) has it" in \
        ok.finding
    [missing] = mcp_env_rows(McpEnvFacts(need, "/h", "serve", 42, frozenset({"PATH"})))
    assert missing.status == "FAIL" and "was started without it" in missing.finding
    assert missing.fix is not None and "restart serve" in missing.fix
    [daemon] = mcp_env_rows(McpEnvFacts(need, "/h", "daemon", 7, frozenset()))
    assert daemon.status == "FAIL" and daemon.fix is not None and \
        "codex app-server daemon stop" in daemon.fix
    [unknown] = mcp_env_rows(McpEnvFacts(need, "/h", None, None, None, frozenset()))
    assert unknown.status == "WARN" and "not set in this shell" in unknown.finding
    [shell] = mcp_env_rows(McpEnvFacts(need, "/h", None, None, None,
                                       frozenset({"CODEX_BRIDGE_MCP_TOKEN"})))
    assert shell.status == "INFO"


def test_state_rows() -> None:
    assert state_rows(StateFacts("/", "CODEX_BRIDGE_HOME resolves to /"))[0].status == "FAIL"
    loose = state_rows(StateFacts("/h", exists=True, loose=("/h/x (0o644)",)))[0]
    assert loose.status == "WARN" and loose.fix == "chmod -R go-rwx /h"
    assert state_rows(StateFacts("/h", exists=True))[0].status == "OK"

"""Realistic codex 0.169.0 payloads, shaped after what the reference recorded (§5-§9).

Shared by the unit tests (models, threads, schema) and the in-memory app-server, so a
drift in one place shows up everywhere. Ids look like real UUIDv7s; paths are fake.
"""

from __future__ import annotations

import copy
from typing import Any

WORKDIR = "/home/dev/project"
CODEX_HOME = "/home/dev/.codex"
USER_THREAD = "0199a5c2-8a31-7d52-9f0e-5b2d4c6e7f80"
TITLE_THREAD = "0199a5c2-8b00-7abc-8def-0123456789ab"
OTHER_THREAD = "0199a5c2-8c00-7abc-8def-fedcba987654"
TURN_1 = "0199a5c2-9000-7000-8000-000000000001"
TURN_2 = "0199a5c2-9000-7000-8000-000000000002"

INITIALIZE_RESULT: dict[str, Any] = {
    "userAgent": "codexbridge/0.169.0 (Debian 12.0.0; x86_64) xterm (codexbridge; 0.1.0)",
    "codexHome": CODEX_HOME, "platformFamily": "unix", "platformOs": "linux"}


def thread(thread_id: str = USER_THREAD, *, name: str | None = "Mock title",
           thread_source: str | None = "user", ephemeral: bool = False,
           status: dict[str, Any] | None = None, cwd: str = WORKDIR,
           preview: str = "first turn", updated_at: int = 1796018498) -> dict[str, Any]:
    """A Thread as thread/read returns it, every field seen in §6 included."""
    return {
        "id": thread_id, "sessionId": thread_id, "forkedFromId": None,
        "attachedToThreadId": None, "parentThreadId": None,
        "environments": [{"environmentId": "local", "cwd": cwd,
                          "runtimeWorkspaceRoots": [cwd]}],
        "extra": None, "preview": preview, "ephemeral": ephemeral, "section": None,
        "sectionEnteredAt": None, "projectId": None, "historyMode": "paginated",
        "modelProvider": "mock", "model": "mock-model", "reasoningEffort": None,
        "createdAt": 1796018400, "updatedAt": updated_at, "recencyAt": updated_at,
        "status": status if status is not None else {"type": "idle"},
        "path": f"{CODEX_HOME}/sessions/2026/11/30/rollout-2026-11-30T05-46-10-{thread_id}.jsonl",
        "cwd": cwd, "cliVersion": "0.169.0", "originator": "codexbridge", "source": "vscode",
        "canAcceptDirectInput": True, "threadSource": thread_source, "agentNickname": None,
        "agentRole": None, "gitInfo": None, "name": name, "daybreakEnabled": False,
        "turns": []}


def title_thread() -> dict[str, Any]:
    """The TUI's ephemeral title helper (protocol-notes "Which thread")."""
    return thread(TITLE_THREAD, name=None, thread_source="thread_title", ephemeral=True,
                  preview="")


def user_message(text: str, item_id: str = "item-u1", *,
                 client_id: str | None = None) -> dict[str, Any]:
    """A userMessage item; `client_id` is the `clientUserMessageId` it was sent with."""
    item: dict[str, Any] = {"type": "userMessage", "id": item_id,
                            "content": [{"type": "text", "text": text, "text_elements": []}]}
    if client_id is not None:
        item["clientId"] = client_id
    return item


def agent_message(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {"type": "agentMessage", "id": item_id, "text": text, "phase": None,
            "memoryCitation": None}


def command_item(command: str = "/bin/bash -lc 'touch f'") -> dict[str, Any]:
    return {"type": "commandExecution", "id": "call_3", "command": command, "cwd": WORKDIR,
            "processId": None, "source": "agent", "status": "completed",
            "commandActions": [{"type": "unknown", "command": "touch f"}],
            "aggregatedOutput": "", "exitCode": 0, "durationMs": 12}


def turn(turn_id: str = TURN_1, *, status: str = "completed",
         items: list[dict[str, Any]] | None = None, error: dict[str, Any] | None = None,
         started_at: int = 1796018498, completed_at: int | None = 1796018498,
         items_view: str = "summary") -> dict[str, Any]:
    return {"id": turn_id, "rootTurnId": turn_id, "status": status, "itemsView": items_view,
            "error": error, "startedAt": started_at, "completedAt": completed_at,
            "durationMs": 120 if completed_at else None,
            "items": copy.deepcopy(items) if items is not None else []}


def item_entry(turn_id: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"turnId": turn_id, "item": copy.deepcopy(item), "startedAtMs": 1796018498000,
            "completedAtMs": 1796018498120}


def resume_result(thread_obj: dict[str, Any]) -> dict[str, Any]:
    """thread/resume {excludeTurns:true}, experimental extras included."""
    return {"thread": thread_obj, "model": "mock-model", "modelProvider": "mock",
            "serviceTier": None, "disabledPluginIds": [], "cwd": thread_obj["cwd"],
            "runtimeWorkspaceRoots": [thread_obj["cwd"]], "instructionSources": [],
            "approvalPolicy": "on-request", "approvalsReviewer": "user",
            "sandbox": {"type": "readOnly", "networkAccess": False},
            "activePermissionProfile": None, "reasoningEffort": None,
            "collaborationMode": None, "multiAgentMode": None, "initialTurnsPage": None,
            "turnsBackwardsCursor": '"opaque-t"', "itemsBackwardsCursor": '"opaque-i"'}


def server_request_params(thread_id: str = USER_THREAD, turn_id: str = TURN_1,
                          cwd: str = "/w") -> dict[str, dict[str, Any]]:
    """Params for every server request codex can send (ServerRequest.json, plus the
    experimental `currentTime/read` that 0.169.0 still sends), each valid against its
    `*Params.json` (§9-10)."""
    T, U, W = thread_id, turn_id, cwd
    return {
        "item/commandExecution/requestApproval": {
            "kind": "command", "threadId": T, "turnId": U, "itemId": "call_3",
            "startedAtMs": 1796017237946, "environmentId": "local",
            "reason": "Mock model wants to run: touch /w/approved_file",
            "command": "/bin/bash -lc 'touch /w/approved_file'", "cwd": W,
            "commandActions": [{"type": "unknown", "command": "touch /w/approved_file"}],
            "proposedExecpolicyAmendment": ["touch", "/w/approved_file"],
            # experimental; arrives without being asked for (protocol-notes "Handshake")
            "availableDecisions": ["accept", "cancel"]},
        "item/fileChange/requestApproval": {
            "threadId": T, "turnId": U, "itemId": "patch_1", "startedAtMs": 1796017237946,
            "reason": "write the fix", "grantRoot": None},
        "item/permissions/requestApproval": {
            "threadId": T, "turnId": U, "itemId": "perm_1", "startedAtMs": 1796017237946,
            "cwd": W, "reason": "needs the network and /data",
            "permissions": {"network": {"enabled": True},
                            "fileSystem": {"write": ["/data"], "read": None}}},
        "item/tool/requestUserInput": {
            "threadId": T, "turnId": U, "itemId": "ask_1", "isBlocking": True,
            "questions": [{"id": "q1", "header": "Colour", "question": "Which colour?",
                           "options": [{"label": "red", "description": "warm"},
                                       {"label": "blue", "description": "cool"}]},
                          {"id": "q2", "header": "Name", "question": "Your name?"}]},
        "mcpServer/elicitation/request": {
            "threadId": T, "turnId": U, "serverName": "docs", "mode": "form",
            "message": "Pick a project",
            "requestedSchema": {"type": "object",
                                "properties": {"project": {"type": "string", "title": "Project"}},
                                "required": ["project"]}},
        "item/tool/call": {
            "threadId": T, "turnId": U, "callId": "call_9", "tool": "lookup",
            "arguments": {"q": "x"}},
        "account/chatgptAuthTokens/refresh": {"reason": "unauthorized", "previousAccountId": None},
        "attestation/generate": {},
        "applyPatchApproval": {
            "conversationId": T, "callId": "c1", "reason": None, "grantRoot": None,
            "fileChanges": {"/w/a.txt": {"type": "add", "content": "hi\n"},
                            "/w/b.txt": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-a\n+b\n",
                                         "move_path": None}}},
        "execCommandApproval": {
            "conversationId": T, "callId": "c2", "command": ["touch", "/w/f"], "cwd": W,
            "parsedCmd": [{"type": "unknown", "cmd": "touch /w/f"}], "reason": "why",
            "approvalId": None},
        "currentTime/read": {"threadId": T},
    }

"""What codexbridge uses of codex's app-server protocol — the tables the judge reads.

    METHODS   kind → method → what stops working when codex breaks it (the doctor
              says "thread/queue/add is gone: talk send cannot queue turns")
    READS     definition → the fields codexbridge reads from it (`.get("…")` on a
              protocol dict, or an attribute of a generated result in protocol/generated/results.py)
    SENDS     definition → the optional fields codexbridge sends (a required one is
              always sent: the schema says so)
    VALUES    definition → the enum values / union members codexbridge sends or
              branches on (a union member is named by its `type` value, or by the one
              key of an externally tagged member: `{"denied": {…}}` is "denied")

`doctor/compat.py` walks only what these name: a field nobody reads may change freely.
Keep them honest: tests/unit/test_compat_uses.py checks that every method here is one
the code refers to (and the other way round), and that every field and value named
here appears in codexbridge's own (non-generated) source.
"""

from __future__ import annotations

from typing import NamedTuple

from ..protocol.approvals import LEGACY_SERVER_REQUESTS, TABLE
from .surface import CLIENT_REQUEST, NOTIFICATION, SERVER_REQUEST


class Uses(NamedTuple):
    methods: dict[str, dict[str, str]]
    reads: dict[str, frozenset[str]]
    sends: dict[str, frozenset[str]]
    values: dict[str, frozenset[str]]
    # server requests answered with a JSON-RPC error only: their result schema is unused
    no_result: frozenset[str]
    # server requests an older codex of the supported range sends and the pin lacks
    legacy: frozenset[str]


_APPROVAL = "is not answered in a shape codex accepts (codex may wait for the answer)"

CLIENT_REQUESTS = {
    "initialize": "codexbridge cannot connect to codex at all",
    "thread/loaded/list": "talk cannot find the threads the TUI has loaded",
    "thread/list": "talk send cannot name the project's last thread once codex unloaded "
                   "it (the TUI was quit)",
    "thread/read": "talk cannot read a thread's status (choosing a thread, waiting until it "
                   "is idle)",
    "thread/resume": "talk cannot join a thread to follow its turns",
    "thread/start": "doctor --deep and the demo cannot start a thread",
    "thread/name/set": "talk name cannot name a thread",
    "thread/turns/list": "talk read, finding the running turn and recovering a lost reply "
                         "break",
    "thread/items/list": "talk read, recovering a lost reply and handoff cannot read a "
                         "thread's items",
    "thread/queue/add": "talk send cannot queue turns",
    "thread/queue/delete": "talk cannot take back a queued message",
    "thread/queue/list": "a queued message is not started when the thread is idle",
    "thread/queue/start": "a queued message is not started when the thread is idle",
    "thread/inject_items": "handoff cannot give codex the other agent's conversation",
    "turn/start": "talk say cannot start a turn",
    "turn/steer": "talk steer (and say into a running turn) cannot add to a turn",
    "turn/interrupt": "talk interrupt cannot stop a turn",
}
NOTIFICATIONS = {
    "thread/started": "talk waiting for a thread to appear does not notice it",
    "thread/status/changed": "talk cannot tell when a thread becomes idle",
    "turn/completed": "talk cannot tell when a turn ends (say waits until its timeout)",
    "item/started": "talk cannot find the turn a queued message started",
    "item/completed": "talk cannot read codex's reply",
    "item/agentMessage/delta": "talk cannot stream codex's reply as it is written",
    "serverRequest/resolved": "an approval answered in the TUI is not noticed",
    "error": "codex's turn errors are not shown",
}
SERVER_REQUESTS = {
    "item/commandExecution/requestApproval": f"a command approval {_APPROVAL}",
    "item/fileChange/requestApproval": f"a file-change approval {_APPROVAL}",
    "item/permissions/requestApproval": f"a permissions request {_APPROVAL}",
    "applyPatchApproval": f"a (legacy) patch approval {_APPROVAL}",
    "execCommandApproval": f"a (legacy) command approval {_APPROVAL}",
    "item/tool/requestUserInput": f"a question to the user {_APPROVAL}",
    "mcpServer/elicitation/request": f"an MCP tool approval or elicitation {_APPROVAL}",
    "item/tool/call": f"a dynamic tool call {_APPROVAL}",
    "account/chatgptAuthTokens/refresh": "a token refresh is not refused cleanly",
    "attestation/generate": "an attestation request is not refused cleanly",
}

def _fields(*names: str) -> frozenset[str]:
    return frozenset(names)


# The turn tracker routes every notification and server request by `threadId` (legacy
# v1 approvals: `conversationId`) and `turnId` (or `turn.id`) — protocol/turn.py; an
# approval is described to a person by `command`, `reason` or `message`
# (approvals.describe). Each entry names the ones its definition has.
READS = {
    "InitializeResponse": _fields("userAgent", "codexHome"),
    # notifications
    "AgentMessageDeltaNotification": _fields("threadId", "turnId", "itemId", "delta"),
    "ItemStartedNotification": _fields("threadId", "turnId", "item"),
    "ItemCompletedNotification": _fields("threadId", "turnId", "item"),
    "TurnCompletedNotification": _fields("threadId", "turn"),
    "ErrorNotification": _fields("threadId", "turnId", "error", "willRetry"),
    "ServerRequestResolvedNotification": _fields("threadId", "requestId"),
    "ThreadStatusChangedNotification": _fields("threadId", "status"),
    # server requests (their params)
    "CommandExecutionRequestApprovalParams": _fields("threadId", "turnId", "command",
                                                     "reason"),
    "FileChangeRequestApprovalParams": _fields("threadId", "turnId", "reason"),
    "PermissionsRequestApprovalParams": _fields("threadId", "turnId", "reason",
                                                "permissions"),
    "RequestPermissionProfile": _fields("fileSystem", "network"),
    "ApplyPatchApprovalParams": _fields("conversationId", "reason"),
    "ExecCommandApprovalParams": _fields("conversationId", "command", "reason"),
    "ToolRequestUserInputParams": _fields("threadId", "turnId", "questions"),
    "ToolRequestUserInputQuestion": _fields("id", "options"),
    "ToolRequestUserInputOption": _fields("label"),
    "McpServerElicitationRequestParams": _fields("threadId", "turnId", "message", "_meta"),
    "DynamicToolCallParams": _fields("threadId", "turnId"),
    "ChatgptAuthTokensRefreshParams": _fields("reason"),
    # results (generated records in protocol/generated/results.py, and plain dicts)
    "ThreadReadResponse": _fields("thread"),
    "ThreadStartResponse": _fields("thread"),
    "ThreadLoadedListResponse": _fields("data", "nextCursor"),
    "ThreadTurnsListResponse": _fields("data", "nextCursor"),
    "ThreadItemsListResponse": _fields("data", "nextCursor"),
    "ThreadItemEntry": _fields("turnId", "item", "completedAtMs"),
    "ThreadQueueAddResponse": _fields("queuedSubmission"),
    "ThreadQueueListResponse": _fields("data", "nextCursor"),
    "QueuedSubmission": _fields("id"),
    "ThreadQueueDeleteResponse": _fields("deleted"),
    "TurnStartResponse": _fields("turn"),
    "TurnSteerResponse": _fields("turnId"),
    # the shapes inside them
    "Thread": _fields("id", "name", "cwd", "status", "ephemeral", "threadSource", "preview",
                      "updatedAt", "turns"),
    "ThreadStatus": _fields("type", "activeFlags"),
    "Turn": _fields("id", "status", "error", "items", "startedAt"),
    "TurnError": _fields("message"),
    "ThreadItem": _fields("type", "id", "text", "clientId", "content", "completedAtMs",
                          "command", "status", "exitCode", "changes"),
    "UserInput": _fields("type", "text"),
    "FileUpdateChange": _fields("path"),
}

SENDS = {
    "InitializeParams": _fields("clientInfo", "capabilities"),
    "ClientInfo": _fields("name", "title", "version"),
    "InitializeCapabilities": _fields("experimentalApi"),
    "ThreadLoadedListParams": _fields("cursor"),
    "ThreadResumeParams": _fields("excludeTurns"),
    "ThreadStartParams": _fields("cwd", "threadSource"),
    "ThreadTurnsListParams": _fields("limit", "sortDirection", "itemsView", "cursor"),
    "ThreadItemsListParams": _fields("turnId", "limit", "sortDirection", "cursor"),
    "ThreadQueueAddParams": _fields("clientUserMessageId"),
    "ThreadQueueListParams": _fields("limit"),
    "TurnStartParams": _fields("cwd", "clientUserMessageId"),
    "TurnSteerParams": _fields("clientUserMessageId"),
    "UserInput": _fields("text_elements"),
    # our answers to server requests (protocol/approvals.py)
    "PermissionsRequestApprovalResponse": _fields("scope"),
    "GrantedPermissionProfile": _fields("fileSystem", "network"),
    "McpServerElicitationRequestResponse": _fields("content"),
}

VALUES = {
    # read: what the code branches on
    "TurnStatus": _fields("completed", "interrupted", "failed", "inProgress"),
    "ThreadStatus": _fields("idle", "active", "notLoaded"),
    "ThreadItem": _fields("userMessage", "agentMessage", "commandExecution", "fileChange"),
    # sent (UserInput is read too: a userMessage's content)
    "UserInput": _fields("text"),
    "SortDirection": _fields("asc", "desc"),
    "TurnItemsView": _fields("notLoaded"),
    "CommandExecutionApprovalDecision": _fields("accept", "decline"),
    "FileChangeApprovalDecision": _fields("accept", "decline"),
    "ReviewDecision": _fields("approved", "denied"),
    "McpServerElicitationAction": _fields("accept", "decline"),
    "PermissionGrantScope": _fields("turn"),
    "DynamicToolCallOutputContentItem": _fields("inputText"),
}


def _no_result() -> frozenset[str]:
    return frozenset(r.method for r in TABLE.values()
                     if r.fail_closed is None and r.accept is None)


USES = Uses(
    methods={CLIENT_REQUEST: CLIENT_REQUESTS, NOTIFICATION: NOTIFICATIONS,
             SERVER_REQUEST: SERVER_REQUESTS},
    reads=READS, sends=SENDS, values=VALUES, no_result=_no_result(),
    legacy=frozenset(LEGACY_SERVER_REQUESTS))


def used_methods(uses: Uses = USES) -> dict[str, frozenset[str]]:
    """kind → the methods codexbridge uses (what `surface.extract` cuts out)."""
    return {kind: frozenset(methods) for kind, methods in uses.methods.items()}


"""Protocol drift: does the installed codex speak the protocol codexbridge was built on?

`schemas/experimental` is what codex 0.169.0 generated (`scripts/update-schemas`). The
doctor has the installed codex generate its schema again into a temp dir and compares,
for every method codexbridge uses, the schema of what goes over the wire — the request's
params, a notification's params, a server request's params and the answer we give —
with every definition it refers to. A newer codex that renamed a field therefore turns
into a WARN naming the method and the definitions that changed, not a mystery.

Pure: two loaders (file name → parsed JSON) in, differences out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

Loader = Callable[[str], dict[str, Any] | None]

# What codexbridge sends or handles (checked against the code by tests/unit/test_drift.py).
CLIENT_REQUESTS = frozenset({
    "initialize", "thread/list", "thread/loaded/list", "thread/read", "thread/resume",
    "thread/start", "thread/name/set", "thread/turns/list", "thread/items/list",
    "thread/queue/add", "thread/queue/delete", "thread/queue/list", "thread/queue/start",
    "thread/inject_items", "turn/start", "turn/steer", "turn/interrupt"})
NOTIFICATIONS = frozenset({
    "thread/started", "thread/status/changed", "turn/started", "turn/completed",
    "item/started", "item/completed", "item/agentMessage/delta", "serverRequest/resolved",
    "thread/queue/changed", "mcpServer/startupStatus/updated", "error"})
# Every server request: the approval table answers each one (fail-closed when unknown).
SERVER_REQUESTS = frozenset({
    "item/commandExecution/requestApproval", "item/fileChange/requestApproval",
    "item/permissions/requestApproval", "mcpServer/elicitation/request",
    "currentTime/read", "item/tool/requestUserInput", "item/tool/call",
    "account/chatgptAuthTokens/refresh", "attestation/generate", "applyPatchApproval",
    "execCommandApproval"})


class Drift(NamedTuple):
    kind: str  # client request | notification | server request
    method: str
    what: str  # "missing" (codex no longer has it) or the definitions that changed


def _branch(bundle: dict[str, Any] | None, method: str) -> dict[str, Any] | None:
    for branch in (bundle or {}).get("oneOf") or []:
        enum = ((branch.get("properties") or {}).get("method") or {}).get("enum") or []
        if method in enum:
            return dict(branch)
    return None


def _closure(node: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    """Every definition `node` refers to, transitively: name → its schema."""
    found: dict[str, Any] = {}
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/definitions/"):
                name = ref.split("/")[-1]
                if name not in found:
                    found[name] = definitions.get(name)
                    stack.append(found[name])
            stack.extend(v for k, v in item.items() if k != "$ref")
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _canon(value: Any) -> str:
    # descriptions and titles are prose, not protocol
    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("description", "title")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return json.dumps(strip(value), sort_keys=True)


def _compare_branch(kind: str, method: str, ours: dict[str, Any] | None,
                    theirs: dict[str, Any] | None) -> Drift | None:
    mine, fresh = _branch(ours, method), _branch(theirs, method)
    if mine is None:
        return None  # not in our bundle either: nothing to compare (a test keeps it honest)
    if fresh is None:
        return Drift(kind, method, "missing")
    defs_a = (ours or {}).get("definitions") or {}
    defs_b = (theirs or {}).get("definitions") or {}
    a, b = _closure(mine, defs_a), _closure(fresh, defs_b)
    changed = sorted(n for n in set(a) | set(b) if _canon(a.get(n)) != _canon(b.get(n)))
    if _canon({k: v for k, v in mine.items()}) != _canon({k: v for k, v in fresh.items()}):
        changed.insert(0, "(the message itself)")
    return Drift(kind, method, ", ".join(changed)) if changed else None


def _answer(method: str, ours: Loader, theirs: Loader,
            responses: dict[str, str]) -> Drift | None:
    """The schema of the answer we give to a server request."""
    name = responses.get(method)
    if not name:
        return None
    a, b = ours(name), theirs(name)
    if a is None:
        return None
    if b is None:
        return Drift("answer", method, f"missing ({name})")
    return None if _canon(a) == _canon(b) else Drift("answer", method, name)


def compare(ours: Loader, theirs: Loader, responses: dict[str, str],
            used: Iterable[tuple[str, str, frozenset[str]]] | None = None) -> list[Drift]:
    """Differences between our bundle and the fresh one for the methods we use.
    `responses`: server request method → its answer's schema file (SchemaSet knows)."""
    plan = list(used) if used is not None else [
        ("client request", "ClientRequest.json", CLIENT_REQUESTS),
        ("notification", "ServerNotification.json", NOTIFICATIONS),
        ("server request", "ServerRequest.json", SERVER_REQUESTS)]
    out: list[Drift] = []
    for kind, file, methods in plan:
        a, b = ours(file), theirs(file)
        for method in sorted(methods):
            d = _compare_branch(kind, method, a, b)
            if d is not None:
                out.append(d)
            if kind == "server request":
                ans = _answer(method, ours, theirs, responses)
                if ans is not None:
                    out.append(ans)
    return out

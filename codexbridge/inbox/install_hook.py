"""Merging codexbridge's hooks into a project's `.claude/settings.json`.

The merge is pure (`merge_hooks`: settings dict in, settings dict + change list out);
`install` does the file work: refuse unreadable settings, back the file up, write it
atomically, or only show the diff.

Our hooks are recognised by their command (`… codexbridge inbox hook|watch … --as NAME`),
so re-running replaces our entry for the same mailbox in place (say, a new interpreter
path) and touches nothing else: every other hook, matcher and setting is kept.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..host.jsonfile import loads_json
from ..host.private import write_atomic
from .hook import WATCH_TIMEOUT as DEFAULT_TIMEOUT

# Claude kills a hook after its `timeout` (seconds); the watcher must be allowed to
# outlive its own --timeout so it exits on its own terms.
WATCH_TIMEOUT_MARGIN = 60


def python_invocation(python: str | None = None) -> str:
    """The current interpreter, absolute, running codexbridge as a module.

    `-P` (3.11+) keeps the hooked project's own directory off `sys.path`, so a folder
    there named `codexbridge` cannot shadow ours.
    """
    exe = os.path.abspath(python or sys.executable)  # not resolved: keep the venv path
    safe_path = " -P" if sys.version_info >= (3, 11) else ""
    return f"{shlex.quote(exe)}{safe_path} -m codexbridge"


def hook_command(name: str, python: str | None = None) -> str:
    return f"{python_invocation(python)} inbox hook --as {shlex.quote(name)}"


def watch_command(name: str, timeout: float = DEFAULT_TIMEOUT,
                  python: str | None = None) -> str:
    return (f"{python_invocation(python)} inbox watch --as {shlex.quote(name)} "
            f"--timeout {timeout:g}")


def ours(command: str) -> tuple[str, str] | None:
    """("hook"|"watch", mailbox) if `command` runs a codexbridge inbox hook, else None."""
    try:
        # punctuation_chars: `--as bridge; exit 0` must give "bridge", not "bridge;".
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    if not any(w == "codexbridge" or w.endswith("/codexbridge") for w in words):
        return None
    for i in range(len(words) - 1):
        if words[i] == "inbox" and words[i + 1] in ("hook", "watch"):
            kind = words[i + 1]
            name = "default"
            rest = words[i + 2:]
            for j, word in enumerate(rest):
                if word == "--as" and j + 1 < len(rest):
                    name = rest[j + 1]
                elif word.startswith("--as="):
                    name = word[len("--as="):]
            return kind, name
    return None


def wanted_hooks(name: str, rewake: bool, python: str | None = None,
                 watch_timeout: float = DEFAULT_TIMEOUT) -> dict[str, list[dict[str, Any]]]:
    """Event → the hook entries codexbridge needs there."""
    stop: dict[str, Any] = {"type": "command", "command": hook_command(name, python)}
    # The same hook at SessionStart only records the session as this mailbox's
    # listener, so a `talk send` in the session's very first turn already finds the
    # mailbox its reply goes to.
    wanted: dict[str, list[dict[str, Any]]] = {"Stop": [stop], "SessionStart": [dict(stop)]}
    if rewake:
        watcher = {"type": "command", "command": watch_command(name, watch_timeout, python),
                   "asyncRewake": True,
                   "timeout": int(watch_timeout) + WATCH_TIMEOUT_MARGIN}
        wanted["Stop"].append(dict(watcher))
        wanted["SessionStart"].append(dict(watcher))
    return wanted


def merge_hooks(settings: dict[str, Any], wanted: dict[str, list[dict[str, Any]]]
                ) -> tuple[dict[str, Any], list[str]]:
    """`settings` with our hooks in it, and a sentence per change (empty: no change)."""
    merged = copy.deepcopy(settings)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError('"hooks" in the settings file is not a JSON object; '
                         "fix it by hand first (nothing was changed)")
    changes: list[str] = []
    for event, entries in wanted.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UsageError(f'"hooks.{event}" in the settings file is not a list; '
                             "fix it by hand first (nothing was changed)")
        to_add: list[dict[str, Any]] = []
        for entry in entries:
            key = ours(entry["command"])
            found = False
            for group in groups:
                if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                    continue
                for i, existing in enumerate(group["hooks"]):
                    if (isinstance(existing, dict)
                            and isinstance(existing.get("command"), str)
                            and ours(existing["command"]) == key):
                        found = True
                        if existing != entry:
                            group["hooks"][i] = entry
                            changes.append(f"{event}: updated {key[0] if key else ''} "
                                           f"hook: {entry['command']}")
            if not found:
                to_add.append(entry)
        if to_add:
            groups.append({"hooks": to_add})
            for entry in to_add:
                kind = "watcher (asyncRewake)" if entry.get("asyncRewake") else "Stop hook"
                changes.append(f"{event}: added {kind}: {entry['command']}")
    return merged, changes


def render(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


@dataclass
class InstallResult:
    settings_path: str
    changes: list[str]
    diff: str
    backup: str | None = None
    written: bool = False
    commands: dict[str, list[str]] = field(default_factory=dict)  # event → our commands


def install(project: str, name: str, *, rewake: bool = False, dry_run: bool = False,
            python: str | None = None, watch_timeout: float = DEFAULT_TIMEOUT
            ) -> InstallResult:
    """Merge our hooks into PROJECT/.claude/settings.json (see module docstring)."""
    if not os.path.isdir(project):
        raise UsageError(f"--project {project!r} is not a directory")
    path = os.path.join(os.path.abspath(project), ".claude", "settings.json")
    old_text = ""
    settings: dict[str, Any] = {}
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as fh:
                old_text = fh.read()
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
        if old_text.strip():
            try:
                loaded = loads_json(old_text)
            except ValueError as exc:
                raise UsageError(f"{path} is not valid JSON ({exc}); fix it first "
                                 "(nothing was changed)") from exc
            if not isinstance(loaded, dict):
                raise UsageError(f"{path} does not hold a JSON object; fix it first "
                                 "(nothing was changed)")
            settings = loaded
    wanted = wanted_hooks(name, rewake, python, watch_timeout)
    merged, changes = merge_hooks(settings, wanted)
    new_text = render(merged) if changes else old_text
    diff = "".join(difflib.unified_diff(
        old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
        fromfile=f"{path} (before)", tofile=f"{path} (after)"))
    result = InstallResult(path, changes, diff,
                           commands={event: [e["command"] for e in entries]
                                     for event, entries in wanted.items()})
    if dry_run or not changes:
        return result
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        stamp = time.strftime("%Y%m%dT%H%M%S")
        backup = f"{path}.bak-{stamp}"
        n = 1
        while os.path.exists(backup):
            n += 1
            backup = f"{path}.bak-{stamp}-{n}"
        with open(backup, "w", encoding="utf-8") as fh:
            fh.write(old_text)
        result.backup = backup
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
    write_atomic(path, new_text.encode("utf-8"), mode=mode, durable=True)
    result.written = True
    return result

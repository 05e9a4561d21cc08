"""`codexbridge setup claude` and `codexbridge install-hook`: everything codexbridge writes
into Claude Code's settings.json, through one editor (`jsonedit.py` for the keys, the
style kept; `files.py` for backup and atomic write).

The Claude side is the plugin shipped in this package (`codexbridge/claude_plugin/`):
its hooks, MCP server, skill and commands. Enabling it takes (measured on 2.1.332,
docs/fitting-in.md, "The Claude side"):

* the user's settings: `extraKnownMarketplaces.codexbridge` naming the plugin's
  directory — a marketplace declared only in a project's settings is not loaded (a
  project cannot bring plugins of its own), one in the user's settings is, with no
  `claude plugin install`;
* `enabledPlugins["codexbridge@codexbridge"] = true` in the chosen scope: the user's
  settings (`--user`, every project) or the project's `.claude/settings.json`;
* `env.CODEX_BRIDGE_BIN` in the user's settings: the installed command the plugin runs
  (a path on this machine, so never in a project file that may be shared);
* the read-only tools pre-approved in the chosen scope (`permissions.allow`); sending
  to Codex still asks, unless you allow it yourself.

`install-hook` is the older way, without the plugin: the mailbox hook commands merged
into one project's `.claude/settings.json` (`merge_hooks`, pure; `install_hooks` does the
file work). Our hooks are recognised by their command (`messages/listeners.py`, `ours`), so
re-running replaces our entry for the same mailbox in place (say, a new interpreter
path) and touches nothing else: every other hook, matcher and setting is kept.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..claude.plugin import (
    BIN_ENV,
    MARKETPLACE,
    PLUGIN,
    PLUGIN_ID,
    ClaudeSettings,
    HookHandler,
    claude_config_dir,
)
from ..errors import UsageError
from ..jsontypes import JsonRecord, arr, obj, objs
from ..messages.listeners import WATCH_TIMEOUT, hook_command, ours, watch_command
from . import files, jsonedit, ledger
from .files import FileChange
from .jsonedit import Entry
from .ledger import Report
from .where import (
    Scope,
    claude_settings,
    claude_user_settings,
    installed_command,
    ledger_path,
    plugin_dir,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject, JsonValue

SERVER = "codex"  # the plugin's MCP server: tools are mcp__plugin_codexbridge_codex__<tool>
TOOL_PREFIX = f"mcp__plugin_{PLUGIN}_{SERVER}__"
READ_ONLY_TOOLS = ("codex_threads_list", "codex_thread_read", "codex_delivery_status",
                   "bridge_status", "bridge_output_read")


def user_entries(marketplace_dir: str, codexbridge_bin: str | None) -> list[Entry]:
    """What the user's settings need whatever the scope."""
    entries = [Entry(("extraKnownMarketplaces", MARKETPLACE),
                     {"source": {"source": "directory", "path": marketplace_dir}})]
    if codexbridge_bin:
        entries.append(Entry(("env", BIN_ENV), codexbridge_bin))
    return entries


def scope_entries() -> list[Entry]:
    """What the chosen scope's settings need: the plugin on, its read tools allowed."""
    entries = [Entry(("enabledPlugins", PLUGIN_ID), True)]
    entries += [Entry(("permissions", "allow"), TOOL_PREFIX + tool, in_list=True)
                for tool in READ_ONLY_TOOLS]
    return entries


def plan(user_file: str, scope_file: str, marketplace_dir: str,
         codexbridge_bin: str | None) -> dict[str, list[Entry]]:
    """settings file → the entries it needs (one file when the scope is the user)."""
    files: dict[str, list[Entry]] = {user_file: user_entries(marketplace_dir,
                                                             codexbridge_bin)}
    files.setdefault(scope_file, []).extend(scope_entries())
    return files


# Containers setup may create, for a `--remove` that has no record of what it made.
KNOWN_CONTAINERS: tuple[tuple[str, ...], ...] = (
    ("extraKnownMarketplaces",), ("enabledPlugins",), ("env",), ("permissions", "allow"),
    ("permissions",))


# --- planning a settings file's change, with the record ----------------------------------

class ScopeRecord(JsonRecord):
    """What the ledger keeps of one scope's change to a settings file (`plan_json_add`
    writes it): the entries it added, and the containers it created (key paths)."""

    entries: tuple[JsonObject, ...] = ()
    created: JsonValue = None

    @property
    def added(self) -> list[Entry]:
        return [Entry.from_json(e) for e in self.entries]

    @property
    def containers(self) -> list[tuple[str, ...]]:
        return [tuple(str(k) for k in arr(p)) for p in arr(self.created)]


def _union(*groups: list[Entry]) -> list[Entry]:
    out: list[Entry] = []
    for group in groups:
        out += [x for x in group if x not in out]
    return out


def plan_json_add(book: ledger.Ledger, scope: Scope, path: str, wanted: list[Entry]
                  ) -> tuple[FileChange, JsonObject]:
    """The change for one settings file, and what to record for this scope."""
    before = files.read_text(path)
    doc = jsonedit.parse(before or "", path)
    recorded = [e for rec in (book.scope(path, scope.key), *book.others(path, scope.key))
                if rec for e in ScopeRecord.read(rec).added]
    # Our own earlier value at a key we now want elsewhere (a moved install): replace it.
    stale = [e for e in recorded if not e.in_list and any(
        w.path == e.path and not w.in_list and w.value != e.value for w in wanted)]
    doc, replaced = jsonedit.remove(doc, stale, [])
    added = jsonedit.add(doc, wanted, path)
    # Present already because another of our scopes put it there: this scope needs it too.
    shared = [w for w in wanted if w in recorded and w not in added.entries]
    lines = [f"added {e.describe()}" for e in added.entries]
    lines = [f"replaced {e.describe()}" for e in replaced] + lines
    after = jsonedit.patch(before or "", added.doc) if (added.entries or replaced) else before
    mine = ScopeRecord.read(book.scope(path, scope.key) or {})
    keep = [e for e in mine.added if e not in replaced]
    created = mine.containers
    created += [p for p in added.created if p not in created]
    record: JsonObject = {
        "entries": [e.as_json() for e in _union(keep, added.entries, shared)],
        "created": [[*p] for p in created]}
    return FileChange(path, before, after, lines), record


def plan_json_remove(book: ledger.Ledger, scope: Scope, path: str, wanted: list[Entry]
                     ) -> FileChange | None:
    """Take this scope's entries out of `path`: the recorded ones, or — with no record
    of this scope (a state home deleted, a setup from before the record) — the entries
    setup writes, whatever value our keys hold now (an install that moved). None when
    the file does not exist. Nothing of ours left in it afterwards: no backup is kept
    (the caller deletes them all)."""
    current = files.read_text(path)
    if current is None:
        return None
    restore, original = book.restorable(path, scope.key, current)
    if restore:
        return FileChange(path, current, original,
                          ["restored the bytes it had before setup" if original is not None
                           else "deleted (setup created it)"], keep_backup=False)
    mine = book.scope(path, scope.key)
    doc = jsonedit.parse(current, path)
    others = [e for o in book.others(path, scope.key) for e in ScopeRecord.read(o).added]
    if mine is None:
        entries = [e for e in unmistakable(doc, wanted) if not _held(e, others)]
        created = list(KNOWN_CONTAINERS)
    else:
        recorded = ScopeRecord.read(mine)
        entries = [e for e in recorded.added if e not in others]
        created = recorded.containers
    new, removed = jsonedit.remove(doc, entries, created)
    after = jsonedit.patch(current, new) if new != doc else current
    return FileChange(path, current, after, [f"removed {e.describe()}" for e in removed],
                      keep_backup=not book.last_in(path, scope.key))


def unmistakable(doc: JsonObject, wanted: list[Entry]) -> list[Entry]:
    """The entries setup writes, each key with the value it holds in `doc` now: keys
    only codexbridge uses (`extraKnownMarketplaces.codexbridge`, `env.CODEX_BRIDGE_BIN`,
    `enabledPlugins["codexbridge@codexbridge"]`) are ours whatever they hold; a list item
    is ours only as setup writes it."""
    found: list[Entry] = []
    for entry in wanted:
        if entry.in_list:
            found.append(entry)
            continue
        node: JsonValue = doc
        for key in entry.path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            found.append(Entry(entry.path, node))
    return found


def _held(entry: Entry, others: list[Entry]) -> bool:
    """Whether another recorded scope needs this key (or this list item)."""
    return any(o.path == entry.path and o.in_list == entry.in_list
               and (not o.in_list or o.value == entry.value) for o in others)


def registry_cleanup(report: Report, book: ledger.Ledger, scope: Scope, user_file: str,
                     env: Mapping[str, str]) -> None:
    """When the last Claude scope goes and the user's settings no longer declare our
    marketplace: Claude Code's own registry entry for it (the `codexbridge` key of
    plugins/known_marketplaces.json, written at its first start; the rest of that file
    is Claude's and kept) and the plugin's data directory it made
    (plugins/data/codexbridge-codexbridge). Neither is read or removed through a
    symlink."""
    if book.agent_elsewhere(scope.key):
        return
    planned = {c.path: c for c in report.changes}
    text = planned[user_file].after if user_file in planned else files.read_text(user_file)
    try:
        declared = MARKETPLACE in obj(jsonedit.parse(text or "", user_file).get(
            "extraKnownMarketplaces"))
    except UsageError:
        declared = True  # unreadable: leave Claude's registry as it is
    if declared:
        return
    plugins = os.path.join(claude_config_dir(env), "plugins")
    known = os.path.join(plugins, "known_marketplaces.json")
    try:
        current = files.read_text(known, follow=False)
        doc = jsonedit.parse(current or "", known)
    except UsageError as exc:
        report.notes.append(f"left {known} as it is ({exc.message}): take its "
                            f'"{MARKETPLACE}" entry out by hand (or `claude plugin '
                            f"marketplace remove {MARKETPLACE}`)")
    else:
        if current is not None and MARKETPLACE in doc:
            rest = {k: v for k, v in doc.items() if k != MARKETPLACE}
            report.changes.append(FileChange(
                known, current, jsonedit.patch(current, rest),
                [f"removed Claude Code's registry entry for the {MARKETPLACE} marketplace"],
                keep_backup=False))
    data = os.path.join(plugins, "data", f"{PLUGIN}-{MARKETPLACE}")
    if os.path.isdir(data) and not os.path.islink(data):
        report.leftovers.append(data)


# --- setup claude ------------------------------------------------------------------------

def _legacy_hooks(text: str | None) -> list[str]:
    """Our own older hooks (`install-hook`) in a settings file: with the plugin on too,
    every stop would run two codexbridge hooks on two mailboxes."""
    if not text:
        return []
    try:
        settings = ClaudeSettings.read(jsonedit.parse(text, ""))
    except UsageError:
        return []
    return [f"{event}: {command}" for event in settings.hooks
            for command in settings.commands(event) if command and ours(command)]


def setup_claude(scope: Scope, *, dry_run: bool = False, remove: bool = False,
                 env: Mapping[str, str] | None = None) -> Report:
    env = os.environ if env is None else env
    report = Report(scope, remove, dry_run)
    user_file, scope_file = claude_user_settings(env), claude_settings(scope, env)
    book = ledger.load(ledger_path())
    binary = installed_command()
    wanted = plan(user_file, scope_file, plugin_dir(), binary)
    records: ledger.Records = {}
    if remove:
        scoped = ledger.scoped_files(book, scope.key)
        for path in scoped or list(wanted):
            change = plan_json_remove(book, scope, path, wanted.get(path, []))
            if change is not None:
                report.changes.append(change)
                records[path] = ("json", None)
            if book.last_in(path, scope.key):
                report.leftovers += files.backups_of(path)
        if not scoped:
            report.notes.append("no record of an earlier `setup claude` for this scope: "
                                "took out the entries setup writes, whatever our keys "
                                "hold")
        registry_cleanup(report, book, scope, user_file, env)
    else:
        if binary is None:
            report.notes.append("no installed `codexbridge` command beside this python or "
                                "on PATH: the plugin will look on PATH and in "
                                "~/.local/bin when it runs (pipx install codexbridge)")
        for path, entries in wanted.items():
            change, record = plan_json_add(book, scope, path, entries)
            report.changes.append(change)
            records[path] = ("json", record)
        for change in report.changes:
            for hook in _legacy_hooks(change.after):
                report.notes.append(f"{change.path} still has an older codexbridge hook "
                                    f"({hook}); with the plugin it would run twice — take "
                                    "it out by hand")
        report.notes.append("restart Claude Code sessions; the plugin's tools are "
                            f"{TOOL_PREFIX}<tool> (the read-only ones are allowed, "
                            "codex_message_send asks)")
    ledger.commit(report, records, scope.key)
    return report


# --- install-hook ------------------------------------------------------------------------

# Claude kills a hook after its `timeout` (seconds); the watcher must be allowed to
# outlive its own --timeout so it exits on its own terms.
WATCH_TIMEOUT_MARGIN = 60


def wanted_hooks(name: str, rewake: bool, python: str | None = None,
                 watch_timeout: float = WATCH_TIMEOUT) -> dict[str, list[JsonObject]]:
    """Event → the hook entries codexbridge needs there."""
    stop: JsonObject = {"type": "command", "command": hook_command(name, python)}
    # The same hook at SessionStart only records the session as this mailbox's
    # listener, so a `talk send` in the session's very first turn already finds the
    # mailbox its reply goes to.
    wanted: dict[str, list[JsonObject]] = {"Stop": [stop], "SessionStart": [dict(stop)]}
    if rewake:
        watcher: JsonObject = {
            "type": "command", "command": watch_command(name, watch_timeout, python),
            "asyncRewake": True, "timeout": int(watch_timeout) + WATCH_TIMEOUT_MARGIN}
        wanted["Stop"].append(dict(watcher))
        wanted["SessionStart"].append(dict(watcher))
    return wanted


def _not_shaped(what: str, shape: str) -> UsageError:
    return UsageError(f'"{what}" in the settings file is not a {shape}; fix it by hand '
                      "first (nothing was changed)")


def _replace_ours(groups: list[JsonObject], entry: JsonObject, event: str,
                  changes: list[str]) -> bool:
    """Put `entry` where our hook for the same mailbox already is; False if it is not."""
    key = ours(str(entry["command"]))
    found = False
    for group in groups:
        hooks = group.get("hooks")
        for i, existing in enumerate(hooks if isinstance(hooks, list) else []):
            command = HookHandler.read(obj(existing)).command
            if command is not None and ours(command) == key:
                found = True
                if existing != entry:
                    arr(hooks)[i] = entry
                    changes.append(f"{event}: updated {key[0] if key else ''} "
                                   f"hook: {entry['command']}")
    return found


def merge_hooks(settings: JsonObject, wanted: dict[str, list[JsonObject]]
                ) -> tuple[JsonObject, list[str]]:
    """`settings` with our hooks in it, and a sentence per change (empty: no change)."""
    merged = copy.deepcopy(settings)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise _not_shaped("hooks", "JSON object")
    changes: list[str] = []
    for event, entries in wanted.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise _not_shaped(f"hooks.{event}", "list")
        to_add = [e for e in entries if not _replace_ours(objs(groups), e, event, changes)]
        if to_add:
            groups.append({"hooks": [*to_add]})
            for entry in to_add:
                kind = "watcher (asyncRewake)" if entry.get("asyncRewake") else "Stop hook"
                changes.append(f"{event}: added {kind}: {entry['command']}")
    return merged, changes


@dataclass
class InstallResult:
    settings_path: str
    changes: list[str]
    diff: str
    backup: str | None = None
    written: bool = False
    commands: dict[str, list[str]] = field(default_factory=dict)  # event → our commands


def install_hooks(project: str, name: str, *, rewake: bool = False, dry_run: bool = False,
                  python: str | None = None, watch_timeout: float = WATCH_TIMEOUT
                  ) -> InstallResult:
    """Merge our hooks into PROJECT/.claude/settings.json, the rest of the file kept as
    it is (style included); the old file backed up first."""
    if not os.path.isdir(project):
        raise UsageError(f"--project {project!r} is not a directory")
    path = os.path.join(os.path.abspath(project), ".claude", "settings.json")
    before = files.read_text(path)
    wanted = wanted_hooks(name, rewake, python, watch_timeout)
    merged, changes = merge_hooks(jsonedit.parse(before or "", path), wanted)
    after = jsonedit.patch(before or "", merged) if changes else before
    change = FileChange(path, before, after, changes)
    result = InstallResult(path, changes, change.diff(),
                           commands={event: [str(e["command"]) for e in entries]
                                     for event, entries in wanted.items()})
    if not dry_run:
        files.apply(change)
        result.backup, result.written = change.backup, change.written
    return result

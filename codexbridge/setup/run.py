"""`codexbridge setup claude|codex`: plan every file's change, then carry them out and
record them; `--remove` undoes what the record says this scope did.

A plan reads and checks every file first (malformed → UsageError, nothing written);
`dry_run` stops there. The pure edits are in `jsonedit.py` / `tomledit.py`, what goes in
them in `claude.py` / `codex.py`, the file work in `files.py`, the record in
`ledger.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import files, jsonedit, ledger
from .files import FileChange
from .jsonedit import Entry
from .where import Scope, ledger_path


@dataclass
class Report:
    scope: Scope
    removing: bool
    dry_run: bool
    changes: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.changes)

    def as_json(self) -> dict[str, Any]:
        return {"ok": True, "agent": self.scope.agent, "scope": self.scope.label,
                "remove": self.removing, "dry_run": self.dry_run, "changed": self.changed,
                "files": [c.as_json() for c in self.changes], "notes": self.notes}


def _entries(raw: list[dict[str, Any]]) -> list[Entry]:
    return [Entry.from_json(e) for e in raw]


def _paths(raw: list[list[str]]) -> list[tuple[str, ...]]:
    return [tuple(p) for p in raw]


# --- JSON settings (Claude) --------------------------------------------------------------

def plan_json_add(book: ledger.Ledger, scope: Scope, path: str, wanted: list[Entry]
                  ) -> tuple[FileChange, dict[str, Any]]:
    """The change for one settings file, and what to record for this scope."""
    before = files.read_text(path)
    doc = jsonedit.parse(before or "", path)
    style = jsonedit.style_of(before or "")
    recorded = [e for rec in (book.scope(path, scope.key), *book.others(path, scope.key))
                if rec for e in _entries(rec.get("entries") or [])]
    # Our own earlier value at a key we now want elsewhere (a moved install): replace it.
    stale = [e for e in recorded if not e.in_list and any(
        w.path == e.path and not w.in_list and w.value != e.value for w in wanted)]
    doc, replaced = jsonedit.remove(doc, stale, [])
    added = jsonedit.add(doc, wanted, path)
    # Present already because another of our scopes put it there: this scope needs it too.
    shared = [w for w in wanted if w in recorded and w not in added.entries]
    lines = [f"added {e.describe()}" for e in added.entries]
    lines = [f"replaced {e.describe()}" for e in replaced] + lines
    after = jsonedit.render(added.doc, style) if (added.entries or replaced) else before
    mine = book.scope(path, scope.key) or {}
    keep = [e for e in _entries(mine.get("entries") or []) if e not in replaced]
    record = {"entries": [e.as_json() for e in _union(keep, added.entries, shared)],
              "created": [list(p) for p in _union(_paths(mine.get("created") or []),
                                                  added.created)]}
    return FileChange(path, before, after, lines), record


def _union(*groups: list[Any]) -> list[Any]:
    out: list[Any] = []
    for group in groups:
        out += [x for x in group if x not in out]
    return out


def plan_json_remove(book: ledger.Ledger, scope: Scope, path: str,
                     fallback: list[Entry], fallback_created: list[tuple[str, ...]]
                     ) -> FileChange | None:
    """Take this scope's entries out of `path` (all of them, or `fallback` when there is
    no record); None when there is nothing to do."""
    current = files.read_text(path)
    if current is None:
        return None
    rec = book.files.get(path)
    mine = book.scope(path, scope.key)
    if rec is not None and mine is not None and len(rec.scopes) == 1 \
            and ledger.digest(current) == rec.written:
        original = files.read_backup(rec.original_backup) if rec.existed else None
        if not rec.existed or original is not None:
            return FileChange(path, current, original,
                              ["restored the bytes it had before setup" if rec.existed
                               else "deleted (setup created it)"], keep_backup=False)
    doc = jsonedit.parse(current, path)
    if mine is None:
        entries, created = fallback, fallback_created
    else:
        others = [e for o in book.others(path, scope.key)
                  for e in _entries(o.get("entries") or [])]
        entries = [e for e in _entries(mine.get("entries") or []) if e not in others]
        created = _paths(mine.get("created") or [])
    new, removed = jsonedit.remove(doc, entries, created)
    after = jsonedit.render(new, jsonedit.style_of(current)) if new != doc else current
    return FileChange(path, current, after, [f"removed {e.describe()}" for e in removed])


# --- carrying out ------------------------------------------------------------------------

def commit(report: Report, records: dict[str, tuple[str, dict[str, Any] | None]],
           key: str) -> None:
    """Write every change and update the record under the scope `key`. `records`: path
    → (kind, this scope's record, or None to drop the scope)."""
    book = ledger.load(ledger_path())
    for change in report.changes:
        dirs = files.missing_dirs(change.path) if change.after is not None else []
        files.apply(change)
        kind, scope_record = records.get(change.path, ("json", None))
        rec = book.files.get(change.path)
        if scope_record is not None:
            if rec is None:
                if not change.changed:
                    continue  # all there already, none of it ours: nothing to record
                rec = ledger.FileRecord(kind, change.before is not None, change.backup,
                                        "", dirs)
                book.files[change.path] = rec
            rec.scopes[key] = scope_record
            if change.changed:
                # Only what we wrote: a file edited since must not pass for untouched.
                rec.written = ledger.digest(change.after or "")
        elif rec is not None:
            rec.scopes.pop(key, None)
            if change.after is None:
                files.remove_empty_dirs(rec.created_dirs)
            if not rec.scopes:
                del book.files[change.path]
            elif change.changed:
                rec.written = ledger.digest(change.after or "")
    ledger.save(ledger_path(), book)


def scoped_files(book: ledger.Ledger, key: str) -> list[str]:
    return [p for p, r in book.files.items() if key in r.scopes]

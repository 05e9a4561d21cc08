"""What `codexbridge setup` put where, so `--remove` takes out exactly that: the record,
its load/save, and carrying out a whole report while keeping the record true.

`<CODEX_BRIDGE_HOME>/setup.json` holds, per file setup changed: whether the file existed
before setup first wrote it, the backup of those original bytes, the hash of what setup
last wrote, and per scope (`claude:user`, `claude:project:<dir>`, `codex:user`, …) what
that scope added. Two scopes can need one thing (the marketplace entry in the user's
Claude settings serves `--user` and every `--project`): it goes only when the last of
them is removed. A file nobody touched since setup's last write gets its original bytes
back on the last removal; otherwise only our entries are taken out of it.

A `Report` is every file's planned change (read and checked before the first write:
malformed → UsageError, nothing written; `dry_run` stops there); `commit` writes them
and records them under the scope, then deletes what the report lists as `leftovers`
(the backups of a file nothing of ours is left in, Claude Code's data directory for
the plugin): last, once every write has gone through, since a deletion cannot be put
back. The record itself is deleted once it holds nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field

from ..errors import StateError, StateWriteError, UsageError
from ..host.jsonfile import loads_json, nofollow
from ..host.private import write_failure, write_private
from ..jsontypes import obj
from . import files
from .files import FileChange
from .where import Scope, ledger_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..jsontypes import JsonObject

VERSION = 1


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass
class FileRecord:
    kind: str  # "json" | "toml"
    existed: bool  # before setup first wrote it
    original_backup: str | None  # its bytes then (None: it did not exist)
    written: str  # sha256 of what setup last wrote
    created_dirs: list[str] = field(default_factory=list)  # made for the file, outermost first
    scopes: dict[str, JsonObject] = field(default_factory=dict)

    def as_json(self) -> JsonObject:
        return {"kind": self.kind, "existed": self.existed,
                "original_backup": self.original_backup, "written": self.written,
                "created_dirs": list(self.created_dirs), "scopes": dict(self.scopes)}

    @staticmethod
    def from_json(data: JsonObject) -> FileRecord:
        backup, dirs = data.get("original_backup"), data.get("created_dirs") or []
        scopes = data.get("scopes") or {}
        if not isinstance(scopes, dict) or not isinstance(dirs, list):
            raise ValueError("a file record holds a value of the wrong type")
        # Checked, not trusted: an int backup path would open() a file descriptor, and a
        # scope that is not an object would fail half-way through a removal.
        if not (backup is None or isinstance(backup, str)) \
                or not all(isinstance(d, str) for d in dirs) \
                or not all(isinstance(v, dict) for v in scopes.values()):
            raise ValueError("a file record holds a value of the wrong type")
        return FileRecord(str(data["kind"]), bool(data["existed"]), backup,
                          str(data["written"]), [str(d) for d in dirs],
                          {k: obj(v) for k, v in scopes.items()})


@dataclass
class Ledger:
    files: dict[str, FileRecord] = field(default_factory=dict)

    def as_json(self) -> JsonObject:
        return {"version": VERSION, "files": {p: r.as_json() for p, r in self.files.items()}}

    @staticmethod
    def from_json(data: object, where: str) -> Ledger:
        try:
            records = {str(p): FileRecord.from_json(_object(r))
                       for p, r in _object(_object(data)["files"]).items()}
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise UsageError(f"{where} is damaged ({type(exc).__name__}: {exc}); move it "
                             "aside to let setup start a new record (nothing was changed)"
                             ) from exc
        return Ledger(records)

    def scope(self, path: str, scope: str) -> JsonObject | None:
        record = self.files.get(path)
        return record.scopes.get(scope) if record else None

    def others(self, path: str, scope: str) -> list[JsonObject]:
        record = self.files.get(path)
        return [v for k, v in record.scopes.items() if k != scope] if record else []

    def last_in(self, path: str, scope: str) -> bool:
        """Whether nothing of ours stays in `path` once `scope` is taken out of it."""
        record = self.files.get(path)
        return record is None or not set(record.scopes) - {scope}

    def restorable(self, path: str, scope: str, current: str) -> tuple[bool, str | None]:
        """Whether taking `scope` out of `path` gives the file back as it was before setup
        (the last scope in it, and nobody changed it since setup last wrote it), and those
        bytes (None: setup created the file)."""
        record = self.files.get(path)
        if record is None or scope not in record.scopes or not self.last_in(path, scope) \
                or digest(current) != record.written:
            return False, None
        if not record.existed:
            return True, None
        original = files.read_backup(record.original_backup)
        return original is not None, original

    def agent_elsewhere(self, scope: str) -> bool:
        """Whether another scope of the same agent (`claude:…`) is recorded anywhere."""
        agent = scope.split(":", 1)[0] + ":"
        return any(k != scope and k.startswith(agent)
                   for r in self.files.values() for k in r.scopes)


def _object(value: object) -> JsonObject:
    if not isinstance(value, dict):
        raise TypeError(f"{type(value).__name__} where an object belongs")
    return value


def load(path: str) -> Ledger:
    try:
        with open(path, encoding="utf-8", opener=nofollow) as fh:
            text = fh.read()
    except FileNotFoundError:
        return Ledger()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 ({exc.reason}); move it aside (nothing was "
                         "changed)") from exc
    try:
        data = loads_json(text)
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc}); move it aside (nothing was "
                         "changed)") from exc
    return Ledger.from_json(data, path)


def save(path: str, ledger: Ledger) -> None:
    """Write the record; an empty one is deleted (nothing of setup's is left anywhere)."""
    if not ledger.files:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    text = json.dumps(ledger.as_json(), indent=2, sort_keys=True) + "\n"
    write_private(path, text.encode("utf-8"), durable=True)


# --- carrying out a report ---------------------------------------------------------------

@dataclass
class Report:
    scope: Scope
    removing: bool
    dry_run: bool
    changes: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)  # deleted after the writes

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.changes) or bool(self.leftovers)

    def as_json(self) -> JsonObject:
        return {"ok": True, "agent": self.scope.agent, "scope": self.scope.label,
                "remove": self.removing, "dry_run": self.dry_run, "changed": self.changed,
                "files": [c.as_json() for c in self.changes],
                "deleted": list(self.leftovers), "notes": list(self.notes)}


# path → (kind, this scope's record, or None to drop the scope)
Records = dict[str, tuple[str, "JsonObject | None"]]


def commit(report: Report, records: Records, key: str) -> None:
    """Write every change and update the record under the scope `key` (nothing at all
    for a dry run). All or nothing: when a write fails (a read-only HOME, a full disk,
    the state home unwritable for the record), what was already written is put back as
    it was and the error says so — setup never leaves settings half-changed."""
    if report.dry_run:
        return
    book = load(ledger_path())
    done: list[tuple[FileChange, list[str]]] = []
    try:
        for change in report.changes:
            dirs = files.missing_dirs(change.path) if change.after is not None else []
            files.apply(change)
            done.append((change, dirs))
            _record(book, change, records, key, dirs)
        save(ledger_path(), book)
    except OSError as exc:
        left = files.undo(done)
        raise _unfinished(exc, left) from None
    for path in files.delete_leftovers(report.leftovers):
        report.leftovers.remove(path)
        report.notes.append(f"could not delete {path}; delete it by hand")


def _record(book: Ledger, change: FileChange, records: Records, key: str,
            dirs: list[str]) -> None:
    kind, scope_record = records.get(change.path, ("json", None))
    rec = book.files.get(change.path)
    if scope_record is not None:
        if rec is None:
            if not change.changed:
                return  # all there already, none of it ours: nothing to record
            rec = FileRecord(kind, change.before is not None, change.backup, "", dirs)
            book.files[change.path] = rec
        rec.scopes[key] = scope_record
        if change.changed:
            # Only what we wrote: a file edited since must not pass for untouched.
            rec.written = digest(change.after or "")
    elif rec is not None:
        rec.scopes.pop(key, None)
        if change.after is None:
            files.remove_empty_dirs(rec.created_dirs)
        if not rec.scopes:
            del book.files[change.path]
        elif change.changed:
            rec.written = digest(change.after or "")


def _unfinished(exc: OSError, left: list[str]) -> OSError:
    """The failed write as the user's environment (StateWriteError, exit 73), saying
    that nothing was changed — or exactly what could not be put back."""
    found = write_failure(exc, exc.filename or ledger_path())
    if isinstance(found, StateError):
        message, details = found.message, found.details
    else:
        where = f" {exc.filename}" if exc.filename else ""
        message, details = f"cannot write{where}: {exc.strerror or exc}", {
            "path": exc.filename or ""}
    done = (f"; could not put back {', '.join(left)} (its backup is beside it)" if left
            else "; setup changed nothing (every file is as it was)")
    return StateWriteError(message + done, details=details)


def scoped_files(book: Ledger, key: str) -> list[str]:
    return [p for p, r in book.files.items() if key in r.scopes]

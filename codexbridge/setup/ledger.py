"""What `codexbridge setup` put where, so `--remove` takes out exactly that. Pure record
plus its load/save.

`<CODEX_BRIDGE_HOME>/setup.json` holds, per file setup changed: whether the file existed
before setup first wrote it, the backup of those original bytes, the hash of what setup
last wrote, and per scope (`claude:user`, `claude:project:<dir>`, `codex:user`, …) what
that scope added. Two scopes can need one thing (the marketplace entry in the user's
Claude settings serves `--user` and every `--project`): it goes only when the last of
them is removed. A file nobody touched since setup's last write gets its original bytes
back on the last removal; otherwise only our entries are taken out of it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..host.jsonfile import loads_json

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
    scopes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "existed": self.existed,
                "original_backup": self.original_backup, "written": self.written,
                "created_dirs": self.created_dirs, "scopes": self.scopes}

    @staticmethod
    def from_json(data: dict[str, Any]) -> FileRecord:
        backup, dirs = data.get("original_backup"), list(data.get("created_dirs") or [])
        scopes = dict(data.get("scopes") or {})
        # Checked, not trusted: an int backup path would open() a file descriptor, and a
        # scope that is not an object would fail half-way through a removal.
        if not (backup is None or isinstance(backup, str)) \
                or not all(isinstance(d, str) for d in dirs) \
                or not all(isinstance(v, dict) for v in scopes.values()):
            raise ValueError("a file record holds a value of the wrong type")
        return FileRecord(str(data["kind"]), bool(data["existed"]), backup,
                          str(data["written"]), dirs, scopes)


@dataclass
class Ledger:
    files: dict[str, FileRecord] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"version": VERSION, "files": {p: r.as_json() for p, r in self.files.items()}}

    @staticmethod
    def from_json(data: Any, where: str) -> Ledger:
        try:
            files = {str(p): FileRecord.from_json(r) for p, r in data["files"].items()}
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise UsageError(f"{where} is damaged ({type(exc).__name__}: {exc}); move it "
                             "aside to let setup start a new record (nothing was changed)"
                             ) from exc
        return Ledger(files)

    def scope(self, path: str, scope: str) -> dict[str, Any] | None:
        record = self.files.get(path)
        return record.scopes.get(scope) if record else None

    def others(self, path: str, scope: str) -> list[dict[str, Any]]:
        record = self.files.get(path)
        return [v for k, v in record.scopes.items() if k != scope] if record else []


def load(path: str) -> Ledger:
    try:
        with open(path, encoding="utf-8") as fh:
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
    from ..host.private import write_private

    text = json.dumps(ledger.as_json(), indent=2, sort_keys=True) + "\n"
    write_private(path, text.encode("utf-8"), durable=True)

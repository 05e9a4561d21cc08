"""Large outputs kept on disk and read back in pages (`bridge_output_read`).

Layout, under `<state dir>/artifacts/<role>/` (dirs 0700, files 0600):

    <id>.txt    the bytes (UTF-8 text), written to a temp file and renamed
    <id>.json   metadata, written last — an artifact exists once this file does:
                {id, role, kind, createdAt, expiresAt, size, sha256, key, meta}

* **Ids** are `art_` + 24 url-safe characters from `secrets` (144 bits): unguessable.
* **Ownership** is structural: each role reads only its own directory, and the metadata
  names the role as well. Another role's id reads as "not found".
* **Cursors** are opaque: `c1.` + base64url(offset as 8 bytes + HMAC-SHA256 prefix) with a
  per-artifact key kept in the metadata, over `"<id>:<offset>"`. A cursor cannot be
  forged, edited, or replayed against another artifact.
* **Limits**: a TTL (expired artifacts are deleted on the next create or read) and a
  byte cap on the role's directory; the oldest artifacts are evicted to make room. An
  artifact larger than the whole cap is refused (StoreFull).
* **Pages** end on a UTF-8 character boundary, so every page is valid text and the
  pages, joined, are the stored bytes exactly.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from ..errors import ArtifactNotFoundError, InvalidCursorError
from ..host.jsonfile import loads_json
from ..host.paths import ensure_private_dir, write_private
from ..jsontypes import obj, opt_float, opt_int

ID_PREFIX = "art_"
_ID_RE = re.compile(r"^art_[A-Za-z0-9_-]{24}$")
CURSOR_PREFIX = "c1."
_MAC_BYTES = 16
MIN_PAGE = 64  # a page must hold at least one whole character


def _missing(artifact_id: str, reason: str) -> ArtifactNotFoundError:
    return ArtifactNotFoundError(f"artifact {artifact_id!r} {reason}",
                                 details={"artifactId": artifact_id, "reason": reason})


class StoreFull(Exception):
    pass


class PublicArtifact(TypedDict):
    """What a tool result shows of an artifact (never its key)."""
    artifactId: str
    kind: str
    totalBytes: int
    sha256: str
    createdAt: str
    expiresAt: str


class Usage(TypedDict):
    dir: str
    count: int
    bytes: int
    maxBytes: int
    ttlSeconds: float


@dataclass(frozen=True)
class Artifact:
    id: str
    role: str
    kind: str
    created_at: float
    expires_at: float
    size: int
    sha256: str
    key: str
    meta: dict[str, object]

    def public(self) -> PublicArtifact:
        """What a tool result may show (never the key)."""
        return {"artifactId": self.id, "kind": self.kind, "totalBytes": self.size,
                "sha256": self.sha256, "createdAt": _iso(self.created_at),
                "expiresAt": _iso(self.expires_at)}


@dataclass(frozen=True)
class Page:
    artifact: Artifact
    offset: int
    text: str
    nbytes: int
    next_cursor: str | None

    @property
    def eof(self) -> bool:
        return self.next_cursor is None


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def utf8_cut(data: bytes, limit: int) -> int:
    """The largest n <= limit such that data[:n] does not split a UTF-8 character."""
    if limit >= len(data):
        return len(data)
    n = limit
    # Step back over continuation bytes (10xxxxxx) to the start of the split character.
    while n > 0 and (data[n] & 0xC0) == 0x80:
        n -= 1
    return n


class ArtifactStore:
    """One role's artifacts. `clock` is injectable so TTL tests need no sleeping."""

    def __init__(self, root: Path, role: str, *, ttl: float, max_bytes: int,
                 clock: Callable[[], float] = time.time) -> None:
        self.root = Path(root)
        self.role = role
        self.dir = self.root / role
        self.ttl = ttl
        self.max_bytes = max_bytes
        self.clock = clock

    # -- writing ---------------------------------------------------------------------

    def create(self, text: str, *, kind: str, meta: dict[str, object] | None = None
               ) -> Artifact:
        data = text.encode("utf-8")
        if len(data) > self.max_bytes:
            raise StoreFull(f"{len(data)} bytes is more than the whole store "
                            f"(CODEX_BRIDGE_ARTIFACT_STORE_MAX={self.max_bytes})")
        ensure_private_dir(self.root)
        ensure_private_dir(self.dir)
        self.sweep()
        self._make_room(len(data))
        now = self.clock()
        art = Artifact(id=ID_PREFIX + secrets.token_urlsafe(18), role=self.role, kind=kind,
                       created_at=now, expires_at=now + self.ttl, size=len(data),
                       sha256=hashlib.sha256(data).hexdigest(), key=secrets.token_hex(32),
                       meta=dict(meta or {}))
        write_private(self._data_path(art.id), data)
        record = {"id": art.id, "role": art.role, "kind": art.kind,
                  "createdAt": art.created_at, "expiresAt": art.expires_at,
                  "size": art.size, "sha256": art.sha256, "key": art.key, "meta": art.meta}
        write_private(self._meta_path(art.id), json.dumps(record).encode("utf-8"))
        return art

    def _make_room(self, incoming: int) -> None:
        arts = self._all()
        total = sum(a.size for a in arts)
        for art in sorted(arts, key=lambda a: (a.created_at, a.id)):  # oldest first
            if total + incoming <= self.max_bytes:
                break
            self.delete(art.id)
            total -= art.size

    def delete(self, art_id: str) -> None:
        # Metadata first: once it is gone the artifact no longer exists for readers.
        for path in (self._meta_path(art_id), self._data_path(art_id)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def sweep(self) -> None:
        """Delete expired artifacts and stray temp/orphan files."""
        now = self.clock()
        for art in self._all():
            if art.expires_at <= now:
                self.delete(art.id)
        # Data without metadata: a create that died half-way, older than a minute.
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return
        for name in names:
            path = self.dir / name
            stem = name[:-4] if name.endswith(".txt") else None
            orphan = stem is not None and not (self.dir / f"{stem}.json").exists()
            if (orphan or name.endswith(".tmp")) and _age(path, time.time()) > 60:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)

    # -- reading ---------------------------------------------------------------------

    def get(self, art_id: str) -> Artifact:
        if not isinstance(art_id, str) or not _ID_RE.match(art_id):
            raise _missing(str(art_id), "is not an artifact id")
        art = self._load(art_id)
        if art is None or art.role != self.role:
            raise _missing(art_id, "does not exist for this role (never made here, "
                                          "evicted, or made by the other role)")
        if art.expires_at <= self.clock():
            self.delete(art_id)
            raise _missing(art_id, "has expired")
        if not self._data_path(art_id).exists():
            raise _missing(art_id, "lost its data file")
        return art

    def read(self, art_id: str, cursor: str | None, max_bytes: int) -> Page:
        art = self.get(art_id)
        offset = 0 if not cursor else self.parse_cursor(art, cursor)
        if offset > art.size:
            raise InvalidCursorError("the cursor points past the end of the artifact")
        limit = max(MIN_PAGE, max_bytes)
        with open(self._data_path(art_id), "rb") as fh:
            fh.seek(offset)
            chunk = fh.read(limit + 4)  # 4 more bytes: enough to see the next char start
        chunk = chunk[:art.size - offset]
        chunk = chunk[:utf8_cut(chunk, limit)]
        end = offset + len(chunk)
        next_cursor = self.make_cursor(art, end) if end < art.size else None
        return Page(art, offset, chunk.decode("utf-8"), len(chunk), next_cursor)

    def make_cursor(self, art: Artifact, offset: int) -> str:
        raw = offset.to_bytes(8, "big")
        return CURSOR_PREFIX + _b64(raw + self._mac(art, offset))

    def parse_cursor(self, art: Artifact, cursor: str) -> int:
        if not isinstance(cursor, str) or not cursor.startswith(CURSOR_PREFIX):
            raise InvalidCursorError("not a cursor from bridge_output_read")
        try:
            raw = _unb64(cursor[len(CURSOR_PREFIX):])
        except (ValueError, TypeError):
            raise InvalidCursorError("the cursor is not valid base64url") from None
        if len(raw) != 8 + _MAC_BYTES:
            raise InvalidCursorError("the cursor has the wrong length")
        offset = int.from_bytes(raw[:8], "big")
        if not hmac.compare_digest(raw[8:], self._mac(art, offset)):
            raise InvalidCursorError("the cursor was not issued for this artifact (or was altered)")
        return offset

    @staticmethod
    def _mac(art: Artifact, offset: int) -> bytes:
        msg = f"{art.id}:{offset}".encode("ascii")
        return hmac.new(bytes.fromhex(art.key), msg, hashlib.sha256).digest()[:_MAC_BYTES]

    # -- bookkeeping -----------------------------------------------------------------

    def usage(self) -> Usage:
        arts = [a for a in self._all() if a.expires_at > self.clock()]
        return {"dir": str(self.dir), "count": len(arts), "bytes": sum(a.size for a in arts),
                "maxBytes": self.max_bytes, "ttlSeconds": self.ttl}

    def _data_path(self, art_id: str) -> Path:
        return self.dir / f"{art_id}.txt"

    def _meta_path(self, art_id: str) -> Path:
        return self.dir / f"{art_id}.json"

    def _load(self, art_id: str) -> Artifact | None:
        try:
            with open(self._meta_path(art_id), encoding="utf-8") as fh:
                rec = obj(loads_json(fh.read()))
            created, expires = opt_float(rec["createdAt"]), opt_float(rec["expiresAt"])
            size = opt_int(rec["size"])
            if created is None or expires is None or size is None:
                return None
            return Artifact(id=str(rec["id"]), role=str(rec["role"]), kind=str(rec["kind"]),
                            created_at=created, expires_at=expires, size=size,
                            sha256=str(rec["sha256"]), key=str(rec["key"]),
                            meta=dict(obj(rec.get("meta"))))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _all(self) -> list[Artifact]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return []
        found = (self._load(n[:-5]) for n in names
                 if n.endswith(".json") and _ID_RE.match(n[:-5]))
        return [art for art in found if art is not None]


def _age(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0

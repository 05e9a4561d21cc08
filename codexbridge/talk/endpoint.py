"""Where the app-server is: `--url`, else `CODEX_BRIDGE_URL`, else the running serve's
bridge.json. The bearer token comes from `CODEX_BRIDGE_TOKEN` or the token file serve
recorded."""

from __future__ import annotations

import os
from typing import NamedTuple

from ..errors import ConnectError
from ..host.paths import bridge_file, read_bridge_file


class Endpoint(NamedTuple):
    url: str
    token: str | None
    source: str


def _token_file(record: dict[str, object]) -> str | None:
    path = record.get("token_file")
    if not isinstance(path, str):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def resolve_endpoint(url: str | None = None) -> Endpoint:
    token = os.environ.get("CODEX_BRIDGE_TOKEN") or None
    given = (url, "--url") if url else (os.environ.get("CODEX_BRIDGE_URL"), "CODEX_BRIDGE_URL")
    record = read_bridge_file()
    if given[0]:
        if token is None and record and record.get("url") == given[0]:
            token = _token_file(record)  # our own serve, named explicitly
        return Endpoint(given[0], token, given[1])
    if record and isinstance(record.get("url"), str):
        return Endpoint(record["url"], token or _token_file(record), str(bridge_file()))
    raise ConnectError(
        "no app-server to talk to: start `codexbridge serve` first "
        f"(or pass --url / set CODEX_BRIDGE_URL); looked for {bridge_file()}")

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


def resolve_endpoint(url: str | None = None) -> Endpoint:
    token = os.environ.get("CODEX_BRIDGE_TOKEN") or None
    if url:
        return Endpoint(url, token, "--url")
    env_url = os.environ.get("CODEX_BRIDGE_URL")
    if env_url:
        return Endpoint(env_url, token, "CODEX_BRIDGE_URL")
    record = read_bridge_file()
    if record and isinstance(record.get("url"), str):
        if token is None and isinstance(record.get("token_file"), str):
            try:
                with open(record["token_file"], encoding="utf-8") as fh:
                    token = fh.read().strip() or None
            except OSError:
                token = None
        return Endpoint(record["url"], token, str(bridge_file()))
    raise ConnectError(
        "no app-server to talk to: start `codexbridge serve` first "
        f"(or pass --url / set CODEX_BRIDGE_URL); looked for {bridge_file()}")

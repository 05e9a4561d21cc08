"""A quick start for `codexbridge mcp` over stdio: the start-up answered from a record,
the SDK imported behind it.

Claude Code under `-p` waits for its MCP servers' start-up answers (discover or
initialize, the tool, prompt and resource lists) before the first model request, and
nearly all of a cold start is the `mcp` SDK's import (bench/bench_mcp.py). Those answers
are the same at every start of one install with one set of settings, so a stdio server
records them, and the next start gives them from the record before it imports anything:

    codexbridge mcp [--role R]     `launch`, from cli/__init__.py before click
        checks the state dirs, and the role and settings unless a record vouches for them,
        as the click command does (on an error that command runs and reports it), takes
        fd 0 and 1 for the wire as the SDK's own transport does, then reads the agent's
        messages: a request whose method and params are in the record is answered from
        it (a subscription by its acknowledgement), a notification is kept for later.
        At anything else — a tool call, a request the record lacks, no record at all —
        the SDK is imported and the server built, every message read so far is replayed
        into it, and its answers to the requests the record already answered are
        dropped. From there it is the SDK's own session.
    the record                     `<runtime dir>/mcp-start-<hash>.json` (host/runtime.py:
        0700, ours alone), 0600, written by a session as the SDK answers its start-up
        requests. It holds the whole key it was made for — the interpreter, argv[0] (the
        codex role's instructions name the command), the role, a hash of every
        CODEX_BRIDGE_* variable, the size and mtime of every file of codexbridge and of
        the SDK's packages' top files — and is used only when that key matches in full;
        otherwise the start is cold and rewrites it.
        CODEX_BRIDGE_MCP_WARM=0: no record is read or written; every start is cold.

No process outlives its session and nothing listens. The import waits for the first
message the record lacks rather than running behind the start-up: on a 2-core box it
would compete with the agent's own start for the CPU, and most `claude -p` sessions
call no tool at all.

Risks (docs/mcp.md, "Warm start", says what each costs): a record that no longer matches
the code it answers for (an edit deep inside the SDK that leaves its packages' top files
alone: the old start-up answers until the record is deleted or the knob is 0); the first
tool call of a session waits for the SDK's import; another CODEX_BRIDGE_* value or a
client whose start-up requests differ starts cold and records again; a record someone
else planted (read only from the private runtime dir, without following links); the
SDK's insides (the hand-over serves `MCPServer._lowlevel_server` on streams of ours);
an agent that closes stdin before any tool call gets no closing error for its open
`subscriptions/listen`.

At import: the standard library and what every start needs anyway (the error tree, the
private dirs, stdio's signal handler — a cold start imports them too); the settings on
a record's miss, the SDK at the hand-over (`stdio.serve_stdio`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
from importlib.machinery import PathFinder
from typing import IO, TYPE_CHECKING, cast

from ..errors import BridgeError
from ..host.jsonfile import read_object
from ..host.private import check_state_dirs, write_all, write_atomic
from ..host.runtime import private_runtime_dir
from ..jsontypes import JsonRecord
from .stdio import exit_now, serve_stdio

try:  # the builtin module: ~0.5 ms, where hashlib's OpenSSL takes ~20 on a busy box
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import blake2b

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..jsontypes import JsonObject
    from .settings import Settings

KNOB = "CODEX_BRIDGE_MCP_WARM"
ROLES = ("claude", "codex")  # settings.ROLES, without importing it
# What an agent asks while it starts a server: answered from the record. Claude Code
# 2.1.332 speaks the 2026-07-28 protocol: `server/discover`, then `subscriptions/listen`
# (whose answer is the stream of list-changed events, opened by an acknowledgement
# notification), `prompts/list`, `resources/list`, `tools/list` — each with the same
# `_meta` (its version and capabilities) every time. Older clients: `initialize`.
STARTUP = frozenset({"server/discover", "initialize", "subscriptions/listen", "tools/list",
                     "prompts/list", "resources/list", "resources/templates/list"})
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"  # its _meta key: the listen's id
SDK_PACKAGES = ("mcp", "mcp_types", "pydantic", "pydantic_core", "anyio")
RECORD_VERSION = 1
WIRE = "<stdout>"  # what a failed write to the agent names


def parse_knob(raw: str | None) -> bool | None:
    """CODEX_BRIDGE_MCP_WARM: unset or a positive number of seconds (what the warm server
    before this took): on; 0: off; None: not a number."""
    if raw is None or not raw.strip():
        return True
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value > 0 if 0 <= value < float("inf") else None


def role_flag(argv: list[str]) -> tuple[bool, str | None]:
    """(is this the plain stdio shape, the --role value): `[]`, `--role R`, `--role=R`.
    Anything else (--http, --help, a typo) is click's to parse and report."""
    if not argv:
        return True, None
    if len(argv) == 2 and argv[0] == "--role":
        return True, argv[1]
    if len(argv) == 1 and argv[0].startswith("--role="):
        return True, argv[0].split("=", 1)[1]
    return False, None


# --- the record ----------------------------------------------------------------------

def _stamp(path: str) -> list[object]:
    try:
        st = os.stat(path)
    except OSError:  # gone mid-walk (an upgrade): a key no record has
        return [path]
    return [path, st.st_size, st.st_mtime_ns]


def _stamps(top: str) -> list[list[object]]:
    """Size and mtime of every source file under `top`."""
    found: list[list[object]] = []
    for where, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [_stamp(os.path.join(where, f)) for f in sorted(files) if f.endswith(".py")]
    return found


def _sdk_stamps() -> list[list[object]]:
    """Each SDK package's top file: an install or upgrade rewrites it (found, not imported)."""
    specs = [PathFinder.find_spec(name) for name in SDK_PACKAGES]
    return [_stamp(spec.origin) if spec is not None and spec.origin else [name]
            for name, spec in zip(SDK_PACKAGES, specs, strict=True)]


def _digest(text: str) -> str:
    return blake2b(text.encode(), digest_size=16).hexdigest()


def record_key(role: str, env: Mapping[str, str]) -> str:
    """Everything the SDK's start-up answers depend on, as one text. The settings as the
    environment spells them (every CODEX_BRIDGE_* variable, hashed: one may be a token):
    a record exists only once those values have loaded, so a start that finds one need
    not import the settings module (~100 ms on a busy box) to check them again."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ours = sorted((k, v) for k, v in env.items() if k.startswith("CODEX_BRIDGE_"))
    return json.dumps({"v": RECORD_VERSION, "python": sys.executable, "version": sys.version,
                       "argv0": os.path.abspath(sys.argv[0]) if sys.argv[0] else "",
                       "role": role, "env": _digest(json.dumps(ours)),
                       "code": _stamps(package), "sdk": _sdk_stamps()}, sort_keys=True)


def record_name(role: str) -> str:
    """One record per role, interpreter and command: a new key overwrites it."""
    slot = json.dumps([role, sys.executable, os.path.abspath(__file__), sys.argv[0]])
    return f"mcp-start-{_digest(slot)[:16]}.json"


def record_path(role: str) -> str | None:
    """Where the record is; None when there is no private runtime directory."""
    directory = private_runtime_dir()
    return None if directory is None else os.path.join(directory, record_name(role))


def request_key(method: object, params: object) -> str:
    return json.dumps([method, params], sort_keys=True)


class StartupRecord(JsonRecord):
    """The record file: the key it was made for (`record_key`), and its answers."""

    key: str | None = None
    answers: JsonObject = {}  # noqa: RUF012 (a record is read-only: never changed in place)


def load_record(path: str | None, key: str) -> dict[str, object]:
    """The recorded answers (request_key → {"result": …} or {"error": …}) made for `key`;
    {} if none (never read through a symlink)."""
    record = StartupRecord.parse(read_object(path)) if path is not None else None
    return {**record.answers} if record is not None and record.key == key else {}


def save_record(path: str, key: str, answers: dict[str, object]) -> None:
    """Write the record whole (a reader sees the old one or the new one), 0600."""
    with contextlib.suppress(OSError):  # no record: the next start is cold, nothing worse
        write_atomic(path, json.dumps({"key": key, "answers": answers}).encode(), mode=0o600)


# --- the session -----------------------------------------------------------------------

def launch(argv: list[str]) -> int | None:
    """Serve this `codexbridge mcp`: its exit status, or None when the click command must
    run it (not the plain stdio shape, the knob off, a terminal, anything to report)."""
    plain, flag = role_flag(argv)
    role = flag or os.environ.get("CODEX_BRIDGE_MCP_ROLE")
    if not plain or role not in ROLES:
        return None
    if not parse_knob(os.environ.get(KNOB)) or sys.platform == "win32" or os.isatty(0):
        return None
    path = record_path(role)
    key = record_key(role, os.environ)
    answers = load_record(path, key)
    try:
        check_state_dirs()
        if not answers:  # (a record vouches for these settings: they loaded before)
            load_settings(flag)
    except BridgeError:
        return None  # the click command says what is wrong, as on a cold start
    _Session(flag, path, key, answers).run()
    return 0


def load_settings(flag: str | None) -> Settings:
    # lazy: a start the record answers never loads the settings (nor what they import)
    from . import settings

    return settings.load(settings.resolve_role(flag, os.environ))


def _claim_wire() -> tuple[int, int]:
    """Private copies of fd 0 and 1 for the wire; fd 0 then reads /dev/null and fd 1
    writes to stderr, so a child's or a stray print's output misses the wire (what the
    SDK's stdio transport does when it is handed no streams)."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


class _Rpc:
    """One JSON-RPC message, as far as the quick start reads it."""

    __slots__ = ("answer", "id", "key", "method", "raw_id")

    def __init__(self, data: dict[str, object]) -> None:
        self.raw_id = data.get("id")
        self.id = json.dumps(self.raw_id) if "id" in data else None  # ids: numbers or text
        self.method = data.get("method")  # None: an answer
        params = data.get("params")
        self.key = request_key(self.method, params)
        # what the record keeps of an answer: {"result": …}, {"error": …}, or for a
        # subscription's acknowledgement {"acknowledged": its params} (id: the listen's)
        self.answer: dict[str, object] = {k: data[k] for k in ("result", "error") if k in data}
        meta = params.get("_meta") if isinstance(params, dict) else None
        if self.method == ACKNOWLEDGED and isinstance(meta, dict) and SUBSCRIPTION in meta:
            self.raw_id = meta[SUBSCRIPTION]
            self.id, self.method, self.answer = json.dumps(self.raw_id), None, {
                "acknowledged": params}

    @classmethod
    def parse(cls, line: bytes | str) -> _Rpc | None:
        try:
            data = json.loads(line)
        except ValueError:
            return None
        return cls(data) if isinstance(data, dict) else None


class _Session(io.TextIOBase):
    """One quick-started session; from the hand-over also the SDK's stdin (`readline`:
    the lines already read, then the rest of the wire) and stdout (`write`: the wire,
    less its answers to what the record answered, its start-up answers recorded)."""

    def __init__(self, flag: str | None, path: str | None, key: str,
                 answers: dict[str, object]) -> None:
        self.flag, self.path, self.key, self.answers = flag, path, key, answers
        self.recorded = dict(answers)
        self.wire_in, self.wire_out = _claim_wire()
        self.reader = open(self.wire_in, "rb")  # noqa: SIM115 - the session's for its life
        self.lines: list[bytes] = []  # every line so far: the SDK is handed them all
        self.answered: set[str] = set()  # ids (as JSON) the record answered
        self.asked: dict[str, str] = {}  # id → request_key of start-up requests to record

    def run(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, exit_now)
        for line in iter(self.reader.readline, b""):
            self.lines.append(line)
            if not self._answer(line):
                break
        else:
            return  # EOF: the agent went away before it needed the SDK
        # (a text stream as far as the SDK's transport goes: it calls readline and write)
        serve_stdio(load_settings(self.flag), streams=(cast(IO[str], self),) * 2)

    def _answer(self, line: bytes) -> bool:
        """Answer `line` from the record; False when it is the SDK's."""
        message = _Rpc.parse(line)
        if message is None or message.method is None:
            return False
        if message.id is None:
            return True  # a notification: the SDK sees it in the replay
        outcome = self.answers.get(message.key)
        if not isinstance(outcome, dict):
            return False
        answer = {"jsonrpc": "2.0", "id": message.raw_id, **outcome}
        acknowledged = outcome.get("acknowledged")
        if isinstance(acknowledged, dict):  # a subscription: stays open, the SDK's later
            meta = {**acknowledged.get("_meta", {}), SUBSCRIPTION: message.raw_id}
            answer = {"jsonrpc": "2.0", "method": ACKNOWLEDGED,
                      "params": {**acknowledged, "_meta": meta}}
        # the SDK's own spelling (compact, UTF-8): the same bytes as a cold start's answer
        write_all(self.wire_out, json.dumps(answer, ensure_ascii=False,
                                            separators=(",", ":")).encode() + b"\n", WIRE)
        self.answered.add(message.id)
        return True

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        raw = self.lines.pop(0) if self.lines else self.reader.readline()
        line = raw.decode("utf-8", errors="replace")
        message = _Rpc.parse(line)  # a start-up request the SDK answers: into the record
        if message is not None and message.method in STARTUP and message.id is not None \
                and message.id not in self.answered:
            self.asked[message.id] = message.key
        return line

    def write(self, text: str) -> int:
        if self._keep(text):
            write_all(self.wire_out, text.encode(), WIRE)
        return len(text)

    def _keep(self, text: str) -> bool:
        """Whether the SDK's message `text` goes on the wire (not a second answer to a
        request the record answered); start-up answers are recorded."""
        message = _Rpc.parse(text)
        if message is None or message.id is None or message.method is not None:
            return True
        if message.id in self.answered:
            self.answered.discard(message.id)
            return False
        asked = self.asked.pop(message.id, None)
        if asked is not None and message.answer and self.path is not None \
                and self.recorded.get(asked) != message.answer:
            self.recorded[asked] = message.answer
            save_record(self.path, self.key, self.recorded)
        return True

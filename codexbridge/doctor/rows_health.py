"""Doctor rows for what breaks silently: the state dir, protocol drift, a real turn.

    state          the state home: where, 0700, not pointing at / ~ ~/.codex ~/.claude
    protocol       the installed codex's schema vs schemas/ for the methods we use
    deep           (doctor --deep) one real turn on a private app-server with the mock
                   model: LIVE or BROKEN

Facts come from `gather_*` (I/O); the row functions are pure.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..host.jsonfile import loads_json
from .report import FAIL, INFO, OK, WARN, Check

Facts = dict[str, Any]


# --- state ------------------------------------------------------------------------------

def gather_state() -> Facts:
    from ..host.private import HOME_ENV, state_home, unsafe_state_dir

    home = state_home()
    facts: Facts = {"home": home, "problem": unsafe_state_dir(home, HOME_ENV),
                    "exists": os.path.isdir(home), "loose": []}
    if facts["exists"] and not facts["problem"]:
        for root, dirs, files in os.walk(home):
            for name in [*dirs, *files]:
                path = os.path.join(root, name)
                try:
                    mode = stat.S_IMODE(os.lstat(path).st_mode)
                except OSError:
                    continue
                if mode & 0o077 and not os.path.islink(path):
                    facts["loose"].append(f"{path} ({oct(mode)})")
            if len(facts["loose"]) > 20:
                break
        if stat.S_IMODE(os.stat(home).st_mode) & 0o077:
            facts["loose"].insert(0, f"{home} ({oct(stat.S_IMODE(os.stat(home).st_mode))})")
    return facts


def state_rows(s: Facts) -> list[Check]:
    home = s.get("home")
    if s.get("problem"):
        return [Check("state", FAIL, f"refusing the state home: {s['problem']}",
                      "set CODEX_BRIDGE_HOME to a directory of its own (default "
                      "~/.codex-bridge)", {"home": home})]
    if not s.get("exists"):
        return [Check("state", OK, f"{home} does not exist yet (created 0700 on first use)",
                      None, {"home": home})]
    loose: Sequence[str] = s.get("loose") or []
    if loose:
        return [Check("state", WARN, f"{len(loose)} entries under {home} are readable by "
                      f"others: {', '.join(loose[:3])}" + (" …" if len(loose) > 3 else ""),
                      f"chmod -R go-rwx {home}", {"home": home, "loose": list(loose)})]
    return [Check("state", OK, f"{home}: private (0700 / 0600)", None, {"home": home})]


# --- protocol drift ---------------------------------------------------------------------------

def gather_protocol(codex: str | None, schemas: Path, timeout: float = 20.0) -> Facts:
    """Have the installed codex generate its (experimental) schema and compare."""
    from ..host.schemas import repo_schemas
    from .drift import compare

    if not codex:
        return {"error": "no codex binary to ask"}
    ours_dir = schemas / "experimental"
    if not ours_dir.is_dir():
        # schemas/ ships with the checkout only (host/schemas.py): nothing to compare with
        return {"skipped": f"this codexbridge has no schema to compare with ({ours_dir} "
                           "ships with its git checkout, not with an installed package)"}
    with tempfile.TemporaryDirectory(prefix="codexbridge-drift-") as tmp:
        try:
            done = subprocess.run([codex, "app-server", "generate-json-schema",
                                   "--experimental", "--out", tmp], capture_output=True,
                                  text=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"error": f"codex could not generate its schema: {exc}"}
        if done.returncode != 0:
            return {"error": f"codex app-server generate-json-schema exited "
                             f"{done.returncode}: {done.stderr.strip()[:300]}"}

        def load(root: Path) -> Any:
            def read(name: str) -> dict[str, Any] | None:
                try:
                    data = loads_json((root / name).read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    return None
                return data if isinstance(data, dict) else None
            return read

        responses = repo_schemas(experimental=True).server_request_responses()
        drifts = compare(load(ours_dir), load(Path(tmp)), responses)
    version = (ours_dir / "VERSION").read_text(encoding="utf-8").strip() \
        if (ours_dir / "VERSION").exists() else "?"
    return {"codex": codex, "schemas": str(ours_dir), "built_on": version,
            "drifts": [d._asdict() for d in drifts]}


def protocol_rows(p: Facts) -> list[Check]:
    if p.get("skipped"):
        return [Check("protocol", INFO, f"not checked: {p['skipped']}", None, p)]
    if p.get("error"):
        return [Check("protocol", WARN, f"could not check for protocol drift: {p['error']}",
                      None, p)]
    drifts = p.get("drifts") or []
    if not drifts:
        return [Check("protocol", OK, f"the installed codex speaks the protocol of "
                      f"{p.get('schemas')} ({p.get('built_on')}) for every method "
                      "codexbridge uses", None, p)]
    listed = "; ".join(f"{d['kind']} {d['method']}: {d['what']}" for d in drifts[:6])
    return [Check("protocol", WARN,
                  f"the installed codex's protocol differs from {p.get('schemas')} "
                  f"({p.get('built_on')}) in {len(drifts)} place(s): {listed}"
                  + (" …" if len(drifts) > 6 else ""),
                  _drift_fix(), p)]


def _drift_fix() -> str:
    from ..host.binaries import in_checkout, install_hint

    fix = f"use codex 0.169.0 ({install_hint('codex')}), or a codexbridge built for this codex"
    if in_checkout():
        fix += "; scripts/update-schemas regenerates schemas/ and the protocol types for review"
    return fix


# --- deep ---------------------------------------------------------------------------------

def gather_deep(codex: str | None, timeout: float = 60.0) -> Facts:
    """One real turn: a private app-server, the mock model, our client — end to end."""
    import asyncio

    if not codex:
        return {"error": "no codex binary"}
    from ..mock.stack import OfflineStack

    try:
        with OfflineStack(codex) as stack:
            _thread, reply = asyncio.run(asyncio.wait_for(
                stack.human_thread("doctor --deep: one turn"), timeout))
            return {"reply": reply, "url": stack.url}
    except Exception as exc:  # the whole point is to report it
        return {"error": f"{type(exc).__name__}: {exc}"}


def deep_rows(d: Facts) -> list[Check]:
    if d.get("error") or not str(d.get("reply") or "").startswith("MOCK REPLY"):
        return [Check("deep", FAIL, f"BROKEN: one real turn on a private app-server failed: "
                      f"{d.get('error') or repr(d.get('reply'))}",
                      "run `codexbridge demo` to see the whole path, then the rows above",
                      d)]
    return [Check("deep", OK, "LIVE: a real turn ran on a private app-server with the mock "
                  "model and codexbridge's client read the reply", None, d)]

"""Doctor rows for what breaks silently: the state dir, the protocol, a real turn.

    state          the state home: where, 0700, not pointing at / ~ ~/.codex ~/.claude
    protocol       the installed codex's schema judged against what codexbridge uses
                   (doctor/compat.py): OK when nothing it sends or reads broke
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

from .report import FAIL, OK, WARN, Check

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


# --- protocol ------------------------------------------------------------------------------

def gather_protocol(codex: str | None, timeout: float = 20.0) -> Facts:
    """Have the installed codex generate its (experimental) schema, cut out the part
    codexbridge uses and judge it against the surface shipped in the package."""
    from ..host.binaries import parse_version
    from ..host.schemas import bundle_loader, shipped_surface
    from .answers import check_answers
    from .compat import judge
    from .surface import extract
    from .uses import used_methods

    if not codex:
        return {"error": "no codex binary to ask"}
    try:
        ours = shipped_surface()
        said = _run([codex, "--version"], timeout)
        version = parse_version(said)
        with tempfile.TemporaryDirectory(prefix="codexbridge-protocol-") as tmp:
            _run([codex, "app-server", "generate-json-schema", "--experimental", "--out",
                  tmp], timeout)
            theirs = extract(bundle_loader(Path(tmp)), used_methods(), said.strip())
            checked, refused = check_answers(Path(tmp))
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return {"error": str(exc)}
    if not any(theirs["catalog"].values()):
        return {"error": "codex app-server generate-json-schema wrote no method schemas"}
    return {"codex": codex, "version": version, "built_on": ours.get("codex"),
            "findings": [f.as_dict() for f in judge(ours, theirs)],
            "answers_checked": checked, "answers_refused": refused}


def _run(argv: list[str], timeout: float) -> str:
    """stdout of a codex command; OSError / SubprocessError say why it failed."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise subprocess.SubprocessError(
            f"`{' '.join(argv[1:3])}` exited {done.returncode}: {done.stderr.strip()[:300]}")
    return done.stdout


def protocol_rows(p: Facts) -> list[Check]:
    from ..host.binaries import CODEX_OLDEST, CODEX_VERSION, supported_range

    if p.get("error"):
        return [Check("protocol", WARN, f"could not check the installed codex's protocol: "
                      f"{p['error']}", None, p)]
    findings: list[dict[str, Any]] = p.get("findings") or []
    bad = [f for f in findings if f.get("verdict") == "incompatible"]
    codex = f"codex {p.get('version') or '(version unknown)'}"
    scope = (f"supported: {supported_range(CODEX_OLDEST, CODEX_VERSION)}; codexbridge's "
             f"surface is from {p.get('built_on') or '?'}")
    refused: list[dict[str, Any]] = p.get("answers_refused") or []
    answers = (f"; it takes all {p['answers_checked']} answers codexbridge gives its "
               "approval requests" if p.get("answers_checked") and not refused else "")
    if not bad and not refused:
        return [Check("protocol", OK, f"{codex} speaks what codexbridge uses ({scope}): "
                      f"{_compatible_summary(findings)}{answers}", None, p)]
    listed = "; ".join([f"{f['method']} ({f['direction'] or 'method'}): {f['where']} "
                        f"{f['detail']} — {f['consequence']}" for f in bad[:4]]
                       + [f"{r['method']}: codex would refuse codexbridge's {r['answer']} "
                          f"answer ({'; '.join(r['errors'])}) — a turn waiting on that "
                          "approval would hang" for r in refused[:3]])
    bad = bad + refused
    return [Check("protocol", WARN,
                  f"{codex} changed what codexbridge uses in {len(bad)} place(s) ({scope}): "
                  f"{listed}" + (" …" if len(bad) > 4 else ""),
                  _protocol_fix(p.get("version")), p)]


def _compatible_summary(findings: list[dict[str, Any]]) -> str:
    if not findings:
        return "no differences"
    added = sum(1 for f in findings if f["change"] == "method added")
    gone = sum(1 for f in findings if f["change"] == "method gone")
    parts = [f"{n} {what}" for n, what in ((added, "new method(s)"),
                                          (gone, "method(s) codexbridge does not use gone"))
             if n]
    fields = [f for f in findings if f["change"] not in ("method added", "method gone")]
    parts += [f"{f['where']} {f['detail']}" for f in fields[:4]]
    more = f"; {len(fields) - 4} more" if len(fields) > 4 else ""
    return f"{len(findings)} compatible difference(s): {'; '.join(parts)}{more}"


def _protocol_fix(version: str | None) -> str:
    from ..host.binaries import (
        CODEX_OLDEST,
        CODEX_VERSION,
        VersionFit,
        in_checkout,
        install_hint,
        version_fit,
    )

    if version and version_fit(version, CODEX_OLDEST, CODEX_VERSION) is VersionFit.OLDER:
        return (f"install a codex codexbridge supports ({install_hint('codex')}): "
                f"{version} is older than {CODEX_OLDEST}")
    fix = f"update codexbridge (it needs a release that knows codex {version or 'this'})"
    if in_checkout():
        fix += ("; in this checkout, scripts/update-schemas regenerates schemas/, the "
                "protocol types and the surface for review")
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

"""`codexbridge doctor`."""

from __future__ import annotations

from pathlib import Path

import click

from ..doctor.diagnose import diagnose
from ..doctor.report import as_json as report_json
from ..doctor.report import healthy, render_text
from ..error_tables import exit_help
from ..errors import UnhealthyError, UsageError
from .command import diagnosing, echo, emit_json, ensure_dir, json_option, url_option

DOCTOR_EXIT_HELP = exit_help(UnhealthyError, UsageError,
                             success="no FAIL row (WARN and INFO rows do not change it)")


@click.command(epilog=DOCTOR_EXIT_HELP)
@click.option("--project", default=".", metavar="DIR", show_default=True,
              help="The project whose .claude/settings.json is checked for the Stop hook.")
@click.option("--deep", is_flag=True,
              help="Also run one real turn on a private app-server with the mock model "
                   "(LIVE or BROKEN; a few seconds).")
@url_option
@json_option
@diagnosing
def doctor(project: str, deep: bool, url: str | None, as_json: bool) -> None:
    """Check the set-up: binaries, app-server, threads, approval diverters, hooks, mailboxes.

    \b
    Each row is OK (checked, fine), WARN (works, but likely not as you expect, or the
    check could not run), FAIL (the bridge cannot work) or INFO (worth knowing), with a
    one-line finding and, where there is one, a fix. `--json` prints them for scripts.
    Rows:
      state                                 the state home: private, not pointing at
                                            / ~ ~/.codex ~/.claude
      protocol                              does the installed codex speak what
                                            codexbridge sends and reads? (additions
                                            are OK; a field we use gone is WARN)
      codex, codex-version, listen-schemes   the codex binary against the supported
                                            range (newer is OK, older WARN) and
                                            `--listen ws:// unix://`
      bridge-json, app-server               a running `codexbridge serve` (optional);
                                            initialize on the app-server in force
                                            (codex's own daemon, or serve)
      threads                               user threads the TUI has loaded
      codex-daemon, endpoint-pick,          codex's own daemon; which server talk uses
        tui-attach, claude-plugin           when both run; the line that opens the TUI;
                                            the Claude Code plugin enabled here
      codex-hooks, approvals-reviewer,      settings in CODEX_HOME (yours, and the
        approval-policy                     app-server's, the project's .codex/) that
                                            answer approvals first
      claude, claude-version,               Claude Code; the project's Stop hook and
        claude-settings, claude-hook        settings files Claude would ignore
      claude-compat:peer-protocol,          what Claude Code last handed codexbridge:
        :hook-input, :transcript            its inbox protocol, hook fields, records
      mailbox:NAME, max-chain               pending / rejected mail, listeners, chain limit
      deep (--deep)                         one real turn end to end: LIVE or BROKEN

    Read-only: nothing is written or changed. The only connection is to the configured
    app-server (--url, $CODEX_BRIDGE_URL, else bridge.json, else codex's own daemon).
    """
    checks = diagnose(Path(ensure_dir(project, "--project")), url, deep=deep)
    if as_json:
        emit_json(report_json(checks))
    else:
        echo(render_text(checks))
    if not healthy(checks):
        error = UnhealthyError("doctor found FAIL rows: the bridge cannot work until they "
                               "are fixed (see the `fix:` lines above)")
        error.reported = as_json
        raise error

"""What a user reads when something is missing: doctor's `fix:` lines, `--help`, the
not-found errors — right for an installed codexbridge (pipx / a wheel: no scripts/,
.tools/ or docs/ beside it) and for a checkout; and leading with codex's own daemon,
`serve` as the alternative."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from codexbridge.cli.app import cli
from codexbridge.cli.talk_cmd import open_tui_hint
from codexbridge.codex.endpoint import Endpoint, EndpointKind
from codexbridge.doctor import binaries as doctor_binaries
from codexbridge.doctor import claude_side, codex_side
from codexbridge.doctor.binaries import BinaryFacts
from codexbridge.doctor.claude_side import ProjectFacts
from codexbridge.doctor.codex_side import EndpointFacts, ProtocolFacts, ServeFacts
from codexbridge.doctor.compat import Change, Finding, Verdict
from codexbridge.doctor.parse import ListenSchemes
from codexbridge.doctor.report import WARN, Check
from codexbridge.errors import BinaryNotFoundError
from codexbridge.host import binaries
from codexbridge.host.binaries import CLAUDE_VERSION, CODEX_VERSION

NPM_CODEX = f"npm install -g @openai/codex@{CODEX_VERSION}"
NPM_CLAUDE = f"npm install -g @anthropic-ai/claude-code@{CLAUDE_VERSION}"
CHECKOUT_ONLY = re.compile(r"scripts/|\.tools\b|install-binaries|update-schemas")


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """codexbridge as pipx or a wheel installs it: site-packages, nothing beside it."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(binaries, "repo_root", lambda: site)
    monkeypatch.delenv("CODEX_BRIDGE_TOOLS_DIR", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    for var in ("CODEX_BRIDGE_CODEX_BIN", "CODEX_BRIDGE_CLAUDE_BIN"):
        monkeypatch.delenv(var, raising=False)
    return site


def texts(checks: list[Check]) -> str:
    return "\n".join(f"{c.finding}\n{c.fix or ''}" for c in checks)


def binary_rows() -> list[Check]:
    """Every row that tells the user to install or replace codex / Claude Code."""
    missing = BinaryFacts()
    old = BinaryFacts("/x/codex", source="PATH", version="0.1.0",
                      listen=ListenSchemes(True, True, True))
    no_ws = replace(old, version=CODEX_VERSION, listen=ListenSchemes(listen_option=True))
    no_listen = replace(old, version=CODEX_VERSION, listen=ListenSchemes())
    server_old = EndpointFacts(
        url="unix:///h/.codex/app-server-control/app-server-control.sock",
        source="codex daemon (/h/.codex)", kind=EndpointKind.DAEMON, reachable=True,
        server_version="0.1.0")
    gone = Finding(Verdict.INCOMPATIBLE, Change.METHOD_GONE, "client request", "x", None,
                   None, "", "is gone", "x is gone: y")
    rows = doctor_binaries
    return [*rows.codex_rows(missing), *rows.codex_rows(old), *rows.codex_rows(no_ws),
            *rows.codex_rows(no_listen), codex_side.endpoint_row(ServeFacts(), server_old),
            *rows.claude_rows(missing), *rows.claude_rows(old),
            *codex_side.protocol_rows(ProtocolFacts(version="0.1.0", findings=(gone,)))]


def test_installed_users_get_npm_commands_not_checkout_paths(installed: Path) -> None:
    with pytest.raises(BinaryNotFoundError) as codex:
        binaries.find_codex()
    with pytest.raises(BinaryNotFoundError) as claude:
        binaries.find_claude()
    said = texts(binary_rows()) + "\n" + codex.value.message + "\n" + claude.value.message
    assert not CHECKOUT_ONLY.search(said), CHECKOUT_ONLY.findall(said)
    assert NPM_CODEX in codex.value.message and NPM_CLAUDE in claude.value.message
    for check in binary_rows():
        if check.fix:
            assert "npm install -g" in check.fix, check


def test_a_checkout_still_names_its_own_script() -> None:
    assert binaries.in_checkout()  # the tests run from the checkout
    fixes = texts(binary_rows())
    assert "scripts/install-binaries" in fixes
    assert NPM_CODEX in fixes  # the npm command works there too


def test_installed_doctor_judges_the_protocol_from_its_package_data(
        installed: Path, tmp_path: Path) -> None:
    """No schemas/ beside the package: what it was built on (codex/protocol/generated/uses.py)
    is enough."""
    bundle = Path(__file__).resolve().parents[3] / "schemas" / "experimental"
    codex = tmp_path / "codex"  # writes the pin's own schema, as the pinned codex does
    codex.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "codex-cli {CODEX_VERSION}" '
                     f'&& exit 0\nfor a; do out="$a"; done\n/bin/cp -R "{bundle}/." "$out/"\n')
    codex.chmod(0o755)
    [row] = codex_side.protocol_rows(codex_side.protocol(str(codex)))
    assert row.status == "OK" and "no differences" in row.finding, row.finding
    assert f"codex {CODEX_VERSION} speaks what codexbridge uses" in row.finding


def test_a_fresh_doctor_points_at_codex_own_daemon_first() -> None:
    row = codex_side.endpoint_row(ServeFacts(),
                                  EndpointFacts(resolve_error="no app-server to talk to"))
    assert row.status == WARN
    assert str(row.fix).startswith("open your TUI with `codex -C DIR`")
    assert str(row.fix).index("codex -C") < str(row.fix).index("codexbridge serve")
    [hook] = claude_side.project_rows(ProjectFacts("/p"), {})
    assert str(hook.fix).startswith("`codexbridge setup claude`")


def _all_help(group: click.Group, path: tuple[str, ...] = ()) -> dict[str, str]:
    runner = CliRunner()
    out = {" ".join(path): runner.invoke(cli, [*path, "--help"]).output}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None:
            continue
        if isinstance(cmd, click.Group):
            out.update(_all_help(cmd, (*path, name)))
        else:
            out[" ".join((*path, name))] = runner.invoke(cli, [*path, name, "--help"]).output
    return out


def test_help_texts_work_without_a_checkout_and_lead_with_the_daemon() -> None:
    helps = _all_help(cli)
    assert len(helps) > 20 and all(h.startswith("Usage:") for h in helps.values()), helps
    for name, text in helps.items():
        assert not CHECKOUT_ONLY.search(text), (name, CHECKOUT_ONLY.findall(text))
        assert "start `codexbridge serve`)" not in text, name  # the old exit-5 line
    top = helps[""]
    assert top.index("codex -C ~/project") < top.index("codexbridge serve")
    assert "plain `codex` starts codex's own daemon" in helps["talk say"]
    assert "codex's own daemon" in helps["talk say"].split("--url URL")[1]


def test_talk_list_tells_daemon_users_to_open_plain_codex() -> None:
    daemon = Endpoint("unix:///h/.codex/app-server-control/app-server-control.sock", None,
                      "codex daemon (/h/.codex)", EndpointKind.DAEMON)
    assert "`codex -C DIR`" in open_tui_hint(daemon) and "--remote" not in open_tui_hint(daemon)
    assert "plain `codex` attaches" in open_tui_hint(daemon)
    served = Endpoint("ws://127.0.0.1:8787", None, "/s/bridge.json")
    assert "`codex --remote ws://127.0.0.1:8787 -C DIR`" in open_tui_hint(served)
    token = Endpoint("wss://h:443", "t0k", "CODEX_BRIDGE_URL")
    assert "--remote-auth-token-env CODEX_BRIDGE_TOKEN" in open_tui_hint(token)
    assert "t0k" not in open_tui_hint(token)

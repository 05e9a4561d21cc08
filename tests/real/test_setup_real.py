"""`codexbridge setup claude|codex` against the real CLIs.

* Claude: a project whose settings already have another Stop hook and whose `.mcp.json`
  has another MCP server → both kept, ours added; a second run changes nothing;
  `claude -p` accepts the result (the other hook runs, the other server and the plugin's
  server load, the plugin's hook delivers mail); `--remove` restores the original bytes
  and the plugin is gone from the next run.
* Codex: `setup codex` writes what `codex mcp get` reads (tool_timeout_sec, the command),
  a real turn calls `claude_message_send` through it (approval mode `writes`: asked,
  accepted), `--remove` restores the original bytes.
* The wheel ships the plugin: every file under claude_plugin/ is in pyproject's
  package-data.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codexbridge.host.appserver import launch
from codexbridge.host.mailboxes import inbox_dir
from codexbridge.inbox.peek import peek
from codexbridge.setup.claude import TOOL_PREFIX
from codexbridge.setup.mailbox import project_mailbox
from codexbridge.setup.where import plugin_dir
from tests.support.claude_fixtures import ClaudeHarness
from tests.support.cli import run_cli
from tests.support.mock_claude import MockMessages
from tests.support.raw_client import RawClient, start_turn, start_user_thread

ELICITATION = "mcpServer/elicitation/request"


def stream_init(claude: ClaudeHarness, project: Path, prompt: str, *args: str
                ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = subprocess.run([claude.binary, "-p", prompt, "--output-format", "stream-json",
                           "--verbose", *args], cwd=project, env=claude.env(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, check=False)
    for line in proc.stdout.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "system" and event.get("subtype") == "init":
            return proc, event
    raise AssertionError(f"no init event; rc={proc.returncode} stderr={proc.stderr!r}")


@pytest.mark.real_claude
def test_setup_claude_project_merges_repeats_and_removes(
        claude: ClaudeHarness, claude_project: Path, mock_messages: MockMessages,
        tmp_path: Path) -> None:
    marker = tmp_path / "other-stop-hook-ran"
    settings = claude_project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]},
        "enabledMcpjsonServers": ["other"]}, indent=2) + "\n")
    (claude_project / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {
        "command": sys.executable, "args": ["-m", "codexbridge", "mcp", "--role", "codex"],
        "env": {"CODEX_BRIDGE_HOME": os.environ["CODEX_BRIDGE_HOME"]}}}}))
    original = settings.read_bytes()
    env = {"CLAUDE_CONFIG_DIR": str(claude.config_dir)}
    user_file = claude.config_dir / "settings.json"
    assert not user_file.exists()

    first = run_cli("setup", "claude", "--project", str(claude_project), env=env)
    assert first.code == 0, first.err
    data = json.loads(settings.read_text())
    assert data["hooks"]["Stop"][0]["hooks"][0]["command"] == f"touch {marker}"
    assert data["enabledMcpjsonServers"] == ["other"]
    assert data["enabledPlugins"] == {"codexbridge@codexbridge": True}
    written = (settings.read_bytes(), user_file.read_bytes())
    again = run_cli("setup", "claude", "--project", str(claude_project), "--json", env=env)
    assert again.code == 0 and json.loads(again.out)["changed"] is False
    assert (settings.read_bytes(), user_file.read_bytes()) == written

    name = project_mailbox(os.path.realpath(claude_project))
    assert run_cli("inbox", "push", "--new", "--to", name, "mail after setup").code == 0
    # A project's permissions.allow counts once the workspace is trusted (as a human
    # does in the first interactive session); -p alone does not trust it.
    claude.seed_interactive(claude_project)
    proc, init = stream_init(claude, claude_project, f"CALL_TOOL {TOOL_PREFIX}bridge_status {{}}")
    assert proc.returncode == 0, proc.stderr
    servers = {s["name"] for s in init["mcp_servers"]}
    assert {"other", "plugin:codexbridge:codex"} <= servers, init["mcp_servers"]
    assert any(p["name"] == "codexbridge" and p["path"] == plugin_dir()
               for p in init["plugins"])
    assert marker.exists()  # the other Stop hook still runs
    assert any("mail after setup" in f for f in mock_messages.stop_feedback())
    seen = [c for c in mock_messages.model_calls if '"role":"claude"' in c.all_text()
            or '"role": "claude"' in c.all_text()]
    assert seen, proc.stdout[-2000:]

    doctor = json.loads(run_cli("doctor", "--json", "--project", str(claude_project),
                                env=env).out)
    assert {c["name"]: c for c in doctor["checks"]}["claude-plugin"]["status"] == "OK"

    removed = run_cli("setup", "claude", "--project", str(claude_project), "--remove", env=env)
    assert removed.code == 0, removed.err
    assert settings.read_bytes() == original
    assert not user_file.exists()
    _, init = stream_init(claude, claude_project, "hi")
    assert "plugin:codexbridge:codex" not in {s["name"] for s in init["mcp_servers"]}
    assert not any(p["name"] == "codexbridge" for p in init["plugins"])


@pytest.mark.real_codex
async def test_setup_codex_is_what_codex_reads_and_calls(
        codex_bin: str, codex_home: Path, codex_env: dict[str, str], workdir: Path,
        tmp_path: Path) -> None:
    config = codex_home / "config.toml"
    original = config.read_bytes()
    env = {"CODEX_HOME": str(codex_home)}
    res = run_cli("setup", "codex", env=env)
    assert res.code == 0, res.err
    assert run_cli("setup", "codex", "--json", env=env).out.count('"changed": false') == 2
    got = subprocess.run([codex_bin, "mcp", "get", "codexbridge", "--json"], env=codex_env,
                         capture_output=True, text=True, timeout=30, check=True)
    server = json.loads(got.stdout)
    assert server["tool_timeout_sec"] == 360.0 and server["enabled"] is True
    assert server["transport"]["args"][-3:] == ["mcp", "--role", "codex"]
    assert server["transport"]["env"]["CODEX_BRIDGE_HOME"] == os.environ["CODEX_BRIDGE_HOME"]

    app = launch(codex_bin, workdir, codex_env, stderr_path=tmp_path / "app.stderr")
    try:
        async with RawClient(app.url) as tui:
            user = await start_user_thread(tui, workdir, "first", mcp_servers=("codexbridge",))
            since = tui.mark()
            turn = await start_turn(tui, user.thread_id, 'MCP_CALL: claude_message_send '
                                    '{"text": "from setup codex", "mailbox": "web", '
                                    '"new": true}')
            request = await tui.next_server_request(timeout=60)
            assert request["method"] == ELICITATION  # "writes": the human is asked
            await tui.respond(request["id"], {"action": "accept", "content": {}})
            await tui.wait_for(lambda n: n.get("method") == "turn/completed"
                               and n["params"]["turn"]["id"] == turn, 60, since=since)
    finally:
        app.stop()
    assert [m.text for m in peek(inbox_dir(), "web").mails] == ["from setup codex"]

    assert run_cli("setup", "codex", "--remove", env=env).code == 0
    assert config.read_bytes() == original
    gone = subprocess.run([codex_bin, "mcp", "get", "codexbridge"], env=codex_env,
                          capture_output=True, text=True, timeout=30, check=False)
    assert gone.returncode != 0 or "No MCP server" in gone.stdout + gone.stderr


def test_the_wheel_ships_every_plugin_file() -> None:
    import tomllib

    root = Path(plugin_dir()).parents[1]
    data = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["codexbridge"]
    package = root / "codexbridge"
    files = [str(p.relative_to(package)) for p in Path(plugin_dir()).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    missed = [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)]
    assert files and missed == []
    assert os.access(Path(plugin_dir()) / "bin" / "codexbridge-plugin", os.X_OK)


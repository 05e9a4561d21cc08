"""The docs a new user reads first say what the code does today.

- docs/mcp.md's result table is the `data` of a real call of each tool
  (tests/support/mcp_shapes.py renders it; `scripts/render-docs` writes it);
- nothing says role claude "needs `codexbridge serve`" or that `claude_message_send`
  only ever queues;
- README's "Use it for real" block names only commands that exist, installs the way
  that works in a clone, and leads with codex's own daemon.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click

from codexbridge.cli.app import cli
from tests.support.mcp_shapes import table

ROOT = Path(__file__).parents[3]
BLOCK = re.compile(r"<!-- generated: mcp-results -->\n(.*?)<!-- end generated -->", re.S)


def read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def test_mcp_result_table_is_what_the_tools_return() -> None:
    found = BLOCK.search(read("docs/mcp.md"))
    assert found, "docs/mcp.md has no mcp-results block"
    assert found.group(1) == table(), "docs/mcp.md is stale: run scripts/render-docs"


def test_claude_message_send_is_documented_live_or_queued() -> None:
    doc = read("docs/mcp.md")
    assert '`delivery: "queued"`' not in doc
    assert '`delivery` is `"live"`' in doc and '`"queued"`' in doc
    assert "`deliveryReason`" in doc and "`NO_REPLY_MAILBOX`" in doc


def test_no_page_says_mcp_still_needs_serve() -> None:
    for name in ("README.md", "SETUP.md", "docs/mcp.md", "docs/fitting-in.md"):
        text = " ".join(read(name).split())
        assert "still needs `codexbridge serve`" not in text, name
        assert "still needed for Claude → Codex, and the Stop hook" not in text, name
        assert "pipx install ./codexbridge" not in text, name


def _section(text: str, title: str) -> str:
    start = text.index(title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def _commands(block: str) -> list[list[str]]:
    """Each `codexbridge …` line of the fenced shell blocks, as words (comments cut)."""
    lines: list[list[str]] = []
    for fenced in re.findall(r"```bash\n(.*?)```", block, re.S):
        for line in fenced.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "codexbridge":
                lines.append(words[1:])
    return lines


def _exists(words: list[str]) -> bool:
    group: click.Command = cli
    ctx = click.Context(cli)
    for word in words:
        if word.startswith("-") or not isinstance(group, click.Group):
            return True
        sub = group.get_command(ctx, word)
        if sub is None:
            return False
        group = sub
    return True


def test_readme_use_it_for_real_runs_as_written() -> None:
    block = _section(read("README.md"), "## Use it for real")
    commands = _commands(block)
    assert len(commands) >= 8, commands
    for words in commands:
        assert _exists(words), f"README names `codexbridge {' '.join(words)}`: no such command"
    assert "pipx install .  " in block  # the clone's own path: `./codexbridge` is not a project
    lines = block.splitlines()
    tui = next(i for i, line in enumerate(lines) if line.startswith("codex -C"))
    serve = next(i for i, line in enumerate(lines) if "codexbridge serve" in line)
    assert tui < serve  # codex's own daemon first, serve the alternative
    for first in ("./scripts/demo", "./scripts/test"):  # the README still opens with them
        assert read("README.md").index(first) < read("README.md").index("## Use it for real")

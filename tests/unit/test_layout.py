"""The shape of the package, kept by tests: rooms whose imports point down (the
import-linter contract), a pure core, generated protocol types that match schemas/,
short functions, and package files that import nothing."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "codexbridge"
# What the sans-I/O core must not touch: sockets, event loops, processes, files, env.
IO_MODULES = {"asyncio", "socket", "subprocess", "websockets", "threading", "shutil"}
IO_CALLS = re.compile(r"(^|[^.\w])open\(|os\.environ|os\.getenv|\bPath\(")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("path", sorted((PACKAGE / "codex" / "protocol").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_protocol_does_no_io(path: Path) -> None:
    assert not (_imports(path) & IO_MODULES), path
    assert not IO_CALLS.search(path.read_text(encoding="utf-8")), path


def test_rooms_point_down() -> None:
    # the import-linter contract in pyproject.toml: no cycle between rooms, nothing
    # imports a front end but the CLI (function-local imports included)
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 kept, 0 broken" in done.stdout


def test_generated_protocol_matches_schemas() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen-protocol"), "--check"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


# Modules are as long as their one concern needs (the old 350-line cap is withdrawn:
# ../shared/STYLE.md); functions stay short. These grew long before the rule and may not
# grow further.
LONG_FUNCTIONS: dict[tuple[str, str], int] = {}  # none: every function is short
FUNCTION_LINES = 60


def test_functions_stay_short() -> None:
    long = {}
    for path in PACKAGE.rglob("*.py"):
        if "generated" in path.parts:
            continue
        name = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONG_FUNCTIONS.get((name, node.name), FUNCTION_LINES):
                    long[(name, node.name)] = lines
    assert long == {}


@pytest.mark.parametrize("package", ["codexbridge", "codexbridge.codex", "codexbridge.host",
                                     "codexbridge.inbox", "codexbridge.messages",
                                     "codexbridge.claude",
                                     "codexbridge.codex.protocol",
                                     "codexbridge.handoff"])
def test_package_files_import_nothing(package: str) -> None:
    """The Stop hook and `talk say` start through these: an import here is paid on
    every Claude stop."""
    path = PACKAGE.joinpath(*package.split(".")[1:], "__init__.py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in imports)

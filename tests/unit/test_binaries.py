"""Finding codex: CODEX_BRIDGE_CODEX_BIN, then PATH, then the pinned folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codexbridge.errors import BinaryNotFoundError
from codexbridge.host import binaries


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho codex-cli 0.169.0\n")
    path.chmod(0o755)
    return path


def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "tools"
    triple = binaries._codex_triple()
    assert triple is not None
    pinned = _exe(tools / "codex/node_modules/@openai/codex-x/vendor" / triple / "bin/codex")
    on_path = _exe(tmp_path / "bin" / "codex")
    explicit = _exe(tmp_path / "explicit" / "codex")
    monkeypatch.setenv("CODEX_BRIDGE_TOOLS_DIR", str(tools))
    monkeypatch.setenv("PATH", f"{on_path.parent}{os.pathsep}/usr/bin")
    monkeypatch.setenv("CODEX_BRIDGE_CODEX_BIN", str(explicit))
    assert binaries.find_codex() == str(explicit)
    monkeypatch.delenv("CODEX_BRIDGE_CODEX_BIN")
    assert binaries.find_codex() == str(on_path)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert binaries.find_codex() == str(pinned)


def test_nothing_found_names_the_install_command(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_BRIDGE_TOOLS_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CODEX_BRIDGE_CODEX_BIN", raising=False)
    with pytest.raises(BinaryNotFoundError) as info:
        binaries.find_codex()
    assert "scripts/install-binaries" in info.value.message
    monkeypatch.setenv("CODEX_BRIDGE_CODEX_BIN", str(tmp_path / "missing"))
    with pytest.raises(BinaryNotFoundError, match="CODEX_BRIDGE_CODEX_BIN"):
        binaries.find_codex()

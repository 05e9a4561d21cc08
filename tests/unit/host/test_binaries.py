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
    monkeypatch.delenv("CODEX_BRIDGE_PINNED_CODEX", raising=False)
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


# --- the version matrix ---------------------------------------------------------------------

LOCK = Path(__file__).resolve().parents[3] / "scripts" / "binaries.lock"


def _lock() -> dict[str, str]:
    out = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def test_the_lock_and_the_package_name_the_same_supported_range() -> None:
    # the one test that compares version strings on purpose: the pin itself
    lock = _lock()
    assert lock["CODEX_PIN"] == binaries.CODEX_VERSION
    assert lock["CODEX_OLDEST"] == binaries.CODEX_OLDEST
    assert lock["CLAUDE_PIN"] == binaries.CLAUDE_VERSION
    assert lock["CLAUDE_OLDEST"] == binaries.CLAUDE_OLDEST
    for key in ("CODEX", "CLAUDE"):
        assert binaries.version_fit(lock[f"{key}_NEWEST"], lock[f"{key}_OLDEST"],
                                    lock[f"{key}_PIN"]) is not binaries.VersionFit.OLDER


def test_a_matrix_leg_picks_its_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    triple = binaries._codex_triple()
    assert triple is not None
    vendor = "node_modules/@openai/codex-x/vendor"
    pin = _exe(tmp_path / "codex" / vendor / triple / "bin/codex")
    old = _exe(tmp_path / "codex-0.1.0" / vendor / triple / "bin/codex")
    monkeypatch.setenv("CODEX_BRIDGE_TOOLS_DIR", str(tmp_path))
    monkeypatch.delenv("CODEX_BRIDGE_PINNED_CODEX", raising=False)
    assert binaries.pinned_codex() == pin
    monkeypatch.setenv("CODEX_BRIDGE_PINNED_CODEX", binaries.CODEX_VERSION)
    assert binaries.pinned_codex() == pin
    monkeypatch.setenv("CODEX_BRIDGE_PINNED_CODEX", "0.1.0")
    assert binaries.pinned_codex() == old
    monkeypatch.setenv("CODEX_BRIDGE_PINNED_CODEX", "0.2.0")  # not installed
    assert binaries.pinned_codex() is None


@pytest.mark.parametrize(("version", "fit"), [
    ("1.2.3", binaries.VersionFit.TESTED), ("1.4.0", binaries.VersionFit.TESTED),
    ("1.3.9", binaries.VersionFit.IN_RANGE), ("1.4.1", binaries.VersionFit.NEWER),
    ("2.0.0", binaries.VersionFit.NEWER), ("1.2.2", binaries.VersionFit.OLDER),
    ("1.10.0", binaries.VersionFit.NEWER),  # numbers, not text: 10 > 4
    ("1.4.0-alpha.1", binaries.VersionFit.UNKNOWN),
])
def test_version_fit(version: str, fit: binaries.VersionFit) -> None:
    assert binaries.version_fit(version, "1.2.3", "1.4.0") is fit
    assert binaries.supported_range("1.2.3", "1.4.0") == "1.2.3 – 1.4.0"
    assert binaries.supported_range("1.4.0", "1.4.0") == "1.4.0"


# --- one loopback answer ------------------------------------------------------------------

@pytest.mark.parametrize(("url", "local"), [
    ("ws://127.0.0.1:8787", True), ("ws://127.1.2.3:1", True), ("ws://localhost:1", True),
    ("ws://[::1]:8787", True), ("wss://example.com:443", False), ("ws://10.0.0.1:1", False),
    ("ws://[::1", False),  # does not parse: not loopback, and no traceback
])
def test_loopback_urls(url: str, local: bool) -> None:
    from codexbridge.host.loopback import loopback_url

    assert loopback_url(url) is local

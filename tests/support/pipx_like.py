"""codexbridge installed into a private HOME the way `pipx install <checkout>` does it —
so that `pipx uninstall` can be done to it too.

pipx makes a venv `~/.local/share/pipx/venvs/codexbridge`, installs the package into it
(the Claude Code plugin ships inside: `site-packages/codexbridge/claude_plugin`), and links
`~/.local/bin/codexbridge` to the venv's console script; `pipx uninstall codexbridge`
deletes both. Here the wheel is built from a copy of this checkout, offline (no build
isolation, no index: the dev extra brings setuptools), and installed with `--no-deps`
into a venv whose dependencies come from the checkout's own .venv (a `.pth` line), so
nothing is fetched. pipx itself is not needed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str], cwd: Path) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def build_wheel(tmp: Path) -> Path:
    """The checkout's wheel, built in `tmp` (the checkout gets no build/ or dist/)."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "codexbridge", src / "codexbridge",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--no-index", "--quiet", "-w", str(tmp / "dist"), str(src)], tmp)
    [wheel] = (tmp / "dist").glob("codexbridge-*.whl")
    return wheel


@dataclass
class PipxInstall:
    home: Path
    venv: Path
    site: Path  # the venv's site-packages
    link: Path  # ~/.local/bin/codexbridge

    @property
    def command(self) -> Path:
        return self.venv / "bin" / "codexbridge"

    @property
    def plugin_dir(self) -> Path:
        return self.site / "codexbridge" / "claude_plugin"

    def uninstall(self) -> None:
        """`pipx uninstall codexbridge`: the venv and the link go, nothing else."""
        shutil.rmtree(self.venv)
        self.link.unlink()


def pipx_install(home: Path, wheel: Path) -> PipxInstall:
    venv = home / ".local" / "share" / "pipx" / "venvs" / "codexbridge"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], home)
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, timeout=60, check=True)
    installed = PipxInstall(home, venv, Path(site.stdout.strip()),
                            home / ".local" / "bin" / "codexbridge")
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
          "--no-deps", "--no-index", "--ignore-installed", "--quiet", str(wheel)], home)
    assert installed.command.is_file()
    # The dependencies: the checkout's .venv (this interpreter's), after the venv's own —
    # written after the install, or pip would take the checkout's codexbridge for it.
    Path(installed.site, "zz-codexbridge-deps.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    installed.link.parent.mkdir(parents=True, exist_ok=True)
    installed.link.symlink_to(installed.command)
    return installed

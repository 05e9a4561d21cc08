"""The Work section: what git shows since the checkpoint recorded at the last handoff.

Deterministic, no summarising: `git status --porcelain`, the commits since the
checkpoint and `git diff --stat <checkpoint>` (the working tree against it, so what is
not committed yet shows too). The first handoff to a target has no checkpoint: it shows
the uncommitted changes and the latest commits. `git_work` runs git (read-only, no
optional locks, a timeout each); `render` is pure and bounded.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

GIT_TIMEOUT = 5.0
MAX_LINES = 40  # per list: a rename storm must not crowd out the conversation
RECENT = 5


@dataclass
class Work:
    repo: bool = False
    head: str | None = None
    branch: str | None = None
    checkpoint: str | None = None  # the recorded one
    checkpoint_known: bool = False  # still in this repository's history
    commits: list[str] = field(default_factory=list)
    diffstat: list[str] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    error: str | None = None


def _git(project: str, *args: str, timeout: float) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "LC_ALL": "C",
                "GIT_TERMINAL_PROMPT": "0"})
    try:
        done = subprocess.run(["git", "-C", project, *args], capture_output=True,
                              text=True, errors="replace", timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, str(exc)
    return done.returncode, done.stdout if done.returncode == 0 else done.stderr


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def git_work(project: str, checkpoint: str | None, timeout: float = GIT_TIMEOUT) -> Work:
    work = Work(checkpoint=checkpoint)
    code, out = _git(project, "rev-parse", "--is-inside-work-tree", timeout=timeout)
    if code != 0 or out.strip() != "true":
        work.error = None if code > 0 else (out.strip() or None)
        return work
    work.repo = True
    code, out = _git(project, "rev-parse", "HEAD", timeout=timeout)
    work.head = out.strip() if code == 0 else None
    code, out = _git(project, "rev-parse", "--abbrev-ref", "HEAD", timeout=timeout)
    work.branch = out.strip() if code == 0 else None
    code, out = _git(project, "status", "--porcelain=v1", timeout=timeout)
    work.status = _lines(out) if code == 0 else []
    if checkpoint:
        code, _ = _git(project, "cat-file", "-e", f"{checkpoint}^{{commit}}", timeout=timeout)
        work.checkpoint_known = code == 0
    if work.checkpoint_known:
        code, out = _git(project, "log", "--oneline", "--no-decorate", "-n", "200",
                         f"{checkpoint}..HEAD", timeout=timeout)
        work.commits = _lines(out) if code == 0 else []
        code, out = _git(project, "diff", "--stat=100", str(checkpoint), timeout=timeout)
    else:
        if work.head:
            code, out = _git(project, "log", "--oneline", "--no-decorate", "-n", str(RECENT),
                             timeout=timeout)
            work.commits = _lines(out) if code == 0 else []
        code, out = _git(project, "diff", "--stat=100", "HEAD", timeout=timeout) \
            if work.head else (0, "")
    work.diffstat = _lines(out) if code == 0 else []
    return work


def _bounded(lines: list[str], limit: int = MAX_LINES) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit - 1], f"… and {len(lines) - limit + 1} more"]


def render(work: Work, files: list[str]) -> str:
    """The Work section's text. `files`: what the agents' tools changed (names only)."""
    out: list[str] = []
    if not work.repo:
        out.append("not a git repository" + (f" ({work.error})" if work.error else ""))
    else:
        head = (work.head or "no commit yet")[:12]
        at = f"branch {work.branch} at {head}" if work.branch else f"at {head}"
        if work.checkpoint and work.checkpoint_known:
            out.append(f"git: {at}; checkpoint {work.checkpoint[:12]} (the previous handoff)")
            out.append(f"commits since the checkpoint: {len(work.commits) or 'none'}")
        elif work.checkpoint:
            out.append(f"git: {at}; the checkpoint {work.checkpoint[:12]} is no longer in "
                       "the history (rebased?): showing the latest commits")
            out.append("latest commits:")
        else:
            out.append(f"git: {at}; no checkpoint yet (first handoff): the latest commits")
        out += [f"  {c}" for c in _bounded(work.commits)]
        against = work.checkpoint[:12] if work.checkpoint_known and work.checkpoint else "HEAD"
        if work.diffstat:
            out.append(f"changed (git diff --stat {against}):")
            out += [f"  {d.strip()}" for d in _bounded(work.diffstat)]
        out.append("uncommitted (git status --porcelain):" if work.status
                   else "nothing uncommitted")
        out += [f"  {s}" for s in _bounded(work.status)]
    if files:
        out.append("files the agents' tools edited: " + ", ".join(_bounded(files, 30)))
    return "\n".join(out)

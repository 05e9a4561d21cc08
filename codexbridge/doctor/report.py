"""One doctor row, and how a list of rows is judged and printed. Pure."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field


class Status(enum.StrEnum):
    """A row's verdict; the order of `STATUSES` is the summary line's."""

    FAIL = "FAIL"  # the bridge cannot work until this is fixed
    WARN = "WARN"  # works, but not the way you probably expect (or the check itself failed)
    OK = "OK"  # checked, and fine
    INFO = "INFO"  # worth knowing; nothing to fix


OK, WARN, FAIL, INFO = Status.OK, Status.WARN, Status.FAIL, Status.INFO
STATUSES = tuple(Status)


@dataclass
class Check:
    name: str
    status: Status
    finding: str
    fix: str | None = None
    # What the row looked at, for `--json`: only ever serialized.
    details: Mapping[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "status": self.status, "finding": self.finding,
                "fix": self.fix, "details": self.details}


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def check_failed(name: str, exc: BaseException) -> Check:
    """A check that raised is a WARN naming the error, never a traceback."""
    return Check(name, WARN, f"the check itself failed: {type(exc).__name__}: {exc}",
                 "run again; if it persists, report it with this line",
                 {"error": f"{type(exc).__name__}: {exc}"})


def healthy(checks: list[Check]) -> bool:
    return not any(c.status == FAIL for c in checks)


def counts(checks: list[Check]) -> dict[str, int]:
    return {s.value: sum(1 for c in checks if c.status == s) for s in STATUSES}


def as_json(checks: list[Check]) -> dict[str, object]:
    return {"ok": healthy(checks), "counts": counts(checks),
            "checks": [c.as_dict() for c in checks]}


def render_text(checks: list[Check]) -> str:
    """Aligned rows, a `fix:` line under each row that has one, and a summary line."""
    width = max((len(c.name) for c in checks), default=0)
    lines = []
    for c in checks:
        lines.append(f"{c.status:<4}  {c.name:<{width}}  {c.finding}")
        if c.fix:
            lines.append(f"{'':<4}  {'':<{width}}  fix: {c.fix}")
    n = counts(checks)
    summary = ", ".join(f"{n[s]} {s}" for s in STATUSES)
    verdict = ("nothing blocks the bridge" if healthy(checks)
               else "the FAIL rows block the bridge")
    lines.append("")
    lines.append(f"{summary}: {verdict}")
    return "\n".join(lines)

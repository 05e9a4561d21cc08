"""Hypothesis profiles for the bad-input suite.

`ci` (chosen when CI=true): a bounded, derandomised run — the same examples on every
run, so a CI failure reproduces — with no example database. `dev` (otherwise): more
examples, random, failures remembered under .pytest_cache/ (git-ignored) and replayed
first next time. `HYPOTHESIS_PROFILE=NAME` picks one explicitly.

Deadlines are off in both: the examples touch the file system, and a loaded CI machine
must not turn a slow write into a failure. The function-scoped fixture check is off
because every test in tests/ gets the autouse `_isolated_state` home; tests here that
write files make their own directory per example.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

_QUIET = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
          HealthCheck.data_too_large]

settings.register_profile("ci", max_examples=50, deadline=None, derandomize=True,
                          database=None, print_blob=True, suppress_health_check=_QUIET)
settings.register_profile(
    "dev", max_examples=100, deadline=None, suppress_health_check=_QUIET,
    database=DirectoryBasedExampleDatabase(
        str(Path(__file__).resolve().parents[2] / ".pytest_cache" / "hypothesis")))

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                      or ("ci" if os.environ.get("CI", "").lower() == "true" else "dev"))

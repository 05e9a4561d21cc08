"""Checking a message against a codex schema with jsonschema, errors named by path.

A wrong answer shape to a server request is not a refusal but a schema error that can
leave codex waiting (docs/protocol-notes.md, "Answers"): the doctor checks codexbridge's
answers against the schema the installed codex generates (doctor/compat.py), and the
test suite's schema guard (tests/support/schemas.py) every message we put on the wire.
`jsonschema` is imported only when the first check runs: nothing here costs anything on
`talk say`'s start-up.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...errors import SchemaViolation

if TYPE_CHECKING:
    # jsonschema ships no type stubs; "unused-ignore" keeps mypy quiet if they appear.
    from jsonschema.exceptions import (  # type: ignore[import-untyped,unused-ignore]
        ValidationError,
    )
    from jsonschema.protocols import Validator  # type: ignore[import-untyped,unused-ignore]


def _path(prefix: str, error: ValidationError) -> str:
    out = prefix
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _describe(errors: Iterable[ValidationError], prefix: str) -> list[tuple[str, str]]:
    from jsonschema.exceptions import (  # type: ignore[import-untyped,unused-ignore]
        best_match,
        relevance,
    )

    out: list[tuple[str, str]] = []
    for error in sorted(errors, key=relevance):
        message = error.message
        if error.context:
            # oneOf/anyOf: say which alternative came closest, and where it failed.
            closest = best_match(error.context)
            if closest is not None:
                message += f" (closest: at {_path(prefix, closest)}: {closest.message})"
        out.append((_path(prefix, error), message))
    return out


def validator(schema: object) -> Validator:
    """A Draft 7 validator (codex's generator writes draft-07) over `schema`."""
    from jsonschema import Draft7Validator  # type: ignore[import-untyped,unused-ignore]

    made: Validator = Draft7Validator(schema)
    return made


def check(checker: Validator, instance: object, what: str, prefix: str = "$") -> None:
    """SchemaViolation(`what`, [(path, message)…]) unless `instance` fits."""
    errors = _describe(checker.iter_errors(instance), prefix)
    if errors:
        raise SchemaViolation(what, errors)

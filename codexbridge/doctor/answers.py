"""Would the installed codex take the answers codexbridge gives its server requests?

codexbridge answers every approval and server request codex sends during a bridge turn
(`protocol/approvals.TABLE`: the fail-closed refusal when no human answers in time, and
the accept of `--approvals accept`). codex waits for a valid answer: one it cannot parse
leaves the turn hanging. So doctor validates each of those answers with jsonschema
against the `*Response.json` the installed codex just generated — the answers as the code
builds them today, not a description of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import SchemaViolation
from ..host.schemas import bundle_loader
from ..protocol.approvals import TABLE
from ..protocol.schema import SchemaSet


def check_answers(directory: Path) -> tuple[int, list[dict[str, Any]]]:
    """(answers checked, problems) for the bundle a codex wrote into `directory`. A server
    request that codex no longer sends is not checked (it cannot ask it)."""
    read = bundle_loader(directory)

    def load(name: str) -> dict[str, Any]:
        doc = read(name)
        if doc is None:  # an empty schema would let any answer pass
            raise FileNotFoundError(f"{name} is missing from the schema codex generated")
        return doc

    schemas = SchemaSet(load)
    sends = schemas.server_request_responses()
    checked, problems = 0, []
    for method, rule in sorted(TABLE.items()):
        if method not in sends:
            continue
        for how, build in (("fail-closed", rule.fail_closed), ("accept", rule.accept)):
            if build is None:
                continue  # refused as a JSON-RPC error: no result to check
            checked += 1
            try:
                schemas.validate_server_request_answer(method, build({}))
            except SchemaViolation as exc:
                problems.append({"method": method, "answer": how,
                                 "errors": [f"{p}: {m}" for p, m in exc.errors[:3]]})
            except (OSError, ValueError) as exc:  # its schema file is missing or damaged
                problems.append({"method": method, "answer": how, "errors": [str(exc)]})
    return checked, problems

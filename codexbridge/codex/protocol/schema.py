"""Checking what codexbridge sends against the schema codex 0.169.0 generated.

`schemas/` (at the repository root) holds the output of `codex app-server
generate-json-schema`. A wrong answer shape to a server request is not a refusal but a
schema error that can leave codex waiting (docs/protocol-notes.md, "Answers"), so the
tests validate every request, notification and answer we put on the wire — the schema
guard in `tests/support/` observes the client's transport with `validate_outgoing`.

Pure: a `SchemaSet` is built on a loader (schema file name → parsed JSON) that the
caller supplies — `codexbridge.codex.schemas.repo_schemas()` reads `schemas/`. Documents
and validators are built once per set, and `jsonschema` is imported only when the first
validator is: nothing here costs anything on `talk say`'s start-up.

Where a schema file is a `oneOf` over methods (ClientRequest, ClientNotification), the
branch whose `method` enum matches is picked first, so an error names the exact field
rather than "not valid under any of the given schemas".
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...errors import SchemaViolation
from .shapes import branches, definitions, params_of, ref_name

if TYPE_CHECKING:
    # jsonschema ships no type stubs; "unused-ignore" keeps mypy quiet if they appear.
    from jsonschema.exceptions import (  # type: ignore[import-untyped,unused-ignore]
        ValidationError,
    )
    from jsonschema.protocols import Validator  # type: ignore[import-untyped,unused-ignore]

    from ...jsontypes import JsonObject

CLIENT_REQUEST = "ClientRequest.json"
CLIENT_NOTIFICATION = "ClientNotification.json"
SERVER_REQUEST = "ServerRequest.json"
ERROR_ANSWER = "JSONRPCError.json"

Loader = Callable[[str], object]  # a schema file's name → its parsed JSON


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


def _check(validator: Validator, instance: object, what: str, prefix: str = "$") -> None:
    errors = _describe(validator.iter_errors(instance), prefix)
    if errors:
        raise SchemaViolation(what, errors)


def _method_of(message: object, kind: str) -> str:
    if not isinstance(message, dict):
        raise SchemaViolation(kind, [("$", f"{type(message).__name__} is not an object")])
    match message:
        case {"method": str(method)}:
            return method
    raise SchemaViolation(kind, [("$.method", "missing or not a string")])


class SchemaSet:
    """Validators over one schema bundle; `loader(name)` returns a parsed schema file."""

    def __init__(self, loader: Loader) -> None:
        self._loader = loader
        self.load = functools.cache(self._load)
        self._branches = functools.cache(lambda name: branches(self.load(name)))
        self._validator = functools.cache(self._validator_of)
        self._stems = functools.cache(self._stems_of)

    def _load(self, name: str) -> JsonObject:
        doc = self._loader(name)
        if not isinstance(doc, dict):
            raise ValueError(f"schema file {name} does not hold a JSON object")
        return doc

    def _validator_of(self, name: str, method: str | None = None) -> Validator:
        """A validator for a whole file, or for one method's branch of it.

        A branch is lifted out with the file's `definitions` beside it, so its
        `#/definitions/…` references still resolve.
        """
        from jsonschema import Draft7Validator  # type: ignore[import-untyped,unused-ignore]

        doc = self.load(name)
        schema: JsonObject = doc
        if method is not None:
            schema = {**self._branches(name)[method], "definitions": definitions(doc)}
        validator: Validator = Draft7Validator(schema)
        return validator

    # -- what the schema holds --------------------------------------------------------

    def client_request_methods(self) -> frozenset[str]:
        return frozenset(self._branches(CLIENT_REQUEST))

    def client_notification_methods(self) -> frozenset[str]:
        return frozenset(self._branches(CLIENT_NOTIFICATION))

    def server_request_methods(self) -> frozenset[str]:
        """Every server→client request method in the (stable) schema."""
        return frozenset(self._branches(SERVER_REQUEST))

    def server_request_stems(self) -> dict[str, str]:
        """Server-request method → its schema stem: `FooParams.json` / `FooResponse.json`.

        ServerRequest.json names each method's params `#/definitions/FooParams`; the
        generator writes the params and result schemas as top-level files under that stem.
        """
        return dict(self._stems())

    def _stems_of(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for method, branch in self._branches(SERVER_REQUEST).items():
            params_name = ref_name(params_of(branch)) or ""
            if params_name.endswith("Params"):
                out[method] = params_name[: -len("Params")]
        return out

    def server_request_responses(self) -> dict[str, str]:
        """Server-request method → the file holding the schema of its result."""
        return {method: f"{stem}Response.json"
                for method, stem in self.server_request_stems().items()}

    # -- validation -------------------------------------------------------------------

    def validate_client_request(self, message: object) -> None:
        """`{"id", "method", "params"}` we send; raises SchemaViolation."""
        method = _method_of(message, "client request")
        if method not in self._branches(CLIENT_REQUEST):
            raise SchemaViolation(f"client request {method!r}",
                                  [("$.method", f"{method!r} is not a client request method")])
        _check(self._validator(CLIENT_REQUEST, method), message, f"client request {method!r}")

    def validate_client_notification(self, message: object) -> None:
        """`{"method", "params"?}` we send (codex knows only `initialized`)."""
        method = _method_of(message, "client notification")
        if method not in self._branches(CLIENT_NOTIFICATION):
            raise SchemaViolation(f"client notification {method!r}",
                                  [("$.method", f"{method!r} is not a client notification")])
        _check(self._validator(CLIENT_NOTIFICATION, method), message,
               f"client notification {method!r}")

    def validate_server_request_answer(self, method: str, result: object) -> None:
        """The `result` we answer a server request `method` with.

        A method outside the stable schema (e.g. the experimental `currentTime/read`) has
        no result schema to check against: that is a SchemaViolation too, so a caller
        decides explicitly to skip it.
        """
        stem = self._stems().get(method)
        if stem is None:
            raise SchemaViolation(f"answer to {method!r}",
                                  [("$", f"{method!r} has no result schema in schemas/")])
        _check(self._validator(f"{stem}Response.json"), result, f"answer to {method!r}",
               "$.result")

    def validate_server_request_params(self, method: str, params: object) -> None:
        """The params of a server request as codex would send it (for test fixtures and
        fakes: a fake server's requests should be ones the real one could send)."""
        stem = self._stems().get(method)
        if stem is None:
            raise SchemaViolation(f"params of {method!r}",
                                  [("$", f"{method!r} is not a server request in schemas/")])
        _check(self._validator(f"{stem}Params.json"), params, f"params of {method!r}",
               "$.params")

    def validate_error_answer(self, message: object) -> None:
        """`{"id", "error": {"code", "message", "data"?}}` we answer a server request with."""
        _check(self._validator(ERROR_ANSWER), message, "error answer")

    def validate_outgoing(self, message: object,
                          answered_method: Callable[[int | str], str | None] = lambda _id: None,
                          ) -> None:
        """Any message the client puts on the wire, classified like an incoming one.

        `answered_method(id)` names the server request an answer replies to (the client
        saw it arrive); when it cannot, or the method has no result schema, only the
        envelope of a result answer is checked.
        """
        if not isinstance(message, dict):
            raise SchemaViolation("outgoing message",
                                  [("$", f"{type(message).__name__} is not an object")])
        if "method" in message:
            if "id" in message:
                self.validate_client_request(message)
            else:
                self.validate_client_notification(message)
            return
        if "error" in message:
            self.validate_error_answer(message)
            return
        match message:
            case {"id": int() | str() as rid, "result": result} if not isinstance(rid, bool):
                method = answered_method(rid)
                if method is not None and method in self._stems():
                    self.validate_server_request_answer(method, result)
                return
        raise SchemaViolation("outgoing message",
                              [("$", "neither a request, a notification nor an answer")])

"""Pydantic models for the subset of codex 0.169.0 results codexbridge reads.

Shapes follow `schemas/` (the v2 bundle's Thread, Turn, ThreadItem, …), but parsing is
deliberately forgiving, because the protocol drifts (reference §5, §13.11):

  * unknown fields are kept (`extra="allow"`), never rejected — experimental fields
    arrive even when not asked for;
  * a known field of an unexpected type falls back to its default (None, "", []) rather
    than failing the whole result: one odd field must not hide a thread from `talk list`.

Fields use snake_case in Python and camelCase on the wire (either name is accepted).

Importing pydantic costs tens of milliseconds, so this module is imported lazily by the
commands that read history or list threads — never on `talk say`'s start-up path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic.alias_generators import to_camel


def _or_default(default: Callable[[], Any]) -> WrapValidator:
    """Validate normally; on a type mismatch use `default()` instead of failing."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return default()

    return WrapValidator(validate)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


OptStr = Annotated[StrictStr | None, _or_default(lambda: None)]
OptInt = Annotated[StrictInt | None, _or_default(lambda: None)]
# Ids and other text we always print: whatever arrives becomes a string.
Text = Annotated[str, BeforeValidator(_text)]


class WireModel(BaseModel):
    """Base: camelCase aliases, unknown fields kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel)


def _status_object(value: Any) -> Any:
    # Thread status is `{"type": ...}`; a bare value is taken as the type.
    if value is None or isinstance(value, dict):
        return value
    return {"type": value}


def _label(value: Any) -> str | None:
    return str(value) if value else None


class ThreadStatus(WireModel):
    """`{"type": "idle"|"notLoaded"|"systemError"}`, or `{"type": "active", "activeFlags"}`."""

    type: Annotated[str | None, BeforeValidator(_label)] = None
    active_flags: Annotated[list[Any], _or_default(list)] = Field(default_factory=list)

    @property
    def label(self) -> str:
        """As `talk list` prints it: `idle`, `active(waitingOnApproval)`, `unknown`…"""
        label = self.type or "unknown"
        if self.active_flags:
            label += "(" + ",".join(str(f) for f in self.active_flags) + ")"
        return label


class TurnError(WireModel):
    message: Text = ""
    codex_error_info: Any = None
    additional_details: OptStr = None


class ThreadItem(WireModel):
    """One item (`userMessage`, `agentMessage`, `commandExecution`, …); the rest is extra."""

    type: OptStr = None
    id: OptStr = None

    def as_dict(self) -> dict[str, Any]:
        """The item as it arrived on the wire (camelCase keys, no added defaults)."""
        return self.model_dump(by_alias=True, exclude_unset=True)


class Turn(WireModel):
    id: Text = ""
    status: OptStr = None  # completed | interrupted | failed | inProgress
    error: Annotated[TurnError | None, _or_default(lambda: None)] = None
    items: Annotated[list[ThreadItem], _or_default(list)] = Field(default_factory=list)
    started_at: OptInt = None
    completed_at: OptInt = None


class Thread(WireModel):
    id: Text = ""
    name: OptStr = None
    cwd: OptStr = None
    status: Annotated[ThreadStatus | None, BeforeValidator(_status_object)] = None
    ephemeral: Annotated[bool, BeforeValidator(bool)] = False
    thread_source: OptStr = None
    preview: Annotated[str, BeforeValidator(lambda v: str(v or ""))] = ""
    updated_at: OptInt = None
    turns: Annotated[list[Turn], _or_default(list)] = Field(default_factory=list)

    @property
    def status_label(self) -> str:
        return self.status.label if self.status is not None else "unknown"


def _strings(value: Any) -> Any:
    # Keep the ids that are ids; one odd entry must not lose the others.
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else value


class ThreadReadResult(WireModel):
    """`thread/read` → `{thread, readState}`."""

    thread: Thread


class ThreadLoadedListResult(WireModel):
    """`thread/loaded/list` → `{data: [threadId…], nextCursor}`."""

    data: Annotated[list[str], BeforeValidator(_strings)] = Field(default_factory=list)
    next_cursor: OptStr = None


def _objects(value: Any) -> Any:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else value


class TurnsListResult(WireModel):
    """`thread/turns/list` → `{data: [Turn…], nextCursor, backwardsCursor}`."""

    data: Annotated[list[Turn], BeforeValidator(_objects)] = Field(default_factory=list)
    next_cursor: OptStr = None
    backwards_cursor: OptStr = None


class ItemEntry(WireModel):
    """One `thread/items/list` entry: `{turnId, item, startedAtMs, completedAtMs}`."""

    turn_id: OptStr = None
    item: ThreadItem
    started_at_ms: OptInt = None
    completed_at_ms: OptInt = None


def _entries(value: Any) -> Any:
    # An entry without an item object carries nothing to show; skip it, keep the rest.
    if not isinstance(value, list):
        return value
    return [v for v in value if isinstance(v, dict) and isinstance(v.get("item"), dict)]


class ItemsListResult(WireModel):
    """`thread/items/list` → `{data: [ItemEntry…], nextCursor, backwardsCursor}`."""

    data: Annotated[list[ItemEntry], BeforeValidator(_entries)] = Field(default_factory=list)
    next_cursor: OptStr = None
    backwards_cursor: OptStr = None


class TurnStartResult(WireModel):
    """`turn/start` → `{turn: {id, status: "inProgress", …}}`."""

    turn: Turn


class InitializeResult(WireModel):
    """`initialize` → `{userAgent, codexHome, platformFamily, platformOs}`."""

    user_agent: OptStr = None
    codex_home: OptStr = None
    platform_family: OptStr = None
    platform_os: OptStr = None

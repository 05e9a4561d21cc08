"""Tolerant building blocks for the generated models in `protocol/generated/models.py`.

The protocol drifts (docs/protocol-notes.md, "Experimental fields" and "Drift"), so the
models parse forgivingly:

  * unknown fields are kept (`extra="allow"`), never rejected — experimental fields
    arrive even when not asked for;
  * a known field of an unexpected type falls back to its default (None, "", [])
    rather than failing the whole result: one odd field must not hide a thread;
  * a list keeps the elements that parse and drops the ones that do not.

Fields are snake_case in Python and camelCase on the wire (either name is accepted).
The mixins add the few derived views the code reads (a status label, an item as it
arrived). Importing pydantic costs tens of milliseconds, so nothing on `talk say`'s
start-up path imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic.alias_generators import to_camel

from .threads import status_label

T = TypeVar("T")


def or_default(default: Callable[[], Any]) -> WrapValidator:
    """Validate normally; on a type mismatch use `default()` instead of failing."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return default()

    return WrapValidator(validate)


def tolerant_items(item_type: Any) -> BeforeValidator:
    """Keep the list elements that validate as `item_type`; a non-list becomes []."""
    adapter: TypeAdapter[Any] | None = None

    def keep(value: Any) -> Any:
        nonlocal adapter
        if not isinstance(value, list):
            return []
        if adapter is None:
            adapter = TypeAdapter(item_type)
        out = []
        for element in value:
            try:
                out.append(adapter.validate_python(element))
            except ValidationError:
                continue
        return out

    return BeforeValidator(keep)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _status_object(value: Any) -> Any:
    # A status is `{"type": ...}`; a bare value is taken as the type, garbage as none.
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        return {"type": value}
    return None


def _label(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


OptStr = Annotated[StrictStr | None, or_default(lambda: None)]
OptInt = Annotated[StrictInt | None, or_default(lambda: None)]
# Ids and other text we always print: whatever arrives becomes a string.
Text = Annotated[str, BeforeValidator(_text)]
Flag = Annotated[bool, BeforeValidator(bool)]
Label = Annotated[str | None, BeforeValidator(_label)]
Preview = Annotated[str, BeforeValidator(lambda v: str(v or ""))]
StatusObject = BeforeValidator(_status_object)


class WireModel(BaseModel):
    """Base: camelCase aliases, unknown fields kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel)


class ThreadStatusViews:
    """`{"type": "idle"|"notLoaded"|"systemError"}`, or `{"type": "active", "activeFlags"}`."""

    type: str | None
    active_flags: list[str]

    @property
    def label(self) -> str:
        """As `talk list` prints it: `idle`, `active(waitingOnApproval)`, `unknown`…"""
        return status_label(self.type, tuple(self.active_flags))


class ThreadViews:
    status: Any

    @property
    def status_label(self) -> str:
        return str(self.status.label) if self.status is not None else "unknown"


class ThreadItemViews:
    def as_dict(self) -> dict[str, Any]:
        """The item as it arrived on the wire (camelCase keys, no added defaults)."""
        assert isinstance(self, BaseModel)
        return self.model_dump(by_alias=True, exclude_unset=True)

"""Reading what codex returns, tolerantly: the one reader of `generated/results.py`.

The protocol drifts (docs/protocol-notes.md, "Experimental fields" and "Drift"), so a
result reads forgivingly, never failing as a whole:

  * unknown fields are ignored — experimental fields arrive even when not asked for —
    but an item or an error that is shown or stored keeps the object as it arrived
    (`Kept.raw`, `as_dict()`);
  * a field of an unexpected type reads as its default (None, "", False, ()): one odd
    field must not hide a thread;
  * a list keeps the elements that read and drops the others.

Each generated record names its fields once, as data: `_wire` lists (attribute, wire
key, reader), a reader being a narrowing below or in jsontypes (`opt_str`, `strs`…),
or `one(Record)` / `many(Record)` for a nested record. `Record.from_wire` is the one
loop that reads them; the typed `__init__` beside it is what the type checker sees.

The records are plain classes with `__slots__`, not dataclasses: `talk say` imports
them, and defining twenty dataclasses costs ~30 ms there (measured) against ~1 ms. The
mixins add the few derived views the code reads (a status label, who a thread is for).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, TypeVar, dataclass_transform

from ...jsontypes import obj, text
from .generated.enums import ThreadStatusType

if TYPE_CHECKING:
    from typing import Self

    from ...jsontypes import JsonObject, JsonValue
    from .generated.results import ThreadStatus

    Read = Callable[[JsonValue], object]

R = TypeVar("R", bound="Record")
_set = object.__setattr__  # (the records are read-only once made)


class Record:
    """Base of the generated results: read-only, equal when their fields are."""

    __slots__ = ()
    # (attribute, wire key, reader) for each field, in the generated class; a record
    # made by hand (codex/protocol/turn.py's events) has none and is never read from the wire
    _wire: ClassVar[tuple[tuple[str, str, Read], ...]]

    @classmethod
    def from_wire(cls, raw: object) -> Self:
        """Never raises: a missing field or one of the wrong type reads as its default
        (each reader says which); what is not in `_wire` is ignored."""
        w = obj(raw)
        made = object.__new__(cls)
        for name, key, read in cls._wire:
            _set(made, name, read(w.get(key)))
        return made

    def _names(self) -> tuple[str, ...]:
        names: tuple[str, ...] = type(self).__slots__  # the generated class's fields
        return names

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._names())

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Record) and type(other) is type(self)
                and self._values() == other._values())

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._names())
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")


@dataclass_transform(frozen_default=True)
class Made(Record):
    """A record made by hand, never read from the wire (codex/protocol/turn.py's events,
    approvals.py's rules): made positionally, its fields in the order they are annotated."""

    __slots__ = ()
    _order: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls) -> None:
        cls._order = tuple(cls.__annotations__)

    def __init__(self, *values: object) -> None:
        for name, value in zip(self._order, values, strict=True):
            _set(self, name, value)


class Kept(Record):
    """A result that also keeps the object as it arrived."""

    __slots__ = ()
    raw: JsonObject

    @classmethod
    def from_wire(cls, raw: object) -> Self:
        made = super().from_wire(raw)
        _set(made, "raw", obj(raw))
        return made

    def as_dict(self) -> JsonObject:
        """As it arrived on the wire (camelCase keys, nothing added)."""
        return self.raw


def one(record: type[R], before: Callable[[object], object] | None = None,
        ) -> Callable[[object], R | None]:
    """The reader of a nested record: an object reads as `record`, anything else as None.
    `before` adapts the value first (a thread status sent as a bare string)."""
    read = record.from_wire

    def read_one(value: object) -> R | None:
        if before is not None:
            value = before(value)
        return read(value) if isinstance(value, dict) else None
    return read_one


def many(record: type[R], needed: str | None = None) -> Callable[[object], tuple[R, ...]]:
    """The reader of a list of records: its objects read as `record`, anything else in it
    (or a non-list) dropped — and, with `needed`, an element whose `needed` attribute read
    as None (a required object that did not read: a ThreadItemEntry without its item)."""
    read = record.from_wire

    def read_many(value: object) -> tuple[R, ...]:
        if not isinstance(value, list):
            return ()
        made = [read(v) for v in value if isinstance(v, dict)]
        if needed is not None:
            made = [e for e in made if getattr(e, needed) is not None]
        return tuple(made)
    return read_many


def strs(value: object) -> tuple[str, ...]:
    """The strings of a list; anything else in it (or a non-list) is dropped."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def flag(value: object) -> bool:
    """True only when it is `true` (not 1, not "yes")."""
    return value is True


def as_is(value: JsonValue) -> JsonValue:
    """A field kept as it arrived (its shape is codex's business: an error's details)."""
    return value


def text_or_blank(value: object) -> str:
    """Text to show, where any empty value (0, false, [], {}) shows as nothing."""
    return text(value or "")


def label(value: object) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def status_object(value: object) -> object:
    """A thread status is `{"type": ...}`; a bare string is taken as the type."""
    return {"type": value} if isinstance(value, str) else value


def sent(optional: JsonObject) -> JsonObject:
    """The optional request parameters that were given (None: not sent)."""
    return {k: v for k, v in optional.items() if v is not None}


def status_label(kind: str | None, flags: tuple[str, ...] = ()) -> str:
    """`idle`, `active(waitingOnApproval)`, `unknown`…"""
    label = kind or "unknown"
    return label + ("(" + ",".join(flags) + ")" if flags else "")


class ThreadStatusViews:
    """`{"type": "idle"|"notLoaded"|"systemError"}`, or `{"type": "active", "activeFlags"}`."""

    __slots__ = ()
    type: str | None
    active_flags: tuple[str, ...]

    @property
    def state(self) -> ThreadStatusType | None:
        """The type, if this codexbridge knows it (a newer codex's status: None)."""
        return ThreadStatusType.parse(self.type)

    @property
    def label(self) -> str:
        """As `talk list` prints it: `idle`, `active(waitingOnApproval)`, `unknown`…"""
        return status_label(self.type, self.active_flags)


class ThreadViews:
    """What the code asks of a thread (`codex/protocol/threads.py` calls it ThreadInfo)."""

    __slots__ = ()
    id: str
    name: str | None
    cwd: str | None
    status: ThreadStatus | None
    ephemeral: bool
    thread_source: str | None
    preview: str

    @property
    def state(self) -> ThreadStatusType | None:
        return self.status.state if self.status is not None else None

    @property
    def status_label(self) -> str:
        """As `talk list` prints it: `idle`, `active(waitingOnApproval)`, `unknown`…"""
        return self.status.label if self.status is not None else "unknown"

    @property
    def busy(self) -> bool:
        """A turn is running (or waiting on an approval): the thread is `active`."""
        return self.state is ThreadStatusType.ACTIVE

    @property
    def is_user_thread(self) -> bool:
        """A thread a person talks in: not ephemeral, not a title/sub-agent helper."""
        return not self.ephemeral and self.thread_source in (None, "user")

    def as_dict(self) -> JsonObject:
        return {"id": self.id, "name": self.name, "cwd": self.cwd,
                "status": self.status_label, "ephemeral": self.ephemeral,
                "threadSource": self.thread_source, "preview": self.preview}

"""JSON as the type checker sees it, and the few narrowings every reader needs.

`JsonValue` is what `json.loads` returns; `JsonObject` is one decoded object. Code that
reads the wire, a record or a settings file takes a `JsonObject` and narrows each value
it uses with the functions below (a wrong type reads as absent, never as a crash) —
instead of `Any`, which lets a misspelt key or a wrong type through unchecked.

No `typing` at run time: the Stop hook imports this module, so the aliases exist for the
type checker only (import them under `TYPE_CHECKING`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias, TypeVar

    T = TypeVar("T")

    JsonValue: TypeAlias = (
        "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None")
    JsonObject: TypeAlias = "dict[str, JsonValue]"
    JsonArray: TypeAlias = "list[JsonValue]"
    # A field declared `NonEmpty | None` reads "" as absent too (a name, a path, an id).
    NonEmpty: TypeAlias = str


def obj(value: object) -> JsonObject:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def arr(value: object) -> JsonArray:
    """`value` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def objs(value: object) -> list[JsonObject]:
    """The objects in a JSON array (anything else in it is skipped)."""
    return [v for v in arr(value) if isinstance(v, dict)]


def opt_str(value: object) -> str | None:
    """A string, or None for anything else (including the empty string's absence)."""
    return value if isinstance(value, str) else None


def text(value: object) -> str:
    """A string for printing: None → "", anything else → its str()."""
    return "" if value is None else value if isinstance(value, str) else str(value)


def opt_int(value: object) -> int | None:
    """An integer (bool is not one), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def opt_float(value: object) -> float | None:
    """A number (bool is not one) as a float, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def strs(value: object) -> tuple[str, ...]:
    """The strings in a JSON array (anything else in it is skipped)."""
    return tuple(v for v in arr(value) if isinstance(v, str))


# ---------------------------------------------------------------------------------------
# One typed reader for every JSON shape codexbridge reads (its own state files, the files
# Claude Code writes, the facts one room hands another): a record class declares its
# fields with their types, and `read` picks each from the key of its name (or the wire
# key `WIRE_KEYS` names, for camelCase formats), narrowed by the declared type — a value
# of the wrong type reads as absent (the field's default), never as a crash. The keys
# are named once, in the class.
#
# `JsonRecord` is a frozen, dataclass-like base written out here rather than
# `dataclasses` itself: the Stop hook reads transcripts, listener records and the
# handling markers through it, and its empty path imports neither `dataclasses` nor
# `typing` (tests/unit/hooks/test_hook_main.py, test_fast_path_imports_stay_light).
# `dataclass_transform` tells the type checker what `__init__` a subclass gets.

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, ClassVar, Self, dataclass_transform

    _Reader: TypeAlias = Callable[..., Any]  # (data, /, **given)
else:
    def dataclass_transform(**_kwargs):
        return lambda cls: cls

_ABSENT = object()

# declared type → (the expression that reads it: `{get}` is the key's value, `{F}` what
# the field holds when the key is absent or of the wrong type — its default, else the
# type's empty, given second)
_NARROW: dict[str, tuple[str, object]] = {
    "str | None": ("v if isinstance({get}, str) else {F}", None),
    "str": ("v if isinstance({get}, str) else {F}", ""),
    # a field declared `NonEmpty | None` reads "" as absent too
    "NonEmpty | None": ("v if isinstance({get}, str) and v else {F}", None),
    "int | None": ("v if isinstance({get}, int) and not isinstance(v, bool) else {F}", None),
    "int": ("v if isinstance({get}, int) and not isinstance(v, bool) else {F}", 0),
    "float | None": ("float(v) if isinstance({get}, (int, float)) and not isinstance(v, bool)"
                     " else {F}", None),
    "int | str | None": ("v if isinstance({get}, (int, str)) and not isinstance(v, bool) "
                         "else {F}", None),
    "bool": ("v if isinstance({get}, bool) else {F}", False),
    "bool | None": ("v if isinstance({get}, bool) else {F}", None),
    "tuple[str, ...]": ("strs(v) if isinstance({get}, list) else {F}", ()),
    "JsonObject": ("v if isinstance({get}, dict) else {F}", {}),
    "JsonObject | None": ("v if isinstance({get}, dict) else {F}", None),
    "tuple[JsonObject, ...]": ("tuple(objs(v)) if isinstance({get}, list) else {F}", ()),
    # kept as found: compared, never assumed to be of one type
    "JsonValue": ("{F} if {get} is None else v", None),
    "object": ("{F} if {get} is None else v", None)}


def _nested(owner: type, kind: str) -> tuple[str, object, object]:
    """`X | None` / `tuple[X, ...]` where X is a JsonRecord of `owner`'s module (`{P}`:
    its reader; None, or left out of the tuple, when the value is not an object — or,
    when X reads with a `parse` of its own, what that says)."""
    many = kind.startswith("tuple[") and kind.endswith(", ...]")
    name = kind[6:-6] if many else kind.removesuffix(" | None")
    inner = getattr(sys.modules[owner.__module__], name, None)
    if not (isinstance(inner, type) and issubclass(inner, JsonRecord)):
        raise TypeError(f"{owner.__name__}: no JSON reading for a field of type {kind!r}")
    if inner is owner or any("parse" in vars(k) for k in inner.__mro__[:-2]):
        if many:
            return ("tuple(x for x in map({P}, v) if x is not None) "
                    "if isinstance({get}, list) else {F}", (), inner.parse)
        return "{F} if {get} is None or (v := {P}(v)) is None else v", None, inner.parse
    reader = _READERS.get(inner) or _compile(inner)  # read in line: no parse to call
    if many:
        return ("tuple([{P}(x) for x in v if isinstance(x, dict)]) "
                "if isinstance({get}, list) else {F}", (), reader)
    return "{P}(v) if isinstance({get}, dict) else {F}", None, reader


def _specs(cls: type) -> tuple[tuple[str, str, object], ...]:
    """(name, declared type, default or _ABSENT) of each field, base classes' first."""
    found: dict[str, tuple[str, object]] = {}
    for klass in reversed(cls.__mro__):
        for name, kind in vars(klass).get("__annotations__", {}).items():
            if not str(kind).startswith("ClassVar"):
                found[name] = (str(kind), vars(klass).get(name, _ABSENT))
    return tuple((name, kind, default) for name, (kind, default) in found.items())


def read_fields(cls: Callable[..., T], data: Mapping[str, object], **given: object) -> T:
    """A record whose fields are read from `data` by name (`WIRE_KEYS` may give another
    key), each narrowed by its declared type: a JsonRecord, or a frozen dataclass (doctor's
    facts; a field named `raw` there keeps the object as it came, for a row's details).
    `given`: the fields that are not one key's value (worked out by the caller)."""
    reader = _READERS.get(cls) or _compile(cls)  # type: ignore[call-overload, arg-type]
    return reader(data, **given)  # type: ignore[no-any-return]


_READERS: dict[type, _Reader] = {}  # of a JsonRecord: its `read` once written


def _compile(cls: type) -> _Reader:
    """`cls`'s reader, written out as one function on its first read (as `dataclasses`
    writes `__init__`): a transcript is read a line at a time, thousands of them, and a
    loop over the fields cost twice what a reader written by hand does."""
    fields = getattr(cls, "__dataclass_fields__", None)
    specs = (tuple((f.name, str(f.type), _ABSENT) for f in fields.values())
             if fields is not None else _specs(cls))
    own: Mapping[str, Callable[[object], object]] = getattr(cls, "READ_WITH", {})
    wire: Mapping[str, str] = getattr(cls, "WIRE_KEYS", {})
    scope: dict[str, object] = {"cls": cls, "strs": strs, "objs": objs}
    values = []
    for i, (name, kind, default) in enumerate(specs):
        if name == "raw" and fields is not None:
            values.append(f"args[{name!r}] = dict(data)")
            continue
        expr, empty, scope[f"_parse_{i}"] = (*_NARROW[kind], None) if kind in _NARROW \
            else _nested(cls, kind)
        if name in own:  # its own reading, which may read an absent key (None) as a value
            scope[f"_read_{i}"] = own[name]
            expr = f"{{F}} if (v := _read_{i}({{get}})) is None else v"
        scope[f"_empty_{i}"] = empty if default is _ABSENT else default
        read = expr.format(get=f"(v := get({wire.get(name, name)!r}))", F=f"_empty_{i}",
                           P=f"_parse_{i}")
        values.append(f"args[{name!r}] = {read}")
    # a JsonRecord's fields are set in its instance's own dict (no __init__ checks to
    # pay for: every field is set here); a dataclass is made by its __init__
    source = _READER.format(start="record = object.__new__(cls)\n    args = record.__dict__"
                            if fields is None else "args = {}",
                            values="\n    ".join(values),
                            make="record" if fields is None else "cls(**args)")
    exec(source, scope)  # our own text, from the class's declared fields
    reader: _Reader = scope["read"]  # type: ignore[assignment]
    _READERS[cls] = reader
    if fields is None and vars(cls).get("read") is vars(JsonRecord)["read"]:
        type.__setattr__(cls, "read", staticmethod(reader))
    return reader


_READER = """
def read(data, /, **given):
    get = data.get
    {start}
    {values}
    if given:
        if not given.keys() <= args.keys():
            unknown = sorted(given.keys() - args.keys())
            raise TypeError(f"{{cls.__name__}}: no field {{', '.join(unknown)}}")
        args.update(given)
    return {make}
"""


@dataclass_transform(frozen_default=True)
class JsonRecord:
    """Base of a typed JSON record: subclasses declare annotated fields (with defaults
    where a field may be absent) and get `__init__`, `__eq__`, `__repr__`, immutability
    and `read` (the one reader of their shape)."""

    WIRE_KEYS: ClassVar[Mapping[str, str]] = {}  # `wire=` of the class statement
    READ_WITH: ClassVar[Mapping[str, Callable[[object], object]]] = {}  # `read_with=`
    _fields: ClassVar[tuple[tuple[str, str, object], ...]] = ()

    def __init_subclass__(cls, wire: Mapping[str, str] | None = None,
                          read_with: Mapping[str, Callable[[object], object]] | None = None,
                          **kwargs: Any) -> None:
        """`wire`: field name → its key in the file, where they differ (camelCase).
        `read_with`: field name → how its value reads (None: absent), for a field whose
        JSON says more than its type (a pid written as digits, a flag as "true")."""
        super().__init_subclass__(**kwargs)
        cls._fields = _specs(cls)
        if wire:
            cls.WIRE_KEYS = {**cls.WIRE_KEYS, **wire}
        if read_with:
            cls.READ_WITH = {**cls.READ_WITH, **read_with}
        if "read" not in vars(cls):  # written out on the first read (`_compile`)
            type.__setattr__(cls, "read", vars(JsonRecord)["read"])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}: too many arguments")
        for (name, _kind, _default), value in zip(fields, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__}: {name} given twice")
            kwargs[name] = value
        for name, _kind, default in fields:
            value = kwargs.pop(name, default)
            if value is _ABSENT:
                raise TypeError(f"{type(self).__name__}: {name} is required")
            object.__setattr__(self, name, value)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: no field {', '.join(kwargs)}")

    @classmethod
    def read(cls, data: Mapping[str, object], **given: object) -> Self:
        """This record from a JSON object (`read_fields`)."""
        return (_READERS.get(cls) or _compile(cls))(data, **given)  # type: ignore[no-any-return]

    @classmethod
    def parse(cls, value: object) -> Self | None:
        """This record from a JSON value; None when it is not an object (or, where a
        subclass says so, not one of this shape). How a field of this type is read."""
        return cls.read(value) if isinstance(value, dict) else None

    @classmethod
    def json_keys(cls) -> tuple[str, ...]:
        """The keys `read` looks at, as they are spelt in the file."""
        return tuple(cls.WIRE_KEYS.get(name, name) for name, _kind, _default in cls._fields)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name, _kind, _default in self._fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name, _k, _d in self._fields)
        return f"{type(self).__name__}({inner})"

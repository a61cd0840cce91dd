"""The one codec of the JSON Runscribe stores: a dataclass to a JSON object and back, read
from its fields' types. Event data, restarts, incident details, forecast trackers and outbox
payloads all go through it, so a time, a list or a missing key is written and read one way.

`dump` writes every field under its name (times as ISO text, tuples as lists, nested
dataclasses as objects); `load` reads one back, checking each value's type. A field's
`metadata` may rename its key (`key`) or give it its own converters (`dump`, `load`) for a
shape the types do not say (a dataclass stored as a list). Reading modes:

- `strict`: a key the class does not declare is an error (before a write);
- default: unknown keys are ignored (a key an older version wrote and this one dropped);
- `lenient`: a missing or null value takes the field's default, and a nested optional record
  that does not read (half-written by an older version) reads as None.

Supported field types: str, int, float, bool, datetime, Any, Literal of text, a dataclass,
tuple[X, ...], list[X], dict[str, X], each optionally `| None`."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

T = TypeVar("T")
Reader = Callable[[Any, bool], Any]  # (JSON value, lenient) → field value
TimeText = Callable[[datetime], str]


class CodecError(ValueError):
    """A JSON value that does not match its field's declared type."""


def json_field(
    key: str | None = None,
    *,
    dump: Callable[[Any], Any] | None = None,
    load: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """A field's `metadata`: its stored key and its own converters."""
    return {"json": (key, dump, load)}


def dump(
    obj: Any,
    *,
    omit: Collection[str] = (),
    sparse: Collection[str] = (),
    time_text: TimeText = datetime.isoformat,
) -> dict[str, Any]:
    """The JSON object of a dataclass: `omit` fields are not stored, `sparse` ones only while
    set (not at their default: None, False)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        if f.name in omit:
            continue
        value = getattr(obj, f.name)
        if f.name in sparse and value == f.default:
            continue
        key, to_json, _ = f.metadata.get("json", (None, None, None))
        out[key or f.name] = to_json(value) if to_json else _value(value, time_text)
    return out


def _value(value: Any, time_text: TimeText) -> Any:
    if isinstance(value, datetime):
        return time_text(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dump(value)
    if isinstance(value, tuple | list):
        return [_value(v, time_text) for v in value]
    if isinstance(value, Mapping):
        return {k: _value(v, time_text) for k, v in value.items()}
    return value


def load(
    cls: type[T],
    data: Any,
    *,
    strict: bool = False,
    lenient: bool = False,
    omit: Collection[str] = (),
    given: Mapping[str, Any] | None = None,
) -> T:
    """The dataclass `cls` read from a JSON object (`given` supplies the `omit` fields, which
    are not stored). Raises `CodecError` naming the key."""
    if not isinstance(data, Mapping):
        raise CodecError(f"its data must be a JSON object, not {data!r}")
    specs = [s for s in _specs(cls) if s.name not in omit]
    if strict:
        unknown = sorted(set(data) - {s.key for s in specs})
        if unknown:
            raise CodecError(f"unknown key {unknown[0]!r}")
    values: dict[str, Any] = dict(given or {})
    for spec in specs:
        raw = data.get(spec.key)
        if spec.key not in data or (lenient and raw is None and spec.has_default):
            if spec.has_default:
                continue
            if lenient and spec.what.endswith(" or null"):
                values[spec.name] = None
                continue
            raise CodecError(f"key {spec.key!r} is missing")
        try:
            values[spec.name] = spec.read(raw, lenient)
        except (TypeError, ValueError) as exc:
            if not spec.what:  # the field's own reader says why
                raise CodecError(f"key {spec.key!r}: {exc}") from None
            raise CodecError(f"key {spec.key!r} must be {spec.what}, not {raw!r}") from None
    return cls(**values)


@dataclasses.dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    key: str
    what: str  # what a value must be, for the error
    read: Reader
    has_default: bool


_SPECS: dict[type, tuple[_Spec, ...]] = {}


def _specs(cls: type) -> tuple[_Spec, ...]:
    """Each field's key and reader, in declaration order (read once per class)."""
    known = _SPECS.get(cls)
    if known is not None:
        return known
    hints = typing.get_type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        key, _, from_json = f.metadata.get("json", (None, None, None))
        try:
            what, read = ("", _via(from_json)) if from_json else _reader(hints[f.name])
        except TypeError as exc:  # a field never stored (`omit`): an error only when read
            what, read = str(exc), _unreadable(exc)
        has_default = f.default is not dataclasses.MISSING
        has_default |= f.default_factory is not dataclasses.MISSING
        found.append(_Spec(f.name, key or f.name, what, read, has_default))
    _SPECS[cls] = result = tuple(found)
    return result


def _unreadable(exc: TypeError) -> Reader:
    def read(_value: Any, _lenient: bool) -> Any:
        raise NotImplementedError(str(exc))  # a declaration error, not bad data

    return read


def _via(from_json: Callable[[Any], Any]) -> Reader:
    return lambda v, _lenient: from_json(v)


def _reader(annotation: Any) -> tuple[str, Reader]:
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if (isinstance(annotation, types.UnionType) or origin is typing.Union) and type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return _optional(inner)
    if annotation is Any:
        return "a JSON value", lambda v, _: v
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if origin is typing.Literal:
        return f"one of {list(args)}", lambda v, _: v if v in args else _fail(v)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        record: type = annotation
        return "an object", lambda v, lenient: load(record, v, lenient=lenient)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        what, item = _reader(args[0])
        return f"a list of {_plain(what)}", lambda v, le: tuple(item(x, le) for x in _list(v))
    if origin is list:
        what, item = _reader(args[0])
        return f"a list of {_plain(what)}", lambda v, le: [item(x, le) for x in _list(v)]
    if origin is dict and args[0] is str:
        what, item = _reader(args[1])
        return f"an object of {_plain(what)}", lambda v, le: {
            _is(k, str): item(x, le) for k, x in _is(v, dict).items()
        }
    raise TypeError(f"a stored field cannot be of type {annotation!r}")


def _optional(inner: Any) -> tuple[str, Reader]:
    what, read = _reader(inner)

    def read_optional(value: Any, lenient: bool) -> Any:
        if value is None:
            return None
        if lenient and dataclasses.is_dataclass(inner):
            try:
                return read(value, lenient)
            except (CodecError, TypeError, ValueError):
                return None  # half-written by an older version
        return read(value, lenient)

    return f"{what} or null", read_optional


def _plain(what: str) -> str:
    return {"text": "text", "an integer": "integers", "a number": "numbers"}.get(what, what)


def _fail(value: Any) -> Any:
    raise ValueError(value)


def _is(value: Any, kind: Any) -> Any:
    if not isinstance(value, kind):
        raise TypeError(value)
    return value


def _list(value: Any) -> Any:
    return _is(value, list | tuple)


def _integer(value: Any, _lenient: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(value)
    return value


def _number(value: Any, _lenient: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(value)
    return float(value)


def _aware(value: Any, _lenient: bool = False) -> datetime:
    """ISO text (a trailing Z, or no zone: UTC) as a UTC time, as `bot.core.timeutil.parse_time`."""
    text = _is(value, str).strip()
    if not text:
        raise ValueError(value)
    parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


_SCALARS: dict[Any, tuple[str, Reader]] = {
    str: ("text", lambda v, _: _is(v, str)),
    bool: ("true or false", lambda v, _: _is(v, bool)),
    int: ("an integer", _integer),
    float: ("a number", _number),
    datetime: ("an ISO time with a zone", _aware),
}

"""Frozen fact dataclasses to JSON-ready dicts and back.

``to_data(facts)`` gives plain dicts/lists; ``from_data(Facts, data)`` rebuilds the dataclasses
from a report saved by ``envdoctor check --json`` (for ``recommend --from`` and ``verify``).
Unknown keys are ignored and missing keys take the field default, so a report written by an older
envdoctor still loads.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any, TypeVar

T = TypeVar("T")


class DataError(ValueError):
    """A saved document does not have the shape of the facts it claims to hold."""


def to_data(obj: Any) -> Any:
    """Dataclasses -> dicts, tuples -> lists, recursively."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_data(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    return obj


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def from_data(cls: type[T], data: Any, where: str = "") -> T:
    """Rebuild ``cls`` (a dataclass) from ``to_data`` output; raise DataError on a wrong shape."""
    converted: T = _convert(cls, data, where or cls.__name__)
    return converted


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin is typing.Union:
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, where)
            except DataError:
                continue
        raise DataError(f"{where}: {value!r} does not fit {tp}")
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise DataError(f"{where}: expected an object, got {type(value).__name__}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in value:
                kwargs[f.name] = _convert(hints[f.name], value[f.name], f"{where}.{f.name}")
        try:
            return tp(**kwargs)
        except TypeError as exc:
            raise DataError(f"{where}: {exc}") from None
    if origin in (tuple, tuple):
        if not isinstance(value, (list, tuple)):
            raise DataError(f"{where}: expected a list, got {type(value).__name__}")
        item = args[0] if args else Any
        return tuple(_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin in (dict, dict):
        if not isinstance(value, dict):
            raise DataError(f"{where}: expected an object, got {type(value).__name__}")
        vt = args[1] if len(args) == 2 else Any
        return {str(k): _convert(vt, v, f"{where}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # a 400-digit integer in a float field
                raise DataError(f"{where}: the number {_short(value)} is too large") from None
            if math.isfinite(number):
                return number
        raise DataError(f"{where}: expected a number, got {_short(value)}")
    if tp in (int, str, bool):
        if isinstance(value, tp) and not (tp is int and isinstance(value, bool)):
            if tp is int and not -MAX_INT <= value <= MAX_INT:
                raise DataError(f"{where}: the number {_short(value)} is too large")
            return value
        raise DataError(f"{where}: expected {tp.__name__}, got {_short(value)}")
    return value


#: The largest integer a fact holds (bytes, counts, MiB): a signed 64-bit value.
MAX_INT = 2**63 - 1


def _short(value: Any) -> str:
    """A value as a message shows it: at most 40 characters of its repr."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."

"""The one reader of external JSON: bounded in size and depth, typed on access, never a surprise.

Every JSON envdoctor did not just write itself (a tool's ``--json`` output, a child's protocol
line, a saved report, a cache entry, an index page) goes through :func:`loads`. It raises only
:class:`JsonError` (a :class:`~envdoctor.parse.ParseError`, so a ``ValueError``):

>>> loads('{"channels": ["conda-forge"]}')
{'channels': ['conda-forge']}
>>> loads("[" * 100000)
Traceback (most recent call last):
...
envdoctor.parse.jsontext.JsonError: JSON nested deeper than 64 levels

The typed getters turn a wrongly typed value into the same error, with the key path in it, so a
caller never meets a ``TypeError`` or ``AttributeError`` from someone else's JSON:

>>> get_str({"soabi": 5}, "soabi")
Traceback (most recent call last):
...
envdoctor.parse.jsontext.JsonError: soabi: expected a string, got int
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Optional

from envdoctor.parse import ParseError

#: Text beyond this many characters is refused unread (the runner keeps at most 4 MiB a stream).
MAX_CHARS = 16 * 1024 * 1024
#: Nesting deeper than this is refused: no real document of a tool envdoctor reads comes close.
MAX_DEPTH = 64
#: Digits in one number literal: more is not a measurement (and int() refuses 4,300 anyway).
MAX_DIGITS = 400


class JsonError(ParseError):
    """The text is not JSON, or not JSON of the expected shape; the message says which."""


def _number(text: str) -> Any:
    if len(text) > MAX_DIGITS:
        raise JsonError(f"a number of {len(text)} characters")
    value = float(text)
    if not math.isfinite(value):
        raise JsonError(f"the number {text[:20]} is out of range")
    return value


def _integer(text: str) -> int:
    if len(text) > MAX_DIGITS:
        raise JsonError(f"a number of {len(text)} digits")
    return int(text)


def _constant(name: str) -> Any:
    raise JsonError(f"{name} is not a JSON number")


def loads(text: str, *, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``text``; JsonError when it is too long, too deep, not JSON, or holds NaN/Infinity.

    >>> loads('{"a": 1.5, "b": [1, 2]}')
    {'a': 1.5, 'b': [1, 2]}
    """
    if not isinstance(text, str):
        raise JsonError(f"expected text, got {type(text).__name__}")
    if len(text) > max_chars:
        raise JsonError(f"JSON of {len(text)} characters (the limit is {max_chars})")
    try:
        value = json.loads(text, parse_float=_number, parse_int=_integer, parse_constant=_constant)
    except RecursionError:
        raise JsonError(f"JSON nested deeper than {max_depth} levels") from None
    except JsonError:
        raise
    except ValueError as exc:   # json.JSONDecodeError is a ValueError
        msg = getattr(exc, "msg", None) or str(exc)
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise JsonError(f"not valid JSON ({msg}{where})") from None
    _check_depth(value, max_depth)
    return value


def _check_depth(value: Any, limit: int) -> None:
    """Iteratively (a recursive walk is what the limit protects against)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            raise JsonError(f"JSON nested deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def loads_object(text: str, what: str = "JSON", **limits: int) -> dict[str, Any]:
    """:func:`loads` that also requires an object at the top: ``what`` names it in the error."""
    value = loads(text, **limits)
    if not isinstance(value, dict):
        raise JsonError(f"{what} is not a JSON object (got {_kind(value)})")
    return value


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "bool", int: "int",
            float: "float", type(None): "null"}.get(type(value), type(value).__name__)


# --- typed getters: a key missing gives the default; a key of the wrong type is an error ---------

def _get(data: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise JsonError(f"{where or 'value'}: expected an object, got {_kind(data)}")
    return data.get(key)


def _path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def get_str(data: Mapping[str, Any], key: str, default: Optional[str] = None, where: str = "") -> Optional[str]:
    """``data[key]`` when a string, ``default`` when missing or null; JsonError otherwise."""
    value = _get(data, key, where)
    if value is None:
        return default
    if not isinstance(value, str):
        raise JsonError(f"{_path(where, key)}: expected a string, got {_kind(value)}")
    return value


def get_int(data: Mapping[str, Any], key: str, default: Optional[int] = None, where: str = "") -> Optional[int]:
    value = _get(data, key, where)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise JsonError(f"{_path(where, key)}: expected an integer, got {_kind(value)}")
    return value


def get_float(data: Mapping[str, Any], key: str, default: Optional[float] = None,
              where: str = "") -> Optional[float]:
    value = _get(data, key, where)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JsonError(f"{_path(where, key)}: expected a number, got {_kind(value)}")
    return float(value)


def get_bool(data: Mapping[str, Any], key: str, default: Optional[bool] = None,
             where: str = "") -> Optional[bool]:
    value = _get(data, key, where)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise JsonError(f"{_path(where, key)}: expected true or false, got {_kind(value)}")
    return value


def get_list(data: Mapping[str, Any], key: str, where: str = "") -> list[Any]:
    """``data[key]`` when a list, ``[]`` when missing or null; JsonError otherwise."""
    value = _get(data, key, where)
    if value is None:
        return []
    if not isinstance(value, list):
        raise JsonError(f"{_path(where, key)}: expected a list, got {_kind(value)}")
    return value


def get_dict(data: Mapping[str, Any], key: str, where: str = "") -> dict[str, Any]:
    """``data[key]`` when an object, ``{}`` when missing or null; JsonError otherwise."""
    value = _get(data, key, where)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise JsonError(f"{_path(where, key)}: expected an object, got {_kind(value)}")
    return value


def str_list(data: Mapping[str, Any], key: str, where: str = "") -> list[str]:
    """A list of strings; JsonError when any item is not one."""
    items = get_list(data, key, where)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise JsonError(f"{_path(where, key)}[{i}]: expected a string, got {_kind(item)}")
    return items

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

A lone surrogate (``"\\ud800"``: valid JSON, not encodable as UTF-8) comes out as U+FFFD, so
every renderer can encode what was read:

>>> loads('["\\ud800x"]')
['\ufffdx']

The lenient getters (:func:`opt_str`, :func:`opt_int`, :func:`opt_float`) are for fields whose
fault is not worth failing the whole answer for: a value of the wrong type or out of the field's
range is absent (None), never an exception. They are the only ones: every reader uses them.

>>> opt_int(3.9), opt_int(3.0), opt_int(True), opt_int(2 ** 80, high=2 ** 63), opt_float("1.5")
(None, 3, None, None, None)
"""

from __future__ import annotations

import json
import math
import re
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


#: A UTF-16 surrogate code point: Python holds one where a JSON escape (``"\\udc80"``) or a
#: ``surrogateescape`` decoding put it, and no UTF-8 encoder takes it.
_SURROGATE = re.compile("[\ud800-\udfff]")
#: The JSON escape of a surrogate; a text without one cannot produce a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
#: The largest magnitude a number read from outside may have (beyond it no field of envdoctor's
#: means anything, and float() of a larger int overflows).
MAX_MAGNITUDE = 1e300


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so that it encodes as UTF-8.

    >>> clean_text("caf\\udce9"), clean_text("plain")
    ('caf\ufffd', 'plain')
    """
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


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
    text = clean_text(text)
    try:
        value = json.loads(text, parse_float=_number, parse_int=_integer, parse_constant=_constant)
    except RecursionError:
        raise JsonError(f"JSON nested deeper than {max_depth} levels") from None
    except JsonError:
        raise
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        msg = getattr(exc, "msg", None) or str(exc)
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise JsonError(f"not valid JSON ({msg}{where})") from None
    _check_depth(value, max_depth)
    if _SURROGATE_ESCAPE.search(text):
        value = _clean_value(value)
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


def _clean_value(value: Any) -> Any:
    """``value`` with :func:`clean_text` applied to every string, keys included (the depth is
    already bounded, so the recursion is)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean_value(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): _clean_value(v) for k, v in value.items()}
    return value


def loads_object(text: str, what: str = "JSON", **limits: int) -> dict[str, Any]:
    """:func:`loads` that also requires an object at the top: ``what`` names it in the error."""
    value = loads(text, **limits)
    if not isinstance(value, dict):
        raise JsonError(f"{what} is not a JSON object (got {_kind(value)})")
    return value


def _kind(value: Any) -> str:
    return {
        dict: "object",
        list: "list",
        str: "string",
        bool: "bool",
        int: "int",
        float: "float",
        type(None): "null",
    }.get(type(value), type(value).__name__)


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


def _range(name: str, value: Any, low: Optional[float], high: Optional[float]) -> None:
    if (low is not None and value < low) or (high is not None and value > high):
        lo = "" if low is None else f"{low:g}"
        hi = "" if high is None else f"{high:g}"
        shown = f"{value:.6g}" if isinstance(value, float) else str(value) if abs(value) < 10**30 else "a huge number"
        raise JsonError(f"{name}: {shown} is outside {lo}..{hi}")


def get_int(
    data: Mapping[str, Any],
    key: str,
    default: Optional[int] = None,
    where: str = "",
    low: Optional[int] = None,
    high: Optional[int] = None,
) -> Optional[int]:
    """``data[key]`` when an integer within ``low``..``high``, ``default`` when missing or null.

    >>> get_int({"n": 2 ** 70}, "n", high=2 ** 63)
    Traceback (most recent call last):
    ...
    envdoctor.parse.jsontext.JsonError: n: 1180591620717411303424 is outside ..9.22337e+18
    """
    value = _get(data, key, where)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise JsonError(f"{_path(where, key)}: expected an integer, got {_kind(value)}")
    _range(_path(where, key), value, low, high)
    return value


def get_float(
    data: Mapping[str, Any],
    key: str,
    default: Optional[float] = None,
    where: str = "",
    low: Optional[float] = None,
    high: Optional[float] = None,
) -> Optional[float]:
    """``data[key]`` as a finite float within ``low``..``high`` (an integer past the float range is
    refused too), ``default`` when missing or null."""
    value = _get(data, key, where)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JsonError(f"{_path(where, key)}: expected a number, got {_kind(value)}")
    number = _finite(value)
    if number is None:
        raise JsonError(f"{_path(where, key)}: the number is out of range")
    _range(_path(where, key), number, low, high)
    return number


def _finite(value: Any) -> Optional[float]:
    try:
        number = float(value)
    except (OverflowError, ValueError):
        return None
    return number if math.isfinite(number) and abs(number) <= MAX_MAGNITUDE else None


def get_bool(data: Mapping[str, Any], key: str, default: Optional[bool] = None, where: str = "") -> Optional[bool]:
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


# --- lenient getters: wrong type or out of range is absent (None), never an exception -----------
# Each takes a value, or an object and a key (``opt_int(doc, "n")`` is ``doc["n"]`` when ``doc``
# is an object holding an integer there).


def _pick(value: Any, key: Optional[str]) -> Any:
    if key is None:
        return value
    return value.get(key) if isinstance(value, Mapping) else None


def opt_str(value: Any, key: Optional[str] = None, *, max_chars: int = 4096, empty: bool = False) -> Optional[str]:
    """A string (cut to ``max_chars``, lone surrogates replaced); None for anything else, and for
    ``""`` unless ``empty``.

    >>> opt_str("3.12.3"), opt_str(5), opt_str(""), opt_str("x" * 10, max_chars=3), opt_str({"a": "b"}, "a")
    ('3.12.3', None, None, 'xxx', 'b')
    """
    value = _pick(value, key)
    if not isinstance(value, str) or (value == "" and not empty):
        return None
    return clean_text(value[:max_chars])


def opt_int(
    value: Any, key: Optional[str] = None, *, low: Optional[int] = None, high: Optional[int] = None
) -> Optional[int]:
    """An integer (or a float of integral value, ``3.0``) within ``low``..``high``; None for
    anything else (a bool, ``3.9``, a string, a number out of range, a missing key)."""
    value = _pick(value, key)
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    if not isinstance(value, int):
        return None
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    return value


def opt_float(
    value: Any, key: Optional[str] = None, *, low: Optional[float] = None, high: Optional[float] = None
) -> Optional[float]:
    """A finite float within ``low``..``high``; None for anything else (a bool, a string, NaN,
    an integer past the float range).

    >>> opt_float(2), opt_float(10 ** 400), opt_float(float("nan")), opt_float(-1.0, low=0)
    (2.0, None, None, None)
    """
    value = _pick(value, key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = _finite(value)
    if number is None or (low is not None and number < low) or (high is not None and number > high):
        return None
    return number

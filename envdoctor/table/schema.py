"""Reading TOML rows against a schema: unknown keys, missing keys and wrong types are errors.

Every error is a :class:`TableError` whose message is one line naming file, row and field::

    data/cuda.toml: [[release]] 12.8.0: unknown field 'min_drver_linux'
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Mapping
from typing import Any, Callable, Optional

from packaging.version import InvalidVersion, Version


class TableError(ValueError):
    """The compatibility table is broken: one line naming the file, the row and the field."""


#: field kinds: "str", "str?", "bool", "int", "float?", "strs", "ranges", "tables"
Spec = dict[str, str]

COMMON: Spec = {
    "source": "str",
    "checked": "str",
    "unconfirmed": "bool?",
    "unconfirmed_fields": "strs?",
    "note": "str?",
}
_CHECKED = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


class Doc:
    """One parsed data file and how errors name it: ``Doc("data/cuda.toml", {...})``."""

    def __init__(self, label: str, data: dict[str, Any]) -> None:
        self.label, self.data = label, data


def parse_toml(label: str, raw: Optional[bytes]) -> dict[str, Any]:
    """The TOML document of a data file's bytes (None: the file is missing), as plain data."""
    if raw is None:
        raise TableError(f"{label}: file missing")
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TableError(f"{label}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TableError(f"{label}: not valid TOML: {exc}") from None


class Where:
    """Where a value sits, for error messages: file, section, row id."""

    def __init__(self, label: str, section: str, row: str) -> None:
        self.label, self.section, self.row = label, section, row

    def fail(self, problem: str) -> TableError:
        return TableError(f"{self.label}: [[{self.section}]] {self.row}: {problem}")


def rows(doc: Doc, section: str, key: Optional[str]) -> list[tuple[Where, dict[str, Any]]]:
    """The ``[[section]]`` array of a document, each row with its :class:`Where`."""
    items = doc.data.get(section, [])
    if not isinstance(items, list) or not all(isinstance(r, dict) for r in items):
        raise TableError(f"{doc.label}: '{section}' must be an array of tables ([[{section}]])")
    out = []
    for i, raw in enumerate(items):
        ident = str(raw.get(key)) if key and key in raw else f"#{i + 1}"
        out.append((Where(doc.label, section, ident), raw))
    return out


def check_top(doc: Doc, allowed: tuple[str, ...]) -> None:
    for k in doc.data:
        if k not in allowed:
            raise TableError(f"{doc.label}: unknown top-level key '{k}' (expected: {', '.join(allowed)})")


#: (name, optional, checker, default) per field of a spec, worked out once per distinct spec.
_Compiled = tuple[tuple[str, bool, Callable[["Where", str, Any], Any], Any], ...]
_COMPILED: dict[tuple[tuple[str, str], ...], tuple[_Compiled, frozenset[str]]] = {}


def _compile(spec: Spec, common: bool) -> tuple[_Compiled, frozenset[str]]:
    full = dict(COMMON, **spec) if common else dict(spec)
    key = tuple(full.items())
    hit = _COMPILED.get(key)
    if hit is None:
        compiled = tuple(
            (k, kind.endswith("?"), _CHECKERS[kind.rstrip("?")], _DEFAULTS.get(kind.rstrip("?")))
            for k, kind in full.items()
        )
        hit = _COMPILED[key] = (compiled, frozenset(full))
    return hit


def _kind(tp: Any, has_default: bool) -> str:
    """The field kind of a row field's type: ``Optional[str]`` -> "str?", ``Literal[...]`` -> "str",
    ``tuple[str, ...]`` -> "strs", ``tuple[tuple[int, int], ...]`` -> "ranges"; a bool or a tuple
    with a default may be left out of the file (False, ())."""
    import typing

    optional = False
    if typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional, tp = len(args) < len(typing.get_args(tp)), args[0]
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        base = "str"
    elif origin is tuple:
        item = typing.get_args(tp)[0]
        base = "strs" if item is str else "ranges" if typing.get_origin(item) is tuple else "tables"
    elif tp in (str, int, float, bool):
        base = tp.__name__
    else:
        raise TypeError(f"no field kind for {tp!r}")
    return base + ("?" if optional or (has_default and base in ("bool", "strs")) else "")


@functools.cache
def _row_spec(cls: type) -> tuple[tuple[str, str], ...]:
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    missing = dataclasses.MISSING
    return tuple(
        (f.name, _kind(hints[f.name], f.default is not missing or f.default_factory is not missing))
        for f in dataclasses.fields(cls)
    )


@functools.cache
def spec_of(
    cls: type,
    derived: tuple[str, ...] = (),
    loose: tuple[str, ...] = (),
    strict: tuple[str, ...] = (),
    keep: tuple[str, ...] = (),
    renamed: tuple[tuple[str, str], ...] = (),
) -> Spec:
    """The file's fields of row class ``cls``, from its dataclass fields and their types: one
    declaration of a row. ``derived``: fields the loader fills (not in the file); ``loose``: may be
    left out though the type is not Optional (the loader fills a default); ``strict``: must be given
    though the type is Optional; ``keep``: common fields (source, checked, ...) whose own type counts;
    ``renamed``: (field, its key in the file) where they differ. Remembered: do not change the dict.

    >>> from envdoctor.table.rows import GpuSeries
    >>> spec_of(GpuSeries)
    {'label': 'str', 'match': 'str', 'cc': 'str'}
    """
    names = dict(renamed)
    out: Spec = {}
    for name, kind in _row_spec(cls):
        if name in derived or (name in COMMON and name not in keep):
            continue
        if name in loose and not kind.endswith("?"):
            kind += "?"
        if name in strict:
            kind = kind.rstrip("?")
        out[names.get(name, name)] = kind
    return out


def fields(where: Where, raw: Mapping[str, Any], spec: Spec, common: bool = True) -> dict[str, Any]:
    """Check ``raw`` against ``spec`` (plus the common fields) and return it with defaults filled."""
    compiled, known = _compile(spec, common)
    for k in raw:
        if k not in known:
            raise where.fail(f"unknown field '{k}'")
    out: dict[str, Any] = {}
    for k, optional, check, default in compiled:
        if k not in raw:
            if not optional:
                raise where.fail(f"missing field '{k}'")
            out[k] = default
            continue
        out[k] = check(where, k, raw[k])
    if common or "checked" in out:
        checked = out.get("checked")
        if checked is not None and not _CHECKED.match(checked):
            raise where.fail(f"field 'checked': {checked!r} is not a date like 2026-11-29 or 2026-11")
    out["unconfirmed"] = bool(out.get("unconfirmed"))
    out["unconfirmed_fields"] = tuple(out.get("unconfirmed_fields") or ())
    return out


def check_unconfirmed_fields(where: Where, names: tuple[str, ...], cls: type) -> None:
    known = cls.__dataclass_fields__  # type: ignore[attr-defined]
    for n in names:
        if n not in known:
            raise where.fail(f"field 'unconfirmed_fields': {n!r} is not a field of this row")


def make_row(cls: type, where: Where, values: dict[str, Any]) -> Any:
    """The row ``cls(**values)`` of checked ``values``, once its ``unconfirmed_fields`` name fields it has."""
    check_unconfirmed_fields(where, values.get("unconfirmed_fields", ()), cls)
    return cls(**values)


def load_rows(
    doc: Doc,
    section: str,
    key: Optional[str],
    cls: type,
    check: Optional[Callable[[Where, dict[str, Any]], None]] = None,
    **spec: Any,
) -> tuple[Any, ...]:
    """Every ``[[section]]`` row of ``doc`` as a ``cls`` (a frozen dataclass of sourced fields), the one
    loader of every table file: the fields the dataclass declares (:func:`spec_of` with ``spec``:
    ``derived``, ``loose``, ``renamed``, ...) checked by their types, then ``check(where, values)``
    for what a row must hold besides (it raises ``where.fail(...)``, and may fill a derived value)::

        load_rows(doc, "gcc", "cuda", GccRow, lambda where, v: version(where, "cuda", v["cuda"]))
    """
    out = []
    for where, raw in rows(doc, section, key):
        values = fields(where, raw, spec_of(cls, **spec))
        if check is not None:
            check(where, values)
        out.append(make_row(cls, where, values))
    return tuple(out)


def one_of(where: Where, name: str, value: Optional[str], allowed: tuple[str, ...]) -> None:
    """A field of a closed set (the ``Literal`` of its row field): anything else is an error."""
    if value is not None and value not in allowed:
        raise where.fail(f"field '{name}': {value!r} is not one of {', '.join(allowed)}")


@functools.lru_cache(maxsize=4096)
def parse_version(text: str) -> Version:
    """``Version(text)``, remembered: the table repeats the same driver and CUDA versions often.
    Raises InvalidVersion like ``Version``."""
    return Version(text)


def version(where: Where, name: str, value: Optional[str]) -> Optional[Version]:
    """Parse a version field; an unparsable one is an error naming the field."""
    if value is None:
        return None
    try:
        return parse_version(value)
    except (InvalidVersion, TypeError):
        raise where.fail(f"field '{name}': {value!r} is not a version") from None


def versions(*names: str) -> Callable[[Where, dict[str, Any]], None]:
    """A row check: each of ``names`` is a version where it is given (``versions("version", "torch")``)."""

    def check(where: Where, v: dict[str, Any]) -> None:
        for name in names:
            version(where, name, v[name])

    return check


def _str(where: Where, k: str, v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise where.fail(f"field '{k}' must be a non-empty string, not {v!r}")
    return v


def _bool(where: Where, k: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise where.fail(f"field '{k}' must be true or false, not {v!r}")
    return v


def _int(where: Where, k: str, v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise where.fail(f"field '{k}' must be an integer, not {v!r}")
    return v


def _float(where: Where, k: str, v: Any) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
        raise where.fail(f"field '{k}' must be a non-negative number, not {v!r}")
    return float(v)


def _strs(where: Where, k: str, v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise where.fail(f"field '{k}' must be a list of strings, not {v!r}")
    return tuple(v)


def _ranges(where: Where, k: str, v: Any) -> tuple[tuple[int, int], ...]:
    out = []
    for pair in v if isinstance(v, list) else [v]:
        try:
            if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(x, str) for x in pair):
                raise ValueError(pair)
            lo, hi = (int(x, 16) for x in pair)
        except ValueError:
            raise where.fail(f'field \'{k}\' must be a list of ["0xLOW", "0xHIGH"] pairs, not {pair!r}') from None
        if lo > hi:
            raise where.fail(f"field '{k}': range {pair!r} runs backwards")
        out.append((lo, hi))
    return tuple(out)


def _tables(where: Where, k: str, v: Any) -> list[dict]:
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise where.fail(f"field '{k}' must be a list of tables, not {v!r}")
    return v


_CHECKERS: dict[str, Callable[[Where, str, Any], Any]] = {
    "str": _str,
    "bool": _bool,
    "int": _int,
    "float": _float,
    "strs": _strs,
    "ranges": _ranges,
    "tables": _tables,
}
_DEFAULTS: dict[str, Any] = {"strs": (), "bool": False, "tables": []}

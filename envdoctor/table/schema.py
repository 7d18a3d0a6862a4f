"""Reading TOML rows against a schema: unknown keys, missing keys and wrong types are errors.

Every error is a :class:`TableError` whose message is one line naming file, row and field::

    data/cuda.toml: [[release]] 12.8.0: unknown field 'min_drver_linux'
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from packaging.version import InvalidVersion, Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib


class TableError(ValueError):
    """The compatibility table is broken: one line naming the file, the row and the field."""


#: field kinds: "str", "str?", "bool", "int", "float?", "strs", "ranges", "tables"
Spec = Dict[str, str]

COMMON: Spec = {
    "source": "str",
    "checked": "str",
    "unconfirmed": "bool?",
    "unconfirmed_fields": "strs?",
    "note": "str?",
}
_CHECKED = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def read_toml(path: Path) -> Dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise TableError(f"{label(path)}: file missing") from None
    except tomllib.TOMLDecodeError as exc:
        raise TableError(f"{label(path)}: not valid TOML: {exc}") from None


def label(path: Path) -> str:
    """How errors name a data file: ``data/cuda.toml``."""
    return f"{path.parent.name}/{path.name}"


class Where:
    """Where a value sits, for error messages: file, section, row id."""

    def __init__(self, path: Path, section: str, row: str) -> None:
        self.path, self.section, self.row = path, section, row

    def fail(self, problem: str) -> TableError:
        return TableError(f"{label(self.path)}: [[{self.section}]] {self.row}: {problem}")


def rows(path: Path, doc: Mapping[str, Any], section: str, key: Optional[str]) -> List[Tuple[Where, Dict]]:
    """The ``[[section]]`` array of a document, each row with its :class:`Where`."""
    items = doc.get(section, [])
    if not isinstance(items, list) or not all(isinstance(r, dict) for r in items):
        raise TableError(f"{label(path)}: '{section}' must be an array of tables ([[{section}]])")
    out = []
    for i, raw in enumerate(items):
        ident = str(raw.get(key)) if key and key in raw else f"#{i + 1}"
        out.append((Where(path, section, ident), raw))
    return out


def check_top(path: Path, doc: Mapping[str, Any], allowed: Tuple[str, ...]) -> None:
    for k in doc:
        if k not in allowed:
            raise TableError(f"{label(path)}: unknown top-level key '{k}' (expected: {', '.join(allowed)})")


def fields(where: Where, raw: Mapping[str, Any], spec: Spec, common: bool = True) -> Dict[str, Any]:
    """Check ``raw`` against ``spec`` (plus the common fields) and return it with defaults filled."""
    full = dict(COMMON, **spec) if common else dict(spec)
    for k in raw:
        if k not in full:
            raise where.fail(f"unknown field '{k}'")
    out: Dict[str, Any] = {}
    for k, kind in full.items():
        optional = kind.endswith("?")
        base = kind.rstrip("?")
        if k not in raw:
            if not optional:
                raise where.fail(f"missing field '{k}'")
            out[k] = _DEFAULTS.get(base)
            continue
        out[k] = _CHECKERS[base](where, k, raw[k])
    if common or "checked" in out:
        checked = out.get("checked")
        if checked is not None and not _CHECKED.match(checked):
            raise where.fail(f"field 'checked': {checked!r} is not a date like 2026-11-29 or 2026-11")
    out["unconfirmed"] = bool(out.get("unconfirmed"))
    out["unconfirmed_fields"] = tuple(out.get("unconfirmed_fields") or ())
    return out


def check_unconfirmed_fields(where: Where, names: Tuple[str, ...], cls: type) -> None:
    known = cls.__dataclass_fields__  # type: ignore[attr-defined]
    for n in names:
        if n not in known:
            raise where.fail(f"field 'unconfirmed_fields': {n!r} is not a field of this row")


def version(where: Where, name: str, value: Optional[str]) -> Optional[Version]:
    """Parse a version field; an unparsable one is an error naming the field."""
    if value is None:
        return None
    try:
        return Version(value)
    except InvalidVersion:
        raise where.fail(f"field '{name}': {value!r} is not a version") from None


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


def _strs(where: Where, k: str, v: Any) -> Tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise where.fail(f"field '{k}' must be a list of strings, not {v!r}")
    return tuple(v)


def _ranges(where: Where, k: str, v: Any) -> Tuple[Tuple[int, int], ...]:
    out = []
    for pair in v if isinstance(v, list) else [None]:
        try:
            lo, hi = (int(x, 16) for x in pair)
        except (TypeError, ValueError):
            raise where.fail(f"field '{k}' must be a list of [\"0xLOW\", \"0xHIGH\"] pairs, not {pair!r}") from None
        if lo > hi:
            raise where.fail(f"field '{k}': range {pair!r} runs backwards")
        out.append((lo, hi))
    return tuple(out)


def _tables(where: Where, k: str, v: Any) -> List[Dict]:
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise where.fail(f"field '{k}' must be a list of tables, not {v!r}")
    return v


_CHECKERS: Dict[str, Callable[[Where, str, Any], Any]] = {
    "str": _str, "bool": _bool, "int": _int, "float": _float, "strs": _strs,
    "ranges": _ranges, "tables": _tables,
}
_DEFAULTS: Dict[str, Any] = {"strs": (), "bool": False, "tables": []}

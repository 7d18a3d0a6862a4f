"""Security fixes of the NVIDIA Container Toolkit: ``data/security.toml``, one row per bulletin.

>>> fixes = load_toolkit_fixes()
>>> [(f.fixed, f.cves[0]) for f in affecting(fixes, "1.16.2")][-1]
('1.17.8', 'CVE-2025-23266')
>>> affecting(fixes, "1.17.8")
()
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from packaging.version import InvalidVersion, Version

from envdoctor.table.rows import Sourced
from envdoctor.table.schema import Doc, TableError, Where, check_top, load_rows
from envdoctor.table.source import DataDir, read_doc


@dataclass(frozen=True)
class ToolkitFix(Sourced):
    """The first release of the toolkit that fixes the CVEs of one NVIDIA bulletin."""

    cves: Tuple[str, ...]  # ("CVE-2025-23266", "CVE-2025-23267")
    fixed: str  # "1.17.8": every earlier release is affected
    bulletin: str  # NVIDIA's security bulletin
    date: str  # "2025-07"
    escape: bool  # the worst case is a container reaching the host
    summary: str
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


def _fix(where: Where, v: Dict[str, Any]) -> None:
    try:
        Version(v["fixed"])
    except InvalidVersion:
        raise where.fail(f"field 'fixed': {v['fixed']!r} is not a version") from None
    if not v["cves"] or not all(c.startswith("CVE-") for c in v["cves"]):
        raise where.fail("field 'cves': CVE ids, at least one")
    if not v["bulletin"].startswith("https://"):
        raise where.fail("field 'bulletin': the bulletin's https URL")


def parse_fixes(doc: Doc) -> Tuple[ToolkitFix, ...]:
    check_top(doc, ("toolkit_fix",))
    out = load_rows(doc, "toolkit_fix", "fixed", ToolkitFix, _fix)
    if not out:
        raise TableError(f"{doc.label}: no [[toolkit_fix]] row")
    return tuple(sorted(out, key=lambda f: Version(f.fixed)))


def affecting(fixes: Tuple[ToolkitFix, ...], installed: str) -> Tuple[ToolkitFix, ...]:
    """The fixes a toolkit of version ``installed`` lacks, oldest first (none for a version that
    cannot be read)."""
    try:
        have = Version(installed)
    except InvalidVersion:
        return ()
    return tuple(f for f in fixes if have < Version(f.fixed))


def build_fixes(directory: Optional[DataDir] = None) -> Tuple[ToolkitFix, ...]:
    return parse_fixes(read_doc("security.toml", directory))


@functools.lru_cache(maxsize=1)
def _default() -> Tuple[ToolkitFix, ...]:
    return build_fixes()


def load_toolkit_fixes(directory: Optional[Path] = None) -> Tuple[ToolkitFix, ...]:
    """The bundled rows (loaded once), or a fresh load of ``directory``; TableError when broken."""
    return _default() if directory is None else build_fixes(Path(directory))

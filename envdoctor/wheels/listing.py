"""What one variant's index holds for one package and one target (pure).

>>> versions, compatible, pythons, platforms = analyze(page.files, "torch", target)
>>> compatible
('2.2.0', '2.2.1', '2.2.2', '2.3.0', '2.3.1', '2.4.0', '2.4.1', '2.5.0', '2.5.1')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterable, Optional, Set, Tuple

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from envdoctor.wheels.pages import FileLink
from envdoctor.wheels.target import Target, interpreter_key


@dataclass(frozen=True)
class VariantListing:
    """What one variant's index holds for one package and one target interpreter."""

    variant: str  # "cu128"
    url: str  # "https://download.pytorch.org/whl/cu128" (masked)
    exists: Optional[bool] = None  # None: could not tell (see error)
    status: Optional[int] = None  # HTTP status of the page that decided
    versions: Tuple[str, ...] = ()  # every version with a file there, oldest first
    compatible: Tuple[str, ...] = ()  # versions with a wheel for the target
    other_pythons: Tuple[str, ...] = ()  # ("cp39", "cp310"): wheels only for these
    error: Optional[str] = None  # one line, masked
    from_cache: bool = False
    offline: bool = False
    package: str = "torch"
    other_platforms: Tuple[str, ...] = ()  # ("win_amd64",): wheels only for these
    source: str = "index"  # "index", "cache", "table" or "none"
    age: Optional[float] = None  # seconds since a cached page was fetched
    note: Optional[str] = None  # e.g. "revalidated (304)", "stale cache"
    format: Optional[str] = None  # "html" (PEP 503) or "json" (PEP 691)

    @property
    def newest(self) -> Optional[str]:
        return self.compatible[-1] if self.compatible else None

    @property
    def found(self) -> bool:
        return bool(self.exists and self.compatible)

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["newest"] = self.newest
        for key in ("versions", "compatible", "other_pythons", "other_platforms"):
            data[key] = list(data[key])
        return data


def analyze(
    files: Iterable[FileLink], project: str, target: Target
) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    """(versions, compatible versions, other Pythons, other platforms) of ``project``'s files.

    Pure. Versions are public versions ("2.8.0" for ``torch-2.8.0+cu128-…``), oldest first.
    A wheel counts for the target when one of its tags is the target's, its
    ``requires-python`` admits the target and it is not yanked.
    """
    versions: Dict[str, Version] = {}
    compatible: Set[str] = set()
    pythons: Set[str] = set()
    platforms: Set[str] = set()
    for f in files:
        try:
            if f.filename.endswith(".whl"):
                name, version, _build, tags = parse_wheel_filename(f.filename)
            else:
                name, version = parse_sdist_filename(f.filename)
                tags = frozenset()
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        if name != project:
            continue
        public = version.public
        versions.setdefault(public, version)
        if not tags:
            continue
        if target.accepts(tags) and target.satisfies(f.requires_python) and f.yanked is None:
            compatible.add(public)
            continue
        for tag in tags:
            if target.accepts_platform(tag.platform):
                threaded = tag.abi.endswith("t") and tag.abi.startswith(tag.interpreter)
                pythons.add(tag.interpreter + ("t" if threaded else ""))
            else:
                platforms.add(tag.platform)
    pythons.discard(target.short)
    order = sorted(versions, key=versions.__getitem__)
    return (
        tuple(order),
        tuple(v for v in order if v in compatible),
        tuple(sorted(pythons, key=interpreter_key)),
        tuple(sorted(platforms)),
    )

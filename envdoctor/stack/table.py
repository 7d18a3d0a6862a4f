"""``data/extensions.toml``: what the libraries above torch support, every row sourced and dated.

Read against a schema with the table's helpers (``envdoctor.table.schema``); a broken row is one
:class:`~envdoctor.table.schema.TableError` line naming file, row and field::

    >>> t = load_extensions()
    >>> t.arch("flash-attn").min_cc, t.max_gcc("12.4"), t.pin("vllm", "0.11.0").torch
    ('8.0', 13, '2.8.0')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.table.rows import Sourced
from envdoctor.table.schema import Doc, TableError, Where, check_top, load_rows, one_of, version, versions
from envdoctor.table.source import DataDir, read_doc

FILE = "extensions.toml"


@dataclass(frozen=True)
class ArchRow(Sourced):
    name: str
    min_cc: str
    why: str
    source: str
    checked: str
    max_cc: Optional[str] = None
    #: what the library's own documentation offers a machine without an NVIDIA GPU (its pip
    #: wheels being CUDA builds), read in ``cpu_source``; None: nothing known
    cpu: Optional[str] = None
    cpu_source: Optional[str] = None
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class PinRow(Sourced):
    """``vllm 0.11.0`` pins torch 2.8.0 (and its siblings), built for CUDA 12.8."""

    package: str
    version: str
    torch: str
    cuda: Tuple[str, ...]
    pythons: Tuple[str, ...]
    source: str
    checked: str
    torchvision: Optional[str] = None
    torchaudio: Optional[str] = None
    xformers: Optional[str] = None
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class WheelRow(Sourced):
    """Prebuilt wheels outside PyPI: ``url`` with {version} {cuda} {torch} {abi} {py}."""

    package: str
    version: str
    url: str
    cuda: Tuple[str, ...]
    torch: Tuple[str, ...]
    pythons: Tuple[str, ...]
    abi: Tuple[str, ...]
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class BadRow(Sourced):
    package: str
    versions: str  # a specifier: ">=0.9"
    severity: str  # "error", "warning"
    problem: str
    fix: str
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class GccRow(Sourced):
    cuda: str  # "12.4"
    max_gcc: int  # 13
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class ImageRow(Sourced):
    name: str  # "vllm/vllm-openai:v0.11.0"
    ships: Tuple[str, ...]
    torch: str
    cuda: str
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class AbiRow(Sourced):
    torch: str  # "2.7": from this release on
    cxx11abi: bool
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class Extensions:
    archs: Tuple[ArchRow, ...]
    pins: Tuple[PinRow, ...]
    wheels: Tuple[WheelRow, ...]
    bad: Tuple[BadRow, ...]
    gccs: Tuple[GccRow, ...]
    images: Tuple[ImageRow, ...]
    abis: Tuple[AbiRow, ...] = ()

    def arch(self, name: str) -> Optional[ArchRow]:
        return next((r for r in self.archs if r.name == name), None)

    def pin(self, package: str, release: Optional[str] = None) -> Optional[PinRow]:
        """The row of ``package`` ``release``; without a release, the newest row."""
        mine = [r for r in self.pins if r.package == package]
        if release is None:
            return max(mine, key=lambda r: Version(r.version), default=None)
        return next((r for r in mine if Version(r.version) == Version(release)), None)

    def pins_of(self, package: str) -> Tuple[PinRow, ...]:
        """Every row of ``package``, newest first."""
        return tuple(
            sorted((r for r in self.pins if r.package == package), key=lambda r: Version(r.version), reverse=True)
        )

    def wheels_of(self, package: str) -> Tuple[WheelRow, ...]:
        return tuple(
            sorted((r for r in self.wheels if r.package == package), key=lambda r: Version(r.version), reverse=True)
        )

    def bad_for(self, package: str, installed: str) -> Tuple[BadRow, ...]:
        try:
            v = Version(installed)
        except InvalidVersion:
            return ()
        return tuple(
            r for r in self.bad if r.package == package and SpecifierSet(r.versions).contains(v, prereleases=True)
        )

    def gcc_row(self, cuda: str) -> Optional[GccRow]:
        """The row of the newest listed CUDA release at or below ``cuda`` of the same major
        ("12.5" -> the 12.4 row): nvcc's accepted GCC only changes at the releases listed."""
        try:
            want = Version(cuda)
        except InvalidVersion:
            return None
        same = [r for r in self.gccs if Version(r.cuda).release[0] == want.release[0] and Version(r.cuda) <= want]
        return max(same, key=lambda r: Version(r.cuda), default=None)

    def max_gcc(self, cuda: str) -> Optional[int]:
        row = self.gcc_row(cuda)
        return row.max_gcc if row else None

    def torch_abi(self, torch: str) -> Optional[AbiRow]:
        """The row that applies to a torch release of download.pytorch.org ("2.8.0" -> the 2.7 row)."""
        try:
            want = Version(torch)
        except InvalidVersion:
            return None
        rows = [r for r in self.abis if Version(r.torch) <= Version(want.base_version)]
        return max(rows, key=lambda r: Version(r.torch), default=None)

    def image(self, name: str) -> Optional[ImageRow]:
        return next((r for r in self.images if r.name == name), None)


def _wheel(where: Where, v: Dict[str, Any]) -> None:
    version(where, "version", v["version"])
    for a in v["abi"]:
        one_of(where, "abi", a, ("TRUE", "FALSE"))
    for part in ("{version}", "{cuda}", "{torch}", "{abi}", "{py}"):
        if part not in v["url"]:
            raise where.fail(f"field 'url' has no {part}")


def _bad(where: Where, v: Dict[str, Any]) -> None:
    one_of(where, "severity", v["severity"], ("error", "warning", "info"))
    try:
        SpecifierSet(v["versions"])
    except InvalidSpecifier:
        raise where.fail(f"field 'versions': {v['versions']!r} is not a version specifier") from None


def parse(doc: Doc) -> Extensions:
    check_top(doc, ("arch", "pin", "wheel", "bad", "gcc", "image", "abi"))
    archs = load_rows(doc, "arch", "name", ArchRow, versions("min_cc", "max_cc"))
    seen = set()

    def pin(where: Where, v: Dict[str, Any]) -> None:
        versions("version", "torch", "torchvision", "torchaudio", "xformers")(where, v)
        key = (v["package"], Version(v["version"]))
        if key in seen:
            raise where.fail(f"a second row for {v['package']} {v['version']}")
        seen.add(key)

    pins = load_rows(doc, "pin", "package", PinRow, pin)
    wheels = load_rows(doc, "wheel", "version", WheelRow, _wheel)
    bad = load_rows(doc, "bad", "package", BadRow, _bad)
    gccs = load_rows(doc, "gcc", "cuda", GccRow, versions("cuda"))
    if len({r.cuda for r in gccs}) != len(gccs):
        raise TableError(f"{doc.label}: a [[gcc]] cuda appears twice")
    ordered = sorted(gccs, key=lambda r: Version(r.cuda))
    if any(a.max_gcc > b.max_gcc for a, b in zip(ordered, ordered[1:])):
        raise TableError(f"{doc.label}: [[gcc]] max_gcc must not fall as CUDA rises")
    images = load_rows(doc, "image", "name", ImageRow)
    abis = load_rows(doc, "abi", "torch", AbiRow, versions("torch"))
    return Extensions(archs, pins, wheels, bad, tuple(ordered), images, abis)


def build(directory: Optional[DataDir] = None) -> Extensions:
    return parse(read_doc(FILE, directory))


@functools.lru_cache(maxsize=1)
def _default() -> Extensions:
    return build()


def load_extensions(directory: Optional[Path] = None) -> Extensions:
    """The bundled rows (loaded once), or a fresh load of ``directory``; TableError when broken."""
    return _default() if directory is None else build(Path(directory))


def try_load() -> Tuple[Optional[Extensions], Optional[str]]:
    """(rows, None), or (None, one line saying why they could not be loaded)."""
    try:
        return load_extensions(), None
    except (TableError, OSError) as exc:
        return None, str(exc)

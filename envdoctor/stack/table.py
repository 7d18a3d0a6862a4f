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
from typing import Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.table.schema import Doc, TableError, check_top, fields, make_row, one_of, rows, version
from envdoctor.table.source import DataDir, read_doc

FILE = "extensions.toml"


@dataclass(frozen=True)
class ArchRow:
    name: str
    min_cc: str
    why: str
    source: str
    checked: str
    max_cc: Optional[str] = None
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class PinRow:
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
class WheelRow:
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
class BadRow:
    package: str
    versions: str                     # a specifier: ">=0.9"
    severity: str                     # "error", "warning"
    problem: str
    fix: str
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class GccRow:
    cuda: str                         # "12.4"
    max_gcc: int                      # 13
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class ImageRow:
    name: str                         # "vllm/vllm-openai:v0.11.0"
    ships: Tuple[str, ...]
    torch: str
    cuda: str
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class AbiRow:
    torch: str                        # "2.7": from this release on
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
        return tuple(sorted((r for r in self.pins if r.package == package), key=lambda r: Version(r.version),
                            reverse=True))

    def wheels_of(self, package: str) -> Tuple[WheelRow, ...]:
        return tuple(sorted((r for r in self.wheels if r.package == package), key=lambda r: Version(r.version),
                            reverse=True))

    def bad_for(self, package: str, installed: str) -> Tuple[BadRow, ...]:
        try:
            v = Version(installed)
        except InvalidVersion:
            return ()
        return tuple(r for r in self.bad
                     if r.package == package and SpecifierSet(r.versions).contains(v, prereleases=True))

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


def _cc(where, name, value):  # type: ignore[no-untyped-def]
    if value is not None:
        version(where, name, value)
    return value


def parse(doc: Doc) -> Extensions:
    check_top(doc, ("arch", "pin", "wheel", "bad", "gcc", "image", "abi"))
    archs = []
    for where, raw in rows(doc, "arch", "name"):
        v = fields(where, raw, {"name": "str", "min_cc": "str", "max_cc": "str?", "why": "str"})
        _cc(where, "min_cc", v["min_cc"])
        _cc(where, "max_cc", v["max_cc"])
        archs.append(make_row(ArchRow, where, v))
    pins = []
    seen = set()
    for where, raw in rows(doc, "pin", "package"):
        v = fields(where, raw, {"package": "str", "version": "str", "torch": "str", "torchvision": "str?",
                                "torchaudio": "str?", "xformers": "str?", "cuda": "strs", "pythons": "strs"})
        for k in ("version", "torch", "torchvision", "torchaudio", "xformers"):
            version(where, k, v[k])
        key = (v["package"], Version(v["version"]))
        if key in seen:
            raise where.fail(f"a second row for {v['package']} {v['version']}")
        seen.add(key)
        pins.append(make_row(PinRow, where, v))
    wheels = []
    for where, raw in rows(doc, "wheel", "version"):
        v = fields(where, raw, {"package": "str", "version": "str", "url": "str", "cuda": "strs", "torch": "strs",
                                "pythons": "strs", "abi": "strs"})
        version(where, "version", v["version"])
        for a in v["abi"]:
            one_of(where, "abi", a, ("TRUE", "FALSE"))
        for part in ("{version}", "{cuda}", "{torch}", "{abi}", "{py}"):
            if part not in v["url"]:
                raise where.fail(f"field 'url' has no {part}")
        wheels.append(make_row(WheelRow, where, v))
    bad = []
    for where, raw in rows(doc, "bad", "package"):
        v = fields(where, raw, {"package": "str", "versions": "str", "severity": "str", "problem": "str", "fix": "str"})
        one_of(where, "severity", v["severity"], ("error", "warning", "info"))
        try:
            SpecifierSet(v["versions"])
        except InvalidSpecifier:
            raise where.fail(f"field 'versions': {v['versions']!r} is not a version specifier") from None
        bad.append(make_row(BadRow, where, v))
    gccs = []
    for where, raw in rows(doc, "gcc", "cuda"):
        v = fields(where, raw, {"cuda": "str", "max_gcc": "int"})
        version(where, "cuda", v["cuda"])
        gccs.append(make_row(GccRow, where, v))
    if len({r.cuda for r in gccs}) != len(gccs):
        raise TableError(f"{doc.label}: a [[gcc]] cuda appears twice")
    ordered = sorted(gccs, key=lambda r: Version(r.cuda))
    if any(a.max_gcc > b.max_gcc for a, b in zip(ordered, ordered[1:])):
        raise TableError(f"{doc.label}: [[gcc]] max_gcc must not fall as CUDA rises")
    images = []
    for where, raw in rows(doc, "image", "name"):
        v = fields(where, raw, {"name": "str", "ships": "strs", "torch": "str", "cuda": "str"})
        images.append(make_row(ImageRow, where, v))
    abis = []
    for where, raw in rows(doc, "abi", "torch"):
        v = fields(where, raw, {"torch": "str", "cxx11abi": "bool"})
        version(where, "torch", v["torch"])
        abis.append(make_row(AbiRow, where, v))
    return Extensions(tuple(archs), tuple(pins), tuple(wheels), tuple(bad), tuple(ordered), tuple(images),
                      tuple(abis))


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

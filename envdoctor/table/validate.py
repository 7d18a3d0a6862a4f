"""Checks across rows and files: no duplicates, driver floors never fall, every variant a torch
release names has an index URL and (for CUDA) a driver floor, every arch in an arch list is known.

Each check raises :class:`TableError` with one line naming file, row and field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Callable, Optional

from envdoctor.table.rows import (
    Architecture,
    ChipFamily,
    CudaRelease,
    Distro,
    GpuModel,
    GpuSeries,
    MinorCompat,
    NgcRelease,
    TorchRelease,
    Variant,
)
from envdoctor.table.schema import TableError, parse_version

_ARCH = re.compile(r"^(sm|compute)_(\d{2,3})([af]?)$")


def parse_arch(entry: str) -> Optional[tuple[str, tuple[int, int], str]]:
    """``"sm_90a"`` -> ``("sm", (9, 0), "a")``; ``"compute_120"`` -> ``("compute", (12, 0), "")``."""
    m = _ARCH.match(entry)
    if not m:
        return None
    kind, digits, suffix = m.groups()
    return kind, (int(digits[:-1]), int(digits[-1])), suffix


def _err(directory: str, file: str, section: str, row: str, problem: str) -> TableError:
    """``directory`` is the data folder's name, as errors show it: ``data/cuda.toml: ...``."""
    return TableError(f"{directory}/{file}: [[{section}]] {row}: {problem}")


def _dupes(directory: str, file: str, section: str, keys: Iterable[str], what: str) -> None:
    seen = set()
    for k in keys:
        if k in seen:
            raise _err(directory, file, section, k, f"duplicate {what} {k!r}")
        seen.add(k)


def check_cuda(d: str, releases: Sequence[CudaRelease], compat: Sequence[MinorCompat]) -> None:
    _dupes(d, "cuda.toml", "release", (str(parse_version(r.version)) for r in releases), "CUDA version")
    _dupes(d, "cuda.toml", "minor_compat", (str(c.major) for c in compat), "CUDA major")
    ordered = sorted(releases, key=lambda r: parse_version(r.version))
    for os_field in ("min_driver_linux", "min_driver_windows"):
        prev: Optional[CudaRelease] = None
        for r in ordered:
            value = getattr(r, os_field)
            if value is None:
                continue
            if prev is not None and parse_version(value) < parse_version(getattr(prev, os_field)):
                raise _err(
                    d,
                    "cuda.toml",
                    "release",
                    r.version,
                    f"field '{os_field}': {value} is below {getattr(prev, os_field)} of CUDA {prev.version} "
                    "(driver floors never decrease with newer CUDA)",
                )
            prev = r
    ga = {}
    for r in releases:
        if r.kind == "ga":
            if r.minor in ga:
                raise _err(d, "cuda.toml", "release", r.version, f"second ga row for CUDA {r.minor}")
            ga[r.minor] = r
    majors = {r.major for r in releases}
    for c in compat:
        if c.major not in majors:
            raise _err(d, "cuda.toml", "minor_compat", str(c.major), f"no CUDA {c.major}.x release in the table")


def check_architectures(d: str, archs: Sequence[Architecture]) -> None:
    _dupes(d, "architectures.toml", "architecture", (a.cc for a in archs), "compute capability")
    for a in archs:
        if a.dropped_cuda and parse_version(a.dropped_cuda) <= parse_version(a.first_cuda):
            raise _err(
                d,
                "architectures.toml",
                "architecture",
                a.cc,
                f"field 'dropped_cuda': {a.dropped_cuda} is not after first_cuda {a.first_cuda}",
            )


def check_gpus(
    d: str,
    gpus: Sequence[GpuModel],
    families: Sequence[ChipFamily],
    series: Sequence[GpuSeries],
    known_cc: dict[str, Architecture],
    norm: Callable[[str], str],
) -> None:
    seen: dict[str, str] = {}
    pci: dict[str, str] = {}
    for g in gpus:
        if g.cc not in known_cc:
            raise _err(d, "gpus.toml", "gpu", g.name, f"field 'cc': {g.cc} is not a known architecture")
        for key in {norm(x) for x in (g.name,) + g.aliases}:
            if key in seen and seen[key] != g.name:
                raise _err(d, "gpus.toml", "gpu", g.name, f"name or alias {key!r} also names {seen[key]!r}")
            seen[key] = g.name
        for pid in g.pci_ids:
            if pid in pci:
                raise _err(d, "gpus.toml", "gpu", g.name, f"field 'pci_ids': {pid} also belongs to {pci[pid]!r}")
            pci[pid] = g.name
    _dupes(d, "gpus.toml", "family", (f.chip for f in families), "chip family")
    spans = []
    for f in families:
        if f.cc not in known_cc:
            raise _err(d, "gpus.toml", "family", f.chip, f"field 'cc': {f.cc} is not a known architecture")
        spans += [(lo, hi, f.chip) for lo, hi in f.pci_ranges]
    spans.sort()
    for (lo1, hi1, c1), (lo2, hi2, c2) in zip(spans, spans[1:]):
        if lo2 <= hi1:
            raise _err(
                d,
                "gpus.toml",
                "family",
                c2,
                f"field 'pci_ranges': {lo2:#06x}-{hi2:#06x} overlaps {c1} {lo1:#06x}-{hi1:#06x}",
            )
    _dupes(d, "gpus.toml", "series", (s.match for s in series), "match")
    for s in series:
        if s.cc not in known_cc:
            raise _err(d, "gpus.toml", "series", s.match, f"field 'cc': {s.cc} is not a known architecture")


def check_variants(d: str, variants: Sequence[Variant]) -> None:
    _dupes(d, "indexes.toml", "variant", (v.name for v in variants), "variant")
    for v in variants:
        if v.kind == "cuda" and not v.min_driver_linux:
            raise _err(
                d,
                "indexes.toml",
                "variant",
                v.name,
                f"no driver floor: CUDA {v.cuda} has no ga row in cuda.toml and no min_driver_linux is given",
            )


def check_torch(
    d: str, releases: Sequence[TorchRelease], variants: dict[str, Variant], known_cc: dict[str, Architecture]
) -> None:
    _dupes(d, "torch.toml", "release", (str(parse_version(r.version)) for r in releases), "torch version")
    _dupes(d, "torch.toml", "release", (p.version for r in releases for p in r.patches), "patch release")
    for r in releases:
        _dupes(d, "torch.toml", "release.variant", (f"{r.version} {v.name}" for v in r.variants), "variant")
        names = {v.name for v in r.variants}
        if r.pypi_default not in names:
            raise _err(
                d,
                "torch.toml",
                "release",
                r.version,
                f"field 'pypi_default': {r.pypi_default} is not one of this release's variants",
            )
        for tv in r.variants:
            row = f"{r.version} {tv.name}"
            idx = variants.get(tv.name)
            if idx is None:
                raise _err(
                    d,
                    "torch.toml",
                    "release.variant",
                    row,
                    f"variant {tv.name} has no [[variant]] row (index URL, driver floor) in indexes.toml",
                )
            if idx.kind == "cuda" and not idx.min_driver_linux:
                raise _err(d, "torch.toml", "release.variant", row, f"variant {tv.name} has no driver floor")
            if idx.kind == "cuda" and not tv.arch_list:
                raise _err(d, "torch.toml", "release.variant", row, "field 'arch_list' is missing for a CUDA variant")
            for field_name in ("arch_list", "arch_list_aarch64"):
                for entry in getattr(tv, field_name):
                    parsed = parse_arch(entry)
                    if parsed is None:
                        raise _err(
                            d,
                            "torch.toml",
                            "release.variant",
                            row,
                            f"field '{field_name}': {entry!r} is not like sm_86 or compute_120",
                        )
                    cc = f"{parsed[1][0]}.{parsed[1][1]}"
                    if cc not in known_cc:
                        raise _err(
                            d,
                            "torch.toml",
                            "release.variant",
                            row,
                            f"field '{field_name}': {entry} is not a known architecture (cc {cc})",
                        )


def check_ngc(d: str, releases: Sequence[NgcRelease], known_cc: Optional[dict[str, Architecture]] = None) -> None:
    _dupes(d, "ngc.toml", "release", (r.tag for r in releases), "tag")
    for r in releases:
        if r.min_cc is not None and known_cc is not None and r.min_cc not in known_cc:
            raise _err(d, "ngc.toml", "release", r.tag, f"field 'min_cc': {r.min_cc} is not a known architecture")


def check_distros(d: str, distros: Sequence[Distro], cuda_minors: Iterable[str]) -> None:
    _dupes(d, "distros.toml", "distro", (f"{x.id} {x.version}" for x in distros), "distribution")
    _dupes(d, "distros.toml", "distro", (x.repo_dir for x in distros), "repo_dir")
    minors = set(cuda_minors)
    for x in distros:
        for line in x.cuda_lines:
            if line not in minors:
                raise _err(
                    d,
                    "distros.toml",
                    "distro",
                    x.repo_dir,
                    f"field 'cuda_lines': {line} is not a CUDA minor in cuda.toml",
                )

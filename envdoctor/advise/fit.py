"""Does one wheel variant of one torch release work on the machine of a :class:`Request`?

:func:`fit_variant` checks, in order: wheels for the CPU (``linux_aarch64``), the machine's glibc, the CUDA
lines ``--with-nvcc`` allows, kernels for every GPU (``compat.kernel_support``), the driver for the
variant's CUDA (``compat.driver_support``: directly, or by minor-version compatibility where no GPU
needs PTX). A variant that fails is recorded in :class:`Turned` with the reason; one that passes
gets a :class:`Fit` whose ``rank`` orders it against the other variants of its release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.advise.choice import Rejected
from envdoctor.advise.request import Request
from envdoctor.compat import DriverSupport, driver_support, kernel_support
from envdoctor.parse import major_minor
from envdoctor.parse import version as _version
from envdoctor.table import Table, TorchPatch, TorchRelease, TorchVariant

#: (cubins for every GPU, direct driver support, confirmed in the table, the variant's CUDA)
Rank = tuple[bool, bool, bool, Version]


@dataclass(frozen=True)
class Fit:
    """A variant that works here, with what the checks found."""

    rank: Rank
    support: DriverSupport | None  # None: CPU wheels (no driver question)
    kernels: tuple[tuple[str, str], ...] = ()  # ("8.6", "sm_86 cubin") per GPU
    known: bool = False  # the arch list was checked for every GPU
    inferred: bool = False  # ... and the table infers that arch list


@dataclass
class Turned:
    """What one choice looked at and turned down, and what the live index answered."""

    rejected: list[Rejected] = field(default_factory=list)
    index_states: list[str] = field(default_factory=list)  # "live" / "failed: ..."

    def reject(self, what: str, reason: str) -> None:
        if not any(r.what == what and r.reason == reason for r in self.rejected):
            self.rejected.append(Rejected(what, reason))


def releases(table: Table, spec: SpecifierSet | None) -> list[tuple[TorchRelease, str, TorchPatch | None]]:
    """(release, torch version, patch row) newest first; the version is the newest patch in ``spec``."""
    out = []
    for rel in reversed(table.torch_releases):
        versions = [p.version for p in rel.patches] or [rel.version]
        ok = [v for v in versions if spec is None or spec.contains(Version(v), prereleases=True)]
        if not ok:
            continue
        best = max(ok, key=Version)
        patch = next((p for p in rel.patches if p.version == best), None)
        out.append((rel, best, patch))
    return out


def doubtful(rel: TorchRelease, variant: TorchVariant) -> bool:
    """A release the table does not confirm, or a side variant whose wheels it does not confirm."""
    return rel.unconfirmed or (variant.unconfirmed and variant.name != rel.pypi_default)


def glibc_ok(have: str | None, need: str | None) -> bool | None:
    """``glibc_ok("2.27", "2.28")`` is False; None when either is unknown."""
    h, n = _version(have), _version(need)
    if h is None or n is None:
        return None
    return h >= n


def _arch_list(variant: TorchVariant, arch: str) -> tuple[str, ...]:
    """The variant's arch list for this CPU (empty: the table does not have it)."""
    return variant.arch_list_aarch64 if arch == "aarch64" else variant.arch_list


def _arch_inferred(variant: TorchVariant, arch: str) -> bool:
    """The table does not confirm this CPU's arch list of the variant (inferred, or the whole row
    unconfirmed): kernels found in it are expected, not known."""
    return not variant.confirmed("arch_list_aarch64" if arch == "aarch64" else "arch_list")


def fit_variant(
    table: Table, rel: TorchRelease, version: str, v: TorchVariant, req: Request, turned: Turned
) -> Fit | None:
    """How variant ``v`` of ``rel`` works here, or None (the reason is recorded in ``turned``)."""
    what = f"torch {version} {v.name}"
    platform = f"linux_{req.arch}"
    if platform not in v.platforms:
        turned.reject(what, f"no {platform} wheels")
        return None
    need_glibc = v.glibc or rel.glibc
    if glibc_ok(req.glibc, need_glibc) is False:
        tag = v.manylinux or rel.manylinux
        turned.reject(what, f"its wheels ({tag}) need glibc {need_glibc}; this system has {req.glibc}")
        return None
    if req.cudas is not None and v.cuda and major_minor(v.cuda) not in req.cudas:
        turned.reject(what, f"no CUDA {v.cuda} toolkit to match it in the distribution's NVIDIA repository")
        return None
    if not req.ccs:
        return Fit((True, True, not doubtful(rel, v), Version("0")), None)
    gpus = [cc for cc in req.ccs if cc]
    arch_list = _arch_list(v, req.arch)
    known = bool(arch_list) and len(gpus) == len(req.ccs)
    if req.require_known_kernels and (not known or _arch_inferred(v, req.arch)):
        turned.reject(what, "the table infers its kernel list (only confirmed kernel lists were asked for)")
        return None
    kernels = []
    if known:
        for cc in gpus:
            ks = kernel_support(arch_list, cc)
            if ks.kind == "none":
                turned.reject(what, f"no kernels for compute {cc} (it has {', '.join(arch_list)})")
                return None
            kernels.append((cc, f"{ks.via} {'cubin' if ks.kind == 'cubin' else 'PTX, JIT-compiled at first use'}"))
    support = driver_support(table, req.driver, v.cuda, os=req.os) if req.driver and v.cuda else None
    if support is None or not support.ok:
        need = support.needed if support else "?"
        floor = f" (minor-version floor {support.floor})" if support and support.floor else ""
        turned.reject(what, f"CUDA {v.cuda} needs driver {need}{floor}; driver {req.driver} is older")
        return None
    ptx = ptx_only(kernels)
    if support.kind == "minor-version" and ptx:
        turned.reject(
            what,
            f"a GPU would need PTX JIT, which minor-version compatibility cannot do "
            f"(CUDA {v.cuda} needs driver {support.needed})",
        )
        return None
    if req.require_direct and support.kind != "direct":
        turned.reject(what, f"CUDA {v.cuda} runs only by minor-version compatibility (needs {support.needed})")
        return None
    rank = (not ptx, support.kind == "direct", not doubtful(rel, v), _version(v.cuda) or Version("0"))
    return Fit(rank, support, tuple(kernels), known, known and _arch_inferred(v, req.arch))


def ptx_only(kernels: Sequence[tuple[str, str]]) -> bool:
    """Some GPU gets PTX only (JIT-compiled at the first CUDA call): ``[("12.0", "compute_90 PTX, ...")]``."""
    return any("PTX" in k for _, k in kernels)

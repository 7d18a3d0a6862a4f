"""Pure compatibility answers over the table: will these kernels run on this GPU, will this
driver run this CUDA. Nothing here reads the machine.

>>> kernel_support(["sm_80", "sm_86", "sm_90"], "8.9")
KernelSupport(kind='cubin', via='sm_86')
>>> kernel_support(["sm_75", "sm_120", "compute_120"], "12.1")
KernelSupport(kind='cubin', via='sm_120')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Optional

from packaging.version import InvalidVersion, Version

from envdoctor.facts.system import SystemFacts
from envdoctor.parse import major, major_minor
from envdoctor.table import Table, norm_cc
from envdoctor.table.validate import parse_arch

#: Whose driver minimums apply: a Linux driver, or the Windows driver (which also serves WSL2).
DriverOs = Literal["linux", "windows"]


@dataclass(frozen=True)
class KernelSupport:
    """How a GPU gets kernels from an arch list: a matching cubin (SASS), PTX it JIT-compiles, or none."""

    kind: Literal["cubin", "ptx", "none"]
    via: Optional[str]  # the entry used: "sm_86", "compute_120"; None for "none"

    @property
    def ok(self) -> bool:
        return self.kind != "none"


def kernel_support(arch_list: Iterable[str], cc: str) -> KernelSupport:
    """Which entry of ``torch.cuda.get_arch_list()`` serves a GPU of compute capability ``cc``.

    A cubin ``sm_XY`` runs on the same major X with minor >= Y (``sm_86`` runs on 8.9, not on 9.0);
    an arch-specific cubin ``sm_90a`` only on exactly 9.0; PTX ``compute_XY`` is JIT-compiled on any
    cc >= X.Y (``compute_XYa`` only on X.Y). A cubin is preferred to PTX; among cubins the closest.
    """
    key = norm_cc(cc)
    if key is None:
        raise ValueError(f"not a compute capability: {cc!r}")
    major, minor = (int(x) for x in key.split("."))
    best_cubin: Optional[tuple[tuple[int, int], str]] = None
    best_ptx: Optional[tuple[tuple[int, int], str]] = None
    for entry in arch_list:
        parsed = parse_arch(entry.strip().lower())
        if parsed is None:
            continue
        kind, (emaj, emin), suffix = parsed
        if kind == "sm":
            fits = (emaj, emin) == (major, minor) if suffix == "a" else (emaj == major and emin <= minor)
            if fits and (best_cubin is None or (emaj, emin) > best_cubin[0]):
                best_cubin = ((emaj, emin), entry)
        else:
            fits = (emaj, emin) == (major, minor) if suffix == "a" else (emaj, emin) <= (major, minor)
            if fits and (best_ptx is None or (emaj, emin) > best_ptx[0]):
                best_ptx = ((emaj, emin), entry)
    if best_cubin:
        return KernelSupport("cubin", best_cubin[1])
    if best_ptx:
        return KernelSupport("ptx", best_ptx[1])
    return KernelSupport("none", None)


@dataclass(frozen=True)
class DriverSupport:
    """Whether a driver runs code built with a CUDA version.

    kind: "direct" (driver >= the release's own minimum), "minor-version" (below it, but at or above
    the minor-version-compatibility floor of that CUDA major: runs with ``limitations``), "none", or
    "unknown" (the CUDA version is not in the table).
    """

    kind: Literal["direct", "minor-version", "none", "unknown"]
    needed: str  # the minimum driver for direct support ("" when unknown)
    floor: Optional[str]  # the MVC floor of that CUDA major
    limitations: tuple[str, ...] = ()
    note: Optional[str] = None  # a caveat on the answer (a Linux minimum standing in for Windows)

    @property
    def ok(self) -> bool:
        return self.kind in ("direct", "minor-version")


def driver_os(system: SystemFacts) -> DriverOs:
    """Whose driver minimums apply: under WSL2 the driver is the Windows one.

    >>> driver_os(SystemFacts(wsl="wsl2")), driver_os(SystemFacts())
    ('windows', 'linux')
    """
    return "windows" if system.wsl == "wsl2" else "linux"


def driver_support(table: Table, driver: str, cuda: str, os: DriverOs = "linux") -> DriverSupport:
    """``driver_support(t, "535.104.05", "12.8")`` -> minor-version (12.8 needs 570.26; the 12.x
    floor is 525.60.13). ``cuda`` may be "12.8", "12.8.1" or a variant name ("cu128").

    ``os="windows"`` for a Windows driver, which is also the driver under WSL2 (12.8 needs 570.65
    there). NVIDIA's table gives no Windows minimum for 13.x ("N/A"): the Linux minimum (same branch
    numbering) then stands in, and ``note`` says so.
    """
    try:
        have = Version(driver)
    except InvalidVersion:
        raise ValueError(f"not a driver version: {driver!r}") from None
    needed = table.min_driver(cuda, os=os)
    var = table.variant(cuda) if cuda.startswith("cu") else None
    cuda_version = var.cuda if var is not None else cuda
    cuda_major = major(cuda_version)
    mc = table.minor_compat(cuda_major) if cuda_major is not None else None
    floor = None
    if mc is not None:
        floor = mc.min_driver_linux if os == "linux" else mc.min_driver_windows
    note = None
    if os != "linux" and not needed:
        needed = table.min_driver(cuda, os="linux")
        floor = floor or (mc.min_driver_linux if mc is not None else None)
        if needed:
            note = (
                f"envdoctor's table has no Windows driver minimum for CUDA {cuda_version}; "
                f"the Linux one ({needed}) stands in"
            )
    if not needed:
        return DriverSupport("unknown", "", floor)
    if have >= Version(needed):
        return DriverSupport("direct", needed, floor, note=note)
    if floor and have >= Version(floor):
        return DriverSupport("minor-version", needed, floor, mc.limitations if mc else (), note)
    return DriverSupport("none", needed, floor, note=note)


def open_modules(table: Optional[Table], ccs: Iterable[Optional[str]]) -> bool:
    """Open kernel modules (True) or proprietary (False) for a machine with GPUs of these compute
    capabilities: open unless one of them is an architecture whose ``kernel_modules`` row says
    "proprietary" (Maxwell, Pascal and Volta: the open modules need the GSP, first in Turing).
    A GPU of unknown or unreadable capability, or one the table does not know, does not decide.

    >>> open_modules(t, ["8.6", "9.0"]), open_modules(t, ["8.6", "7.0"]), open_modules(t, [None])
    (True, False, True)
    """
    for cc in ccs:
        arch = table.architecture(cc) if table is not None and cc else None
        if arch is not None and arch.kernel_modules == "proprietary":
            return False
    return True


def variant_tag(cuda: Optional[str]) -> str:
    """The wheel variant of a CUDA version (``torch.version.cuda``): "12.8" and "12.8.1" -> "cu128";
    None or "" -> "cpu".

    >>> variant_tag("12.8"), variant_tag("13.0.1"), variant_tag(None)
    ('cu128', 'cu130', 'cpu')
    """
    if not cuda:
        return "cpu"
    return "cu" + (major_minor(cuda) or cuda.strip()).replace(".", "")

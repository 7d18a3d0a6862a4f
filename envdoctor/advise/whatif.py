"""What-if plans: ``--driver``, ``--gpu``, ``--python-version``, ``--os``, ``--arch``, ``--glibc`` in
place of what the probes found. Each parser refuses a bad value with a :class:`WhatIfError` of one line.

``apply_overrides(blank_machine(), Overrides(driver="570.133.20", gpus=("RTX 5090",),
python_version="3.12", os="ubuntu:24.04"), table)`` is a machine with driver 570.133.20, one GPU of
compute capability 12.0, CPython 3.12 and Ubuntu 24.04 (glibc 2.39, from the table), nothing probed.

>>> parse_os("ubuntu:22.04"), parse_driver("none"), parse_python("3.13t")
(('ubuntu', '22.04'), None, '3.13t')
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from envdoctor.advise.machine import ARCHES, Gpu, Machine, is_datacenter, python_series
from envdoctor.advise.request import MAX_VALUE, shown, too_long
from envdoctor.facts.gpu import DriverFacts, GpuInfo, PciDevice, PciFacts
from envdoctor.facts.python import TargetPython
from envdoctor.parse import major
from envdoctor.table import Table, norm_cc

#: As a report holds it (envdoctor.report): "2.35"; two digits of major, three of minor at most.
_GLIBC = re.compile(r"[0-9]{1,2}\.[0-9]{1,3}")
#: As a report holds it: "580.159.04".
_DRIVER = re.compile(r"[0-9]{1,4}(\.[0-9]{1,4}){0,3}")
_AMD = re.compile(r"^(amd\b|radeon|instinct|mi\s?\d{2,3}[a-z]*\b|rx\s?\d{3,4}|w\d{4}\b)", re.I)
_CC_TEXT = re.compile(r"^(\d{1,2}\.\d|sm_\d{2,3}[af]?|compute_\d{2,3}[af]?)$", re.I)
_WINDOWS = re.compile(r"^(windows|win\d*|microsoft)\b", re.I)
_NOT_WINDOWS = (
    "--os {text}: envdoctor plans Linux machines (and macOS, CPU/MPS) only; on Windows, "
    "plan for the WSL2 distribution instead (e.g. --os ubuntu:24.04)"
)
_OS_HINT = "give ID:VERSION as in /etc/os-release (ubuntu:22.04, debian:12, rhel:9; a rolling release as arch:rolling)"
#: ID:VERSION; a version may be a word where the distribution has no numbered releases (arch:rolling,
#: debian:sid, opensuse-tumbleweed:20260101).
_OS = re.compile(r"^(?P<id>[a-z][a-z0-9._-]*):(?P<version>[0-9a-z][0-9a-z._-]*)$", re.I)
#: os-release ID_LIKE of a distribution family (commands.family reads it).
_FAMILY_LIKE = {
    "debian": ("debian",),
    "rhel": ("rhel", "fedora"),
    "fedora": ("fedora",),
    "suse": ("suse", "opensuse"),
    "amazon": ("fedora",),
}


class WhatIfError(ValueError):
    """An override that cannot be used, in one line (``--gpu "RTX 9999"``: unknown GPU)."""


@dataclass(frozen=True)
class Overrides:
    """What-if values, each replacing the probed fact. ``driver="none"``: no driver installed."""

    driver: str | None = None
    gpus: tuple[str, ...] = ()
    no_gpu: bool = False
    python_version: str | None = None
    os: str | None = None  # "ubuntu:22.04"
    arch: str | None = None
    glibc: str | None = None

    def any(self) -> bool:
        """Some value was given (an empty one too: :meth:`check` refuses it)."""
        return bool(self.gpus or self.no_gpu) or any(
            x is not None for x in (self.driver, self.python_version, self.os, self.arch, self.glibc)
        )

    def complete(self, route: str | None = None) -> bool:
        """True when these alone describe the machine well enough to plan: nothing to probe."""
        gpu = self.no_gpu or bool(self.gpus)
        driver = self.no_gpu or self.driver is not None or _all_amd(self.gpus)
        python = self.python_version is not None or route in ("conda", "docker")
        return gpu and driver and python and self.os is not None

    def check(self) -> None:
        """Refuse a malformed value (an empty one included) before anything is probed; the GPU
        names need the table and are checked by :func:`apply_overrides`."""
        if self.os is not None:
            parse_os(self.os)
        if self.driver is not None:
            parse_driver(self.driver)
        if self.python_version is not None:
            parse_python(self.python_version)
        if self.arch is not None:
            parse_arch(self.arch)
        if self.glibc is not None:
            parse_glibc(self.glibc)
        if self.no_gpu and self.gpus:
            raise WhatIfError("--no-gpu and --gpu contradict each other")


def _not_empty(option: str, text: str, hint: str) -> str:
    """``text`` stripped; an empty or blank value is refused (it used to be silently ignored), and so
    is one too long to be a value (a 5,000-digit "version" would only reach a parser's limits)."""
    s = text.strip()
    if not s:
        raise WhatIfError(f"{option} is empty: {hint}")
    if len(s) > MAX_VALUE:
        raise WhatIfError(too_long(option, s))
    return s


def _all_amd(names: Iterable[str]) -> bool:
    names = tuple(names)
    return bool(names) and all(_AMD.match(n.strip()) for n in names)


def parse_gpu(text: str, table: Table) -> Gpu:
    """``"RTX 3090 Ti"``, ``"H100"``, ``"8.6"``, ``"sm_120"`` or ``"MI300X"`` -> :class:`Gpu`.

    A GeForce name the table has no row for takes its series' compute capability
    (``Table.cc_from_name``: "GTX 1050 Ti" -> 6.1, Pascal), marked ``inferred``; anything else
    unknown is an error that names the closest models the table has.
    """
    s = text.strip()
    if not s:
        raise WhatIfError("--gpu needs a GPU name or a compute capability (e.g. 'RTX 3090 Ti', 8.6, sm_120)")
    if len(s) > MAX_VALUE:
        raise WhatIfError(too_long("--gpu", s))
    if _AMD.match(s):
        return Gpu(s, None, vendor="amd", source="--gpu")
    if _CC_TEXT.match(s):
        cc = norm_cc(s)
        arch = table.architecture(cc) if cc else None
        if cc is None or arch is None:
            raise WhatIfError(f"--gpu {s}: not a compute capability envdoctor knows (e.g. 8.6, 9.0, sm_120)")
        return Gpu(f"compute capability {cc} ({arch.name})", cc, source="--gpu")
    model = table.gpu(s)
    if model is None:
        guess = table.cc_from_name(s)
        if guess is not None:
            cc, series = guess
            return Gpu(s, cc, datacenter=is_datacenter(s, table), source="--gpu", inferred=series)
        near = table.gpu_suggestions(s)
        hint = f"did you mean {' or '.join(near)}? Or give" if near else "give"
        raise WhatIfError(
            f"--gpu {shown(s)}: unknown GPU; {hint} its compute capability instead (e.g. --gpu 8.6 or --gpu sm_120)"
        )
    return Gpu(model.name, model.cc, datacenter=is_datacenter(model.name, table), source="--gpu")


def gpu_label(g: Gpu, table: Table | None = None) -> str:
    """``"NVIDIA GeForce RTX 3090 (cc 8.6)"``; an inferred one says so:
    ``"GTX 1050 Ti (cc 6.1, Pascal, inferred from the name: GTX 10xx)"``."""
    if not g.cc:
        return f"{g.name}"
    if g.inferred:
        arch = table.architecture(g.cc) if table is not None else None
        return f"{g.name} (cc {g.cc}{', ' + arch.name if arch else ''}, inferred from the name: {g.inferred})"
    return f"{g.name} (cc {g.cc})"


def parse_os(text: str) -> tuple[str, str]:
    """``"ubuntu:22.04"`` -> ``("ubuntu", "22.04")``; ``"arch:rolling"`` -> ``("arch", "rolling")`` (a
    distribution the table does not know is planned for all the same: the plan says what that leaves
    out). Windows is refused: envdoctor plans Linux machines (and macOS, CPU/MPS); its commands (apt,
    dnf, venv paths) would be wrong there."""
    s = _not_empty("--os", text, _OS_HINT)
    m = _OS.match(s)
    if not m:
        if _WINDOWS.match(s):
            raise WhatIfError(_NOT_WINDOWS.format(text=s))
        raise WhatIfError(f"--os {shown(text)}: expected {_OS_HINT[5:]}")
    if _WINDOWS.match(m["id"]):
        raise WhatIfError(_NOT_WINDOWS.format(text=text.strip()))
    return m["id"].lower(), m["version"]


def parse_python(text: str) -> str:
    series = python_series(_not_empty("--python-version", text, "give X.Y (3.12, or 3.13t for free-threaded)"))
    if series is None:
        raise WhatIfError(f"--python-version {shown(text)}: expected X.Y (3.12, or 3.13t for free-threaded)")
    return series


def parse_driver(text: str) -> str | None:
    """``"570.133.20"`` -> itself; ``"none"`` -> None (no driver installed); a bare branch
    ``"580"`` stays ``"580"`` (:func:`read_driver` turns it into a version with the table)."""
    s = _not_empty(
        "--driver", text, "give a driver version (570.133.20, or a branch such as 580), or 'none' for no driver"
    )
    if s.lower() in ("none", "no", "0"):
        return None
    try:
        v = Version(s)
    except InvalidVersion:
        raise WhatIfError(f"--driver {shown(text)}: expected a driver version such as 570.133.20, or 'none'") from None
    if v.release[0] < 100 or v.local or v.pre or v.dev or v.post or v.epoch:
        raise WhatIfError(f"--driver {shown(text)}: a driver version looks like 570.133.20 (not a CUDA version)")
    if not _DRIVER.fullmatch(s):
        raise WhatIfError(
            f"--driver {shown(text)}: a driver version looks like 570.133.20 (at most four "
            "parts of at most four digits)"
        )
    return s


def read_driver(text: str, table: Table) -> tuple[str | None, str | None]:
    """(the driver version to plan for, a note when it was read from a bare branch).

    ``"570.133.20"`` -> ``("570.133.20", None)``. A bare branch number (``"580"``) is what users
    type for "the R580 driver"; as a version it would be 580.0, older than every real 580 driver.
    It is read as the branch's first driver the table knows: the lowest Linux driver floor of a CUDA
    release (GA or update) inside that branch (580 -> 580.65.06, the CUDA 13.0 GA floor), so the
    plan holds for any driver of the branch. A branch no CUDA floor falls in stays ``"N.0"``.

    With the bundled table, ``read_driver("580", table)`` is
    ``("580.65.06", "--driver 580: read as the R580 branch (580.65.06 or newer)")``.
    """
    version = parse_driver(text)
    if version is None or len(Version(version).release) > 1:
        return version, None
    branch = Version(version).release[0]
    floors = [
        r.min_driver_linux
        for r in table.cuda_releases
        if r.kind in ("ga", "update") and major(r.min_driver_linux) == branch
    ]
    if floors:
        first = min(floors, key=Version)
        return first, f"--driver {text.strip()}: read as the R{branch} branch ({first} or newer)"
    return f"{branch}.0", f"--driver {text.strip()}: read as the R{branch} branch (any {branch} driver)"


def parse_glibc(text: str) -> str:
    """``"2.35"`` -> itself; anything that is not a version is refused."""
    s = _not_empty("--glibc", text, "give a version such as 2.35 (ldd --version prints it)")
    try:
        Version(s)
    except InvalidVersion:
        raise WhatIfError(f"--glibc {shown(text)}: expected a version such as 2.35") from None
    if not _GLIBC.fullmatch(s):
        raise WhatIfError(f"--glibc {shown(text)}: a glibc version looks like 2.35 (glibc 2.x releases)")
    return s


def parse_arch(text: str) -> str:
    arch = ARCHES.get(_not_empty("--arch", text, "give x86_64 or aarch64").lower())
    if arch is None:
        raise WhatIfError(f"--arch {shown(text)}: expected x86_64 or aarch64")
    return arch


def apply_overrides(machine: Machine, o: Overrides, table: Table) -> Machine:
    """Replace each probed fact that ``o`` gives. Raises :class:`WhatIfError` on a bad value."""
    if not o.any():
        return machine
    facts, gpus, known, given = machine.facts, machine.gpus, set(machine.known), list(machine.given)
    system = facts.system
    if o.os is not None:
        os_id, version = parse_os(o.os)
        distro = table.distro(os_id, version)
        if os_id in ("macos", "darwin", "osx"):
            system = dataclasses.replace(
                system,
                os_id="darwin",
                os_version=version,
                os_name=f"macOS {version}",
                os_like=(),
                platform="darwin",
                glibc=None,
            )
        else:
            like = _FAMILY_LIKE.get(distro.family, ()) if distro is not None else ()
            system = dataclasses.replace(
                system,
                os_id=os_id,
                os_version=version,
                os_name=f"{os_id} {version}",
                os_like=tuple(x for x in like if x != os_id),
                platform="linux",
                glibc=distro.glibc if distro is not None else None,
                os_codename=None,
            )
        system = dataclasses.replace(system, wsl=None, container=None, container_evidence=None)
        facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, glibc=None))
        known.add("system")
        given.append(f"OS {system.os_name} (--os)")
        if distro is not None and system.glibc and o.glibc is None:
            doubt = "" if distro.confirmed("glibc") else ", unconfirmed"
            given.append(f"glibc {system.glibc} ({system.os_name}'s, from envdoctor's table{doubt})")
    if o.arch is not None:
        system = dataclasses.replace(system, arch=parse_arch(o.arch))
        given.append(f"CPU {system.arch} (--arch)")
        known.add("system")
    if o.glibc is not None:
        system = dataclasses.replace(system, glibc=parse_glibc(o.glibc))
        facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, glibc=None))
        given.append(f"glibc {system.glibc} (--glibc)")
    if system.platform == "darwin" and system.arch is None:
        system = dataclasses.replace(system, arch="arm64")
    facts = dataclasses.replace(facts, system=system)

    if o.python_version is not None:
        series = parse_python(o.python_version)
        version = series.rstrip("t")
        abi = f"cp{version.replace('.', '')}" + ("t" if series.endswith("t") else "")
        facts = dataclasses.replace(
            facts, python=TargetPython(version=version, abi_tag=abi, chosen_by="--python-version")
        )
        known.add("python")
        given.append(f"Python {series} (--python-version)")

    if o.no_gpu:
        if o.gpus:
            raise WhatIfError("--no-gpu and --gpu contradict each other")
        gpus = ()
        facts = dataclasses.replace(
            facts, pci=PciFacts(source="--no-gpu"), driver=DriverFacts() if o.driver is None else facts.driver
        )
        known.update(("gpu", "driver"))
        given.append("no GPU (--no-gpu)")
    elif o.gpus:
        gpus = tuple(parse_gpu(g, table) for g in o.gpus)
        known.add("gpu")
        given.append("GPU " + ", ".join(gpu_label(g, table) for g in gpus) + " (--gpu)")

    driver = facts.driver
    if o.driver is not None:
        planned, read_as = read_driver(o.driver, table)
        if planned is None:
            driver = DriverFacts()
            given.append("no NVIDIA driver (--driver none)")
        else:
            driver = DriverFacts(
                driver_version=planned,
                kernel_module_version=planned,
                userspace_version=planned,
                sources={"driver_version": "--driver"},
                gpus=driver.gpus,
            )
            given.append(read_as or f"driver {planned} (--driver)")
        known.add("driver")
    if o.gpus or o.driver is not None or o.no_gpu:
        nvidia = [g for g in gpus if g.vendor == "nvidia"]
        if o.gpus or o.no_gpu:
            infos = tuple(GpuInfo(i, g.name, g.cc, source=g.source) for i, g in enumerate(nvidia))
            pci = PciFacts(
                devices=tuple(
                    PciDevice(
                        f"what-if:{i}",
                        "0x10de",
                        "",
                        "0x030200",
                        name=g.name,
                        name_source=g.source,
                        compute_capability=g.cc,
                    )
                    for i, g in enumerate(nvidia)
                ),
                source="--no-gpu" if o.no_gpu else "--gpu",
            )
            facts = dataclasses.replace(facts, pci=pci)
        else:
            infos = driver.gpus
        driver = dataclasses.replace(driver, gpus=infos if driver.driver_version else ())
        facts = dataclasses.replace(facts, driver=driver)
    return Machine(facts, gpus, frozenset(known), tuple(given), machine.origin)

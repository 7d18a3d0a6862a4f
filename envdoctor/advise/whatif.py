"""The machine the advisor plans for: probed facts, a saved report, or what-if overrides.

``Machine`` wraps the :class:`~envdoctor.facts.Facts` (so command builders that take facts keep
working) and adds what the facts cannot hold: AMD GPUs named with ``--gpu MI300X``, and which areas
were really read (a what-if plan never probed docker, so "docker is not installed" would be a lie).

>>> m = apply_overrides(Machine(Facts()), Overrides(driver="570.133.20", gpus=("RTX 5090",),
...                     python_version="3.12", os="ubuntu:24.04"), load_table())
>>> m.driver, m.gpus[0].cc, m.python, m.os_id
('570.133.20', '12.0', '3.12', 'ubuntu')
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, FrozenSet, Iterable, Optional, Tuple

from packaging.version import InvalidVersion, Version

from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts, GpuInfo, PciDevice, PciFacts
from envdoctor.facts.python import TargetPython
from envdoctor.facts.system import SystemFacts
from envdoctor.parse import major
from envdoctor.gpus import PCI, machine_gpus

#: Areas a plan may depend on. ``known`` holds those that were read (probe, report) or given.
AREAS = ("system", "gpu", "driver", "python", "conda", "docker", "toolkits")

_AMD = re.compile(r"^(amd\b|radeon|instinct|mi\s?\d{2,3}[a-z]*\b|rx\s?\d{3,4}|w\d{4}\b)", re.I)
_CC_TEXT = re.compile(r"^(\d{1,2}\.\d|sm_\d{2,3}[af]?|compute_\d{2,3}[af]?)$", re.I)
#: Fallback for GPUs the table does not know (the table's ``datacenter`` flag decides for the rest).
#: Names NVIDIA sells outside the data centre; cuda-compat (forward compatibility) is refused there.
_CONSUMER = re.compile(r"geforce|titan|quadro|\brtx\b(?! pro 6000 blackwell server)|\bgtx\b|\bmx\d", re.I)
_DATACENTER = re.compile(
    r"tesla|\b(a100|a800|a30|a40|a10g?|a16|a2|l4|l40s?|l20|h100|h200|h800|h20|gh200|b200|b300|gb200|"
    r"gb300|t4|v100|p100|p40|p4|k80|k40)\b", re.I)
_WINDOWS = re.compile(r"^(windows|win\d*|microsoft)\b", re.I)
_NOT_WINDOWS = ("--os {text}: envdoctor plans Linux machines (and macOS, CPU/MPS) only; on Windows, "
                "plan for the WSL2 distribution instead (e.g. --os ubuntu:24.04)")
_OS = re.compile(r"^(?P<id>[a-z][a-z0-9._-]*):(?P<version>[0-9][0-9a-z._-]*)$", re.I)
_PY = re.compile(r"^(?P<major>\d)\.(?P<minor>\d{1,2})(?:\.\d+)?(?P<t>t?)$")
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
_FAMILY_LIKE = {"debian": ("debian",), "rhel": ("rhel", "fedora"), "fedora": ("fedora",),
                "suse": ("suse", "opensuse"), "amazon": ("fedora",)}


class WhatIfError(ValueError):
    """An override that cannot be used, in one line (``--gpu "RTX 9999"``: unknown GPU)."""


@dataclass(frozen=True)
class Gpu:
    """One GPU as the advisor sees it: ``Gpu("NVIDIA GeForce RTX 3090 Ti", "8.6", source="--gpu")``."""

    name: Optional[str]
    cc: Optional[str]                       # "8.6"; None when not known
    vendor: str = "nvidia"                  # "nvidia" | "amd"
    datacenter: Optional[bool] = None       # may host cuda-compat (forward compatibility)
    source: str = ""                        # "--gpu", "nvml", "nvidia-smi", "PCI 0000:01:00.0"
    inferred: Optional[str] = None          # "GTX 10xx": cc inferred from the name's series, not a table row


@dataclass(frozen=True)
class Overrides:
    """What-if values, each replacing the probed fact. ``driver="none"``: no driver installed."""

    driver: Optional[str] = None
    gpus: Tuple[str, ...] = ()
    no_gpu: bool = False
    python_version: Optional[str] = None
    os: Optional[str] = None                # "ubuntu:22.04"
    arch: Optional[str] = None
    glibc: Optional[str] = None

    def any(self) -> bool:
        return bool(self.driver or self.gpus or self.no_gpu or self.python_version or self.os
                    or self.arch or self.glibc)

    def complete(self, route: Optional[str] = None) -> bool:
        """True when these alone describe the machine well enough to plan: nothing to probe."""
        gpu = self.no_gpu or bool(self.gpus)
        driver = self.no_gpu or bool(self.driver) or _all_amd(self.gpus)
        python = bool(self.python_version) or route in ("conda", "docker")
        return gpu and driver and python and bool(self.os)


@dataclass(frozen=True)
class Machine:
    """Facts plus what the advisor needs beyond them. Build with :func:`machine_from_facts`."""

    facts: Facts
    gpus: Tuple[Gpu, ...] = ()
    known: FrozenSet[str] = frozenset(AREAS)
    given: Tuple[str, ...] = ()             # "driver 515.65.01 (--driver)", ...
    origin: str = "this machine"            # "this machine", "report r.json", "what-if"

    # --- derived, read-only views -------------------------------------------------------------

    @property
    def driver(self) -> Optional[str]:
        d = self.facts.driver
        return d.driver_version or d.kernel_module_version or d.userspace_version

    @property
    def nvidia(self) -> Tuple[Gpu, ...]:
        return tuple(g for g in self.gpus if g.vendor == "nvidia")

    @property
    def amd(self) -> Tuple[Gpu, ...]:
        return tuple(g for g in self.gpus if g.vendor == "amd")

    @property
    def python(self) -> Optional[str]:
        """``"3.12"``, or ``"3.13t"`` for a free-threaded build; None when not known."""
        p = self.facts.python
        return python_series(p.version, p.abi_tag)

    @property
    def python_exe(self) -> Optional[str]:
        return self.facts.python.executable

    @property
    def glibc(self) -> Optional[str]:
        return self.facts.python.glibc or self.facts.system.glibc

    @property
    def arch(self) -> str:
        return _ARCH.get((self.facts.system.arch or "x86_64").lower(), self.facts.system.arch or "x86_64")

    @property
    def platform(self) -> str:
        return self.facts.system.platform or "linux"

    @property
    def os_id(self) -> Optional[str]:
        return self.facts.system.os_id

    @property
    def os_version(self) -> Optional[str]:
        return self.facts.system.os_version

    @property
    def os_label(self) -> str:
        s = self.facts.system
        return s.os_name or " ".join(x for x in (s.os_id, s.os_version) if x) or "this OS"


def python_series(version: Optional[str], abi_tag: Optional[str] = None) -> Optional[str]:
    """``("3.12.3", "cp312")`` -> ``"3.12"``; ``("3.13.1", "cp313t")`` -> ``"3.13t"``."""
    if not version:
        return None
    m = _PY.match(version.strip())
    if not m:
        return None
    free = m["t"] or ("t" if abi_tag and abi_tag.endswith("t") else "")
    return f"{m['major']}.{m['minor']}{free}"


def is_datacenter(name: Optional[str], table: Any = None, pci_id: Optional[str] = None) -> Optional[bool]:
    """``"NVIDIA H200"`` -> True, ``"NVIDIA GeForce RTX 4090"`` -> False, unknown -> None.

    Forward compatibility (cuda-compat) works on NVIDIA data-center GPUs and select NGC-Server-Ready
    RTX boards only (https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html);
    GeForce and workstation boards refuse it with error 804. A GPU the table knows (by name, else
    by PCI device id) answers with its row's ``datacenter`` flag (None where the row marks that flag
    unconfirmed); only a GPU the table does not know falls back to the name heuristic.
    """
    model = None
    if table is not None:
        if name:
            model = table.gpu(name)
        if model is None and pci_id:
            model = table.gpu_by_pci(pci_id)
    if model is not None and hasattr(model, "is_datacenter"):
        return model.is_datacenter()
    return _datacenter_by_name(name)


def _datacenter_by_name(name: Optional[str]) -> Optional[bool]:
    """The name heuristic for GPUs outside the table."""
    if not name:
        return None
    if _CONSUMER.search(name):
        return False
    return True if _DATACENTER.search(name) else None


def _all_amd(names: Iterable[str]) -> bool:
    names = tuple(names)
    return bool(names) and all(_AMD.match(n.strip()) for n in names)


def parse_gpu(text: str, table: Any) -> Gpu:
    """``"RTX 3090 Ti"``, ``"H100"``, ``"8.6"``, ``"sm_120"`` or ``"MI300X"`` -> :class:`Gpu`.

    A GeForce name the table has no row for takes its series' compute capability
    (``Table.cc_from_name``: "GTX 1050 Ti" -> 6.1, Pascal), marked ``inferred``; anything else
    unknown is an error that names the closest models the table has.
    """
    from envdoctor.table import norm_cc

    s = text.strip()
    if not s:
        raise WhatIfError("--gpu needs a GPU name or a compute capability (e.g. 'RTX 3090 Ti', 8.6, sm_120)")
    if _AMD.match(s):
        return Gpu(s, None, vendor="amd", source="--gpu")
    if _CC_TEXT.match(s):
        cc = norm_cc(s)
        arch = table.architecture(cc) if (table is not None and cc) else None
        if cc is None or (table is not None and arch is None):
            raise WhatIfError(f"--gpu {s}: not a compute capability envdoctor knows (e.g. 8.6, 9.0, sm_120)")
        return Gpu(f"compute capability {cc}" + (f" ({arch.name})" if arch else ""), cc, source="--gpu")
    model = table.gpu(s) if table is not None else None
    if model is None:
        guess = table.cc_from_name(s) if table is not None else None
        if guess is not None:
            cc, series = guess
            return Gpu(s, cc, datacenter=is_datacenter(s, table), source="--gpu", inferred=series)
        near = table.gpu_suggestions(s) if table is not None else ()
        hint = f"did you mean {' or '.join(near)}? Or give" if near else "give"
        raise WhatIfError(f"--gpu {s!r}: unknown GPU; {hint} its compute capability instead "
                          "(e.g. --gpu 8.6 or --gpu sm_120)")
    return Gpu(model.name, model.cc, datacenter=is_datacenter(model.name, table), source="--gpu")


def gpu_label(g: Gpu, table: Any = None) -> str:
    """``"NVIDIA GeForce RTX 3090 (cc 8.6)"``; an inferred one says so:
    ``"GTX 1050 Ti (cc 6.1, Pascal, inferred from the name: GTX 10xx)"``."""
    if not g.cc:
        return f"{g.name}"
    if g.inferred:
        arch = table.architecture(g.cc) if table is not None else None
        return f"{g.name} (cc {g.cc}{', ' + arch.name if arch else ''}, inferred from the name: {g.inferred})"
    return f"{g.name} (cc {g.cc})"


def parse_os(text: str) -> Tuple[str, str]:
    """``"ubuntu:22.04"`` -> ``("ubuntu", "22.04")``. Windows is refused: envdoctor plans Linux
    machines (and macOS, CPU/MPS); its commands (apt, dnf, venv paths) would be wrong there."""
    m = _OS.match(text.strip())
    if not m:
        if _WINDOWS.match(text.strip()):
            raise WhatIfError(_NOT_WINDOWS.format(text=text.strip()))
        raise WhatIfError(f"--os {text!r}: expected ID:VERSION as in /etc/os-release (ubuntu:22.04, debian:12, rhel:9)")
    if _WINDOWS.match(m["id"]):
        raise WhatIfError(_NOT_WINDOWS.format(text=text.strip()))
    return m["id"].lower(), m["version"]


def parse_python(text: str) -> str:
    series = python_series(text)
    if series is None:
        raise WhatIfError(f"--python-version {text!r}: expected X.Y (3.12, or 3.13t for free-threaded)")
    return series


def parse_driver(text: str) -> Optional[str]:
    """``"570.133.20"`` -> itself; ``"none"`` -> None (no driver installed); a bare branch
    ``"580"`` stays ``"580"`` (:func:`read_driver` turns it into a version with the table)."""
    s = text.strip()
    if s.lower() in ("none", "no", "0"):
        return None
    try:
        v = Version(s)
    except InvalidVersion:
        raise WhatIfError(f"--driver {text!r}: expected a driver version such as 570.133.20, or 'none'") from None
    if v.release[0] < 100 or v.local or v.pre or v.dev or v.post or v.epoch:
        raise WhatIfError(f"--driver {text!r}: a driver version looks like 570.133.20 (not a CUDA version)")
    return s


def read_driver(text: str, table: Any) -> Tuple[Optional[str], Optional[str]]:
    """(the driver version to plan for, a note when it was read from a bare branch).

    ``"570.133.20"`` -> ``("570.133.20", None)``. A bare branch number (``"580"``) is what users
    type for "the R580 driver"; as a version it would be 580.0, older than every real 580 driver.
    It is read as the branch's first driver the table knows: the lowest Linux driver floor of a CUDA
    release (GA or update) inside that branch (580 -> 580.65.06, the CUDA 13.0 GA floor), so the
    plan holds for any driver of the branch. A branch no CUDA floor falls in stays ``"N.0"``.

    >>> read_driver("580", load_table())
    ('580.65.06', '--driver 580: read as the R580 branch (580.65.06 or newer)')
    """
    version = parse_driver(text)
    if version is None or len(Version(version).release) > 1:
        return version, None
    branch = Version(version).release[0]
    floors = [r.min_driver_linux for r in getattr(table, "cuda_releases", ())
              if getattr(r, "kind", "ga") in ("ga", "update") and major(r.min_driver_linux) == branch]
    if floors:
        first = min(floors, key=Version)
        return first, f"--driver {text.strip()}: read as the R{branch} branch ({first} or newer)"
    return f"{branch}.0", f"--driver {text.strip()}: read as the R{branch} branch (any {branch} driver)"


def parse_arch(text: str) -> str:
    arch = _ARCH.get(text.strip().lower())
    if arch is None:
        raise WhatIfError(f"--arch {text!r}: expected x86_64 or aarch64")
    return arch


# --- facts -> machine --------------------------------------------------------------------------

def gpus_from_facts(facts: Facts, table: Any) -> Tuple[Gpu, ...]:
    """The GPUs of :func:`envdoctor.gpus.machine_gpus` (the driver's, else torch's, else the PCI bus's)."""
    return tuple(Gpu(g.name, g.cc, datacenter=is_datacenter(g.name, table, g.pci_id),
                     source=f"PCI {g.address}" if g.kind == PCI else g.source, inferred=g.inferred)
                 for g in machine_gpus(facts, table))


def machine_from_facts(facts: Facts, table: Any, origin: str = "this machine",
                       known: Optional[Iterable[str]] = None) -> Machine:
    """Wrap probed (or reloaded) facts; ``known`` defaults to every area not skipped."""
    if known is None:
        skipped = set(facts.skipped)
        known = [a for a in AREAS if a not in skipped]
    return Machine(facts, gpus_from_facts(facts, table), frozenset(known), (), origin)


def blank_machine() -> Machine:
    """Nothing known: the start of a pure what-if plan (no probing)."""
    return Machine(Facts(system=SystemFacts(platform="linux", arch=None)), (), frozenset(), (), "what-if")


def apply_overrides(machine: Machine, o: Overrides, table: Any) -> Machine:
    """Replace each probed fact that ``o`` gives. Raises :class:`WhatIfError` on a bad value."""
    if not o.any():
        return machine
    facts, gpus, known, given = machine.facts, machine.gpus, set(machine.known), list(machine.given)
    system = facts.system
    if o.os:
        os_id, version = parse_os(o.os)
        distro = table.distro(os_id, version) if table is not None else None
        if os_id in ("macos", "darwin", "osx"):
            system = dataclasses.replace(system, os_id="darwin", os_version=version, os_name=f"macOS {version}",
                                         os_like=(), platform="darwin", glibc=None)
        else:
            like = _FAMILY_LIKE.get(getattr(distro, "family", ""), ()) if distro else ()
            system = dataclasses.replace(system, os_id=os_id, os_version=version, os_name=f"{os_id} {version}",
                                         os_like=tuple(x for x in like if x != os_id), platform="linux",
                                         glibc=getattr(distro, "glibc", None), os_codename=None)
        system = dataclasses.replace(system, wsl=None, container=None, container_evidence=None)
        facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, glibc=None))
        known.add("system")
        given.append(f"OS {system.os_name} (--os)")
        if system.glibc and not o.glibc:
            doubt = "" if distro.confirmed("glibc") else ", unconfirmed"
            given.append(f"glibc {system.glibc} ({system.os_name}'s, from envdoctor's table{doubt})")
    if o.arch:
        system = dataclasses.replace(system, arch=parse_arch(o.arch))
        given.append(f"CPU {system.arch} (--arch)")
        known.add("system")
    if o.glibc:
        try:
            Version(o.glibc)
        except InvalidVersion:
            raise WhatIfError(f"--glibc {o.glibc!r}: expected a version such as 2.35") from None
        system = dataclasses.replace(system, glibc=o.glibc)
        facts = dataclasses.replace(facts, python=dataclasses.replace(facts.python, glibc=None))
        given.append(f"glibc {o.glibc} (--glibc)")
    if system.platform == "darwin" and system.arch is None:
        system = dataclasses.replace(system, arch="arm64")
    facts = dataclasses.replace(facts, system=system)

    if o.python_version:
        series = parse_python(o.python_version)
        version = series.rstrip("t")
        abi = f"cp{version.replace('.', '')}" + ("t" if series.endswith("t") else "")
        facts = dataclasses.replace(facts, python=TargetPython(version=version, abi_tag=abi,
                                                               chosen_by="--python-version"))
        known.add("python")
        given.append(f"Python {series} (--python-version)")

    if o.no_gpu:
        if o.gpus:
            raise WhatIfError("--no-gpu and --gpu contradict each other")
        gpus = ()
        facts = dataclasses.replace(facts, pci=PciFacts(source="--no-gpu"),
                                    driver=DriverFacts() if not o.driver else facts.driver)
        known.update(("gpu", "driver"))
        given.append("no GPU (--no-gpu)")
    elif o.gpus:
        gpus = tuple(parse_gpu(g, table) for g in o.gpus)
        known.add("gpu")
        given.append("GPU " + ", ".join(gpu_label(g, table) for g in gpus) + " (--gpu)")

    driver = facts.driver
    if o.driver:
        version, read_as = read_driver(o.driver, table)
        if version is None:
            driver = DriverFacts()
            given.append("no NVIDIA driver (--driver none)")
        else:
            driver = DriverFacts(driver_version=version, kernel_module_version=version,
                                 userspace_version=version, sources={"driver_version": "--driver"},
                                 gpus=driver.gpus)
            given.append(read_as or f"driver {version} (--driver)")
        known.add("driver")
    if o.gpus or o.driver or o.no_gpu:
        nvidia = [g for g in gpus if g.vendor == "nvidia"]
        if o.gpus or o.no_gpu:
            infos = tuple(GpuInfo(i, g.name, g.cc, source=g.source) for i, g in enumerate(nvidia))
            pci = PciFacts(devices=tuple(
                PciDevice(f"what-if:{i}", "0x10de", "", "0x030200", name=g.name, name_source=g.source,
                          compute_capability=g.cc) for i, g in enumerate(nvidia)),
                source="--no-gpu" if o.no_gpu else "--gpu")
            facts = dataclasses.replace(facts, pci=pci)
        else:
            infos = driver.gpus
        driver = dataclasses.replace(driver, gpus=infos if driver.driver_version else ())
        facts = dataclasses.replace(facts, driver=driver)
    return Machine(facts, gpus, frozenset(known), tuple(given), machine.origin)

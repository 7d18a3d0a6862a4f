"""The machine the advisor plans for: probed facts (or a saved report's) and the GPUs as it sees them.

``Machine`` wraps the :class:`~envdoctor.facts.Facts` (so command builders that take facts keep
working) and adds what the facts cannot hold: AMD GPUs named with ``--gpu MI300X``, and which areas
were really read (a what-if plan never probed docker, so "docker is not installed" would be a lie).
:mod:`envdoctor.advise.whatif` replaces facts with what-if values.

>>> python_series("3.12.3", "cp312"), python_series("3.13.1", "cp313t"), cpu_arch("arm64")
('3.12', '3.13t', 'aarch64')
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from envdoctor.advise.request import DriverOs
from envdoctor.compat import driver_os as _driver_os
from envdoctor.facts import Facts
from envdoctor.facts.gpu import driver_in_effect
from envdoctor.facts.system import SystemFacts
from envdoctor.gpus import PCI, machine_gpus
from envdoctor.table import Table

#: Areas a plan may depend on. ``known`` holds those that were read (probe, report) or given.
AREAS = ("system", "gpu", "driver", "python", "conda", "docker", "toolkits")

Vendor = Literal["nvidia", "amd"]

_PY = re.compile(r"^(?P<major>\d)\.(?P<minor>\d{1,2})(?:\.\d+)?(?P<t>t?)$")
#: CPU names as ``uname -m``, Python and Docker spell them -> the wheel platform's name.
ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
#: Fallback for GPUs the table does not know (the table's ``datacenter`` flag decides for the rest).
#: Names NVIDIA sells outside the data centre; cuda-compat (forward compatibility) is refused there.
_CONSUMER = re.compile(r"geforce|titan|quadro|\brtx\b(?! pro 6000 blackwell server)|\bgtx\b|\bmx\d", re.I)
_DATACENTER = re.compile(
    r"tesla|\b(a100|a800|a30|a40|a10g?|a16|a2|l4|l40s?|l20|h100|h200|h800|h20|gh200|b200|b300|gb200|"
    r"gb300|t4|v100|p100|p40|p4|k80|k40)\b",
    re.I,
)


@dataclass(frozen=True)
class Gpu:
    """One GPU as the advisor sees it: ``Gpu("NVIDIA GeForce RTX 3090 Ti", "8.6", source="--gpu")``."""

    name: str | None
    cc: str | None  # "8.6"; None when not known
    vendor: Vendor = "nvidia"
    datacenter: bool | None = None  # may host cuda-compat (forward compatibility)
    source: str = ""  # "--gpu", "nvml", "nvidia-smi", "PCI 0000:01:00.0"
    inferred: str | None = None  # "GTX 10xx": cc inferred from the name's series, not a table row


@dataclass(frozen=True)
class Machine:
    """Facts plus what the advisor needs beyond them. Build with :func:`machine_from_facts`."""

    facts: Facts
    gpus: tuple[Gpu, ...] = ()
    known: frozenset[str] = frozenset(AREAS)
    given: tuple[str, ...] = ()  # "driver 515.65.01 (--driver)", ...
    origin: str = "this machine"  # "this machine", "report r.json", "what-if"

    # --- derived, read-only views -------------------------------------------------------------

    @property
    def driver(self) -> str | None:
        return driver_in_effect(self.facts.driver)

    @property
    def driver_os(self) -> DriverOs:
        """Whose driver minimums apply: under WSL2 the driver is the Windows one."""
        return _driver_os(self.facts.system)

    @property
    def nvidia(self) -> tuple[Gpu, ...]:
        return tuple(g for g in self.gpus if g.vendor == "nvidia")

    @property
    def amd(self) -> tuple[Gpu, ...]:
        return tuple(g for g in self.gpus if g.vendor == "amd")

    @property
    def python(self) -> str | None:
        """``"3.12"``, or ``"3.13t"`` for a free-threaded build; None when not known."""
        p = self.facts.python
        return python_series(p.version, p.abi_tag)

    @property
    def python_exe(self) -> str | None:
        return self.facts.python.executable

    @property
    def glibc(self) -> str | None:
        return self.facts.python.glibc or self.facts.system.glibc

    @property
    def arch(self) -> str:
        return cpu_arch(self.facts.system.arch)

    @property
    def platform(self) -> str:
        return self.facts.system.platform or "linux"

    @property
    def os_id(self) -> str | None:
        return self.facts.system.os_id

    @property
    def os_version(self) -> str | None:
        return self.facts.system.os_version

    @property
    def os_label(self) -> str:
        s = self.facts.system
        return s.os_name or " ".join(x for x in (s.os_id, s.os_version) if x) or "this OS"


def cpu_arch(name: str | None) -> str:
    """``"amd64"`` -> ``"x86_64"``, ``"arm64"`` -> ``"aarch64"``; None -> ``"x86_64"``; an unknown name as given."""
    arch = name or "x86_64"
    return ARCHES.get(arch.lower(), arch)


def python_series(version: str | None, abi_tag: str | None = None) -> str | None:
    """``("3.12.3", "cp312")`` -> ``"3.12"``; ``("3.13.1", "cp313t")`` -> ``"3.13t"``."""
    if not version:
        return None
    m = _PY.match(version.strip())
    if not m:
        return None
    free = m["t"] or ("t" if abi_tag and abi_tag.endswith("t") else "")
    return f"{m['major']}.{m['minor']}{free}"


def is_datacenter(name: str | None, table: Table | None = None, pci_id: str | None = None) -> bool | None:
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
    if model is not None:
        return model.is_datacenter()
    return _datacenter_by_name(name)


def _datacenter_by_name(name: str | None) -> bool | None:
    """The name heuristic for GPUs outside the table."""
    if not name:
        return None
    if _CONSUMER.search(name):
        return False
    return True if _DATACENTER.search(name) else None


def gpus_from_facts(facts: Facts, table: Table) -> tuple[Gpu, ...]:
    """The GPUs of :func:`envdoctor.gpus.machine_gpus` (the driver's, else torch's, else the PCI bus's)."""
    return tuple(
        Gpu(
            g.name,
            g.cc,
            datacenter=is_datacenter(g.name, table, g.pci_id),
            source=f"PCI {g.address}" if g.kind == PCI else g.source,
            inferred=g.inferred,
        )
        for g in machine_gpus(facts, table)
    )


def machine_from_facts(
    facts: Facts, table: Table, origin: str = "this machine", known: Iterable[str] | None = None
) -> Machine:
    """Wrap probed (or reloaded) facts; ``known`` defaults to every area not skipped."""
    if known is None:
        skipped = set(facts.skipped)
        known = [a for a in AREAS if a not in skipped]
    return Machine(facts, gpus_from_facts(facts, table), frozenset(known), (), origin)


def blank_machine() -> Machine:
    """Nothing known: the start of a pure what-if plan (no probing)."""
    return Machine(Facts(system=SystemFacts(platform="linux", arch=None)), (), frozenset(), (), "what-if")

"""Which NVIDIA GPUs the machine has, and their compute capabilities. Pure: facts (and table) in.

One answer for every rule and the advisor, in this order:

1. the GPUs the driver reports (NVML, else nvidia-smi); a missing compute capability (nvidia-smi
   before R510 has no ``compute_cap``) is filled from the table by name, else from the PCI device
   at the same bus address, else from a torch device of the same UUID or name, else inferred from
   a GeForce series name (``inferred`` says which series). :func:`with_table_ccs` writes the
   table's answer into the facts themselves (``inspect.enrich``), so the report shows it too;
2. else the devices torch sees (``torch.cuda.get_device_properties``);
3. else the NVIDIA devices on the PCI bus (compute capability from the table, see ``inspect.enrich``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, Optional

from envdoctor.facts import Facts, GpuInfo, PciDevice
from envdoctor.table import Table

#: Who reported the GPU: the driver (NVML or nvidia-smi), torch, or only the PCI bus.
GpuKind = Literal["driver", "torch", "pci"]
DRIVER: GpuKind = "driver"
TORCH: GpuKind = "torch"
PCI: GpuKind = "pci"


@dataclass(frozen=True)
class MachineGpu:
    """``MachineGpu("GPU 0 (Tesla V100-SXM2-16GB)", "7.0", "nvidia-smi", kind="driver", ...)``."""

    label: str  # "GPU 0 (NVIDIA H200)", "cuda:0 (NVIDIA H200)", "0000:00:06.0 (GH100 [H200])"
    cc: Optional[str]  # "9.0"; None when nothing tells
    source: str  # "nvml", "nvidia-smi", "torch.cuda.get_device_properties",
    # "PCI id 0x2335 + envdoctor table"
    kind: GpuKind = DRIVER
    name: Optional[str] = None  # "NVIDIA H200", "GH100 [H200 SXM 141GB]"
    index: Optional[int] = None  # the driver's or torch's index; None for a PCI device
    address: Optional[str] = None  # PCI address: "00000000:00:06.0" (driver), "0000:00:06.0" (PCI)
    pci_id: Optional[str] = None  # "0x2335"
    uuid: Optional[str] = None
    cc_source: Optional[str] = None  # where a cc the driver did not give came from: "envdoctor table", ...
    inferred: Optional[str] = None  # "GTX 10xx": cc inferred from the name's series, not a table row

    @property
    def where(self) -> str:
        """The source, and where the compute capability came from when the source lacked it:
        ``"nvidia-smi; compute capability from envdoctor table"``."""
        return f"{self.source}; compute capability from {self.cc_source}" if self.cc_source else self.source


def bus(address: str) -> str:
    """``"00000000:00:06.0"`` (nvidia-smi) and ``"0000:00:06.0"`` (sysfs) -> ``"00:06.0"``."""
    s = address.strip().lower()
    return s.split(":", 1)[1] if s.count(":") == 2 else s


def cc_key(index: int) -> str:
    """The ``DriverFacts.sources`` key naming where GPU ``index``'s compute capability came from
    when the driver did not report it: ``"gpus[0].compute_capability"``."""
    return f"gpus[{index}].compute_capability"


def _table_cc(g: GpuInfo, pci: Optional[PciDevice], table: Optional[Table]) -> tuple[Optional[str], Optional[str]]:
    """(cc, where) from the table: by the driver's name, else by the PCI id at the same bus address."""
    model = table.gpu(g.name) if table is not None and g.name else None
    if model is not None:
        return model.cc, "envdoctor table"
    if pci is not None and pci.compute_capability:
        return pci.compute_capability, f"PCI id {pci.device_id} + envdoctor table"
    model = table.gpu_by_pci(pci.device_id) if table is not None and pci is not None else None
    if model is not None and pci is not None:
        return model.cc, f"PCI id {pci.device_id} + envdoctor table"
    return None, None


def _pci_of(g: GpuInfo, facts: Facts) -> Optional[PciDevice]:
    return next(
        (d for d in facts.pci.devices if d.address and g.pci_bus_id and bus(d.address) == bus(g.pci_bus_id)), None
    )


def with_table_ccs(facts: Facts, table: Optional[Table]) -> Facts:
    """``facts`` with the compute capability of each driver GPU that lacks one (nvidia-smi before
    R510 has no ``compute_cap`` column) filled from the table, by name or by the PCI id at the same
    bus address; ``driver.sources[cc_key(i)]`` says where it came from. Pure; unknown GPUs stay
    empty (a GeForce series guess or torch's answer is not written into the driver's facts)."""
    d = facts.driver
    if table is None or all(g.compute_capability for g in d.gpus):
        return facts
    gpus, sources = [], dict(d.sources)
    for g in d.gpus:
        cc, where = (None, None) if g.compute_capability else _table_cc(g, _pci_of(g, facts), table)
        if cc and where:
            g = dataclasses.replace(g, compute_capability=cc)
            sources[cc_key(g.index)] = where
        gpus.append(g)
    return dataclasses.replace(facts, driver=dataclasses.replace(d, gpus=tuple(gpus), sources=sources))


def _fill_cc(
    g: GpuInfo, facts: Facts, table: Optional[Table]
) -> tuple[Optional[str], Optional[str], Optional[str], Optional[str]]:
    """(cc, where it came from, inferred series, PCI id) of a driver GPU."""
    pci = _pci_of(g, facts)
    pci_id = pci.device_id if pci is not None else None
    if g.compute_capability:
        return g.compute_capability, facts.driver.sources.get(cc_key(g.index)), None, pci_id
    cc, where = _table_cc(g, pci, table)
    if cc:
        return cc, where, None, pci_id
    for d in facts.torch.devices:
        if d.capability and ((g.uuid and d.uuid == g.uuid) or (g.name and d.name == g.name)):
            return d.capability, "torch.cuda.get_device_properties", None, pci_id
    guess = table.cc_from_name(g.name) if table is not None and g.name else None
    if guess:
        return guess[0], f"envdoctor's {guess[1]} series rule", guess[1], pci_id
    return None, None, None, pci_id


def machine_gpus(facts: Facts, table: Optional[Table] = None) -> tuple[MachineGpu, ...]:
    """The machine's NVIDIA GPUs: the driver's, else torch's, else the PCI bus's (see the module)."""
    out = []
    for g in facts.driver.gpus:
        cc, cc_source, inferred, pci_id = _fill_cc(g, facts, table)
        out.append(
            MachineGpu(
                f"GPU {g.index} ({g.name or 'unknown'})",
                cc,
                g.source or "driver",
                DRIVER,
                g.name,
                g.index,
                g.pci_bus_id,
                pci_id,
                g.uuid,
                cc_source,
                inferred,
            )
        )
    if out:
        return tuple(out)
    for d in facts.torch.devices:
        out.append(
            MachineGpu(
                f"cuda:{d.index} ({d.name or 'unknown'})",
                d.capability,
                "torch.cuda.get_device_properties",
                TORCH,
                d.name,
                d.index,
                uuid=d.uuid,
            )
        )
    if out:
        return tuple(out)
    for p in facts.pci.devices:
        cc = p.compute_capability
        model = table.gpu_by_pci(p.device_id) if table is not None and not cc else None
        if model is not None:
            cc = model.cc
        out.append(
            MachineGpu(
                f"{p.address} ({p.name or p.device_id})",
                cc,
                f"PCI id {p.device_id} + envdoctor table",
                PCI,
                p.name,
                None,
                p.address,
                p.device_id,
            )
        )
    return tuple(out)

"""Facts about the links of each GPU (PCIe, NVLink, NUMA) and between GPUs (path, P2P).

Read from NVML (envdoctor.nvml) and sysfs (``/sys/bus/pci/devices/<bus>/current_link_speed`` ...);
``nvidia-smi topo -m`` stands in for NVML's pairs where NVML cannot be used. On the H200::

    GpuLinks(index=0, name="NVIDIA H200", bus_id="00000000:00:06.0",
             pcie=PcieLink(gen=5, width=16, max_gen=5, max_width=16, gpu_max_gen=5, ...),
             numa_node=0, cpu_affinity="0-15", nvlinks=(), nvlink_error="not supported", ...)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Literal, Optional, Tuple

from envdoctor.facts.base import ProbeError

#: The legend of ``nvidia-smi topo -m`` for a PCIe path, nearest first ("NV#" is counted apart).
PcieLevel = Literal["X", "PIX", "PXB", "PHB", "NODE", "SYS"]
PCIE_LEVELS: Tuple[str, ...] = ("X", "PIX", "PXB", "PHB", "NODE", "SYS")
#: What is at the other end of an NVLink: another GPU of this machine, an NVSwitch (also assumed
#: when NVML cannot say, as NCCL does for switches a VM cannot see), or an IBM NPU (POWER9).
Remote = Literal["gpu", "switch", "ibmnpu"]


@dataclass(frozen=True)
class PcieLink:
    """One GPU's PCIe link: NVML's view (current; the most GPU and slot allow; the GPU alone) and
    sysfs's view of both ends (the GPU and the bridge port above it, i.e. the slot)."""

    gen: Optional[int] = None  # NVML current generation (drops at idle on many GPUs)
    width: Optional[int] = None  # NVML current width
    max_gen: Optional[int] = None  # NVML: the most this GPU in this system allows
    max_width: Optional[int] = None
    gpu_max_gen: Optional[int] = None  # NVML: the most the GPU alone supports
    sysfs_gen: Optional[int] = None  # /sys/bus/pci/devices/<bus>/current_link_speed, as a generation
    sysfs_width: Optional[int] = None
    sysfs_max_gen: Optional[int] = None  # max_link_speed: the GPU's own capability
    sysfs_max_width: Optional[int] = None
    upstream: Optional[str] = None  # the bridge port above the GPU: "0000:00:01.0"
    upstream_max_gen: Optional[int] = None  # what the slot (its port) supports
    upstream_max_width: Optional[int] = None
    source: str = ""  # "nvml", "sysfs", "nvml, sysfs"


@dataclass(frozen=True)
class NvLink:
    link: int
    active: bool
    generation: Optional[str] = None  # "4.0" (NVML version 6)
    remote_bus_id: Optional[str] = None
    remote: Optional[str] = None  # "gpu", "switch", "ibmnpu"
    remote_gpu: Optional[int] = None  # the index of the GPU at the other end
    errors: Dict[str, Optional[int]] = field(default_factory=dict)  # replay, recovery, crc_flit, crc_data


@dataclass(frozen=True)
class GpuLinks:
    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    bus_id: Optional[str] = None  # "00000000:00:06.0"
    pcie: PcieLink = field(default_factory=PcieLink)
    utilization_pct: Optional[int] = None  # when the link was read: a busy GPU's current link is its real one
    numa_node: Optional[int] = None  # the host NUMA node nearest the GPU
    numa_source: Optional[str] = None  # "nvml", "sysfs", "nvidia-smi topo -m"
    cpu_affinity: Optional[str] = None  # "0-15", CPUs nearest the GPU
    nvlinks: Tuple[NvLink, ...] = ()
    nvlink_error: Optional[str] = None  # why there is no NVLink list ("not supported": the GPU shows none)
    fabric_state: Optional[str] = None  # NVSwitch fabric (Fabric Manager): not_started, in_progress, completed
    fabric_status: Optional[int] = None  # an NVML return code, meaningful once completed (0 = ok)
    mig_mode: Optional[bool] = None
    mig_pending: Optional[bool] = None
    ecc_mode: Optional[bool] = None
    ecc_pending: Optional[bool] = None
    persistence_mode: Optional[bool] = None
    errors: Dict[str, str] = field(default_factory=dict)  # a field NVML failed to answer (not "not supported")

    @property
    def active_nvlinks(self) -> int:
        return sum(1 for x in self.nvlinks if x.active)


@dataclass(frozen=True)
class GpuPair:
    """How GPU ``a`` reaches GPU ``b`` (a < b)."""

    a: int
    b: int
    path: str  # "NV18" or a PCIe level: "PIX", "PXB", "PHB", "NODE", "SYS"
    pcie_path: Optional[str] = None  # the PCIe level even where NVLink joins them
    nvlinks: int = 0  # bonded NVLinks between them (through switches: the fewer of the two)
    nvlink_via: Optional[str] = None  # "direct" or "switch"
    p2p_read: Optional[str] = None  # "ok", "not supported", "chipset not supported", ...
    p2p_write: Optional[str] = None
    p2p_nvlink: Optional[str] = None
    source: str = "nvml"  # or "nvidia-smi topo -m"


@dataclass(frozen=True)
class NicLink:
    """A network device of ``nvidia-smi topo -m`` and its path to each GPU (GPU-NIC affinity for
    multi-node jobs: NCCL uses the NIC nearest each GPU)::

        NicLink(name="NIC0", device="mlx5_0", paths={0: "PIX", 1: "NODE", 4: "SYS"}, nearest_gpus=(0,))
    """

    name: str  # "NIC0" (newer drivers) or "mlx5_0" (older ones)
    device: Optional[str] = None  # from the "NIC Legend": "mlx5_0"
    paths: Dict[int, str] = field(default_factory=dict)  # GPU index -> "PIX", "NODE", "SYS", ...
    nearest_gpus: Tuple[int, ...] = ()  # the GPUs with the nearest path to it


@dataclass(frozen=True)
class LinksFacts:
    gpus: Tuple[GpuLinks, ...] = ()
    pairs: Tuple[GpuPair, ...] = ()
    source: Optional[str] = None  # "nvml" or "nvidia-smi topo -m"
    error: Optional[ProbeError] = None
    nics: Tuple[NicLink, ...] = ()  # from nvidia-smi topo -m (NVML does not list NICs)

    def pair(self, a: int, b: int) -> Optional[GpuPair]:
        lo, hi = min(a, b), max(a, b)
        return next((p for p in self.pairs if (p.a, p.b) == (lo, hi)), None)

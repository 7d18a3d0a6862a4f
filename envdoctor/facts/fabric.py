"""The fabric between nodes as one node sees it: InfiniBand/RoCE adapters, their PCIe placement
against the GPUs, GPUDirect RDMA, NCCL's net plugin and the NCCL variables that steer it.

Read by :mod:`envdoctor.probes.fabric` (sysfs, /proc/modules, the environment), judged by
:mod:`envdoctor.rules.fabric` (ED860-ED867).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from envdoctor.facts.base import ProbeError


@dataclass(frozen=True)
class IbPort:
    """``/sys/class/infiniband/DEV/ports/N``: ``state`` "ACTIVE", "DOWN", "INIT", "ARMED";
    ``phys_state`` "LinkUp", "Disabled", "Polling"; ``rate_gbps`` 400.0 from "400 Gb/sec (4X NDR)"."""

    port: int
    state: Optional[str] = None
    phys_state: Optional[str] = None
    rate_gbps: Optional[float] = None
    rate: Optional[str] = None  # as sysfs says it
    link_layer: Optional[str] = None  # InfiniBand, Ethernet (RoCE)


@dataclass(frozen=True)
class IbAdapter:
    name: str  # mlx5_0
    ports: Tuple[IbPort, ...] = ()
    firmware: Optional[str] = None  # fw_ver
    board_id: Optional[str] = None
    node_type: Optional[str] = None  # "CA", "switch", "router"
    pci_address: Optional[str] = None  # 0000:17:00.0
    numa_node: Optional[int] = None
    netdevs: Tuple[str, ...] = ()  # the adapter's network interfaces (ib0, eth2)


@dataclass(frozen=True)
class Placement:
    """How a GPU reaches an adapter over PCIe, in ``nvidia-smi topo -m``'s words: PIX or PXB (the
    same PCIe switch), PHB (the same host bridge), NODE (the same NUMA node), SYS (across the CPUs)."""

    gpu_bus_id: str  # sysfs form, 0000:00:06.0
    adapter: str
    path: str
    gpu_numa: Optional[int] = None
    adapter_numa: Optional[int] = None


@dataclass(frozen=True)
class FabricFacts:
    adapters: Tuple[IbAdapter, ...] = ()
    placements: Tuple[Placement, ...] = ()
    interfaces: Tuple[str, ...] = ()  # /sys/class/net
    modules: Tuple[str, ...] = ()  # the loaded ones envdoctor looks for (nvidia_peermem, ib_core...)
    net_plugins: Tuple[str, ...] = ()  # libnccl-net*.so found
    nccl_env: Dict[str, str] = field(default_factory=dict)
    source: Optional[str] = None
    error: Optional[ProbeError] = None

"""Text lines for the fabric (IB/RoCE adapters, their placement against the GPUs), shown by ``topo``,
``check -v`` and ``diag -v``::

    NIC mlx5_0 (0000:04:00.0, NUMA 0, fw 28.39.1002): port 1 ACTIVE 400 Gb/s InfiniBand
      GPU 0000:03:00.0: PIX
    GPUDirect RDMA: nvidia_peermem loaded; NCCL net plugin: none (built-in IB transport)
"""

from __future__ import annotations

from typing import List

from envdoctor.facts.fabric import FabricFacts


def fabric_lines(f: FabricFacts) -> List[str]:
    """Nothing for a node without adapters (and no NCCL variables set)."""
    lines: List[str] = []
    for a in f.adapters:
        where = ", ".join(
            x
            for x in (
                a.pci_address,
                f"NUMA {a.numa_node}" if a.numa_node is not None else None,
                f"fw {a.firmware}" if a.firmware else None,
            )
            if x
        )
        ports = (
            "; ".join(
                f"port {p.port} {p.state or '?'} {p.rate_gbps:g} Gb/s {p.link_layer or ''}".rstrip()
                if p.rate_gbps
                else f"port {p.port} {p.state or '?'}"
                for p in a.ports
            )
            or "no port"
        )
        lines.append(f"NIC {a.name} ({where or 'PCI address unknown'}): {ports}")
        lines += [f"  GPU {p.gpu_bus_id}: {p.path}" for p in f.placements if p.adapter == a.name]
    if f.adapters:
        gdr = [m for m in f.modules if m in ("nvidia_peermem", "nv_peer_mem")]
        plugins = ", ".join(f.net_plugins) or "none (built-in IB transport)"
        lines.append(
            f"GPUDirect RDMA: {', '.join(gdr) + ' loaded' if gdr else 'nvidia_peermem not loaded'}; "
            f"NCCL net plugin: {plugins}"
        )
    if f.nccl_env:
        lines.append("NCCL variables: " + " ".join(f"{k}={v}" for k, v in sorted(f.nccl_env.items())))
    return lines

"""InfiniBand/RoCE adapters, GPUDirect RDMA and the NCCL environment, from files and variables.

Everything is read through ``ctx`` (``ENVDOCTOR_ROOT`` / tests' fake roots), in the formats the
kernel writes them (a ConnectX-7 port)::

    /sys/class/infiniband/mlx5_0/fw_ver                 28.39.1002
    /sys/class/infiniband/mlx5_0/ports/1/state          4: ACTIVE
    /sys/class/infiniband/mlx5_0/ports/1/phys_state     5: LinkUp
    /sys/class/infiniband/mlx5_0/ports/1/rate           400 Gb/sec (4X NDR)
    /sys/class/infiniband/mlx5_0/ports/1/link_layer     InfiniBand
    /sys/class/infiniband/mlx5_0/device -> ../../../0000:17:00.0

The placement of each adapter against each GPU comes from the PCI tree in ``/sys/devices``
(the resolved ``/sys/bus/pci/devices/ADDR`` paths) and the devices' ``numa_node``.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from envdoctor.facts.fabric import FabricFacts, IbAdapter, IbPort, Placement
from envdoctor.probes.context import Context
from envdoctor.probes.pci import gpu_addresses

IB = "/sys/class/infiniband"
NET = "/sys/class/net"
SYS_PCI = "/sys/bus/pci/devices"
#: modules that matter for GPUDirect RDMA (``nvidia_peermem``; ``nv_peer_mem`` is the older
#: Mellanox one) and for IB itself
MODULES = ("nvidia_peermem", "nv_peer_mem", "ib_core", "mlx5_ib", "ib_uverbs")
#: the variables NCCL reads that steer its network and transports
NCCL_VARS = (
    "NCCL_SOCKET_IFNAME",
    "NCCL_IB_HCA",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_NET",
    "NCCL_NET_PLUGIN",
    "NCCL_DEBUG",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_P2P_LEVEL",
    "NCCL_CROSS_NIC",
    "NCCL_IB_GID_INDEX",
    "NCCL_ALGO",
    "NCCL_PROTO",
)
PLUGIN = re.compile(r"^libnccl-net.*\.so(\.\d+)*$")
_ADDRESS = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def _text(ctx: Context, path: str) -> Optional[str]:
    text, _ = ctx.read(path, limit=4096)
    return text.strip() if text and text.strip() else None


def sysfs_state(text: Optional[str]) -> Optional[str]:
    """``"4: ACTIVE"`` -> ``"ACTIVE"``; ``"5: LinkUp"`` -> ``"LinkUp"``."""
    if not text:
        return None
    return text.split(":", 1)[1].strip() if ":" in text else text.strip()


def rate_gbps(text: Optional[str]) -> Optional[float]:
    """``"400 Gb/sec (4X NDR)"`` -> 400.0; ``"2.5 Gb/sec (1X SDR)"`` -> 2.5."""
    m = re.match(r"\s*([\d.]+)\s*Gb/sec", text or "")
    return float(m.group(1)) if m else None


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _real(ctx: Context, path: str) -> Optional[str]:
    """The resolved path under the root, as an absolute path of the machine."""
    try:
        real = os.path.realpath(ctx.path(path))
    except OSError:
        return None
    root = os.path.realpath(ctx.root)
    return "/" + os.path.relpath(real, root) if real.startswith(root) else real


def _port(ctx: Context, base: str, port: str) -> IbPort:
    d = f"{base}/ports/{port}"
    rate = _text(ctx, f"{d}/rate")
    return IbPort(
        _int(port) or 0,
        sysfs_state(_text(ctx, f"{d}/state")),
        sysfs_state(_text(ctx, f"{d}/phys_state")),
        rate_gbps(rate),
        rate,
        _text(ctx, f"{d}/link_layer"),
    )


def adapter(ctx: Context, name: str, interfaces: Sequence[str]) -> IbAdapter:
    base = f"{IB}/{name}"
    ports = tuple(_port(ctx, base, p) for p in sorted(ctx.listdir(f"{base}/ports"), key=lambda p: _int(p) or 0))
    device = _real(ctx, f"{base}/device")
    address = os.path.basename(device) if device and _ADDRESS.match(os.path.basename(device)) else None
    numa = _int(_text(ctx, f"{SYS_PCI}/{address}/numa_node")) if address else None
    netdevs = tuple(i for i in interfaces if address and _real(ctx, f"{NET}/{i}/device") == device)
    node = sysfs_state(_text(ctx, f"{base}/node_type"))
    return IbAdapter(
        name,
        ports,
        _text(ctx, f"{base}/fw_ver"),
        _text(ctx, f"{base}/board_id"),
        node,
        address,
        numa if numa is not None and numa >= 0 else None,
        netdevs,
    )


def pci_chain(path: Optional[str]) -> Tuple[str, ...]:
    """``/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0`` -> the chain from the root complex."""
    if not path:
        return ()
    parts = [p for p in path.split("/") if p]
    return tuple(p for p in parts if p.startswith("pci") or _ADDRESS.match(p))


def placement(gpu: Tuple[str, ...], nic: Tuple[str, ...], gpu_numa: Optional[int], nic_numa: Optional[int]) -> str:
    """The topo -m word for two devices' PCI chains (root complex first, the device last).

    >>> sw = ("pci0000:00", "0000:00:01.0", "0000:01:00.0")       # a root port, a switch's upstream port
    >>> placement(sw + ("0000:02:00.0", "0000:03:00.0"), sw + ("0000:02:04.0", "0000:04:00.0"), 0, 0)
    'PIX'
    >>> placement(sw + ("0000:02:00.0", "0000:03:00.0", "0000:04:00.0", "0000:05:00.0"),
    ...           sw + ("0000:02:04.0", "0000:06:00.0"), 0, 0)
    'PXB'
    >>> placement(("pci0000:00", "0000:00:06.0"), ("pci0000:80", "0000:80:01.0", "0000:81:00.0"), 0, 1)
    'SYS'
    """
    common = 0
    for a, b in zip(gpu[:-1], nic[:-1]):
        if a != b:
            break
        common += 1
    if common >= 2:  # a bridge below the root complex is shared
        # one switch: each device one downstream port below the shared upstream port
        hops = (len(gpu) - 1 - common) + (len(nic) - 1 - common)
        return "PIX" if hops <= 2 else "PXB"
    if common == 1:
        return "PHB"
    if gpu_numa is not None and gpu_numa == nic_numa:
        return "NODE"
    return "SYS"


def _plugins(ctx: Context) -> Tuple[str, ...]:
    dirs: List[str] = [d for d in ctx.env.get("LD_LIBRARY_PATH", "").split(":") if d]
    dirs += [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/opt/hpcx/nccl_rdma_sharp_plugin/lib",
        "/opt/amazon/ofi-nccl/lib",
        "/opt/amazon/ofi-nccl/lib64",
    ]
    found: List[str] = []
    for d in dict.fromkeys(dirs):
        for name in ctx.listdir(d):
            if PLUGIN.match(name) and f"{d}/{name}" not in found:
                found.append(f"{d.rstrip('/')}/{name}")
    return tuple(found)


def _modules(ctx: Context) -> Tuple[str, ...]:
    text, _ = ctx.read("/proc/modules")
    loaded = {line.split()[0] for line in (text or "").splitlines() if line.strip()}
    loaded |= {m for m in MODULES if ctx.exists(f"/sys/module/{m}")}
    return tuple(m for m in MODULES if m in loaded)


def probe(ctx: Context, gpus: Optional[Sequence[str]] = None) -> FabricFacts:
    """``gpus``: the GPUs' PCI addresses (sysfs form); read from the PCI bus when not given."""
    interfaces = tuple(sorted(ctx.listdir(NET)))
    adapters = tuple(adapter(ctx, n, interfaces) for n in sorted(ctx.listdir(IB)))
    env: Dict[str, str] = {k: ctx.env[k] for k in NCCL_VARS if k in ctx.env}
    places: List[Placement] = []
    if adapters:
        for g in gpu_addresses(ctx) if gpus is None else gpus:
            g_chain = pci_chain(_real(ctx, f"{SYS_PCI}/{g}"))
            g_numa = _int(_text(ctx, f"{SYS_PCI}/{g}/numa_node"))
            for a in adapters:
                if not a.pci_address or not g_chain:
                    continue
                n_chain = pci_chain(_real(ctx, f"{SYS_PCI}/{a.pci_address}"))
                if n_chain:
                    places.append(
                        Placement(
                            g,
                            a.name,
                            placement(g_chain, n_chain, g_numa, a.numa_node),
                            g_numa if g_numa is not None and g_numa >= 0 else None,
                            a.numa_node,
                        )
                    )
    return FabricFacts(
        adapters, tuple(places), interfaces, _modules(ctx), _plugins(ctx) if adapters else (), env, "sysfs"
    )

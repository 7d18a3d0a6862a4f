"""ED860-ED867: the fabric between nodes (InfiniBand/RoCE, GPUDirect RDMA, NCCL's variables). Pure.

Facts from :mod:`envdoctor.probes.fabric`. A node without an IB/RoCE adapter gets nothing but the
NCCL variables' checks (NCCL then talks over sockets, which is a choice, not a fault).

>>> from envdoctor.facts.fabric import FabricFacts, IbAdapter, IbPort
>>> f = FabricFacts((IbAdapter("mlx5_0", (IbPort(1, "DOWN", "Disabled", 400.0, None, "InfiniBand"),)),),
...                 modules=("nvidia_peermem",))
>>> [(x.code, x.severity) for x in fabric_findings(f)]
[('ED860', 'error')]
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from envdoctor.codes import CODES
from envdoctor.facts import Facts
from envdoctor.facts.fabric import FabricFacts, Placement
from envdoctor.findings import Finding, Severity

REF_NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
REF_PEERMEM = "https://docs.nvidia.com/cuda/gpudirect-rdma/index.html"
REF_IB = "https://docs.kernel.org/infiniband/sysfs.html"
#: variables that force a slower path than NCCL would pick
SLOW_PATH = {
    "NCCL_P2P_DISABLE": "GPU peer-to-peer (NVLink/PCIe) off: copies go through host memory",
    "NCCL_IB_DISABLE": "InfiniBand/RoCE off: NCCL falls back to TCP sockets",
    "NCCL_SHM_DISABLE": "shared memory off between processes of one node",
}


def _f(
    code: str,
    severity: Severity,
    title: str,
    evidence: Iterable[str],
    fix: Iterable[str] = (),
    reference: Optional[str] = REF_NCCL_ENV,
) -> Finding:
    return Finding(
        code,
        severity,
        title,
        tuple(evidence),
        tuple(fix),
        reference=reference,
        area="links",
        explanation=CODES[code].meaning,
    )


def _names(value: str) -> List[str]:
    """NCCL_SOCKET_IFNAME / NCCL_IB_HCA: a comma list, each maybe prefixed ``^`` (exclude) or ``=``
    (exact), an HCA maybe with ``:port``. Exclusions name nothing that must exist."""
    if value.startswith("^"):
        return []
    out = []
    for item in value.lstrip("=").split(","):
        item = item.strip().split(":")[0]
        if item:
            out.append(item)
    return out


def ports(f: FabricFacts) -> Iterator[Finding]:
    """ED860: a port not ACTIVE (down, or up without a subnet manager); ED867: a port slower than
    the other ports of the node."""
    active = [p.rate_gbps for a in f.adapters for p in a.ports if p.state == "ACTIVE" and p.rate_gbps]
    for a in f.adapters:
        for p in a.ports:
            if p.state and p.state != "ACTIVE":
                why = (
                    "the link is up but no subnet manager has configured it (opensm, or the switch's)"
                    if p.phys_state == "LinkUp"
                    else f"physical state {p.phys_state or '?'}: cable, switch port or the port disabled"
                )
                yield _f(
                    "ED860",
                    "error",
                    f"{a.name} port {p.port} is {p.state}, not ACTIVE",
                    [
                        f"/sys/class/infiniband/{a.name}/ports/{p.port}/state: {p.state}; {why}",
                        f"link layer {p.link_layer or '?'}, rate {p.rate or '?'}",
                    ],
                    [
                        f"ibstat {a.name} {p.port}",
                        "sudo systemctl status opensm   # where this node runs the SM",
                        "# check the cable and the switch port; then envdoctor diag again",
                    ],
                    REF_IB,
                )
    if len(active) >= 2:
        top = max(active)
        for a in f.adapters:
            for p in a.ports:
                if p.state == "ACTIVE" and p.rate_gbps and p.rate_gbps < top:
                    yield _f(
                        "ED867",
                        "warning",
                        f"{a.name} port {p.port} runs at {p.rate_gbps:g} Gb/s, the node's other ports at {top:g}",
                        [f"rate {p.rate}"],
                        [f"ibstat {a.name} {p.port}", "# a cable or a switch port negotiated down"],
                        REF_IB,
                    )


def gpudirect(f: FabricFacts, open_module: Optional[bool]) -> Iterator[Finding]:
    """ED861: IB present, no GPUDirect RDMA path (no nvidia_peermem, and no dma-buf without the open
    kernel module); ED865: IB present and no NCCL net plugin (NCCL's built-in IB transport runs)."""
    ib = [a for a in f.adapters if any(p.state == "ACTIVE" for p in a.ports)]
    if not ib:
        return
    if not {"nvidia_peermem", "nv_peer_mem"} & set(f.modules) and not open_module:
        yield _f(
            "ED861",
            "warning",
            "InfiniBand/RoCE without GPUDirect RDMA: traffic between nodes is staged through host memory",
            [
                f"adapters {', '.join(a.name for a in ib)} ACTIVE",
                "nvidia_peermem not loaded; the proprietary kernel module has no dma-buf path",
            ],
            [
                "sudo modprobe nvidia-peermem",
                "echo nvidia-peermem | sudo tee /etc/modules-load.d/nvidia-peermem.conf   # at every boot",
            ],
            REF_PEERMEM,
        )
    if not f.net_plugins and not f.nccl_env.get("NCCL_NET_PLUGIN"):
        yield _f(
            "ED865",
            "info",
            "No NCCL net plugin found: NCCL uses its built-in IB verbs transport",
            ["no libnccl-net*.so on LD_LIBRARY_PATH or the usual library folders"],
            ["# fine for InfiniBand; SHARP (nccl-rdma-sharp-plugins) and AWS EFA (aws-ofi-nccl) need theirs"],
        )


_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")


def placement(f: FabricFacts) -> Iterator[Finding]:
    """ED866: a GPU whose nearest ACTIVE adapter is across the CPU link (SYS): its traffic between
    nodes crosses the inter-CPU link, and GPUDirect RDMA is slow or off there."""
    active = {a.name for a in f.adapters if any(p.state == "ACTIVE" for p in a.ports)}
    best: Dict[str, Tuple[int, Placement]] = {}
    for p in f.placements:
        if p.adapter in active:
            rank = _ORDER.index(p.path) if p.path in _ORDER else len(_ORDER)
            if p.gpu_bus_id not in best or rank < best[p.gpu_bus_id][0]:
                best[p.gpu_bus_id] = (rank, p)
    for bus, (_, p) in sorted(best.items()):
        if p.path == "SYS":
            yield _f(
                "ED866",
                "info",
                f"GPU {bus}: the nearest active adapter ({p.adapter}) is across the CPU link",
                [f"GPU NUMA node {p.gpu_numa}, {p.adapter} NUMA node {p.adapter_numa}: path SYS"],
                [
                    "nvidia-smi topo -m",
                    "# bind each rank to the adapter on its own NUMA node (NCCL does "
                    "this itself where the topology is known)",
                ],
            )


def nccl_env(f: FabricFacts) -> Iterator[Finding]:
    """ED862/ED863: NCCL_SOCKET_IFNAME / NCCL_IB_HCA name what is not there; ED864: a slow path forced."""
    env = f.nccl_env
    if "NCCL_SOCKET_IFNAME" in env:
        wanted = _names(env["NCCL_SOCKET_IFNAME"])
        exact = env["NCCL_SOCKET_IFNAME"].startswith("=")
        missing = [w for w in wanted if not any((i == w) if exact else i.startswith(w) for i in f.interfaces)]
        if wanted and len(missing) == len(wanted):
            yield _f(
                "ED862",
                "error",
                f"NCCL_SOCKET_IFNAME={env['NCCL_SOCKET_IFNAME']} names no interface of this node: NCCL cannot start",
                [f"interfaces: {', '.join(f.interfaces) or 'none'}"],
                ["ip -br link", "export NCCL_SOCKET_IFNAME=<one of them>   # or unset it"],
            )
    if "NCCL_IB_HCA" in env:
        wanted = _names(env["NCCL_IB_HCA"])
        have = [a.name for a in f.adapters]
        exact = env["NCCL_IB_HCA"].startswith("=")
        missing = [w for w in wanted if not any((h == w) if exact else h.startswith(w) for h in have)]
        if missing:
            yield _f(
                "ED863",
                "error",
                f"NCCL_IB_HCA={env['NCCL_IB_HCA']} names HCAs this node does not have",
                [f"missing: {', '.join(missing)}; present: {', '.join(have) or 'none'}"],
                ["ibv_devices", "export NCCL_IB_HCA=<present ones>   # or unset it"],
            )
    for name, what in SLOW_PATH.items():
        value = env.get(name, "").strip()
        if value and value not in ("0", ""):
            yield _f(
                "ED864",
                "warning",
                f"{name}={value} forces a slower path",
                [what],
                [f"unset {name}   # unless it works around a known fault on this machine"],
            )


def fabric_findings(f: FabricFacts, open_module: Optional[bool] = None) -> List[Finding]:
    return [*ports(f), *gpudirect(f, open_module), *placement(f), *nccl_env(f)]


def fabric(facts: Facts, table: Any) -> Iterator[Finding]:
    f = getattr(facts, "fabric", None)
    if isinstance(f, FabricFacts):
        yield from fabric_findings(
            f, facts.driver.kernel_module_flavor == "open" if facts.driver.kernel_module_flavor else None
        )


RULES = (fabric,)

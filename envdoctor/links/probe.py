"""The links of every GPU: PCIe (NVML and sysfs, both ends), NVLink, NUMA, and the path of each pair.

NVML (envdoctor.nvml) answers first; sysfs adds what NVML does not say: the link as Linux sees it
at the GPU and at the bridge port above it (the slot), and the NUMA node and CPUs where NVML has
none. Where NVML cannot be used (no binding, another root) ``nvidia-smi topo -m`` gives the pairs::

    /sys/bus/pci/devices/0000:17:00.0/current_link_speed   -> "16.0 GT/s PCIe"
    /sys/bus/pci/devices/0000:17:00.0/max_link_width       -> "16"
    /sys/bus/pci/devices/0000:17:00.0 -> ../../../devices/pci0000:16/0000:16:02.0/0000:17:00.0

NVML calls can block in the kernel; the probe gives up after the context's timeout.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.gpu import GpuInfo
from envdoctor.facts.links import PCIE_LEVELS, GpuLinks, GpuPair, LinksFacts, NicLink, NvLink, PcieLink
from envdoctor.nvml import NOT_SUPPORTED, PCI_ADDRESS, Reading, Session, bounded, pci_address, session_for
from envdoctor.parse.nvidia_smi import QUERY_FIELDS, parse_query_gpu
from envdoctor.probes import pci as pci_probe
from envdoctor.probes.context import Context
from envdoctor.probes.fabric import IB as SYS_IB
from envdoctor.probes.reasons import unreadable

if TYPE_CHECKING:
    from envdoctor.parse.nvidia_topo import TopoMatrix

SYS_PCI = pci_probe.SYS_PCI
GPU_FIELDS = (
    "name",
    "uuid",
    "pci",
    "pcie",
    "utilization_pct",
    "numa_node",
    "cpu_affinity",
    "nvlinks",
    "fabric",
    "mig_mode",
    "ecc_mode",
    "persistence_mode",
)
_GTS = {"2.5": 1, "5": 2, "5.0": 2, "8": 3, "8.0": 3, "16": 4, "16.0": 4, "32": 5, "32.0": 5, "64": 6, "64.0": 6}


def link_gen(speed: Optional[str]) -> Optional[int]:
    """sysfs ``current_link_speed`` -> PCIe generation: ``"32.0 GT/s PCIe"`` -> 5, ``"8 GT/s"`` -> 3."""
    if not speed:
        return None
    m = re.match(r"\s*([\d.]+)\s*GT/s", speed)
    return _GTS.get(m.group(1)) if m else None


def cpu_ranges(cpus: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 8]`` -> ``"0-3,8"`` (as ``nvidia-smi topo -m`` and ``local_cpulist`` print them)."""
    out: List[str] = []
    ids = sorted(set(cpus))
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def _int_text(text: Optional[str]) -> Optional[int]:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _sysfs(ctx: Context, address: str, name: str) -> Optional[str]:
    text, _ = ctx.read(f"{SYS_PCI}/{address}/{name}", limit=4096)
    return text.strip() if text else None


def _upstream(ctx: Context, address: str) -> Optional[str]:
    """The bridge port the GPU hangs off (the parent in /sys/devices), if it is a PCI device."""
    try:
        real = os.path.realpath(ctx.path(f"{SYS_PCI}/{address}"))
    except OSError:
        return None
    parent = os.path.basename(os.path.dirname(real))
    return parent if PCI_ADDRESS.match(parent) else None


def sysfs_link(ctx: Context, address: Optional[str]) -> Dict[str, Any]:
    """The link at the GPU and at its upstream port, from sysfs (empty when sysfs has no link files)."""
    if not address:
        return {}
    out: Dict[str, Any] = {
        "sysfs_gen": link_gen(_sysfs(ctx, address, "current_link_speed")),
        "sysfs_width": _int_text(_sysfs(ctx, address, "current_link_width")),
        "sysfs_max_gen": link_gen(_sysfs(ctx, address, "max_link_speed")),
        "sysfs_max_width": _int_text(_sysfs(ctx, address, "max_link_width")),
    }
    up = _upstream(ctx, address)
    if up:
        out.update(
            upstream=up,
            upstream_max_gen=link_gen(_sysfs(ctx, up, "max_link_speed")),
            upstream_max_width=_int_text(_sysfs(ctx, up, "max_link_width")),
        )
    return {k: v for k, v in out.items() if v is not None}


def _numa_sysfs(ctx: Context, address: Optional[str]) -> Tuple[Optional[int], Optional[str]]:
    if not address:
        return None, None
    node = _int_text(_sysfs(ctx, address, "numa_node"))
    cpus = _sysfs(ctx, address, "local_cpulist")
    return (node if node is not None and node >= 0 else None), cpus or None


def _mode(value: Any, key: str) -> Optional[bool]:
    return bool(value[key]) if isinstance(value, dict) and value.get(key) is not None else None


def _gpu(ctx: Context, r: Reading) -> GpuLinks:
    v = r.values
    bus = (v.get("pci") or {}).get("bus_id")
    address = pci_address(bus)
    nv = v.get("pcie") or {}
    sysfs = sysfs_link(ctx, address)
    sources = [s for s, ok in (("nvml", bool(nv)), ("sysfs", bool(sysfs))) if ok]
    pcie = PcieLink(
        gen=nv.get("gen"),
        width=nv.get("width"),
        max_gen=nv.get("max_gen"),
        max_width=nv.get("max_width"),
        gpu_max_gen=nv.get("gpu_max_gen"),
        source=", ".join(sources),
        **sysfs,
    )
    numa, numa_source = v.get("numa_node"), "nvml" if v.get("numa_node") is not None else None
    cpus = cpu_ranges(v["cpu_affinity"]) if v.get("cpu_affinity") else None
    if numa is None or cpus is None:
        s_node, s_cpus = _numa_sysfs(ctx, address)
        if numa is None and s_node is not None:
            numa, numa_source = s_node, "sysfs"
        cpus = cpus or s_cpus
    links = tuple(
        NvLink(
            link=int(x["link"]),
            active=bool(x["active"]),
            generation=x.get("generation"),
            remote_bus_id=x.get("remote_bus_id"),
            remote=x.get("remote_type"),
            errors=dict(x.get("errors") or {}),
        )
        for x in (v.get("nvlinks") or ())
    )
    fabric = v.get("fabric") or {}
    failed = {k: e for k, e in r.errors.items() if e != NOT_SUPPORTED}
    return GpuLinks(
        index=r.index,
        name=v.get("name"),
        uuid=v.get("uuid"),
        bus_id=bus,
        pcie=pcie,
        utilization_pct=v.get("utilization_pct"),
        numa_node=numa,
        numa_source=numa_source,
        cpu_affinity=cpus,
        nvlinks=links,
        nvlink_error=r.errors.get("nvlinks"),
        fabric_state=fabric.get("state"),
        fabric_status=fabric.get("status"),
        mig_mode=_mode(v.get("mig_mode"), "current"),
        mig_pending=_mode(v.get("mig_mode"), "pending"),
        ecc_mode=_mode(v.get("ecc_mode"), "current"),
        ecc_pending=_mode(v.get("ecc_mode"), "pending"),
        persistence_mode=v.get("persistence_mode"),
        errors=failed,
    )


def resolve_remotes(gpus: Sequence[GpuLinks]) -> Tuple[GpuLinks, ...]:
    """Name the GPU at the other end of each NVLink; an end that is no GPU here is a switch (NCCL
    assumes the same for NVSwitches a VM cannot see: sjeaugey in NVIDIA/nccl#1182)."""
    by_bus = {pci_address(g.bus_id): g.index for g in gpus if pci_address(g.bus_id)}
    out = []
    for g in gpus:
        links = []
        for x in g.nvlinks:
            other = by_bus.get(pci_address(x.remote_bus_id))
            if other is not None and x.remote != "switch":
                links.append(dataclasses.replace(x, remote="gpu", remote_gpu=other))
            elif x.remote in ("gpu", "ibmnpu"):  # a GPU this process cannot see, or a POWER9 CPU
                links.append(x)
            else:
                links.append(dataclasses.replace(x, remote="switch"))
        out.append(dataclasses.replace(g, nvlinks=tuple(links)))
    return tuple(out)


def nvlinks_between(a: GpuLinks, b: GpuLinks, p2p_nvlink: Optional[str]) -> Tuple[int, Optional[str]]:
    """(bonded NVLinks, "direct" or "switch") between two GPUs, as ``nvidia-smi topo -m`` counts them."""
    direct = sum(1 for x in a.nvlinks if x.active and x.remote_gpu == b.index)
    if direct:
        return direct, "direct"
    a_sw = sum(1 for x in a.nvlinks if x.active and x.remote == "switch")
    b_sw = sum(1 for x in b.nvlinks if x.active and x.remote == "switch")
    if a_sw and b_sw and p2p_nvlink in (None, "ok"):
        return min(a_sw, b_sw), "switch"
    return 0, None


def _pairs(session: Session, gpus: Sequence[GpuLinks]) -> Tuple[GpuPair, ...]:
    out = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            r = session.pair(a.index, b.index)
            level = r.values.get("path")
            count, via = nvlinks_between(a, b, r.values.get("p2p_nvlink"))
            out.append(
                GpuPair(
                    a.index,
                    b.index,
                    f"NV{count}" if count else (level or "?"),
                    level,
                    count,
                    via,
                    r.values.get("p2p_read"),
                    r.values.get("p2p_write"),
                    r.values.get("p2p_nvlink"),
                )
            )
    return tuple(out)


def read_links(ctx: Context) -> LinksFacts:
    """Everything NVML (and sysfs) say about the links; ``ctx.nvml`` defaults to ``pynvml``."""
    with session_for(ctx.nvml, ctx.nvml_shared) as session:
        if session.error is not None:
            return LinksFacts(error=session.error)
        gpus = resolve_remotes([_gpu(ctx, r) for r in session.read_all(GPU_FIELDS)])
        return LinksFacts(gpus, _pairs(session, gpus), "nvml", session.count_error)


def _bounded(ctx: Context) -> LinksFacts:
    return bounded(lambda: read_links(ctx), ctx.timeout, "envdoctor-links", lambda error: LinksFacts(error=error))


def from_topo(ctx: Context, m: TopoMatrix, smi_gpus: Sequence[GpuInfo] = ()) -> LinksFacts:
    """Facts from ``nvidia-smi topo -m`` (pairs, NUMA, CPUs), ``nvidia-smi --query-gpu`` (names and
    buses) and sysfs (PCIe). Without the query, GPU i is the i-th NVIDIA controller in bus order."""
    names = m.gpus
    known = {g.index: g for g in smi_gpus}
    addresses = list(pci_probe.gpu_addresses(ctx))
    aligned = len(addresses) == len(names)
    gpus = []
    for i, name in enumerate(names):
        row = m.rows[name]
        info = known.get(i)
        address = pci_address(info.pci_bus_id) if info and info.pci_bus_id else (addresses[i] if aligned else None)
        sysfs = sysfs_link(ctx, address)
        numa = _int_text(row.numa_affinity) if row.numa_affinity and row.numa_affinity.isdigit() else None
        gpus.append(
            GpuLinks(
                index=i,
                name=info.name if info else None,
                uuid=info.uuid if info else None,
                bus_id=(info.pci_bus_id if info and info.pci_bus_id else address),
                pcie=PcieLink(source="sysfs" if sysfs else "", **sysfs),
                numa_node=numa,
                numa_source="nvidia-smi topo -m" if numa is not None else None,
                cpu_affinity=row.cpu_affinity,
                nvlink_error="nvidia-smi topo -m does not list links",
            )
        )
    pairs = []
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            cell = m.link(a, names[j]) or "?"
            count = m.nvlinks(a, names[j])
            pairs.append(GpuPair(i, j, cell, None if count else cell, count, None, source="nvidia-smi topo -m"))
    return LinksFacts(tuple(gpus), tuple(pairs), "nvidia-smi topo -m", nics=nic_links(m))


def nic_links(m: TopoMatrix) -> Tuple[NicLink, ...]:
    """The matrix's network devices (every row that is no GPU) with their path to each GPU."""
    gpus = m.gpus
    out = []
    for name in m.devices:
        if name in gpus or name not in m.rows:
            continue
        paths = {i: m.rows[name].cells[g] for i, g in enumerate(gpus) if m.rows[name].cells.get(g)}
        rank = {i: PCIE_LEVELS.index(c) if c in PCIE_LEVELS else 0 for i, c in paths.items()}
        best = min(rank.values()) if rank else None
        nearest = tuple(i for i, r in rank.items() if r == best) if best is not None else ()
        out.append(NicLink(name, m.nics.get(name, name), paths, nearest))
    return tuple(out)


def _smi_fallback(ctx: Context, why: ProbeError) -> LinksFacts:
    from envdoctor.parse.nvidia_topo import TopoParseError, parse_topo  # only without NVML

    smi, not_program = ctx.locate("nvidia-smi")
    if not_program is not None:
        return LinksFacts(error=dataclasses.replace(why, message=f"{why.message}; {not_program.message}"))
    if not smi:
        return LinksFacts(error=why) if why.kind != "unavailable" else LinksFacts()
    ran = ctx.run([smi, "topo", "-m"])
    if ran.error is not None:
        return LinksFacts(
            error=ProbeError(
                ran.error.kind, f"{why.message}; nvidia-smi topo -m: {ran.error.message}", "nvidia-smi topo -m"
            )
        )
    query = ctx.run([smi, "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,nounits"])
    try:
        smi_gpus = parse_query_gpu(query.stdout) if query.error is None else ()
    except ValueError:  # SmiParseError: nvidia-smi printed nothing usable
        smi_gpus = ()
    try:
        return from_topo(ctx, parse_topo(ran.stdout), smi_gpus)
    except TopoParseError as exc:
        said = unreadable("nvidia-smi topo -m", ran, str(exc))
        return LinksFacts(error=ProbeError(said.kind, f"{why.message}; {said.message}", "nvidia-smi topo -m"))


def _smi_nics(ctx: Context) -> Tuple[NicLink, ...]:
    """The NICs of ``nvidia-smi topo -m`` beside NVML's GPUs (NVML has no NICs); none on any failure.
    Without an RDMA device in sysfs there is no NIC for it to list, and nvidia-smi (a second NVML
    start, the slowest step of check's probes on the H200) is not run."""
    if not ctx.listdir(SYS_IB):  # the NICs topo -m shows are these RDMA devices (NIC0: mlx5_0)
        return ()
    from envdoctor.parse.nvidia_topo import TopoParseError, parse_topo

    smi, not_program = ctx.locate("nvidia-smi")
    if not smi or not_program is not None:
        return ()
    ran = ctx.run([smi, "topo", "-m"])
    if ran.error is not None:
        return ()
    try:
        return nic_links(parse_topo(ran.stdout))
    except TopoParseError:
        return ()


def probe(ctx: Context) -> LinksFacts:
    if ctx.nvml is None and str(ctx.root) != "/":
        return _smi_fallback(ctx, ProbeError("unavailable", "NVML not consulted when reading another root"))
    facts = _bounded(ctx)
    if facts.error is not None and facts.error.kind == "not_found":
        return _smi_fallback(ctx, facts.error)
    if len(facts.gpus) > 0 and facts.error is None:
        nics = _smi_nics(ctx)
        if nics:
            facts = dataclasses.replace(facts, nics=nics)
    return facts

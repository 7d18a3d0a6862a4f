"""GPU links as text (``envdoctor topo``, the "GPU links" section of ``check``) and as the versioned
JSON document ``envdoctor.topo/1``. Nothing is computed here: the expected peaks come in as a
:class:`envdoctor.links.analysis_topo.Topology`.

The matrix reads like ``nvidia-smi topo -m``, with the expected peak (GB/s, one direction) of each
path under its code::

            GPU0       GPU1       CPU Affinity  NUMA
    GPU0    X          NV4 56     0-23          0
    GPU1    NV4 56     X          0-23          0
"""

from __future__ import annotations

from typing import Annotated, Dict, Iterable, List, Optional, Tuple, TypedDict

from envdoctor.doctypes import FindingsSummary, Json
from envdoctor.facts import Facts
from envdoctor.facts.base import ProbeError
from envdoctor.facts.links import PCIE_LEVELS, GpuLinks, GpuPair, LinksFacts, NicLink
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding
from envdoctor.findings import summary as findings_summary
from envdoctor.links.analysis_topo import PciePeak, Topology

SCHEMA = "envdoctor.topo/1"
LEGEND = (
    ("X", "self"),
    ("NV#", "# bonded NVLinks (direct, or through NVSwitch)"),
    ("PIX", "at most one PCIe bridge"),
    ("PXB", "several PCIe bridges, no host bridge"),
    ("PHB", "a PCIe host bridge (the CPU)"),
    ("NODE", "host bridges within one NUMA node"),
    ("SYS", "the CPU interconnect between NUMA nodes (QPI/UPI)"),
)
Row = Tuple[str, str]


def _gbps(x: Optional[float]) -> str:
    if x is None:
        return "?"
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def _pcie_text(g: GpuLinks) -> str:
    p = g.pcie
    if not (p.gen or p.max_gen or p.sysfs_gen or p.sysfs_max_gen):
        return "not reported"
    parts = []
    if p.gen:
        parts.append(f"Gen{p.gen} x{p.width or '?'} now")
    if p.max_gen:
        parts.append(f"max Gen{p.max_gen} x{p.max_width or '?'} in this slot")
    if p.gpu_max_gen and p.gpu_max_gen != p.max_gen:
        parts.append(f"the GPU Gen{p.gpu_max_gen}")
    if p.sysfs_max_gen and not p.max_gen:
        parts.append(f"GPU max Gen{p.sysfs_max_gen} x{p.sysfs_max_width or '?'} (sysfs)")
    if p.upstream and p.upstream_max_gen:
        parts.append(f"port {p.upstream} max Gen{p.upstream_max_gen} x{p.upstream_max_width or '?'}")
    return ", ".join(parts)


def _nvlink_text(g: GpuLinks) -> str:
    if not g.nvlinks:
        return "none" if g.nvlink_error in (None, "not supported") else g.nvlink_error or "none"
    gens = sorted({x.generation for x in g.nvlinks if x.generation})
    ends = sorted(
        {f"GPU {x.remote_gpu}" if x.remote_gpu is not None else (x.remote or "?") for x in g.nvlinks if x.active}
    )
    return (
        f"{g.active_nvlinks}/{len(g.nvlinks)} active"
        + (f", NVLink {'/'.join(gens)}" if gens else "")
        + (f", to {', '.join(ends)}" if ends else "")
    )


def _modes(g: GpuLinks) -> str:
    def onoff(v: Optional[bool]) -> str:
        return "?" if v is None else ("on" if v else "off")

    parts = [
        f"ECC {onoff(g.ecc_mode)}" if g.ecc_mode is not None else "ECC n/a",
        f"MIG {onoff(g.mig_mode)}" if g.mig_mode is not None else "MIG n/a",
        f"persistence {onoff(g.persistence_mode)}",
    ]
    if g.fabric_state:
        parts.append(f"fabric {g.fabric_state.replace('_', ' ')}")
    return ", ".join(parts)


def links_rows(f: Facts) -> List[Row]:
    """The "GPU links" section of ``check``: one line per GPU and one per GPU pair."""
    lf: LinksFacts = getattr(f, "links", None) or LinksFacts()
    if not lf.gpus:
        if lf.error is not None and lf.error.kind not in ("not_found", "unavailable"):
            return [("Links", f"failed: {lf.error.message}")]
        return [("Links", "no GPU to read" + (f" ({lf.error.message})" if lf.error else ""))]
    rows: List[Row] = []
    for g in lf.gpus:
        numa = f"NUMA node {g.numa_node}" if g.numa_node is not None else "NUMA node ?"
        cpus = f", CPUs {g.cpu_affinity}" if g.cpu_affinity else ""
        rows.append((f"GPU {g.index} PCIe", _pcie_text(g)))
        rows.append((f"GPU {g.index} NVLink", _nvlink_text(g)))
        rows.append((f"GPU {g.index} host", f"{numa}{cpus}; {_modes(g)}"))
    for p in lf.pairs:
        p2p = f", P2P read {p.p2p_read}, write {p.p2p_write}" if p.p2p_read else ""
        rows.append(
            (
                f"GPU {p.a} <-> GPU {p.b}",
                f"{p.path}" + (f" (PCIe {p.pcie_path})" if p.pcie_path and p.pcie_path != p.path else "") + p2p,
            )
        )
    for n in lf.nics:
        near = ", ".join(map(str, n.nearest_gpus))
        rows.append(
            (
                f"{n.name} {n.device}" if n.device and n.device != n.name else n.name,
                f"nearest GPU {near} ({n.paths.get(n.nearest_gpus[0], '?')})" if n.nearest_gpus else "?",
            )
        )
    rows.append(("Source", lf.source or "?"))
    return rows


def matrix_lines(lf: LinksFacts, top: Topology) -> List[str]:
    """``nvidia-smi topo -m``'s matrix with each path's expected peak (GB/s, one direction)."""
    names = [f"GPU{g.index}" for g in lf.gpus]
    cells: List[List[str]] = []
    for g in lf.gpus:
        row = []
        for h in lf.gpus:
            if g.index == h.index:
                row.append("X")
                continue
            pair = lf.pair(g.index, h.index)
            peak = top.path(g.index, h.index)
            row.append(f"{pair.path if pair else '?'} {_gbps(peak.gbps) if peak else '?'}")
        row.append(g.cpu_affinity or "")
        row.append("" if g.numa_node is None else str(g.numa_node))
        cells.append(row)
    header = names + ["CPU Affinity", "NUMA"]
    widths = [max(len(x) for x in [header[i]] + [r[i] for r in cells]) for i in range(len(header))]
    first = max(len(n) for n in names) if names else 4
    out = [" " * first + "  " + "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    for name, row in zip(names, cells):
        out.append(name.ljust(first) + "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return out


def nic_lines(lf: LinksFacts) -> List[str]:
    """``NIC0  mlx5_0  PIX: GPU 0; NODE: GPU 1, 2, 3; SYS: GPU 4, 5, 6, 7``, nearest path first."""
    width = max((len(n.name) for n in lf.nics), default=4)
    dev = max((len(n.device or "") for n in lf.nics), default=0)
    out = []
    for n in lf.nics:
        by_path: Dict[str, List[int]] = {}
        for i, path in sorted(n.paths.items()):
            by_path.setdefault(path, []).append(i)
        order = sorted(by_path, key=lambda p: PCIE_LEVELS.index(p) if p in PCIE_LEVELS else -1)
        text = "; ".join(f"{p}: GPU {', '.join(map(str, by_path[p]))}" for p in order)
        out.append(f"{n.name.ljust(width)}  {(n.device or '').ljust(dev)}  {text}".rstrip())
    return out


def render_topo_text(
    lf: LinksFacts, top: Topology, findings: Iterable[Finding], color: bool = False, suppressed: Iterable[Finding] = ()
) -> str:
    from envdoctor.lines import findings_section
    from envdoctor.style import Style

    style = Style(color)
    findings = tuple(findings)
    out: List[str] = []
    if not lf.gpus:
        out.append(f"GPU links: {lf.error.message}" if lf.error is not None else "GPU links: no NVIDIA GPU found")
        return "\n".join(out) + "\n"
    out.append(style(f"GPU links ({lf.source or '?'}; peaks in GB/s each way, from data/links.toml)", "bold"))
    if len(lf.gpus) > 1:
        out.extend("  " + line for line in matrix_lines(lf, top))
        out.append("")
        seen = set()
        for p in top.paths:
            key = (p.path, p.basis)
            if key in seen:
                continue
            seen.add(key)
            mark = "" if p.confirmed else "  (rate unconfirmed)"
            out.append(f"  {p.path:<5} {_gbps(p.gbps):>4} GB/s  {p.basis}{mark}")
        out.append("  " + "; ".join(f"{k} = {v}" for k, v in LEGEND))
    else:
        out.append("  one GPU: nothing links it to another GPU here")
    out.append("")
    for g in lf.gpus:
        peak = top.pcie(g.index)
        out.append(style(f"GPU {g.index}  {g.name or '?'}  {g.bus_id or ''}".rstrip(), "bold"))
        pcie = _pcie_text(g)
        if peak is not None and peak.gbps:
            pcie += f"; {_gbps(peak.gbps)} GB/s each way at {peak.basis}"
        if peak is not None and peak.idle_low:
            pcie += "; the current link is lower because the GPU is idle (power saving), not a fault"
        out.append(f"  PCIe    {pcie}")
        out.append(f"  NVLink  {_nvlink_text(g)}")
        numa = f"node {g.numa_node} ({g.numa_source})" if g.numa_node is not None else "node ?"
        out.append(f"  NUMA    {numa}" + (f", CPUs {g.cpu_affinity}" if g.cpu_affinity else ""))
        out.append(f"  Modes   {_modes(g)}")
        if g.errors:
            out.append("  Unread  " + "; ".join(f"{k}: {v}" for k, v in sorted(g.errors.items())))
    if lf.nics:
        out.append("")
        out.append(style("NICs (path to each GPU; NCCL uses the nearest)", "bold"))
        out.extend("  " + line for line in nic_lines(lf))
    out.append("")
    out.extend(findings_section(tuple(findings), style, suppressed, "envdoctor topo"))
    return "\n".join(out) + "\n"


class TopoGpu(TypedDict):
    """What the document adds to a GPU's links: its PCIe link's expected peak and its NVLinks up."""

    pcie_peak: Optional[PciePeak]
    active_nvlinks: Annotated[int, Json(minimum=0)]


class PeakOf(TypedDict):
    """A pair's expected peak over its path (one direction)."""

    kind: str
    gbps: Optional[float]
    basis: str
    confirmed: bool


class TopoPair(TypedDict):
    peak: Optional[PeakOf]


class _TopoKeys(TypedDict):
    schema: str
    envdoctor_version: str
    source: Optional[str]
    error: Optional[ProbeError]
    gpus: List[Annotated[TopoGpu, Json.extends(GpuLinks)]]
    pairs: List[Annotated[TopoPair, Json.extends(GpuPair)]]
    findings: List[Finding]
    summary: FindingsSummary


class TopoDocument(_TopoKeys, total=False):
    """Facts per GPU and pair (PCIe both ends, NVLink, NUMA, the path of each pair), each with its
    expected peak, the NICs and their paths to the GPUs, and the findings (ED840-ED869)."""

    created_at: str
    collected_at: Annotated[str, Json(description="the older name of created_at, still read")]
    nics: List[NicLink]


def topo_document(
    lf: LinksFacts, top: Topology, findings: Iterable[Finding], *, envdoctor_version: str, created_at: str
) -> TopoDocument:
    """The ``envdoctor.topo/1`` document: facts per GPU and pair, each with its expected peak."""
    findings = tuple(findings)
    gpus = []
    for g in lf.gpus:
        d = to_data(g)
        peak = top.pcie(g.index)
        d["pcie_peak"] = to_data(peak) if peak else None
        d["active_nvlinks"] = g.active_nvlinks
        gpus.append(d)
    pairs = []
    for p in lf.pairs:
        d = to_data(p)
        path = top.path(p.a, p.b)
        d["peak"] = {k: v for k, v in to_data(path).items() if k not in ("a", "b", "path")} if path else None
        pairs.append(d)
    doc: TopoDocument = {
        "schema": SCHEMA,
        "envdoctor_version": envdoctor_version,
        "created_at": created_at,
        "source": lf.source,
        "error": to_data(lf.error),
        "gpus": gpus,
        "pairs": pairs,
        "nics": [to_data(n) for n in lf.nics],
        "findings": [to_data(f) for f in findings],
        "summary": findings_summary(findings),
    }
    return doc

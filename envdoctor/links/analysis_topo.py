"""What each link should carry: the expected peak of every GPU's PCIe link and of every path
between two GPUs, from the link facts and data/links.toml. Pure; used by ``topo``, the links
checks and ``comms`` (measured/expected).

>>> top = expected(links_facts, load_links())                 # doctest: +SKIP
>>> top.path(0, 1).gbps, top.path(0, 1).basis                   # 8x H200 on NVSwitch
(450.0, '18 NVLink 4.0 links x 25 GB/s')

The PCIe figure of a GPU is its link as it trains under load: NVML's maximum for this GPU in this
slot, not the current generation, which many GPUs lower at idle to save power (the current one is
used when the GPU was busy as it was read). A path over PCIe gets the slower of its two GPUs' links.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Tuple

from envdoctor.facts.links import GpuLinks, LinksFacts
from envdoctor.links.table import LinkTable

#: A GPU busier than this (NVML utilisation, %) when read has its link trained as under load.
BUSY_PCT = 50


@dataclass(frozen=True)
class PciePeak:
    index: int
    gen: Optional[int]
    width: Optional[int]
    gbps: Optional[float]  # one direction
    basis: str  # "Gen5 x16 (the most this GPU and slot allow)"
    idle_low: bool = False  # current link below it while idle: power saving, not a fault


@dataclass(frozen=True)
class PathPeak:
    a: int
    b: int
    path: str  # "NV18", "PIX", ..., "SYS"
    kind: str  # "nvlink" or "pcie"
    gbps: Optional[float]  # one direction
    basis: str
    confirmed: bool = True  # every rate used rests on a source read


@dataclass(frozen=True)
class Topology:
    gpus: Tuple[PciePeak, ...]
    paths: Tuple[PathPeak, ...]

    def pcie(self, index: int) -> Optional[PciePeak]:
        return next((g for g in self.gpus if g.index == index), None)

    def path(self, a: int, b: int) -> Optional[PathPeak]:
        lo, hi = min(a, b), max(a, b)
        return next((p for p in self.paths if (p.a, p.b) == (lo, hi)), None)

    def bottleneck(self, indices: Iterable[int]) -> Optional[PathPeak]:
        """The slowest path among these GPUs: what a ring over them is held to."""
        chosen = set(indices)
        paths = [p for p in self.paths if p.a in chosen and p.b in chosen and p.gbps]
        return min(paths, key=lambda p: p.gbps or 0.0) if paths else None


def pcie_peak(g: GpuLinks, table: LinkTable) -> PciePeak:
    p = g.pcie
    busy = g.utilization_pct is not None and g.utilization_pct >= BUSY_PCT
    gen: Optional[int]
    width: Optional[int]
    if busy and p.gen and p.width:
        gen, width, why = p.gen, p.width, "as trained under load"
    elif p.max_gen and p.max_width:
        gen, width, why = p.max_gen, p.max_width, "the most this GPU and slot allow"
    elif p.sysfs_max_gen or p.sysfs_gen:
        ends = [x for x in (p.sysfs_max_gen, p.upstream_max_gen) if x]
        widths = [x for x in (p.sysfs_max_width, p.upstream_max_width, p.sysfs_width) if x]
        gen, width, why = (min(ends) if ends else p.sysfs_gen), (min(widths) if widths else None), "from sysfs"
    else:
        gen, width, why = p.gen, p.width, "the current link"
    idle_low = bool(not busy and ((p.gen and gen and p.gen < gen) or (p.width and width and p.width < width)))
    gbps = table.pcie_gbps(gen, width)
    basis = f"Gen{gen} x{width} ({why})" if gen and width else "PCIe link not reported"
    return PciePeak(g.index, gen, width, gbps, basis, idle_low)


def _generation(g: GpuLinks, table: LinkTable) -> Optional[str]:
    gens = {x.generation for x in g.nvlinks if x.active and x.generation}
    if gens:
        return sorted(gens)[0]
    spec = table.gpu(g.name)
    return spec.nvlink_generation if spec else None


def expected(facts: LinksFacts, table: LinkTable) -> Topology:
    gpus = {g.index: g for g in facts.gpus}
    pcie = tuple(pcie_peak(g, table) for g in facts.gpus)
    by_index = {p.index: p for p in pcie}
    paths = []
    for pair in facts.pairs:
        a = gpus.get(pair.a)
        if pair.nvlinks and a is not None:
            gen = _generation(a, table)
            per = table.per_link_gbps(gen, a.name)
            gbps = round(per * pair.nvlinks, 3) if per else None
            rate = table.nvlink_rate(gen)
            spec = table.gpu(a.name)
            confirmed = bool(rate and rate.confirmed("per_link_gbps")) and not (
                spec is not None and spec.nvlink_per_link_gbps and not spec.confirmed("nvlink_per_link_gbps")
            )
            via = " through NVSwitch" if pair.nvlink_via == "switch" else ""
            basis = (
                f"{pair.nvlinks} NVLink {gen} links x {per:g} GB/s{via}"
                if per
                else f"{pair.nvlinks} NVLinks of an unknown generation"
            )
            paths.append(PathPeak(pair.a, pair.b, pair.path, "nvlink", gbps, basis, confirmed))
            continue
        ends = [by_index[i] for i in (pair.a, pair.b) if i in by_index and by_index[i].gbps]
        if len(ends) == 2:
            slow = min(ends, key=lambda e: e.gbps or 0.0)
            extra = "; crosses the CPU interconnect" if pair.path == "SYS" else ""
            basis = f"PCIe Gen{slow.gen} x{slow.width} (GPU {slow.index}, the slower end){extra}"
            paths.append(PathPeak(pair.a, pair.b, pair.path, "pcie", slow.gbps, basis))
        else:
            paths.append(PathPeak(pair.a, pair.b, pair.path, "pcie", None, "PCIe links not reported"))
    return Topology(pcie, tuple(paths))

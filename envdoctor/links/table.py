"""The link table (``data/links.toml``): PCIe and NVLink rates, link facts per GPU model, the
fraction of a peak that good hardware reaches, and published NCCL bus bandwidth.

>>> t = load_links()
>>> t.pcie_gbps(5, 16), t.nvlink_gbps("4.0", 18)
(63.02, 450.0)
>>> t.gpu("NVIDIA H200").nvlink_links, t.gpu("NVIDIA H200").nvlink_form
(18, 'sxm')

Rows are keyed by the names of ``data/gpus.toml`` (the names NVML reports); every row carries
``source`` and ``checked``, and ``unconfirmed``/``unconfirmed_fields`` where a fact rests on memory.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Literal, Optional, Tuple

from envdoctor.table.names import norm_gpu_name
from envdoctor.table.rows import Sourced
from envdoctor.table.schema import Doc, TableError, Where, check_top, load_rows, one_of
from envdoctor.table.source import data_directory, read_doc

NvlinkForm = Literal["sxm", "bridge", "none", "c2c"]
PathKind = Literal["nvlink", "pcie", "host_copy"]
FORMS: Tuple[str, ...] = ("sxm", "bridge", "none", "c2c")
KINDS: Tuple[str, ...] = ("nvlink", "pcie", "host_copy")
COLLECTIVES: Tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


@dataclass(frozen=True)
class PcieRate(Sourced):
    gen: int
    gts: float
    encoding: str
    lane_gbps: float
    x16_gbps: float
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class NvlinkRate(Sourced):
    generation: str  # "4.0"
    nvml_version: int  # 6
    per_link_gbps: float  # one direction
    max_links: int
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class GpuLinkSpec(Sourced):
    name: str  # "NVIDIA H200", as in data/gpus.toml
    nvlink_links: int
    nvlink_form: NvlinkForm
    pcie_gen: int
    pcie_width: int
    source: str
    checked: str
    nvlink_generation: Optional[str] = None
    nvlink_per_link_gbps: Optional[float] = None
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class Achievable(Sourced):
    kind: PathKind
    fraction: float
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class Published(Sourced):
    gpu: str
    gpus: int
    collective: str
    nvls: str  # "on", "off", "n/a"
    size_bytes: int
    busbw_gbps: float
    tool: str
    source: str
    checked: str
    unconfirmed: bool = False
    unconfirmed_fields: Tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class LinkTable:
    pcie: Tuple[PcieRate, ...]
    nvlink: Tuple[NvlinkRate, ...]
    gpus: Tuple[GpuLinkSpec, ...]
    achievable: Tuple[Achievable, ...]
    published: Tuple[Published, ...]

    def pcie_rate(self, gen: Optional[int]) -> Optional[PcieRate]:
        return next((r for r in self.pcie if r.gen == gen), None)

    def pcie_gbps(self, gen: Optional[int], width: Optional[int]) -> Optional[float]:
        """One direction of a PCIe link: ``pcie_gbps(4, 8)`` -> 15.755."""
        rate = self.pcie_rate(gen)
        if rate is None or not width:
            return None
        return round(rate.x16_gbps * width / 16, 3)

    def nvlink_rate(self, generation: Optional[str] = None, nvml_version: Optional[int] = None) -> Optional[NvlinkRate]:
        for r in self.nvlink:
            if (generation is not None and r.generation == generation) or (
                nvml_version is not None and r.nvml_version == nvml_version
            ):
                return r
        return None

    def per_link_gbps(self, generation: Optional[str], gpu_name: Optional[str] = None) -> Optional[float]:
        """A model's own per-link rate where it has one (GA10x bridges), else its generation's."""
        spec = self.gpu(gpu_name) if gpu_name else None
        if spec is not None and spec.nvlink_per_link_gbps:
            return spec.nvlink_per_link_gbps
        rate = self.nvlink_rate(generation)
        return rate.per_link_gbps if rate else None

    def nvlink_gbps(self, generation: Optional[str], links: int, gpu_name: Optional[str] = None) -> Optional[float]:
        """One direction over ``links`` bonded NVLinks: ``nvlink_gbps("4.0", 18)`` -> 450.0."""
        per = self.per_link_gbps(generation, gpu_name)
        return round(per * links, 3) if per and links else None

    def gpu(self, name: Optional[str]) -> Optional[GpuLinkSpec]:
        """The row of a GPU model by its NVML name (compared as every table compares names)."""
        if not name:
            return None
        key = norm_gpu_name(name)
        return next((g for g in self.gpus if norm_gpu_name(g.name) == key), None)

    def fraction(self, kind: str) -> Optional[Achievable]:
        return next((a for a in self.achievable if a.kind == kind), None)

    def published_for(self, gpu: Optional[str], gpus: int, collective: str, nvls: str) -> Optional[Published]:
        """A published busbw for the same model, GPU count, collective and NVLS state."""
        spec = self.gpu(gpu)
        if spec is None:
            return None
        for p in self.published:
            if p.gpu == spec.name and p.gpus == gpus and p.collective == collective and p.nvls in (nvls, "n/a"):
                return p
        return None


def load(path: Path) -> LinkTable:
    """Read and check a ``links.toml``; :class:`TableError` names the file, row and field."""
    return parse_doc(read_doc(Path(path).name, Path(path).parent))


def parse_doc(doc: Doc) -> LinkTable:
    """The table of a parsed ``links.toml``."""
    label = doc.label
    check_top(doc, ("pcie", "nvlink", "gpu", "achievable", "published"))

    def lanes(where: Where, v: Dict[str, Any]) -> None:
        if abs(v["lane_gbps"] * 16 - v["x16_gbps"]) > 0.05:
            raise where.fail(f"field 'x16_gbps': {v['x16_gbps']} is not 16 x lane_gbps ({v['lane_gbps']})")

    pcie = load_rows(doc, "pcie", "gen", PcieRate, lanes)
    gens = [r.gen for r in pcie]
    if gens != sorted(set(gens)):
        raise TableError(f"{label}: [[pcie]] generations must rise without repeats: {gens}")
    nvlink = load_rows(doc, "nvlink", "generation", NvlinkRate)
    known_generations = {r.generation for r in nvlink}

    def gpu(where: Where, v: Dict[str, Any]) -> None:
        one_of(where, "nvlink_form", v["nvlink_form"], FORMS)
        if v["nvlink_generation"] is not None and v["nvlink_generation"] not in known_generations:
            raise where.fail(f"field 'nvlink_generation': {v['nvlink_generation']!r} has no [[nvlink]] row")
        if (v["nvlink_generation"] is None) != (v["nvlink_links"] == 0):
            raise where.fail(
                "fields 'nvlink_generation' and 'nvlink_links' disagree (links without a generation "
                "or a generation without links)"
            )
        if v["pcie_gen"] and v["pcie_gen"] not in gens:
            raise where.fail(f"field 'pcie_gen': {v['pcie_gen']} has no [[pcie]] row")

    gpus = load_rows(doc, "gpu", "name", GpuLinkSpec, gpu)
    names = [g.name for g in gpus]
    if len(names) != len(set(names)):
        raise TableError(f"{label}: [[gpu]] names repeat")

    def reach(where: Where, v: Dict[str, Any]) -> None:
        if v["kind"] not in KINDS or not 0 < v["fraction"] <= 1:
            raise where.fail(
                f"kind {v['kind']!r} / fraction {v['fraction']} (kinds: {', '.join(KINDS)}; 0 < fraction <= 1)"
            )

    achievable = load_rows(doc, "achievable", "kind", Achievable, reach)

    def published_row(where: Where, v: Dict[str, Any]) -> None:
        if v["gpu"] not in names:
            raise where.fail(f"field 'gpu': {v['gpu']!r} has no [[gpu]] row")
        if v["collective"] not in COLLECTIVES or v["nvls"] not in ("on", "off", "n/a"):
            raise where.fail(f"collective {v['collective']!r} / nvls {v['nvls']!r} unknown")

    published = load_rows(doc, "published", "gpu", Published, published_row)
    return LinkTable(pcie, nvlink, gpus, achievable, published)


@functools.lru_cache(maxsize=4)
def _default(where: str) -> LinkTable:
    """``links.toml`` of the data folder the main table uses (``$ENVDOCTOR_DATA``, the wheel's, the
    checkout's, or a zip archive's); ``where`` names that folder, the key of this memo."""
    return parse_doc(read_doc("links.toml"))


def load_links(path: Optional[Path] = None) -> LinkTable:
    """The bundled table (loaded once), or a fresh load of ``path`` (tests point it at broken copies)."""
    return _default(str(data_directory())) if path is None else load(Path(path))

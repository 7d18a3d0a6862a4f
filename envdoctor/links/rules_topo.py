"""ED840-869: GPU links and topology (PCIe, NVLink, P2P, NUMA, MIG, ECC, persistence). Pure.

Facts come from :mod:`envdoctor.links.probe`; rates and per-model link counts from
``data/links.toml`` (:mod:`envdoctor.links.table`); whether a model is a data-center GPU from the
main table (``data/gpus.toml``).

A PCIe link that runs below its maximum at idle is not a fault: GPUs lower the link with their
performance state to save power (nvidia-smi's help: the current generation and width "may be reduced
when the GPU is not in use"; an NVIDIA engineer showed P8 -> Gen1 and P0 -> Gen3 on one card,
NVIDIA/open-gpu-kernel-modules#731). So the checks compare what does not change with load: NVML's
maximum for this GPU in this slot ("possible with this GPU and system configuration") against the
GPU's own maximum (a slot, riser or BIOS limit), and the two ends in sysfs (the GPU's capability
against the port above it). The current generation and width count only when the GPU was busy
(utilisation >= 50%) as it was read.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple

from envdoctor import commands
from envdoctor.checks import needs
from envdoctor.codes import CODES
from envdoctor.facts import Facts
from envdoctor.facts.links import GpuLinks, LinksFacts
from envdoctor.findings import Finding, Severity
from envdoctor.links.analysis_topo import BUSY_PCT
from envdoctor.links.table import LinkTable

REF_PCIE = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"
REF_ACS = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs"
)
REF_FABRIC = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
REF_MIG = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html"
REF_PERSISTENCE = "https://docs.nvidia.com/deploy/driver-persistence/index.html"
REF_NVLINK_ERRORS = "https://docs.nvidia.com/deploy/nvml-api/group__NvLink.html"


def _meaning(code: str) -> str:
    """What the code means in general (envdoctor/codes.py), the finding's explanation."""
    return CODES[code].meaning


def _links(facts: Facts) -> LinksFacts:
    return facts.links


def _label(g: GpuLinks) -> str:
    return f"GPU {g.index} ({g.name or 'NVIDIA GPU'}, {g.bus_id or 'bus ?'})"


def _spec(table: LinkTable, g: GpuLinks) -> Any:
    return table.gpu(g.name)


def _lspci(g: GpuLinks) -> str:
    bus = (g.bus_id or "").lower()
    short = bus.split(":", 1)[1] if bus.count(":") == 2 else bus
    return (
        f"sudo lspci -vv -s {short} | grep -E 'LnkCap|LnkSta'   # the link's capability and status"
        if short
        else "sudo lspci -vv | grep -E 'LnkCap|LnkSta'"
    )


def _pcie_fix(g: GpuLinks, gen: Optional[int]) -> Tuple[str, ...]:
    return (
        _lspci(g),
        f"# move the card to a CPU-attached x16 slot rated Gen{gen or '?'}, or replace the riser/cable",
        f"# in the BIOS, set the slot's PCIe link speed to Auto (or Gen{gen or '?'}) and disable lane "
        "bifurcation on it",
        "# then read again under load: envdoctor topo  (while envdoctor bench runs)",
    )


@needs("links")
def slot_limits_generation(facts: Facts, table: Any, links: LinkTable) -> Iterator[Finding]:
    """ED840: the most this GPU in this slot allows is a lower generation than the GPU supports."""
    lt = links
    for g in _links(facts).gpus:
        p = g.pcie
        spec = _spec(lt, g)
        capable = p.gpu_max_gen or p.sysfs_max_gen or (spec.pcie_gen if spec and spec.pcie_gen else None)
        allowed = p.max_gen
        where = "NVML's maximum for this GPU in this slot"
        if allowed is None and p.upstream_max_gen and p.sysfs_max_gen:
            allowed, where = min(p.upstream_max_gen, p.sysfs_max_gen), f"the port above it ({p.upstream})"
        if not capable or not allowed or allowed >= capable:
            continue
        told = "NVML" if p.gpu_max_gen else "sysfs max_link_speed" if p.sysfs_max_gen else "envdoctor table"
        evidence = [f"{_label(g)}: the GPU supports PCIe Gen{capable} ({told})", f"{where}: Gen{allowed}"]
        if p.upstream and p.upstream_max_gen:
            evidence.append(
                f"bridge port {p.upstream} above it: max Gen{p.upstream_max_gen}"
                + (f" x{p.upstream_max_width}" if p.upstream_max_width else "")
                + " (sysfs)"
            )
        gbps_now, gbps_full = lt.pcie_gbps(allowed, p.max_width or 16), lt.pcie_gbps(capable, p.max_width or 16)
        if gbps_now and gbps_full:
            evidence.append(f"{gbps_now:g} GB/s each way instead of {gbps_full:g} (data/links.toml)")
        yield Finding(
            "ED840",
            "warning",
            f"GPU {g.index}'s PCIe link is held to Gen{allowed}; the GPU supports Gen{capable}",
            evidence=tuple(evidence),
            fix=_pcie_fix(g, capable),
            reference=REF_PCIE,
            area="links",
            explanation=_meaning("ED840"),
        )


@needs("links")
def link_narrower(facts: Facts, table: Any, links: LinkTable) -> Iterator[Finding]:
    """ED841: fewer lanes than the GPU supports, in the slot or as trained."""
    lt = links
    for g in _links(facts).gpus:
        p = g.pcie
        spec = _spec(lt, g)
        capable = p.sysfs_max_width or (spec.pcie_width if spec and spec.pcie_width else None)
        allowed = p.max_width
        evidence: List[str] = []
        if capable and allowed and allowed < capable:
            evidence.append(
                f"{_label(g)}: the GPU has x{capable} "
                f"({'sysfs max_link_width' if p.sysfs_max_width else 'envdoctor table'}), "
                f"this slot allows x{allowed} (NVML)"
            )
            narrow = allowed
        elif capable and p.upstream_max_width and p.upstream_max_width < capable:
            evidence.append(
                f"{_label(g)}: the GPU has x{capable}, the port above it ({p.upstream}) x{p.upstream_max_width} (sysfs)"
            )
            narrow = p.upstream_max_width
        else:
            continue
        gen = p.max_gen or p.sysfs_max_gen
        if gen:
            evidence.append(
                f"{lt.pcie_gbps(gen, narrow) or '?'} GB/s each way instead of "
                f"{lt.pcie_gbps(gen, capable or allowed) or '?'} at Gen{gen} (data/links.toml)"
            )
        yield Finding(
            "ED841",
            "warning",
            f"GPU {g.index}'s PCIe link is x{narrow}, narrower than the GPU's x{capable or allowed}",
            evidence=tuple(evidence),
            fix=_pcie_fix(g, gen),
            reference=REF_PCIE,
            area="links",
            explanation=_meaning("ED841"),
        )


def down_trained_under_load(facts: Facts, table: Any) -> Iterator[Finding]:
    """ED842: busy, yet the link runs below the generation or width it trains at."""
    for g in _links(facts).gpus:
        p = g.pcie
        if g.utilization_pct is None or g.utilization_pct < BUSY_PCT:
            continue
        if (p.gen and p.max_gen and p.gen < p.max_gen) or (p.width and p.max_width and p.width < p.max_width):
            yield Finding(
                "ED842",
                "warning",
                f"GPU {g.index}'s PCIe link runs at Gen{p.gen} x{p.width} under load, "
                f"below its Gen{p.max_gen} x{p.max_width}",
                evidence=(
                    f"{_label(g)}: {g.utilization_pct}% busy when read, link Gen{p.gen} "
                    f"x{p.width} of Gen{p.max_gen} x{p.max_width} (NVML)",
                ),
                fix=_pcie_fix(g, p.max_gen),
                reference=REF_PCIE,
                area="links",
                explanation=_meaning("ED842"),
            )


@needs("links")
def nvlink_down(facts: Facts, table: Any, links: LinkTable) -> Iterator[Finding]:
    """ED845: NVLinks inactive on a GPU that has them."""
    lt = links
    for g in _links(facts).gpus:
        if not g.nvlinks:
            continue
        spec = _spec(lt, g)
        expected = spec.nvlink_links if spec and spec.nvlink_links else len(g.nvlinks)
        active = g.active_nvlinks
        if active >= expected:
            continue
        down = [x.link for x in g.nvlinks if not x.active]
        form = spec.nvlink_form if spec else None
        evidence = [
            f"{_label(g)}: {active} of {expected} NVLinks active"
            + (
                f" ({spec.nvlink_links} by design, data/links.toml)"
                if spec
                else f" (NVML lists {len(g.nvlinks)}; the model is not in data/links.toml)"
            ),
            "inactive: link " + ", ".join(map(str, down[:18])) + (" ..." if len(down) > 18 else ""),
        ]
        if active == 0 and form == "bridge":
            yield Finding(
                "ED845",
                "info",
                f"GPU {g.index} has NVLink but no link is up: no bridge fitted?",
                evidence=tuple(evidence),
                fix=(
                    "# fit an NVLink bridge between two cards of the same model (same slot spacing), then reboot",
                    f"nvidia-smi nvlink -s -i {g.index}   # each link's state",
                ),
                area="links",
                explanation=_meaning("ED845"),
            )
            continue
        severity: Severity = "error"  # a degraded fabric: collectives fall back to fewer links or PCIe
        fix: List[str] = [f"nvidia-smi nvlink -s -i {g.index}   # each link's state and speed"]
        if form == "sxm":
            fix += list(
                commands.on_host(
                    facts.system,
                    ("sudo systemctl status nvidia-fabricmanager   # NVSwitch boards need Fabric Manager",),
                    restart=False,
                )
            )
            fix += ["# if links stay down after a reboot: the baseboard needs service (report the GPU's serial)"]
        else:
            fix += ["# re-seat the NVLink bridge (power off first), then reboot"]
        yield Finding(
            "ED845",
            severity,
            f"GPU {g.index}: {expected - active} of {expected} NVLinks are down",
            evidence=tuple(evidence),
            fix=tuple(fix),
            reference=REF_NVLINK_ERRORS,
            area="links",
            explanation=_meaning("ED845"),
        )


def nvlink_errors(facts: Facts, table: Any) -> Iterator[Finding]:
    """ED846: error counters above zero on active links."""
    for g in _links(facts).gpus:
        bad = []
        for x in g.nvlinks:
            counts = {k: v for k, v in x.errors.items() if v}
            if x.active and counts:
                bad.append(f"link {x.link}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        if bad:
            yield Finding(
                "ED846",
                "warning",
                f"GPU {g.index}: NVLink errors counted on {len(bad)} link(s)",
                evidence=(f"{_label(g)} (NVML, since the driver loaded)",) + tuple(bad[:8]),
                fix=(
                    f"nvidia-smi nvlink -e -i {g.index}   # the counters per link",
                    "# run envdoctor comms and read again: counters that grow under load mean a "
                    "failing link (re-seat the bridge, or service for SXM boards)",
                ),
                reference=REF_NVLINK_ERRORS,
                area="links",
                explanation=_meaning("ED846"),
            )


@needs("links")
def pairs_below_design(facts: Facts, table: Any, links: LinkTable) -> Iterator[Finding]:
    """ED848: ``nvidia-smi topo -m`` (no NVML link states) shows pairs with fewer NVLinks than the
    GPU model has: on an NVSwitch board every pair has all of them (H100/H200: NV18); on a mesh
    (DGX-1, HGX A100 4-GPU) a GPU's pairs add up to them. NV12 or SYS there is a degraded fabric."""
    lf = _links(facts)
    lt = links
    pairs = [p for p in lf.pairs if p.source == "nvidia-smi topo -m"]
    by_index = {g.index: g for g in lf.gpus}
    for name in sorted({g.name for g in lf.gpus if g.name}):
        spec = lt.gpu(name)
        if not spec or spec.nvlink_form != "sxm" or not spec.nvlink_links:
            continue
        design = spec.nvlink_links
        own = [
            p
            for p in pairs
            if by_index.get(p.a) is not None
            and by_index.get(p.b) is not None
            and by_index[p.a].name == name
            and by_index[p.b].name == name
        ]
        if not own:
            continue
        switched = any(p.nvlinks >= design for p in own)
        total: Dict[int, int] = {}
        for p in own:
            for i in (p.a, p.b):
                total[i] = total.get(i, 0) + p.nvlinks
        short: List[int] = []
        if switched:
            bad = [p for p in own if p.nvlinks < design]
        else:  # a mesh: a pair may have none, but each GPU's pairs add up to the design
            short = sorted(i for i, n in total.items() if n < design)
            bad = sorted(
                (p for p in own if (p.a in short or p.b in short) and p.nvlinks < design),
                key=lambda p: (p.nvlinks, p.a, p.b),
            )
        if not bad:
            continue
        evidence = [f"GPU {p.a} <-> GPU {p.b}: {p.path} (nvidia-smi topo -m)" for p in bad[:12]]
        title = (
            f"{len(bad)} GPU pair(s) have fewer NVLinks than {name} has ({design})"
            if switched
            else f"GPU {', '.join(map(str, short))} reach(es) fewer NVLinks than {name} has ({design})"
        )
        sums = ", ".join(f"GPU {i}: {n}" for i, n in sorted(total.items()))
        evidence.append(
            f"{name}: {design} NVLinks per GPU by design (data/links.toml); "
            + (
                f"the other pairs show NV{design}: an NVSwitch board"
                if switched
                else f"each GPU's pairs add up to {sums}"
            )
        )
        yield Finding(
            "ED848",
            "error",
            title,
            evidence=tuple(evidence),
            fix=("nvidia-smi nvlink -s   # each link's state (needs the driver's NVML)",)
            + commands.on_host(
                facts.system,
                ("sudo systemctl status nvidia-fabricmanager   # NVSwitch boards need Fabric Manager",),
                restart=False,
            )
            + (
                "# links that stay down after a reboot: the baseboard needs service (report the serials); "
                "an SXM card on a PCIe adapter board has no NVLink at all",
            ),
            reference=REF_NVLINK_ERRORS,
            area="links",
            explanation=_meaning("ED848"),
        )


def fabric_not_ready(facts: Facts, table: Any) -> Iterator[Finding]:
    """ED847: NVSwitch fabric registration not completed, or completed with an error."""
    bad = [
        g
        for g in _links(facts).gpus
        if g.fabric_state in ("not_started", "in_progress") or (g.fabric_state == "completed" and g.fabric_status)
    ]
    if not bad:
        return
    evidence = tuple(
        f"{_label(g)}: fabric state {g.fabric_state}"
        + (f", status {g.fabric_status}" if g.fabric_status else "")
        + " (NVML)"
        for g in bad
    )
    yield Finding(
        "ED847",
        "error",
        f"NVSwitch fabric is not ready on {len(bad)} GPU(s): NVLink unusable",
        evidence=evidence,
        fix=commands.on_host(
            facts.system,
            (
                "sudo systemctl status nvidia-fabricmanager",
                "sudo systemctl enable --now nvidia-fabricmanager   # its version must match the driver's",
                "sudo journalctl -u nvidia-fabricmanager -b   # why it failed",
            ),
            restart=False,
        ),
        reference=REF_FABRIC,
        area="links",
        explanation=_meaning("ED847"),
    )


def no_p2p(facts: Facts, table: Any) -> Iterator[Finding]:
    """ED850: P2P read or write not supported between GPUs (one finding for every such pair)."""
    lf = _links(facts)
    pairs = [
        p
        for p in lf.pairs
        if p.source == "nvml" and (p.p2p_read not in (None, "ok") or p.p2p_write not in (None, "ok"))
    ]
    if not pairs:
        return
    names = {g.index: g.name or "" for g in lf.gpus}
    geforce = all("geforce" in names.get(i, "").lower() for p in pairs for i in (p.a, p.b))
    evidence = tuple(
        f"GPU {p.a} <-> GPU {p.b} ({p.path}): P2P read {p.p2p_read}, write {p.p2p_write} (NVML)" for p in pairs[:12]
    )
    if geforce:
        yield Finding(
            "ED850",
            "info",
            "No peer-to-peer access between these GeForce GPUs: NCCL goes through host memory",
            evidence=evidence,
            fix=(
                "# GeForce drivers do not enable P2P over PCIe; an NVLink bridge (RTX 3090/3090 Ti) "
                "gives P2P over NVLink",
            ),
            reference=REF_ACS,
            area="links",
            explanation=_meaning("ED850"),
        )
        return
    yield Finding(
        "ED850",
        "warning",
        f"No peer-to-peer access between {len(pairs)} GPU pair(s): NCCL goes through host memory",
        evidence=evidence,
        fix=(
            "sudo lspci -vvv | grep -i acsctl   # 'SrcValid+' on a bridge above the GPUs: ACS redirects P2P to the CPU",
            "# disable ACS in the BIOS (or for those bridges with setpci), as NCCL's guide describes",
            "cat /proc/cmdline   # with intel_iommu=on / amd_iommu=on, add iommu=pt and reboot",
            "# in a VM, P2P needs the hypervisor to pass the GPUs through with it enabled",
        ),
        reference=REF_ACS,
        area="links",
        explanation=_meaning("ED850"),
    )


def numa_split(facts: Facts, table: Any) -> Iterator[Finding]:
    """ED851: the GPUs are attached to more than one NUMA node, and some pair across the nodes has no
    NVLink (its traffic crosses the CPU interconnect, SYS); an all-NVLink box (NVSwitch NV18) has none."""
    gpus = [g for g in _links(facts).gpus if g.numa_node is not None]
    nodes: Dict[int, List[int]] = {}
    for g in gpus:
        nodes.setdefault(int(g.numa_node or 0), []).append(g.index)
    if len(nodes) < 2:
        return
    node_of = {g.index: g.numa_node for g in gpus}
    across = [p for p in _links(facts).pairs if p.a in node_of and p.b in node_of and node_of[p.a] != node_of[p.b]]
    if across and all(p.nvlinks > 0 for p in across):
        return  # NVSwitch or an NVLink mesh: GPU-to-GPU traffic never crosses the CPU interconnect
    evidence = tuple(
        f"NUMA node {n}: GPU {', '.join(map(str, idx))}"
        + (
            f" (CPUs {next(g.cpu_affinity for g in gpus if g.index == idx[0])})"
            if next(g.cpu_affinity for g in gpus if g.index == idx[0])
            else ""
        )
        for n, idx in sorted(nodes.items())
    )
    first = min(nodes)
    yield Finding(
        "ED851",
        "info",
        f"The GPUs sit on {len(nodes)} NUMA nodes: keep each process on its GPU's node",
        evidence=evidence,
        fix=(
            f"numactl --cpunodebind={first} --membind={first} python train.py   # a process using "
            f"GPUs {', '.join(map(str, nodes[first]))}",
            "# with one process per GPU, bind each rank to its GPU's node; a job that needs GPUs of both "
            "nodes pays the CPU interconnect between them (SYS in envdoctor topo)",
        ),
        area="links",
        explanation=_meaning("ED851"),
    )


def _visible_mig(facts: Facts) -> bool:
    visible = getattr(facts.driver, "cuda_visible_devices", None) or ""
    return "MIG-" in visible


def mig_on(facts: Facts, table: Any) -> Iterator[Finding]:
    """ED855: MIG enabled (expected when CUDA_VISIBLE_DEVICES names MIG instances)."""
    for g in _links(facts).gpus:
        if g.mig_mode:
            expected = _visible_mig(facts)
            yield Finding(
                "ED855",
                "info" if expected else "warning",
                f"GPU {g.index} runs in MIG mode"
                + (" (CUDA_VISIBLE_DEVICES names MIG instances)" if expected else ": the whole GPU is not available"),
                evidence=(
                    f"{_label(g)}: MIG mode on" + (", pending off" if g.mig_pending is False else "") + " (NVML)",
                ),
                fix=commands.on_host(
                    facts.system,
                    (
                        f"sudo nvidia-smi -i {g.index} -mig 0   # whole-GPU jobs; stop its processes first",
                        f"sudo nvidia-smi -i {g.index} -r   # reset the GPU so the change takes effect",
                    ),
                ),
                reference=REF_MIG,
                area="links",
                explanation=_meaning("ED855"),
            )
        elif g.mig_mode is False and g.mig_pending:
            yield Finding(
                "ED855",
                "info",
                f"GPU {g.index}: MIG mode is pending on (after a GPU reset)",
                evidence=(f"{_label(g)}: MIG current off, pending on (NVML)",),
                fix=commands.on_host(facts.system, (f"sudo nvidia-smi -i {g.index} -r   # or reboot",)),
                reference=REF_MIG,
                area="links",
                explanation=_meaning("ED855"),
            )


def _datacenter(table: Any, name: Optional[str]) -> bool:
    lookup = getattr(table, "gpu", None)
    if not name or lookup is None:
        return False
    try:
        model = lookup(name)
    except Exception:  # noqa: BLE001 - a table being refactored must not break this check
        return False
    return bool(getattr(model, "datacenter", False))


def ecc_off(facts: Facts, table: Any) -> Iterator[Finding]:
    """ED856: ECC off on a data-center GPU (data/gpus.toml ``datacenter``)."""
    for g in _links(facts).gpus:
        if g.ecc_mode is False and _datacenter(table, g.name):
            pending = " (pending on: reboot to apply)" if g.ecc_pending else ""
            yield Finding(
                "ED856",
                "warning",
                f"ECC is off on GPU {g.index}, a data-center GPU{pending}",
                evidence=(
                    f"{_label(g)}: ECC current off, pending {'on' if g.ecc_pending else 'off'} (NVML)",
                    f"{g.name} is a data-center GPU (data/gpus.toml)",
                ),
                fix=()
                if g.ecc_pending
                else commands.on_host(facts.system, (f"sudo nvidia-smi -i {g.index} -e 1", "sudo reboot")),
                area="links",
                explanation=_meaning("ED856"),
            )


def persistence_off(facts: Facts, table: Any) -> Iterator[Finding]:
    """ED857: persistence mode off (one note for all GPUs)."""
    off = [g for g in _links(facts).gpus if g.persistence_mode is False]
    if off:
        yield Finding(
            "ED857",
            "info",
            f"Persistence mode is off on {len(off)} GPU(s)",
            evidence=tuple(f"{_label(g)}: persistence mode off (NVML)" for g in off[:8]),
            fix=commands.on_host(
                facts.system,
                (
                    "sudo systemctl enable --now nvidia-persistenced   # NVIDIA's recommended way",
                    "# or, until the next reboot: sudo nvidia-smi -pm 1",
                ),
                restart=False,
            ),
            reference=REF_PERSISTENCE,
            area="links",
            explanation=_meaning("ED857"),
        )


RULES = (
    slot_limits_generation,
    link_narrower,
    down_trained_under_load,
    nvlink_down,
    nvlink_errors,
    pairs_below_design,
    fabric_not_ready,
    no_p2p,
    numa_split,
    mig_on,
    ecc_off,
    persistence_off,
)

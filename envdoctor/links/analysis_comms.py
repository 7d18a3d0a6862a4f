"""From what the ranks' children said to a :class:`CommsResult`: bandwidths, the expected peak of
the links between the GPUs used, the algorithm NCCL chose, and how each rank ended. Pure.

Rank 0's answer carries the figures of every rank (times averaged and maximised, wrong elements
summed over ranks in the child), so one answer is enough; where rank 0 gave none, its streamed
``point`` and ``pair`` events stand in. A rank that stopped talking was *hung*, one that exited or
was killed without saying why *died*, one that reported an error (a collective that timed out or
lost its peer) *failed* (envdoctor.links.rules_comms names the hung and dead ones as the cause).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from envdoctor.child import ChildRun
from envdoctor.links.plan import algbw_gbps, busbw_gbps
from envdoctor.links.facts_comms import CommsPoint, CommsResult, Expected, HostCopy, PairPoint, RankOutcome
from envdoctor.facts.links import LinksFacts
from envdoctor.parse.nccl_log import NcclLog
from envdoctor.links.probe import pci_address
from envdoctor.links.table import LinkTable
from envdoctor.links.analysis_topo import Topology

#: What the ranks' environment said about NVLS and NCCL, reported as it was (never set by envdoctor);
#: the child reports the same names as it saw them, which is what the result shows when it answered.
REPORTED_ENV = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "NCCL_ALGO",
                "NCCL_PROTO", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE")


def outcome(rank: int, run: ChildRun) -> RankOutcome:
    """How one rank's child ended."""
    info = (run.result or {}) if run.result else {}
    device = info.get("device") or next((e.get("device") for e in run.events if e.get("kind") == "plan"), None)
    label = None
    if isinstance(device, dict):
        name = device.get("name") or ""
        label = "CPU" if device.get("index") is None else f"cuda:{device.get('index')} {name}".strip()
    common: Dict[str, Any] = dict(rank=rank, local_rank=info.get("local_rank"), host=info.get("host"), device=label,
                                  stage=run.stage, seconds=round(run.seconds, 3))
    if run.ok:
        return RankOutcome(status="ok", **common)
    err = run.error
    if err is not None and str(err.kind) == "interrupted":       # run.py's kind for a child asked to stop
        return RankOutcome(status="stopped", message=err.message, **common)
    if run.failure is not None:
        message = str(run.failure.get("message") or run.failure.get("kind"))
        if "Watchdog caught collective operation timeout" in run.stderr:
            message += " (NCCL's watchdog: a peer never joined the collective)"
        return RankOutcome(status="failed", message=message, **common)
    if err is not None and err.kind == "timeout":
        return RankOutcome(status="hung", message=err.message, **common)
    if "Watchdog caught collective operation timeout" in run.stderr:
        return RankOutcome(status="failed", message="NCCL's watchdog ended it: a collective timed out "
                           "(a peer never joined)", **common)
    return RankOutcome(status="died", message=err.message if err else "no answer", **common)


def _main(runs: Sequence[ChildRun]) -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(rank 0's answer or the first answer there is, its point events, its pair events)."""
    answer = next((r.result for r in runs if r.ok), None)
    first = runs[0] if runs else None
    points = [e["point"] for e in (first.events if first else ()) if e.get("kind") == "point"
              and isinstance(e.get("point"), dict)]
    pairs = [e["pair"] for e in (first.events if first else ()) if e.get("kind") == "pair"
             and isinstance(e.get("pair"), dict)]
    if answer is not None:
        points, pairs = list(answer.get("points") or points), list(answer.get("pairs") or pairs)
    return answer, points, pairs


def gpu_indices(rank_devices: Sequence[Mapping[str, Any]], links: LinksFacts) -> Dict[int, int]:
    """rank -> NVML index of its GPU, by PCI bus id (CUDA's order need not be NVML's)."""
    by_bus = {pci_address(g.bus_id): g.index for g in links.gpus if pci_address(g.bus_id)}
    out: Dict[int, int] = {}
    for info in rank_devices:
        device = info.get("device") or {}
        bus = pci_address(device.get("pci_bus_id")) if isinstance(device, dict) else None
        if bus in by_bus and isinstance(info.get("rank"), int):
            out[int(info["rank"])] = by_bus[bus]
    return out


def expected_for(gpus: Sequence[int], world: int, hosts: int, links: LinksFacts, top: Topology,
                 table: LinkTable) -> Expected:
    """The bottleneck path between the GPUs used, and what good hardware gets out of it."""
    if hosts > 1:
        return Expected(note=f"ranks on {hosts} hosts: the network between them bounds the bus bandwidth; "
                             "envdoctor has no expected figure for it")
    if world < 2:
        return Expected(note="one rank: nothing crosses a link between GPUs")
    if len(gpus) < world:
        return Expected(note="the ranks' GPUs could not be matched with NVML's, so no expected figure")
    path = top.bottleneck(gpus)
    if path is None or not path.gbps:
        return Expected(note="NVML did not report the links between these GPUs")
    fraction = table.fraction(path.kind)
    achievable = round(path.gbps * fraction.fraction, 3) if fraction else None
    names = {g.name for g in links.gpus if g.index in set(gpus)}
    return Expected(peak_gbps=path.gbps, path=path.path, basis=path.basis, kind=path.kind,
                    achievable_fraction=fraction.fraction if fraction else None, achievable_gbps=achievable,
                    confirmed=path.confirmed and bool(fraction and fraction.confirmed()),
                    gpu_name=names.pop() if len(names) == 1 else None)


def _ratio(value: Optional[float], peak: Optional[float]) -> Optional[float]:
    return round(value / peak, 3) if value is not None and peak else None


def build(runs: Sequence[ChildRun], *, backend: str, launcher: str, world: int, links: LinksFacts,
          top: Topology, table: LinkTable, nccl: Optional[NcclLog], nccl_log_note: Optional[str],
          env: Mapping[str, str], ranks: Sequence[int], common: Mapping[str, Any]) -> CommsResult:
    """The result of one run. ``ranks[i]`` is the rank of ``runs[i]``."""
    outcomes = tuple(outcome(rank, run) for rank, run in zip(ranks, runs))
    answer, raw_points, raw_pairs = _main(runs)
    rank_devices = list((answer or {}).get("ranks") or [r.result for r in runs if r.ok])
    hosts = tuple(sorted({str(d.get("host")) for d in rank_devices if d and d.get("host")}))
    mapping = gpu_indices(rank_devices, links) if backend == "nccl" else {}
    used = [mapping[r] for r in sorted(mapping)]
    expected = expected_for(used, world, len(hosts), links, top, table) if backend == "nccl" else Expected(
        note="gloo on the CPU: no link to compare with")
    points = []
    for p in raw_points:
        s, t = int(p.get("bytes") or 0), p.get("time_s")
        alg = algbw_gbps(s, float(t)) if isinstance(t, (int, float)) else None
        bus = busbw_gbps(str(p["collective"]), s, float(t), world) if isinstance(t, (int, float)) else None
        logged = (s,) if p["collective"] == "all_reduce" else (s // max(world, 1), s)   # see parse.nccl_log
        choice = nccl.choice(str(p["collective"]), logged) if nccl else None
        points.append(CommsPoint(
            collective=str(p["collective"]), bytes=s, count=int(p.get("count") or 0), dtype=str(p.get("dtype")),
            status=str(p.get("status") or "ok"), reason=p.get("reason"), warmup=int(p.get("warmup") or 0),
            iters=int(p.get("iters") or 0), time_us=round(float(t) * 1e6, 2) if isinstance(t, (int, float)) else None,
            time_max_us=round(float(p["time_max_s"]) * 1e6, 2) if isinstance(p.get("time_max_s"), (int, float))
            else None, algbw_gbps=alg, busbw_gbps=bus, wrong=p.get("wrong"),
            algo=choice[0] if choice else None, proto=choice[1] if choice else None,
            ratio=_ratio(bus, expected.peak_gbps) if world > 1 else None))
    pairs = []
    for p in raw_pairs:
        t = p.get("time_s")
        gbps = round(int(p["bytes"]) / float(t) / 1e9, 3) if isinstance(t, (int, float)) and t > 0 else None
        src, dst = mapping.get(int(p["src"])), mapping.get(int(p["dst"]))
        peak = top.path(src, dst) if src is not None and dst is not None and src != dst else None
        pairs.append(PairPoint(int(p["src"]), int(p["dst"]), int(p["bytes"]), int(p.get("iters") or 0), gbps,
                               int(p.get("wrong") or 0), peak.path if peak else None, peak.gbps if peak else None,
                               _ratio(gbps, peak.gbps if peak else None)))
    copies, copy_note = _host_copies((answer or {}).get("host_copies"), mapping.get(0), top)
    info = answer or {}
    nvls_used = nccl.nvls_used if nccl and nccl.tuning else None
    outcomes = tuple(replace(o, gpu=mapping.get(o.rank)) for o in outcomes)
    published = table.published_for(expected.gpu_name, world, "all_reduce", "on" if nvls_used else "off")
    if published is not None and expected.peak_gbps:
        expected = replace(expected, published_gbps=published.busbw_gbps,
                           published_source=f"{published.tool}; {published.source}")
    notes = [str(n) for r in runs if r.result for n in (r.result.get("notes") or [])]
    return CommsResult(
        backend=backend, launcher=launcher, world_size=world, hosts=hosts,
        torch_version=info.get("torch_version"),
        nccl_version=info.get("nccl_version") or (nccl.version if nccl else None),
        nccl_env=dict(info["env"]) if isinstance(info.get("env"), dict) else {k: env[k] for k in REPORTED_ENV
                                                                               if k in env},
        nvls_available=nccl.nvls_available if nccl else None, nvls_used=nvls_used,
        transports=nccl.transports if nccl else (), nccl_log=nccl_log_note,
        points=tuple(points), pairs=tuple(pairs), host_copies=copies, host_copy_note=copy_note,
        ranks=outcomes, expected=expected, notes=tuple(dict.fromkeys(notes)), **common)


def _host_copies(raw: Any, gpu: Optional[int], top: Topology) -> Tuple[Tuple[HostCopy, ...], Optional[str]]:
    if not isinstance(raw, dict):
        return (), None
    if raw.get("status") != "ok":
        return (), str(raw.get("message") or raw.get("status"))
    peak = top.pcie(gpu) if gpu is not None else (top.gpus[0] if len(top.gpus) == 1 else None)
    out = []
    for d in raw.get("directions") or []:
        t = d.get("time_s")
        gbps = round(int(raw["bytes"]) / float(t) / 1e9, 3) if isinstance(t, (int, float)) and t > 0 else None
        out.append(HostCopy(str(d.get("direction")), int(raw["bytes"]), int(d.get("iters") or 0), gbps,
                            peak.gbps if peak else None, _ratio(gbps, peak.gbps if peak else None)))
    return tuple(out), None

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
from envdoctor.facts.links import LinksFacts
from envdoctor.links.analysis_topo import Topology
from envdoctor.links.facts_comms import CommsPoint, CommsResult, Expected, HostCopy, PairPoint, RankOutcome
from envdoctor.links.plan import COLLECTIVES as _COLLECTIVES
from envdoctor.links.plan import algbw_gbps, busbw_gbps
from envdoctor.links.table import LinkTable
from envdoctor.nvml import NvmlGpu, match_device
from envdoctor.parse.jsontext import opt_float, opt_int, opt_str
from envdoctor.parse.nccl_log import NcclLog

#: The largest byte count, iteration count or element count read from a child (a signed 64-bit value).
MAX_COUNT = 2**63 - 1
#: The longest time a child may report for one step, in seconds (a day).
MAX_TIME_S = 86400.0

#: What the ranks' environment said about NVLS and NCCL, reported as it was (never set by envdoctor);
#: the child reports the same names as it saw them, which is what the result shows when it answered.
REPORTED_ENV = (
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
)


def outcome(rank: int, run: ChildRun) -> RankOutcome:
    """How one rank's child ended."""
    info = (run.result or {}) if run.result else {}
    device = info.get("device") or next((e.get("device") for e in run.events if e.get("kind") == "plan"), None)
    label = None
    if isinstance(device, dict):
        name = opt_str(device, "name", max_chars=256) or ""
        index = opt_int(device, "index", low=0, high=MAX_COUNT)
        label = "CPU" if index is None else f"cuda:{index} {name}".strip()
    common: Dict[str, Any] = dict(
        rank=rank,
        local_rank=opt_int(info, "local_rank", low=0, high=MAX_COUNT),
        host=opt_str(info, "host", max_chars=256),
        device=label,
        stage=run.stage,
        seconds=round(run.seconds, 3),
    )
    if run.ok:
        return RankOutcome(status="ok", **common)
    err = run.error
    if err is not None and str(err.kind) == "interrupted":  # run.py's kind for a child asked to stop
        return RankOutcome(status="stopped", message=err.message, **common)
    if run.failure is not None:
        message = opt_str(run.failure, "message") or opt_str(run.failure, "kind") or "failed"
        if "Watchdog caught collective operation timeout" in run.stderr:
            message += " (NCCL's watchdog: a peer never joined the collective)"
        return RankOutcome(status="failed", message=message, **common)
    if err is not None and err.kind == "timeout":
        return RankOutcome(status="hung", message=err.message, **common)
    if "Watchdog caught collective operation timeout" in run.stderr:
        return RankOutcome(
            status="failed", message="NCCL's watchdog ended it: a collective timed out (a peer never joined)", **common
        )
    return RankOutcome(status="died", message=err.message if err else "no answer", **common)


def _main(runs: Sequence[ChildRun]) -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(rank 0's answer or the first answer there is, its point events, its pair events)."""
    answer = next((r.result for r in runs if r.ok), None)
    first = runs[0] if runs else None
    points = [
        e["point"]
        for e in (first.events if first else ())
        if e.get("kind") == "point" and isinstance(e.get("point"), dict)
    ]
    pairs = [
        e["pair"]
        for e in (first.events if first else ())
        if e.get("kind") == "pair" and isinstance(e.get("pair"), dict)
    ]
    if answer is not None:
        points = [p for p in _list(answer.get("points")) if isinstance(p, dict)] or points
        pairs = [p for p in _list(answer.get("pairs")) if isinstance(p, dict)] or pairs
    return answer, points, pairs


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def gpu_indices(rank_devices: Sequence[Mapping[str, Any]], links: LinksFacts) -> Dict[int, int]:
    """rank -> NVML index of its GPU, by UUID or PCI bus id (:func:`envdoctor.nvml.match_device`; CUDA's
    order need not be NVML's, and each rank saw its own CUDA_VISIBLE_DEVICES, so no index is taken)."""
    gpus = [NvmlGpu(g.index, g.uuid, g.bus_id, g.name) for g in links.gpus]
    out: Dict[int, int] = {}
    for info in rank_devices:
        device = info.get("device") if isinstance(info, Mapping) else None
        rank = opt_int(info, "rank", low=0, high=MAX_COUNT) if isinstance(info, Mapping) else None
        if not isinstance(device, dict) or rank is None:
            continue
        index = match_device(
            opt_str(device, "uuid", max_chars=96), opt_str(device, "pci_bus_id", max_chars=64), None, gpus, {}
        )
        if index is not None:
            out[rank] = index
    return out


def expected_for(
    gpus: Sequence[int], world: int, hosts: int, links: LinksFacts, top: Topology, table: LinkTable
) -> Expected:
    """The bottleneck path between the GPUs used, and what good hardware gets out of it."""
    if hosts > 1:
        return Expected(
            note=f"ranks on {hosts} hosts: the network between them bounds the bus bandwidth; "
            "envdoctor has no expected figure for it"
        )
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
    return Expected(
        peak_gbps=path.gbps,
        path=path.path,
        basis=path.basis,
        kind=path.kind,
        achievable_fraction=fraction.fraction if fraction else None,
        achievable_gbps=achievable,
        confirmed=path.confirmed and bool(fraction and fraction.confirmed()),
        gpu_name=names.pop() if len(names) == 1 else None,
    )


def _ratio(value: Optional[float], peak: Optional[float]) -> Optional[float]:
    return round(value / peak, 3) if value is not None and peak else None


def build(
    runs: Sequence[ChildRun],
    *,
    backend: str,
    launcher: str,
    world: int,
    links: LinksFacts,
    top: Topology,
    table: LinkTable,
    nccl: Optional[NcclLog],
    nccl_log_note: Optional[str],
    env: Mapping[str, str],
    ranks: Sequence[int],
    common: Mapping[str, Any],
) -> CommsResult:
    """The result of one run. ``ranks[i]`` is the rank of ``runs[i]``."""
    outcomes = tuple(outcome(rank, run) for rank, run in zip(ranks, runs))
    answer, raw_points, raw_pairs = _main(runs)
    rank_devices = [
        d for d in (_list((answer or {}).get("ranks")) or [r.result for r in runs if r.ok]) if isinstance(d, dict)
    ]
    hosts = tuple(sorted({h for h in (opt_str(d, "host", max_chars=256) for d in rank_devices) if h}))
    mapping = gpu_indices(rank_devices, links) if backend == "nccl" else {}
    used = [mapping[r] for r in sorted(mapping)]
    expected = (
        expected_for(used, world, len(hosts), links, top, table)
        if backend == "nccl"
        else Expected(note="gloo on the CPU: no link to compare with")
    )
    points = []
    for p in raw_points:  # a point without a collective it names is not one (typed leniently)
        collective = opt_str(p, "collective", max_chars=64)
        if collective is None:
            continue
        s = opt_int(p, "bytes", low=0, high=MAX_COUNT) or 0
        t = opt_float(p, "time_s", low=0, high=MAX_TIME_S)
        t_max = opt_float(p, "time_max_s", low=0, high=MAX_TIME_S)
        alg = algbw_gbps(s, t) if t is not None else None
        bus = busbw_gbps(collective, s, t, world) if t is not None and collective in _COLLECTIVES else None
        logged = (s,) if collective == "all_reduce" else (s // max(world, 1), s)  # see parse.nccl_log
        choice = nccl.choice(collective, logged) if nccl else None
        points.append(
            CommsPoint(
                collective=collective,
                bytes=s,
                count=opt_int(p, "count", low=0, high=MAX_COUNT) or 0,
                dtype=str(opt_str(p, "dtype", max_chars=32)),
                status=opt_str(p, "status", max_chars=32) or "ok",
                reason=opt_str(p, "reason"),
                warmup=opt_int(p, "warmup", low=0, high=MAX_COUNT) or 0,
                iters=opt_int(p, "iters", low=0, high=MAX_COUNT) or 0,
                time_us=round(t * 1e6, 2) if t is not None else None,
                time_max_us=round(t_max * 1e6, 2) if t_max is not None else None,
                algbw_gbps=alg,
                busbw_gbps=bus,
                wrong=opt_int(p, "wrong", low=0, high=MAX_COUNT),
                algo=choice[0] if choice else None,
                proto=choice[1] if choice else None,
                ratio=_ratio(bus, expected.peak_gbps) if world > 1 else None,
            )
        )
    pairs = []
    for p in raw_pairs:
        a, b = opt_int(p, "src", low=0, high=MAX_COUNT), opt_int(p, "dst", low=0, high=MAX_COUNT)
        size = opt_int(p, "bytes", low=0, high=MAX_COUNT)
        if a is None or b is None or size is None:
            continue
        t = opt_float(p, "time_s", low=0, high=MAX_TIME_S)
        gbps = round(size / t / 1e9, 3) if t else None
        src, dst = mapping.get(a), mapping.get(b)
        peak = top.path(src, dst) if src is not None and dst is not None and src != dst else None
        pairs.append(
            PairPoint(
                a,
                b,
                size,
                opt_int(p, "iters", low=0, high=MAX_COUNT) or 0,
                gbps,
                opt_int(p, "wrong", low=0, high=MAX_COUNT) or 0,
                peak.path if peak else None,
                peak.gbps if peak else None,
                _ratio(gbps, peak.gbps if peak else None),
            )
        )
    copies, copy_note = _host_copies((answer or {}).get("host_copies"), mapping.get(0), top)
    info = answer or {}
    nvls_used = nccl.nvls_used if nccl and nccl.tuning else None
    outcomes = tuple(replace(o, gpu=mapping.get(o.rank)) for o in outcomes)
    published = table.published_for(expected.gpu_name, world, "all_reduce", "on" if nvls_used else "off")
    if published is not None and expected.peak_gbps:
        expected = replace(
            expected, published_gbps=published.busbw_gbps, published_source=f"{published.tool}; {published.source}"
        )
    notes = [
        n for r in runs if r.result for n in (opt_str(x, max_chars=500) for x in _list(r.result.get("notes"))) if n
    ]
    return CommsResult(
        backend=backend,
        launcher=launcher,
        world_size=world,
        hosts=hosts,
        torch_version=opt_str(info, "torch_version", max_chars=128),
        nccl_version=opt_str(info, "nccl_version", max_chars=64) or (nccl.version if nccl else None),
        nccl_env={str(k)[:128]: str(v)[:1024] for k, v in info["env"].items()}
        if isinstance(info.get("env"), dict)
        else {k: env[k] for k in REPORTED_ENV if k in env},
        nvls_available=nccl.nvls_available if nccl else None,
        nvls_used=nvls_used,
        transports=nccl.transports if nccl else (),
        nccl_log=nccl_log_note,
        points=tuple(points),
        pairs=tuple(pairs),
        host_copies=copies,
        host_copy_note=copy_note,
        ranks=outcomes,
        expected=expected,
        notes=tuple(dict.fromkeys(notes)),
        **common,
    )


def _host_copies(raw: Any, gpu: Optional[int], top: Topology) -> Tuple[Tuple[HostCopy, ...], Optional[str]]:
    if not isinstance(raw, dict):
        return (), None
    if raw.get("status") != "ok":
        return (), opt_str(raw, "message") or opt_str(raw, "status", max_chars=64) or "no answer"
    peak = top.pcie(gpu) if gpu is not None else (top.gpus[0] if len(top.gpus) == 1 else None)
    size = opt_int(raw, "bytes", low=0, high=MAX_COUNT)
    if size is None:
        return (), "the host-copy answer gave no byte count"
    out = []
    for d in _list(raw.get("directions")):
        if not isinstance(d, dict):
            continue
        t = opt_float(d, "time_s", low=0, high=MAX_TIME_S)
        gbps = round(size / t / 1e9, 3) if t else None
        out.append(
            HostCopy(
                str(opt_str(d, "direction", max_chars=32)),
                size,
                opt_int(d, "iters", low=0, high=MAX_COUNT) or 0,
                gbps,
                peak.gbps if peak else None,
                _ratio(gbps, peak.gbps if peak else None),
            )
        )
    return tuple(out), None

"""ED870-889: the verdicts of ``envdoctor comms``. Pure: a CommsResult (and the link table) in,
findings out.

The bus bandwidth of each collective at its largest size (>= 64 MiB; smaller messages are latency
bound) is compared with what the slowest path between the GPUs used should carry: a published
figure of the same GPU model, GPU count, collective and NVLS state where data/links.toml has one,
else the path's peak times the fraction good hardware reaches (about 80% for ring collectives).
Below half of it is an error, below 80% a warning. With NVLS (NVLink SHARP) the switch reduces,
so an all-reduce busbw above the wire rate is expected, not a measuring fault.
"""

from __future__ import annotations

from statistics import median
from typing import Any, Dict, Iterator, List, Optional, Tuple

from envdoctor import checks
from envdoctor.checks import needs
from envdoctor.codes import CODES
from envdoctor.findings import Finding, Severity, sort_findings
from envdoctor.links.facts_comms import CommsPoint, CommsResult, RankOutcome
from envdoctor.links.table import LinkTable
from envdoctor.units import format_bytes

#: Smallest message a bandwidth verdict is drawn from.
VERDICT_BYTES = 64 << 20
FAR_BELOW, BELOW = 0.5, 0.8
REF_NCCL_TESTS = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
REF_NCCL_TROUBLE = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"


def _meaning(code: str) -> str:
    """What the code means in general (envdoctor/codes.py), the finding's explanation."""
    return CODES[code].meaning


def culprits(ranks: Tuple[RankOutcome, ...]) -> Tuple[RankOutcome, ...]:
    """The ranks that caused a failure: the hung or dead ones; else the one that failed first."""
    bad = [x for x in ranks if x.status in ("hung", "died")]
    if bad:
        return tuple(bad)
    failed = sorted((x for x in ranks if x.status == "failed"), key=lambda x: x.seconds or 0.0)
    return tuple(failed[:1])


def _nvls_state(r: CommsResult) -> str:
    if r.nvls_used:
        return "on"
    return "off"


def _largest(points: List[CommsPoint]) -> Optional[CommsPoint]:
    ok = [p for p in points if p.status == "ok" and p.busbw_gbps is not None and p.bytes >= VERDICT_BYTES]
    return max(ok, key=lambda p: p.bytes) if ok else None


@needs("links")
def bandwidth(r: CommsResult, table: Any, links: LinkTable) -> Iterator[Finding]:
    """ED870/ED871: busbw at the largest size against the published or achievable figure."""
    e = r.expected
    if r.backend != "nccl" or r.world_size < 2 or not e.peak_gbps:
        return
    for collective in dict.fromkeys(p.collective for p in r.points):
        p = _largest([q for q in r.points if q.collective == collective])
        if p is None or p.busbw_gbps is None:
            continue
        published = links.published_for(e.gpu_name, r.world_size, collective, _nvls_state(r))
        reference = published.busbw_gbps if published else e.achievable_gbps
        if not reference:
            continue
        ratio = p.busbw_gbps / reference
        if ratio >= BELOW:
            continue
        where = (
            f"published {published.busbw_gbps:g} GB/s for {r.world_size}x {published.gpu} "
            f"({published.tool}; {published.source})"
            if published
            else f"~{e.achievable_fraction:.0%} of the {e.peak_gbps:g} GB/s peak of {e.path} ({e.basis}; "
            "data/links.toml)"
        )
        severity: Severity = "error" if ratio < FAR_BELOW else "warning"
        code = "ED870" if ratio < FAR_BELOW else "ED871"
        yield Finding(
            code,
            severity,
            f"{collective} reached {p.busbw_gbps:g} GB/s busbw at {format_bytes(p.bytes)}: "
            f"{ratio:.0%} of the {reference:g} GB/s expected",
            evidence=(
                f"{collective}, {r.world_size} ranks, {format_bytes(p.bytes)}: busbw {p.busbw_gbps:g} "
                f"GB/s, algbw {p.algbw_gbps:g} GB/s, {p.time_us:g} us per call"
                + (f", NCCL {p.algo}/{p.proto}" if p.algo else ""),
                f"expected: {where}",
            )
            + (("the links' figure is unconfirmed in data/links.toml",) if not e.confirmed else ()),
            fix=(
                "envdoctor topo   # a PCIe link below its maximum, an NVLink down, no P2P",
                'envdoctor comms --json   # "transports": P2P, SHM or NET between the GPUs',
                "nvidia-smi -q -d PERFORMANCE   # clocks held back while it runs (power, heat)",
                "env | grep ^NCCL_   # a setting that forces a slower path (NCCL_P2P_DISABLE, NCCL_ALGO)",
            ),
            reference=REF_NCCL_TESTS,
            area="comms",
            explanation=_meaning(code),
        )


def wrong_results(r: CommsResult, table: Any) -> Iterator[Finding]:
    """ED872: a checked collective or pair copy came back wrong."""
    bad = [
        f"{p.collective} at {format_bytes(p.bytes)}: {p.wrong} wrong element(s) over all ranks"
        for p in r.points
        if p.wrong
    ]
    bad += [f"copy from rank {p.src} to rank {p.dst}: {p.wrong} wrong element(s)" for p in r.pairs if p.wrong]
    if bad:
        yield Finding(
            "ED872",
            "error",
            f"{len(bad)} check(s) returned a wrong result",
            evidence=tuple(bad[:10]),
            fix=(
                "envdoctor burn --device all   # a GPU that computes wrong under load",
                "nvidia-smi -q -d ECC   # memory errors",
                "NCCL_ALGO=Ring NCCL_PROTO=Simple envdoctor comms   # does one algorithm give it",
            ),
            reference=REF_NCCL_TROUBLE,
            area="comms",
            explanation=_meaning("ED872"),
        )


def failed_ranks(r: CommsResult, table: Any) -> Iterator[Finding]:
    """ED873: ranks that hung or died (named), with the ranks that failed waiting for them."""
    if not any(x.status in ("hung", "died", "failed") for x in r.ranks):
        return
    if r.error is not None and not r.points and not r.pairs:
        return  # ED874 says it
    cause = culprits(r.ranks)
    named = ", ".join(f"rank {x.rank}" + (f" ({x.device})" if x.device else "") for x in cause)
    evidence = [
        f"rank {x.rank} {x.status}"
        + (f" during {x.stage}" if x.stage else "")
        + (f": {x.message}" if x.message else "")
        for x in r.ranks
        if x.status != "ok"
    ]
    how = "/".join(sorted({x.status for x in cause}))
    yield Finding(
        "ED873",
        "error",
        f"{named} {how} during the run",
        evidence=tuple(evidence[:10]),
        fix=(
            (
                "envdoctor check   # the driver, the GPUs, NVML",
                "nvidia-smi   # a GPU that fell off the bus, or an Xid in the kernel log",
                "NCCL_DEBUG=WARN NCCL_DEBUG_FILE=/tmp/nccl.%h.%p.log envdoctor comms   # NCCL's own account",
            )
            if r.backend == "nccl"
            else ("envdoctor comms --backend gloo --nproc 2 --json   # each rank's stage and message",)
        ),
        reference=REF_NCCL_TROUBLE,
        area="comms",
        explanation=_meaning("ED873"),
    )


def could_not_run(r: CommsResult, table: Any) -> Iterator[Finding]:
    """ED874: nothing measured because the ranks could not start or meet."""
    if r.error is None or r.points or r.host_copies or (r.host_copy_note and r.error.command != "no_gpu"):
        return
    yield Finding(
        "ED874",
        "error",
        "envdoctor comms could not run: " + r.error.message,
        evidence=tuple(
            f"rank {x.rank} {x.status}"
            + (f" during {x.stage}" if x.stage else "")
            + (f": {x.message}" if x.message else "")
            for x in r.ranks[:8]
        ),
        fix=(
            "envdoctor check   # torch and CUDA in the target Python",
            "envdoctor comms --backend gloo --nproc 2   # do processes meet at all on this machine",
        ),
        area="comms",
        explanation=_meaning("ED874"),
    )


@needs("links")
def slow_pair(r: CommsResult, table: Any, links: LinkTable) -> Iterator[Finding]:
    """ED875: a GPU pair far below the others of its path kind, or below its link's achievable rate."""
    pairs = [p for p in r.pairs if p.gbps]
    if len(pairs) < 2:
        return
    evidence = []
    groups: Dict[Optional[str], List[float]] = {}
    for p in pairs:
        groups.setdefault(p.path, []).append(p.gbps or 0.0)
    fraction = links.fraction("nvlink")
    for p in pairs:
        same = groups[p.path]
        typical = median(same) if len(same) >= 3 else None
        if typical and (p.gbps or 0) < 0.5 * typical:
            evidence.append(
                f"rank {p.src} -> rank {p.dst} ({p.path or 'path ?'}): {p.gbps:g} GB/s, the other "
                f"{p.path or ''} pairs {typical:g} GB/s (median)"
            )
        elif p.expected_gbps and fraction and p.ratio is not None and p.ratio < 0.5 * fraction.fraction:
            evidence.append(
                f"rank {p.src} -> rank {p.dst} ({p.path}): {p.gbps:g} GB/s of {p.expected_gbps:g} "
                "expected (data/links.toml)"
            )
    if evidence:
        yield Finding(
            "ED875",
            "warning",
            f"{len(evidence)} GPU pair(s) copy much slower than they should",
            evidence=tuple(evidence[:12]),
            fix=(
                "envdoctor topo   # the path and the links of those GPUs",
                "# re-seat the NVLink bridge or the card; check the slot's PCIe generation and width",
            ),
            area="comms",
            explanation=_meaning("ED875"),
        )


@needs("links")
def slow_host_copies(r: CommsResult, table: Any, links: LinkTable) -> Iterator[Finding]:
    """ED876: pinned host<->GPU copies below half of the PCIe link's achievable rate."""
    fraction = links.fraction("host_copy")
    slow = [c for c in r.host_copies if c.ratio is not None and fraction and c.ratio < 0.5 * fraction.fraction]
    if slow:
        yield Finding(
            "ED876",
            "warning",
            "Host <-> GPU copies reach less than half of the PCIe link",
            evidence=tuple(
                f"{c.direction}: {c.gbps:g} GB/s of {c.expected_gbps:g} GB/s (the PCIe link, data/links.toml)"
                for c in slow
            ),
            fix=(
                "envdoctor topo   # the link's generation and width, and its NUMA node",
                "numactl --cpunodebind=N --membind=N envdoctor comms   # N: the GPU's NUMA node",
            ),
            area="comms",
            explanation=_meaning("ED876"),
        )


def single_gpu(r: CommsResult, table: Any) -> Iterator[Finding]:
    """ED877: one GPU rank: nothing between GPUs (host copies instead)."""
    if r.backend == "nccl" and r.world_size == 1 and any(x.status == "ok" for x in r.ranks):
        copies = ", ".join(f"{c.direction} {c.gbps:g} GB/s" for c in r.host_copies if c.gbps)
        yield Finding(
            "ED877",
            "info",
            "One GPU: nothing to measure between GPUs" + (f"; host copies {copies}" if copies else ""),
            evidence=("nccl-tests' bus-bandwidth factors are 0 with one rank",),
            area="comms",
            explanation=_meaning("ED877"),
        )


def nvls(r: CommsResult, table: Any) -> Iterator[Finding]:
    """ED878: NVLS used (busbw above the wire is expected) or turned off by the environment on a switch node."""
    if r.backend != "nccl" or r.world_size < 2:
        return
    setting = r.nccl_env.get("NCCL_NVLS_ENABLE")
    if r.nvls_used:
        yield Finding(
            "ED878",
            "info",
            "NCCL used NVLink SHARP (NVLS): all-reduce busbw may exceed the wire rate",
            evidence=("NCCL's TUNING log: Algo NVLS",) + ((f"NCCL_NVLS_ENABLE={setting}",) if setting else ()),
            reference="https://github.com/NVIDIA/nccl-tests/issues/212",
            area="comms",
            explanation=_meaning("ED878"),
        )
    elif setting == "0" and r.expected.path and r.expected.kind == "nvlink" and "NVSwitch" in (r.expected.basis or ""):
        yield Finding(
            "ED878",
            "info",
            "NVLS is off (NCCL_NVLS_ENABLE=0 in the environment): all-reduce runs as a ring",
            evidence=(
                "NCCL_NVLS_ENABLE=0, as the environment set it (envdoctor never changes it)",
                f"the GPUs meet through NVSwitch ({r.expected.basis})",
            ),
            reference="https://github.com/NVIDIA/nccl-tests/issues/212",
            area="comms",
            explanation=_meaning("ED878"),
        )


def through_host(r: CommsResult, table: Any) -> Iterator[Finding]:
    """ED879: NCCL's channels went through SHM between GPUs of one host."""
    if r.backend == "nccl" and len(r.hosts) <= 1 and any(t.startswith("SHM") for t in r.transports):
        yield Finding(
            "ED879",
            "warning",
            "NCCL connected GPUs of this machine through host memory (SHM)",
            evidence=(f"NCCL's transports: {', '.join(r.transports)}",)
            + ((f"NCCL_P2P_DISABLE={r.nccl_env['NCCL_P2P_DISABLE']}",) if "NCCL_P2P_DISABLE" in r.nccl_env else ()),
            fix=("envdoctor topo   # P2P support between the GPUs (ACS, IOMMU)",),
            reference=REF_NCCL_TROUBLE,
            area="comms",
            explanation=_meaning("ED879"),
        )


def skipped_sizes(r: CommsResult, table: Any) -> Iterator[Finding]:
    """ED880: sizes left out for lack of GPU memory."""
    skipped = [p for p in r.points if p.status == "skipped"]
    if skipped:
        yield Finding(
            "ED880",
            "warning",
            f"{len(skipped)} size(s) skipped: not enough free GPU memory",
            evidence=tuple(f"{p.collective} {format_bytes(p.bytes)}: {p.reason}" for p in skipped[:8]),
            fix=("nvidia-smi   # what else holds GPU memory", "envdoctor comms --sizes 1M..1G"),
            area="comms",
            explanation=_meaning("ED880"),
        )


def no_gpu(r: CommsResult, table: Any) -> Iterator[Finding]:
    """ED881: no GPU anywhere: nothing measured."""
    if r.host_copy_note and r.backend == "gloo" and r.world_size == 1 and r.error is None:
        yield Finding(
            "ED881",
            "info",
            "No GPU: nothing to measure between GPUs or between host and GPU",
            evidence=(r.host_copy_note,) + tuple(r.notes[:2]),
            fix=("envdoctor comms --backend gloo --nproc 2   # collectives between CPU processes",),
            area="comms",
            explanation=_meaning("ED881"),
        )


def nothing_measured(r: CommsResult, table: Any) -> Iterator[Finding]:
    """ED882: the ranks answered (the right schema, status ok) but not one point, pair copy or host copy
    was measured: an empty answer is a failed run, never "all ok"."""
    if r.error is not None or not r.ranks or any(x.status != "ok" for x in r.ranks):
        return  # ED874 / ED873 say why
    if (
        any(p.status == "ok" for p in r.points)
        or any(p.gbps is not None for p in r.pairs)
        or any(c.gbps is not None for c in r.host_copies)
    ):
        return
    n = len(r.ranks)
    skipped = [p for p in r.points if p.status == "skipped"]
    evidence = [
        f"{n} rank(s) answered with {len(r.points)} point(s), none measured; {len(r.pairs)} pair copies; "
        f"{len(r.host_copies)} host copies"
    ]
    evidence += [
        f"{p.collective} {format_bytes(p.bytes)}: {p.status}" + (f" ({p.reason})" if p.reason else "")
        for p in r.points[:6]
    ]
    yield Finding(
        "ED882",
        "error",
        ("The rank answered" if n == 1 else f"The {n} ranks answered") + " but measured nothing",
        evidence=tuple(evidence),
        fix=(("envdoctor comms --sizes 1M..1G   # sizes that fit in free GPU memory",) if skipped else ())
        + (
            "envdoctor comms --json   # each rank's answer, its notes and status",
            "envdoctor check   # torch and CUDA in the target Python",
        ),
        area="comms",
        explanation=_meaning("ED882"),
    )


RULES = (
    bandwidth,
    wrong_results,
    failed_ranks,
    could_not_run,
    slow_pair,
    slow_host_copies,
    single_gpu,
    nvls,
    through_host,
    skipped_sizes,
    no_gpu,
    nothing_measured,
)


def verdicts(r: CommsResult, table: Optional[LinkTable] = None) -> Tuple[Finding, ...]:
    """Every finding of ``r`` through the one check runner; ``table``: the link table already loaded
    (None: the runner loads it; a broken one is one ED901 and the rules that need no table still run)."""
    return sort_findings(checks.run(RULES, r, None, tables=None if table is None else {"links": table}))

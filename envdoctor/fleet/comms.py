"""``fleet --gather --comms``: rank 0's comms answer read, the pairwise pass analysed, its findings; pure.

The child (``envdoctor/fleet/target/gather.py``) times one all-reduce over every rank and one per
pair of the quick pass (:func:`envdoctor.fleet.pairs.quick`) with the code of ``envdoctor comms``
(``links/target/common.py``) and answers with times; the bandwidths are computed here as nccl-tests
counts them (``envdoctor.links.plan``: algbw = S / t, busbw = algbw x 2(n-1)/n, so a pair's
busbw is its algbw). :func:`analyze` then names a slow node (slow with every partner) or a slow
link (slow with one) through :func:`envdoctor.fleet.pairs.analyze`::

    >>> c = read({"status": "ok", "backend": "gloo", "bytes": 1048576, "rounds": [[[0, 1]]],
    ...           "all_reduce": {"bytes": 1048576, "iters": 10, "time_s": 0.002, "wrong": 0}, "pairs": []}, 2)
    >>> c.all_reduce.busbw_gbps, c.all_reduce.busbw_factor
    (0.524, 1.0)

:func:`findings` turns it into ED782 (a slow node), ED783 (a slow link), ED784 (a rank that did not
finish a step of the comms phase) and ED785 (wrong results), each for the node concerned.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, List, Literal, Mapping, Optional, Tuple

from envdoctor import codes
from envdoctor.findings import Finding, Severity
from envdoctor.fleet import pairs
from envdoctor.fleet.rules import REFERENCE, NodeFinding
from envdoctor.links.plan import algbw_gbps, busbw_factor, busbw_gbps
from envdoctor.parse.jsontext import opt_float, opt_int, opt_str
from envdoctor.units import format_bytes

Status = Literal["ok", "stalled", "failed", "skipped"]
Backend = Literal["nccl", "gloo"]
PairStatus = Literal["ok", "unfinished", "wrong"]
Blame = Literal["node", "link", "unclear", ""]

#: The message size of the all-reduce and of each pair: large enough for NCCL to reach its bus
#: bandwidth (as ``envdoctor comms``' pairs), small for gloo between CPU processes.
BYTES: Mapping[str, int] = {"nccl": 256 << 20, "gloo": 1 << 20}


@dataclass(frozen=True)
class Transfer:
    """One all-reduce as measured: S, the calls timed, the time (mean over the ranks; the slowest
    rank's) and the bandwidths computed from the mean."""

    bytes: int
    iters: int
    warmup: int
    time_s: float
    time_max_s: float
    algbw_gbps: Optional[float]
    busbw_gbps: Optional[float]
    busbw_factor: float
    wrong: int
    ranks: int


@dataclass(frozen=True)
class PairFigure:
    """One pair of the pairwise pass: its round, its ranks (and their nodes' names), what it measured."""

    round: int
    a: int
    b: int
    status: PairStatus
    transfer: Optional[Transfer] = None
    a_name: str = ""
    b_name: str = ""
    blame: Blame = ""  # why this pair is slow: one of its nodes, the link, unclear


@dataclass(frozen=True)
class Unfinished:
    """A rank that did not finish the first step some rank did not finish."""

    rank: int
    stage: Optional[str] = None  # the step it last entered ("round 1")
    error: Optional[str] = None  # what it raised, where it said
    name: str = ""
    where: Optional[str] = None  # its measuring thread's innermost frame when it stopped
    in_collective: Optional[bool] = None  # a torch.distributed call on that thread's stack: it waited


@dataclass(frozen=True)
class FleetComms:
    """The comms phase of a gather, ready to show."""

    status: Status
    world_size: int
    backend: Optional[Backend] = None
    why: Optional[str] = None  # why that backend ("rank 2 has no CUDA GPU")
    bytes: Optional[int] = None
    phase_timeout_s: Optional[float] = None
    all_reduce: Optional[Transfer] = None
    pairs: Tuple[PairFigure, ...] = ()
    rounds: int = 0
    median_busbw_gbps: Optional[float] = None
    slow_nodes: Tuple[int, ...] = ()
    slow_links: Tuple[Tuple[int, int], ...] = ()
    unclear: Tuple[Tuple[int, int], ...] = ()
    stalled: Optional[str] = None  # the first step some rank did not finish
    unfinished: Tuple[Unfinished, ...] = ()
    error: Optional[str] = None
    devices: Mapping[int, str] = dataclasses.field(default_factory=dict)
    names: Mapping[int, str] = dataclasses.field(default_factory=dict)


def _round(value: Any) -> int:
    """A pair test's round number: 1 where the child gave none (or none that is a number)."""
    number = opt_int(value, low=0)
    return 1 if number is None else number


def transfer(point: Any, ranks: int) -> Optional[Transfer]:
    """A child's all-reduce point (``one_point``'s dict) with its bandwidths; None where it has no time."""
    if not isinstance(point, dict):
        return None
    t, s = opt_float(point.get("time_s")), (opt_int(point.get("bytes")) or 0)
    if t is None or t <= 0 or s <= 0 or ranks < 1:
        return None
    t_max = opt_float(point.get("time_max_s"))
    return Transfer(
        s,
        opt_int(point.get("iters")) or 0,
        opt_int(point.get("warmup")) or 0,
        t,
        t_max if t_max is not None else t,
        algbw_gbps(s, t),
        busbw_gbps("all_reduce", s, t, ranks),
        busbw_factor("all_reduce", ranks),
        opt_int(point.get("wrong")) or 0,
        ranks,
    )


def read(data: Mapping[str, Any], world_size: int) -> FleetComms:
    """Rank 0's ``comms`` answer as a :class:`FleetComms`, analysed (:func:`analyze`)."""
    status = data.get("status")
    st: Status = status if status in ("ok", "stalled", "failed", "skipped") else "failed"
    backend = data.get("backend")
    be: Optional[Backend] = backend if backend in ("nccl", "gloo") else None
    figures: List[PairFigure] = []
    for p in data.get("pairs") or []:
        if not isinstance(p, dict) or not isinstance(p.get("a"), int) or not isinstance(p.get("b"), int):
            continue
        tr = transfer(p, 2) if p.get("status", "ok") == "ok" else None
        ps: PairStatus = "unfinished" if tr is None else "wrong" if tr.wrong else "ok"
        figures.append(PairFigure(_round(p.get("round")), p["a"], p["b"], ps, tr))
    unfinished = tuple(
        Unfinished(
            u["rank"],
            opt_str(u.get("stage"), max_chars=500),
            opt_str(u.get("error"), max_chars=500),
            "",
            opt_str(u.get("where"), max_chars=500),
            u["in_collective"] if isinstance(u.get("in_collective"), bool) else None,
        )
        for u in data.get("unfinished") or []
        if isinstance(u, dict) and isinstance(u.get("rank"), int)
    )
    raw = data.get("devices")
    devices: Mapping[Any, Any] = raw if isinstance(raw, dict) else {}
    rounds = data.get("rounds")
    out = FleetComms(
        st,
        world_size,
        be,
        opt_str(data.get("why"), max_chars=500),
        opt_int(data.get("bytes")) or None,
        opt_float(data.get("phase_timeout")),
        transfer(data.get("all_reduce"), world_size),
        tuple(figures),
        len(rounds) if isinstance(rounds, list) else 0,
        stalled=opt_str(data.get("stalled"), max_chars=500),
        unfinished=unfinished,
        error=opt_str(data.get("error"), max_chars=500),
        devices={int(k): str(v) for k, v in devices.items() if str(k).isdigit()},
    )
    return analyze(out)


def failed(world_size: int, message: str) -> FleetComms:
    """The comms phase when rank 0's child ended without its answer (killed, crashed)."""
    return FleetComms("failed", world_size, error=message[:500])


def analyze(c: FleetComms, fraction: float = pairs.SLOW_FRACTION) -> FleetComms:
    """The pairs' busbw through :func:`envdoctor.fleet.pairs.analyze`; each slow pair says why."""
    measured = [
        pairs.Measured(p.a, p.b, p.transfer.busbw_gbps if p.transfer and p.status == "ok" else None)
        for p in c.pairs
        if p.status != "unfinished"
    ]
    if not measured:
        return c
    a = pairs.analyze(measured, fraction)
    blamed: List[PairFigure] = []
    slow = {(m.a, m.b) for m in a.slow_pairs}
    for p in c.pairs:
        blame: Blame = ""
        if (p.a, p.b) in slow:
            blame = (
                "node"
                if p.a in a.slow_nodes or p.b in a.slow_nodes
                else "link"
                if (p.a, p.b) in a.slow_links
                else "unclear"
            )
        blamed.append(dataclasses.replace(p, blame=blame))
    return dataclasses.replace(
        c,
        pairs=tuple(blamed),
        median_busbw_gbps=a.median_gbs,
        slow_nodes=a.slow_nodes,
        slow_links=a.slow_links,
        unclear=a.unclear,
    )


def named(c: FleetComms, names: Mapping[int, str]) -> FleetComms:
    """The same with each rank's node name (after ``--redact``, the redacted one)."""

    def name(rank: int) -> str:
        return names.get(rank, f"rank {rank}")

    return dataclasses.replace(
        c,
        names={r: name(r) for r in range(c.world_size)},
        pairs=tuple(dataclasses.replace(p, a_name=name(p.a), b_name=name(p.b)) for p in c.pairs),
        unfinished=tuple(dataclasses.replace(u, name=name(u.rank)) for u in c.unfinished),
    )


# --- findings ----------------------------------------------------------------------------------------


def gbs(value: Optional[float]) -> str:
    """A bandwidth as shown: 3 significant digits (``23.9``, ``0.0417``), whole above 100."""
    if value is None:
        return "?"
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _pair_line(p: PairFigure) -> str:
    t = p.transfer
    if t is None:
        return f"round {p.round}: {p.a_name} - {p.b_name}: did not finish"
    return (
        f"round {p.round}: {p.a_name} - {p.b_name}: busbw {gbs(t.busbw_gbps)} GB/s "
        f"({format_bytes(t.bytes)} all-reduce, {t.iters} calls, {t.time_s * 1e3:.3f} ms each)"
    )


def _median_line(c: FleetComms, fraction: float) -> str:
    ok = sum(1 for p in c.pairs if p.status == "ok")
    floor = (c.median_busbw_gbps or 0.0) * (1 - fraction)
    return (
        f"median of {ok} pairs: {gbs(c.median_busbw_gbps)} GB/s busbw over {c.backend}; slow below "
        f"{gbs(floor)} ({fraction:.0%} under)"
    )


def _severity(c: FleetComms) -> Severity:
    """Over NCCL a slow node holds back every collective of a job: an error. Over gloo the figure is
    TCP through the CPUs (another path than a job's NCCL): a warning."""
    return "error" if c.backend == "nccl" else "warning"


def _fix_node(name: str, backend: Optional[str]) -> Tuple[str, ...]:
    steps = [
        f"# on {name}:",
        "envdoctor comms          # its GPUs among themselves: is the node slow inside too?",
        "envdoctor topo           # PCIe width and speed, which NIC is nearest each GPU",
        "ibstat                   # InfiniBand ports: State Active, the Rate the others have",
    ]
    if backend != "nccl":
        steps.append("ip -s link               # gloo went over TCP: the interface's speed and errors")
    return tuple(steps)


def _fix_link(a: str, b: str) -> Tuple[str, ...]:
    return (
        f"# between {a} and {b}: both are fine with other partners, so look at the path between them",
        f"ibstat                   # on {a} and on {b}: port state and rate",
        "# the switch ports and cables on that path (the fabric manager's or the switch's counters)",
    )


def findings(c: FleetComms, fraction: float = pairs.SLOW_FRACTION) -> List[NodeFinding]:
    """ED782-ED785 for :func:`named`'s result, each with the node it concerns."""
    out: List[NodeFinding] = []
    name = c.names.get
    sev = _severity(c)
    for rank in c.slow_nodes:
        mine = [p for p in c.pairs if rank in (p.a, p.b) and p.status == "ok"]
        node = name(rank, f"rank {rank}")
        figures = " and ".join(f"{gbs(p.transfer.busbw_gbps if p.transfer else None)}" for p in mine)
        out.append(
            NodeFinding(
                node,
                Finding(
                    "ED782",
                    sev,
                    f"{node}: slow with every partner in the pairwise pass ({figures} GB/s busbw against "
                    f"the median {gbs(c.median_busbw_gbps)} GB/s over {c.backend})",
                    evidence=tuple(_pair_line(p) for p in mine) + (_median_line(c, fraction),),
                    fix=_fix_node(node, c.backend),
                    reference=REFERENCE,
                    area="fleet",
                    explanation=codes.meaning("ED782"),
                ),
            )
        )
    for kind, links in (("link", c.slow_links), ("unclear", c.unclear)):
        for a, b in links:
            p = next(x for x in c.pairs if (x.a, x.b) == (a, b))
            na, nb = p.a_name or f"rank {a}", p.b_name or f"rank {b}"
            others = [x for x in c.pairs if x is not p and x.status == "ok" and ({x.a, x.b} & {a, b})]
            title = (
                f"{na} - {nb}: the link is slow ({gbs(p.transfer.busbw_gbps if p.transfer else None)} GB/s "
                f"busbw against the median {gbs(c.median_busbw_gbps)}); both nodes are fine with their other "
                "partners"
                if kind == "link"
                else f"{na} - {nb}: slow ({gbs(p.transfer.busbw_gbps if p.transfer else None)} GB/s busbw against "
                f"the median {gbs(c.median_busbw_gbps)}); one of them had no other partner, so the node and "
                "the link cannot be told apart"
            )
            out.append(
                NodeFinding(
                    na,
                    Finding(
                        "ED783",
                        sev if kind == "link" else "warning",
                        title,
                        evidence=(_pair_line(p),) + tuple(_pair_line(x) for x in others) + (_median_line(c, fraction),),
                        fix=_fix_link(na, nb),
                        reference=REFERENCE,
                        area="fleet",
                        explanation=codes.meaning("ED783"),
                    ),
                )
            )
    out += _unfinished(c)
    out += _wrong(c)
    return out


#: a pair between two nodes under this share of their slower adapter's rate is slow for the fabric
ADAPTER_FRACTION = 0.5


def adapter_gbps(report: Mapping[str, Any]) -> Optional[float]:
    """GB/s each way of the fastest ACTIVE IB/RoCE port in a report's ``facts.fabric``
    (``"400 Gb/sec (4X NDR)"`` -> 50.0); None for a node without one.

    >>> adapter_gbps({"facts": {"fabric": {"adapters": [{"ports": [{"state": "ACTIVE", "rate_gbps": 400.0}]}]}}})
    50.0
    """
    facts = report.get("facts") if isinstance(report, Mapping) else None
    fabric = facts.get("fabric") if isinstance(facts, Mapping) else None
    rates = [
        p.get("rate_gbps")
        for a in (fabric or {}).get("adapters") or ()
        if isinstance(a, Mapping)
        for p in a.get("ports") or ()
        if isinstance(p, Mapping) and p.get("state") == "ACTIVE"
    ]
    numbers = [float(r) for r in rates if isinstance(r, (int, float)) and r > 0]
    return max(numbers) / 8.0 if numbers else None


def against_adapters(
    c: FleetComms, rates: Mapping[int, Optional[float]], fraction: float = ADAPTER_FRACTION
) -> List[NodeFinding]:
    """ED786: a pair of two nodes over NCCL whose busbw is under ``fraction`` of the slower node's
    adapter rate (``rates``: rank -> GB/s, :func:`adapter_gbps`). Pairs on one node cross no adapter."""
    out: List[NodeFinding] = []
    if c.backend != "nccl":
        return out
    for p in c.pairs:
        ra, rb = rates.get(p.a), rates.get(p.b)
        if p.status != "ok" or p.transfer is None or p.transfer.busbw_gbps is None or not ra or not rb:
            continue
        if p.a_name and p.a_name == p.b_name:
            continue
        rate = min(ra, rb)
        if p.transfer.busbw_gbps < fraction * rate:
            na, nb = p.a_name or f"rank {p.a}", p.b_name or f"rank {p.b}"
            out.append(
                NodeFinding(
                    na,
                    Finding(
                        "ED786",
                        "warning",
                        f"{na} - {nb}: {gbs(p.transfer.busbw_gbps)} GB/s between the nodes, under "
                        f"{fraction:.0%} of the adapters' {gbs(rate)} GB/s ({rate * 8:g} Gb/s)",
                        evidence=(
                            _pair_line(p),
                            f"the slower node's fastest ACTIVE port: {rate * 8:g} Gb/s = {gbs(rate)} GB/s "
                            "each way (/sys/class/infiniband, in each node's report)",
                        ),
                        fix=(
                            "envdoctor diag -r 1   # on both nodes: ports ACTIVE, GPUDirect RDMA, NCCL variables",
                            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET envdoctor fleet --gather --comms   # NET/IB or "
                            "NET/Socket, GDRDMA or not",
                        ),
                        reference=REFERENCE,
                        area="fleet",
                        explanation=codes.meaning("ED786"),
                    ),
                )
            )
    return out


def _culprits(c: FleetComms) -> Tuple[Unfinished, ...]:
    """The ranks to name for a stall: those that stopped before the step, else those not waiting in
    a collective while others were (they waited for them), else every rank that did not finish."""
    behind = tuple(u for u in c.unfinished if u.stage and u.stage != c.stalled)
    if behind:
        return behind
    elsewhere = tuple(u for u in c.unfinished if u.in_collective is False)
    if elsewhere and any(u.in_collective for u in c.unfinished):
        return elsewhere
    return c.unfinished


def _unfinished(c: FleetComms) -> List[NodeFinding]:
    out: List[NodeFinding] = []
    culprits = _culprits(c)
    named_ranks = {u.rank for u in culprits}
    waiting = [u for u in c.unfinished if u.rank not in named_ranks]
    limit = f"{c.phase_timeout_s:g} s" if c.phase_timeout_s else "the join timeout"
    for u in culprits:
        partner = next((p for p in c.pairs if c.stalled == f"round {p.round}" and u.rank in (p.a, p.b)), None)
        where = f"the comms phase's step '{c.stalled}'" if c.stalled else "the comms phase"
        if u.stage and u.stage != c.stalled:
            title = f"{u.name}: stopped at '{u.stage}' and never finished {where} (within {limit})"
        elif waiting:
            title = (
                f"{u.name}: hung in {where}: it was not in a collective after {limit} while "
                f"{', '.join(w.name for w in waiting)} waited in one"
            )
        elif partner is not None and {partner.a, partner.b} <= named_ranks:
            other = partner.b_name if u.rank == partner.a else partner.a_name
            title = (
                f"{u.name}: did not finish {where} with {other} within {limit}: one of the two hangs, or "
                "the link between them"
            )
        else:
            title = f"{u.name}: did not finish {where} within {limit}"
        evidence = [
            f"the first step not finished by every rank: {c.stalled or 'unknown'}",
            f"{u.name} last entered: {u.stage or 'no step of the comms phase'}",
        ]
        if u.where:
            evidence.append(f"{u.name} was in {u.where} when rank 0 stopped waiting")
        evidence += [f"{w.name} waited in a collective ({w.where})" for w in waiting]
        if u.error:
            evidence.append(f"it said: {u.error}")
        out.append(
            NodeFinding(
                u.name or f"rank {u.rank}",
                Finding(
                    "ED784",
                    "error",
                    title,
                    evidence=tuple(evidence),
                    fix=(
                        f"# on {u.name}: does a collective finish there at all?",
                        "envdoctor comms",
                        "# a slow start (first NCCL connection, many nodes): raise --join-timeout",
                        "NCCL_DEBUG=INFO envdoctor fleet --gather --comms   # where NCCL stops, in every rank's log",
                    ),
                    reference=REFERENCE,
                    area="fleet",
                    explanation=codes.meaning("ED784"),
                ),
            )
        )
    if c.status in ("failed", "stalled") and not c.unfinished and c.error:
        node = c.names.get(0, "rank 0")
        out.append(
            NodeFinding(
                node,
                Finding(
                    "ED784",
                    "error",
                    f"{node}: the comms phase ended without its answer: {c.error}",
                    evidence=(c.error,),
                    fix=("envdoctor comms   # on this node: does a collective run at all?",),
                    reference=REFERENCE,
                    area="fleet",
                    explanation=codes.meaning("ED784"),
                ),
            )
        )
    return out


def _wrong(c: FleetComms) -> List[NodeFinding]:
    out: List[NodeFinding] = []
    if c.all_reduce is not None and c.all_reduce.wrong:
        node = c.names.get(0, "rank 0")
        out.append(
            NodeFinding(
                node,
                Finding(
                    "ED785",
                    "error",
                    f"all {c.world_size} nodes: the all-reduce over {c.backend} gave {c.all_reduce.wrong} "
                    "wrong element(s)",
                    evidence=(
                        f"{format_bytes(c.all_reduce.bytes)} all-reduce, checked on every rank; "
                        "the pairs below say which node or link",
                    )
                    + tuple(_pair_line(p) for p in c.pairs if p.status == "wrong"),
                    fix=(
                        "envdoctor burn     # on the nodes of a pair with wrong results: does the GPU compute right?",
                    ),
                    reference=REFERENCE,
                    area="fleet",
                    explanation=codes.meaning("ED785"),
                ),
            )
        )
    for p in c.pairs:
        if p.status == "wrong" and p.transfer is not None:
            out.append(
                NodeFinding(
                    p.a_name or f"rank {p.a}",
                    Finding(
                        "ED785",
                        "error",
                        f"{p.a_name} - {p.b_name}: the pair's all-reduce gave {p.transfer.wrong} wrong element(s)",
                        evidence=(_pair_line(p),),
                        fix=(f"envdoctor burn     # on {p.a_name} and on {p.b_name}",),
                        reference=REFERENCE,
                        area="fleet",
                        explanation=codes.meaning("ED785"),
                    ),
                )
            )
    return out


__all__ = [
    "BYTES",
    "FleetComms",
    "PairFigure",
    "Transfer",
    "Unfinished",
    "analyze",
    "failed",
    "findings",
    "gbs",
    "named",
    "read",
    "transfer",
]

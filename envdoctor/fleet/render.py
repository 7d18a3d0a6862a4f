"""``envdoctor fleet`` for people (text, Markdown, a self-contained HTML page) and for scripts
(the ``envdoctor.fleet/1`` document). Renders a :class:`envdoctor.fleet.merge.Fleet`; computes
nothing. Secrets are masked in every output by the caller's last step (``mask_text``/``mask_data``).

The HTML page has no external assets (inline CSS and a few lines of script): a table of the facts
that differ, a node matrix (one row per node, one column per differing fact; deviating cells
marked; sortable by any column; a filter for deviating nodes) and the findings per node.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections import defaultdict
from typing import Annotated, Any, Dict, List, Literal, Optional, TypedDict, Union, cast

from envdoctor import __version__, checks
from envdoctor.doctypes import Count, Json
from envdoctor.documents import document
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding, summary
from envdoctor.fleet.comms import FleetComms, PairFigure, Transfer, gbs
from envdoctor.fleet.merge import Fleet
from envdoctor.fleet.rules import FactRow, Verdict, names, show
from envdoctor.lines import MARKS, suppressed_line
from envdoctor.links.plan import FACTOR_TEXT
from envdoctor.render.markdown import _cell
from envdoctor.style import Style
from envdoctor.units import format_bytes

SCHEMA = document("fleet").schema  # "envdoctor.fleet/1"
_VERDICT_ORDER = {"missing": 0, "unreadable": 1, "deviates": 2, "warning": 3, "ok": 4}
_VERDICT_WORD = {
    "ok": "ok",
    "warning": "warning",
    "deviates": "DEVIATES",
    "missing": "MISSING",
    "unreadable": "UNREADABLE",
}


# --- the document --------------------------------------------------------------------------------

Strings = List[str]
Ranks = List[Annotated[int, Json(minimum=0)]]
#: a fact's value on a node: text or a number, or null where the node has none of it (no driver)
Value = Union[str, float, None]
Pair = Annotated[List[str], Json(minItems=2, maxItems=2)]


class FleetSummary(TypedDict):
    nodes: Count
    reported: Count
    ok: Count
    warning: Count
    deviating: Count
    missing: Count
    unreadable: Count
    errors: Count
    warnings: Count
    info: Count
    exit_code: Annotated[int, Json(enum=[0, 1])]


class _FleetGpuKeys(TypedDict):
    index: Annotated[int, Json(minimum=0)]


class FleetGpu(_FleetGpuKeys, total=False):
    """One GPU of a node (GpuFacts' fields, those the node knows)."""

    name: Optional[str]
    uuid: Optional[str]
    memory_mib: Optional[int]
    power_limit_w: Optional[float]
    max_sm_clock_mhz: Optional[int]
    ecc_enabled: Optional[bool]
    ecc_corrected: Annotated[Optional[int], Json(minimum=0)]
    ecc_uncorrected: Annotated[Optional[int], Json(minimum=0)]
    remap_pending: Annotated[Optional[int], Json(minimum=0)]
    remap_failure: Annotated[Optional[int], Json(minimum=0)]
    remap_uncorrectable: Annotated[Optional[int], Json(minimum=0)]
    tflops: Dict[str, float]


class Unreadable(TypedDict):
    path: str
    reason: str


class FleetNode(TypedDict):
    """A node: its verdict, where its facts came from, and the facts compared."""

    name: str
    name_source: Literal["node key", "hostname", "folder", "file name", "rank"]
    status: Literal["reported", "missing", "unreadable"]
    verdict: Literal["ok", "warning", "deviates", "missing", "unreadable"]
    codes: Strings
    deviates_on: Strings
    rank: Annotated[Optional[int], Json(minimum=0)]
    sources: Strings
    kinds: Strings
    info: Dict[str, str]
    facts: Dict[str, Value]
    gpus: List[FleetGpu]
    notes: Strings
    unreadable: List[Unreadable]


class FleetRow(TypedDict):
    """A fact that differs (each node's value, the majority or median, the nodes that deviate)."""

    key: str
    label: str
    severity: Literal["error", "warning", "info"]
    reference: Literal["majority", "median", "zero"]
    majority: Value
    count: Count
    known: Count
    tie: bool
    deviating: Strings
    values: Dict[str, Value]
    note: Optional[str]


class Same(TypedDict):
    key: str
    label: str
    value: Value
    known: Count


class NodeLine(TypedDict):
    """A fleet finding names the node it concerns."""

    node: str
    code: Annotated[str, Json(pattern="^ED7[5-9][0-9]$")]


class HiddenLine(TypedDict):
    node: str


class Suppressed(TypedDict):
    """fleet --suppress CODE: the codes asked for and the findings they hid (in no verdict, summary
    or exit code)."""

    codes: List[Annotated[str, Json(pattern="^ED[0-9]{3}$")]]
    findings: List[Annotated[HiddenLine, Json.extends(Finding)]]


class Skipped(TypedDict):
    path: str
    reason: str


class Gather(TypedDict):
    """How a gather went: who joined, who is missing or late, how long each step took."""

    launcher: Literal["torchrun", "openmpi", "slurm", "env"]
    world_size: Annotated[int, Json(minimum=1)]
    master: str
    transport: Literal["gloo", "store", "none"]
    joined: Ranks
    missing: Ranks
    late: Ranks
    seconds: Dict[str, Annotated[float, Json(minimum=0)]]
    error: Optional[str]


class PairOf(TypedDict):
    round: Annotated[int, Json(minimum=1)]
    a: Annotated[int, Json(minimum=0)]
    b: Annotated[int, Json(minimum=0)]
    a_node: str
    b_node: str
    status: Literal["ok", "unfinished", "wrong"]
    slow: Optional[Literal["node", "link", "unclear"]]
    transfer: Optional[Transfer]


class UnfinishedRank(TypedDict):
    rank: Annotated[int, Json(minimum=0)]
    node: str
    stage: Optional[str]
    error: Optional[str]
    where: Optional[str]
    in_collective: Optional[bool]


class CommsPhase(TypedDict):
    """fleet --gather --comms: one all-reduce over every rank and the pairwise pass; bandwidths in
    decimal GB/s as nccl-tests counts them: algbw = bytes / time_s, busbw = algbw x 2(n-1)/n (1 for a pair)."""

    status: Literal["ok", "stalled", "failed", "skipped"]
    backend: Optional[Literal["nccl", "gloo"]]
    why: Optional[str]
    bytes: Annotated[Optional[int], Json(minimum=1)]
    world_size: Annotated[int, Json(minimum=1)]
    phase_timeout_s: Annotated[Optional[float], Json(minimum=0)]
    all_reduce: Optional[Transfer]
    rounds: Count
    pairs: List[PairOf]
    median_busbw_gbps: Annotated[Optional[float], Json(minimum=0)]
    slow_nodes: Strings
    slow_links: List[Pair]
    unclear: List[Pair]
    stalled: Optional[str]
    unfinished: List[UnfinishedRank]
    error: Optional[str]
    devices: Dict[str, str]


class _FleetKeys(TypedDict):
    schema: str
    envdoctor_version: str
    created_at: str
    mode: Literal["files", "gather"]
    redacted: bool
    summary: FleetSummary
    nodes: List[FleetNode]
    facts: List[FleetRow]
    same: List[Same]
    findings: List[Annotated[NodeLine, Json.extends(Finding)]]
    notes: Strings
    skipped: List[Skipped]
    gather: Optional[Gather]


class FleetDocument(_FleetKeys, total=False):
    """Every node with its verdict and compared facts, the facts that differ, the facts every node
    agrees on, the findings (ED750-ED799) with the node they concern, and for a gather how it went.
    A fact missing from a node's 'facts' is unknown there."""

    comms: Optional[CommsPhase]
    suppressed: Optional[Suppressed]


def _summary(fleet: Fleet) -> FleetSummary:
    d = fleet.drift
    kinds = [v.verdict for v in d.verdicts]
    return {
        "nodes": len(d.nodes),
        "reported": sum(n.status == "reported" for n in d.nodes),
        "ok": kinds.count("ok"),
        "warning": kinds.count("warning"),
        "deviating": kinds.count("deviates"),
        "missing": kinds.count("missing"),
        "unreadable": kinds.count("unreadable"),
        **summary(f.finding for f in d.findings),  # the counts and exit code of every document
    }


def _row(r: FactRow) -> FleetRow:
    return {
        "key": r.key,
        "label": r.label,
        "severity": r.severity,
        "reference": r.reference,
        "majority": r.majority,
        "count": r.count,
        "known": r.known,
        "tie": r.tie,
        "deviating": list(r.deviating),
        "values": dict(r.values),
        "note": r.note,
    }


def fleet_document(fleet: Fleet) -> FleetDocument:
    """The ``envdoctor.fleet/1`` document (secrets not yet masked: the caller masks)."""
    d = fleet.drift
    verdicts = {v.node: v for v in d.verdicts}
    nodes: List[FleetNode] = []
    for n in d.nodes:
        v = verdicts[n.name]
        gpus: List[FleetGpu] = [
            cast(FleetGpu, {k: v for k, v in to_data(g).items() if v is not None and v != {}}) for g in n.gpus
        ]
        nodes.append(
            {
                "name": n.name,
                "name_source": n.name_source,
                "status": n.status,
                "verdict": v.verdict,
                "codes": list(v.codes),
                "deviates_on": list(v.what),
                "rank": n.rank,
                "sources": list(n.sources),
                "kinds": list(n.kinds),
                "info": dict(n.info),
                "facts": dict(n.values),
                "gpus": gpus,
                "notes": list(n.notes),
                "unreadable": [{"path": p, "reason": r} for p, r in n.unreadable],
            }
        )
    gather: Optional[Gather] = None
    if fleet.gather is not None:
        g = fleet.gather
        gather = cast(
            Gather,
            {
                "launcher": g.launcher,
                "world_size": g.world_size,
                "master": g.master,
                "transport": g.transport,
                "joined": list(g.joined),
                "missing": list(g.missing),
                "late": list(g.late),
                "seconds": dict(g.seconds),
                "error": g.error,
            },
        )
    return {
        "schema": SCHEMA,
        "envdoctor_version": __version__,
        "created_at": fleet.created_at,
        "mode": fleet.mode,
        "redacted": fleet.redacted,
        "summary": _summary(fleet),
        "nodes": nodes,
        "facts": [_row(r) for r in d.rows],
        "same": [{"key": r.key, "label": r.label, "value": r.majority, "known": r.known} for r in d.same],
        "findings": [cast(NodeLine, dict({"node": f.node}, **to_data(f.finding))) for f in d.findings],
        "notes": list(d.notes),
        "skipped": [{"path": s.path, "reason": s.reason} for s in fleet.skipped],
        "gather": gather,
        "comms": comms_document(fleet.comms),
        "suppressed": cast(
            Optional[Suppressed],
            checks.hidden_block(d.suppress, d.suppressed, lambda f: dict({"node": f.node}, **to_data(f.finding))),
        ),
    }


def comms_document(c: Optional[FleetComms]) -> Optional[CommsPhase]:
    """The ``comms`` key of ``envdoctor.fleet/1``."""
    if c is None:
        return None

    def tr(t: Optional[Transfer]) -> Optional[Transfer]:
        return None if t is None else cast(Transfer, dataclasses.asdict(t))  # written as its fields

    return {
        "status": c.status,
        "backend": c.backend,
        "why": c.why,
        "bytes": c.bytes,
        "world_size": c.world_size,
        "phase_timeout_s": c.phase_timeout_s,
        "all_reduce": tr(c.all_reduce),
        "rounds": c.rounds,
        "pairs": [
            {
                "round": p.round,
                "a": p.a,
                "b": p.b,
                "a_node": p.a_name,
                "b_node": p.b_name,
                "status": p.status,
                "slow": p.blame or None,
                "transfer": tr(p.transfer),
            }
            for p in c.pairs
        ],
        "median_busbw_gbps": c.median_busbw_gbps,
        "slow_nodes": [c.names.get(r, f"rank {r}") for r in c.slow_nodes],
        "slow_links": [[c.names.get(a, f"rank {a}"), c.names.get(b, f"rank {b}")] for a, b in c.slow_links],
        "unclear": [[c.names.get(a, f"rank {a}"), c.names.get(b, f"rank {b}")] for a, b in c.unclear],
        "stalled": c.stalled,
        "unfinished": [
            {
                "rank": u.rank,
                "node": u.name,
                "stage": u.stage,
                "error": u.error,
                "where": u.where,
                "in_collective": u.in_collective,
            }
            for u in c.unfinished
        ],
        "error": c.error,
        "devices": {str(k): v for k, v in sorted(c.devices.items())},
    }


# --- shared wording -----------------------------------------------------------------------------------


def _groups(r: FactRow) -> List[tuple]:
    """(value, nodes) of the deviating nodes, the largest group first."""
    by: Dict[Any, List[str]] = defaultdict(list)
    for name in r.deviating:
        by[r.values[name]].append(name)
    return sorted(by.items(), key=lambda kv: (-len(kv[1]), show(kv[0])))


def _reference(r: FactRow) -> str:
    if r.reference == "median":
        return f"median {show(r.majority)}" + (f" ({r.note.split(',')[0]})" if r.note else "")
    if r.reference == "zero":
        return "0"
    tie = ", tie" if r.tie else ""
    return f"{show(r.majority)} ({r.count} of {r.known}{tie})"


def _deviating(r: FactRow, limit: int = 4) -> str:
    return "; ".join(f"{show(value)}: {names(members, limit)}" for value, members in _groups(r))


def headline(fleet: Fleet) -> str:
    s = cast(Dict[str, int], _summary(fleet))
    parts = [f"{s['nodes']} node{'s' if s['nodes'] != 1 else ''}"]
    for key, word in (
        ("deviating", "deviate"),
        ("warning", "with warnings"),
        ("missing", "missing"),
        ("unreadable", "unreadable"),
    ):
        if s[key]:
            parts.append(f"{s[key]} {word}")
    if fleet.gather is not None:
        g = fleet.gather
        parts.append(f"gathered by {g.launcher} over {'gloo' if g.transport == 'gloo' else 'the store'}")
    return "envdoctor fleet: " + ", ".join(parts)


def closing(fleet: Fleet) -> str:
    d = fleet.drift
    bad = [v.node for v in d.verdicts if v.verdict in ("deviates", "missing", "unreadable")]
    if d.exit_code:
        return f"Exit 1: {names(bad)} deviate{'s' if len(bad) == 1 else ''} on something that matters."
    warned = [v.node for v in d.verdicts if v.verdict == "warning"]
    if warned:
        return f"Exit 0: no drift that matters; warnings on {names(warned)}."
    return "Exit 0: the nodes agree on everything compared."


def _verdict_line(v: Verdict, width: int) -> str:
    detail = ", ".join(v.what[:4]) + (f" (+{len(v.what) - 4})" if len(v.what) > 4 else "")
    codes = f" [{', '.join(v.codes)}]" if v.codes else ""
    return f"  {v.node.ljust(width)}  {_VERDICT_WORD[v.verdict]:<10}  {detail}{codes}".rstrip()


def comms_head(c: FleetComms) -> str:
    """``Comms over gloo (rank 1 has no CUDA GPU), 1 MiB per all-reduce``."""
    if c.backend is None:
        return f"Comms: {c.status}" + (f" ({c.why})" if c.why else "")
    size = f", {format_bytes(c.bytes)} per all-reduce" if c.bytes else ""
    return f"Comms over {c.backend} ({c.why}){size}" if c.why else f"Comms over {c.backend}{size}"


def _transfer(t: Transfer) -> str:
    return (
        f"{t.time_s * 1e3:.3f} ms, algbw {gbs(t.algbw_gbps)} GB/s, busbw {gbs(t.busbw_gbps)} GB/s "
        f"(x {FACTOR_TEXT['all_reduce']} = {t.busbw_factor:.3g}), {t.iters} calls after {t.warmup} warm-up, "
        f"{t.wrong} wrong"
    )


def _blame(p: PairFigure) -> str:
    return {"node": "slow: a node", "link": "slow: the link", "unclear": "slow: node or link", "": ""}[p.blame]


def comms_lines(c: FleetComms) -> List[str]:
    """The comms phase in lines of text (shared by text and Markdown)."""
    out = []
    if c.all_reduce is not None and c.all_reduce.ranks < 2:
        out.append(
            "all-reduce over 1 node: nothing travels between nodes, so there is no bus bandwidth "
            "to measure (launch one rank per node on 2 or more)"
        )
    elif c.all_reduce is not None:
        out.append(f"all-reduce over {c.all_reduce.ranks} nodes: {_transfer(c.all_reduce)}")
    elif c.status == "ok":
        out.append("all-reduce over every node: no figure came back")
    if c.pairs:
        median = (
            f", median busbw {gbs(c.median_busbw_gbps)} GB/s"
            if c.median_busbw_gbps is not None
            else ", no pair finished"
        )
        out.append(f"pairwise pass ({c.rounds} rounds, the pairs of a round at once){median}:")
        for p in c.pairs:
            figure = (
                f"busbw {gbs(p.transfer.busbw_gbps)} GB/s, {p.transfer.time_s * 1e3:.3f} ms"
                if p.transfer is not None
                else "did not finish"
            )
            out.append(f"  round {p.round}  {p.a_name} - {p.b_name}  {figure}  {_blame(p)}".rstrip())
    if c.slow_nodes:
        out.append("slow node: " + ", ".join(c.names.get(r, f"rank {r}") for r in c.slow_nodes))
    if c.slow_links:
        out.append("slow link: " + ", ".join(f"{c.names.get(a, a)} - {c.names.get(b, b)}" for a, b in c.slow_links))
    if c.unfinished:
        limit = f" within {c.phase_timeout_s:g} s" if c.phase_timeout_s else ""
        out.append(
            f"did not finish '{c.stalled}'{limit}: "
            + ", ".join(f"{u.name} (at {u.stage or 'no step'})" for u in c.unfinished)
        )
    if c.error and not c.unfinished:
        out.append(f"error: {c.error}")
    return out


# --- text ----------------------------------------------------------------------------------------------


def render_text(fleet: Fleet, color: bool = False) -> str:
    style = Style(color)
    d = fleet.drift
    out = [style(headline(fleet), "bold"), ""]
    if d.rows:
        width = max([len(r.label) for r in d.rows] + [len("What differs")]) + 2
        ref = max([len(_reference(r)) for r in d.rows] + [len("fleet")]) + 2
        out.append(style(f"  {'What differs'.ljust(width)}{'fleet'.ljust(ref)}deviating", "dim"))
        for r in d.rows:
            out.append("  " + style(r.label.ljust(width), r.severity) + _reference(r).ljust(ref) + _deviating(r))
    else:
        out.append("  Nothing differs between the nodes that reported.")
    if d.same:
        same = ", ".join(f"{r.label} {show(r.majority)}" for r in d.same)
        out += [""] + textwrap.wrap(
            f"The same on every node: {same}",
            100,
            initial_indent="  ",
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
    out += ["", style("  Nodes", "dim")]
    verdicts = sorted(d.verdicts, key=lambda v: (_VERDICT_ORDER[v.verdict], v.node))
    width = max((len(v.node) for v in verdicts), default=4)
    ok = [v.node for v in verdicts if v.verdict == "ok"]
    for v in verdicts:
        if v.verdict != "ok":
            out.append(style(_verdict_line(v, width), "error" if v.verdict != "warning" else "warning"))
    if ok:
        out.append(style(f"  {len(ok)} ok: {names(ok, 12)}", "ok"))
    if d.findings:
        out += ["", style("  Findings", "dim")]
        for nf in d.findings:
            f = nf.finding
            out.append(style(f"  {MARKS[f.severity]} {f.code} {f.title}", f.severity))
            out += [style(f"      - {e}", "dim") for e in f.evidence]
            out += [f"      {c}" if c.startswith("#") else f"      $ {c}" for c in f.fix]
    out += suppressed_line([nf.finding for nf in d.suppressed], style)
    if fleet.comms is not None:
        out += ["", style(f"  {comms_head(fleet.comms)}", "dim")] + [f"    {line}" for line in comms_lines(fleet.comms)]
    for note in d.notes + tuple(f"{s.path}: passed over ({s.reason})" for s in fleet.skipped):
        out.append(style(f"  note: {note}", "dim"))
    for n in d.nodes:
        out += [style(f"  note: {n.name}: {note}", "dim") for note in n.notes if n.status == "reported"]
    out += ["", closing(fleet)]
    return "\n".join(out) + "\n"


# --- Markdown ---------------------------------------------------------------------------------------


def render_markdown(fleet: Fleet) -> str:
    d = fleet.drift
    out = [f"### {_cell(headline(fleet))}", ""]
    if d.rows:
        out += ["| what differs | fleet | deviating |", "|---|---|---|"]
        out += [f"| {_cell(r.label)} | {_cell(_reference(r))} | {_cell(_deviating(r, 12))} |" for r in d.rows]
    else:
        out.append("Nothing differs between the nodes that reported.")
    if d.same:
        out += ["", "The same on every node: " + _cell(", ".join(f"{r.label} {show(r.majority)}" for r in d.same))]
    out += ["", "| node | verdict | deviates on | codes |", "|---|---|---|---|"]
    for v in sorted(d.verdicts, key=lambda v: (_VERDICT_ORDER[v.verdict], v.node)):
        out.append(f"| {_cell(v.node)} | {v.verdict} | {_cell(', '.join(v.what))} | {', '.join(v.codes)} |")
    if d.findings:
        out += ["", "**Findings**", ""]
        for nf in d.findings:
            f = nf.finding
            out.append(f"- **{f.code}** ({f.severity}) {_cell(f.title)}")
            out += [f"  - {_cell(e)}" for e in f.evidence]
            if f.fix:
                out += ["  ```sh"] + [f"  {c}" for c in f.fix] + ["  ```"]
    if d.suppressed:
        out += [
            "",
            "Suppressed (--suppress): "
            + _cell(", ".join(f"{nf.finding.code} ({nf.finding.severity}, {nf.node})" for nf in d.suppressed)),
        ]
    if fleet.comms is not None:
        c = fleet.comms
        out += ["", f"**{_cell(comms_head(c))}**", ""]
        if c.pairs:
            out += ["| round | pair | busbw GB/s | time ms | |", "|---|---|---|---|---|"]
            for p in c.pairs:
                t = p.transfer
                out.append(
                    f"| {p.round} | {_cell(p.a_name)} - {_cell(p.b_name)} | "
                    f"{gbs(t.busbw_gbps) if t else 'did not finish'} | "
                    f"{f'{t.time_s * 1e3:.3f}' if t else ''} | {_blame(p)} |"
                )
            out.append("")
        out += [f"- {_cell(line)}" for line in comms_lines(c) if not line.startswith("  round ")]
    notes = list(d.notes) + [f"{s.path}: passed over ({s.reason})" for s in fleet.skipped]
    if notes:
        out += [""] + [f"> {_cell(n)}" for n in notes]
    out += ["", closing(fleet), "", f"<sub>envdoctor {__version__}, {fleet.created_at}</sub>"]
    return "\n".join(out) + "\n"


# --- HTML ---------------------------------------------------------------------------------------------


def render_html(fleet: Fleet) -> str:
    """The fleet page (``envdoctor.fleet.page``, through the one page module) of the document."""
    from envdoctor.fleet.page import fleet_page

    return fleet_page(fleet_document(fleet))


def rank_line(
    rank: int, world: int, host: str, master: str, transport: str, seconds: float, comms: Optional[str] = None
) -> str:
    """The one line a rank other than 0 prints (``comms``: how its comms phase ended)."""
    took = f"; its comms phase: {comms}" if comms else ""
    return (
        f"envdoctor fleet: rank {rank} of {world} ({host}) sent its report to rank 0 at {master} "
        f"over {transport} in {seconds:.1f} s{took}; rank 0 prints the fleet"
    )


__all__ = [
    "SCHEMA",
    "closing",
    "comms_document",
    "comms_head",
    "comms_lines",
    "fleet_document",
    "headline",
    "rank_line",
    "render_html",
    "render_markdown",
    "render_text",
]

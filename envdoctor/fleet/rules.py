"""The fleet's rules: which node differs from the others, how much it matters, and the fix; pure.

Each comparable fact (:data:`SPECS`) has a majority: the value most nodes have (nodes where the
fact is unknown do not vote; ``None``, "none", does). A node with another value deviates. What
deviates *matters* (severity "error", exit 1) where a job spread over the nodes breaks or slows
down because of it: the driver branch and the CUDA it supports, the GPU count and models, the
torch build (its CUDA, NCCL, whether it can use the GPUs), uncorrected ECC errors and pending or
failed row remaps, a GPU more than 5% slower than the fleet's median of its model, errors of the
node's own check that the others do not have, and a node that did not report. Other drift is a
warning (driver version within the branch, kernel-module flavour, power limit, max clock, ECC
mode, cuDNN, Python, toolkits, the container toolkit, the OS) or info (the Linux kernel). The
host name, when a report was collected and envdoctor's version are shown, never compared; the
reports hold no uptime.

A tie has no majority: the higher version or number is then the target (a missing GPU is likelier
than an extra one, an old driver likelier than a new one), and the finding says it was a tie.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Tuple

from envdoctor import checks, codes
from envdoctor.findings import Finding, sort_findings
from envdoctor.findings import exit_code as findings_exit_code
from envdoctor.fleet import fixes
from envdoctor.fleet.facts import GpuFacts, NodeFacts, Value
from envdoctor.parse import version_key

Severity = Literal["error", "warning", "info"]
Order = Literal["version", "number", "text"]
VerdictKind = Literal["ok", "warning", "deviates", "missing", "unreadable"]

#: A GPU this much below the fleet's median of the same model, at the same point, is slow.
SLOW_FRACTION = 0.05
#: Node names listed in one line of evidence before "+N more".
LIST_NAMES = 8

#: No public page explains fleet drift yet (docs/fleet.md ships with the source, not at a URL).
REFERENCE = None

#: Every code the fleet emits: title, and what it means and what to do.


@dataclass(frozen=True)
class Spec:
    """One comparable fact: how a deviation is named, how bad it is, and how ties are broken."""

    key: str
    label: str
    severity: Severity
    code: str
    order: Order = "text"
    #: no finding of its own on a node that also deviates on one of these (its cause)
    covered_by: Tuple[str, ...] = ()
    #: text values preferred as the target in a tie
    prefer: Tuple[str, ...] = ()
    #: no finding of its own where the node has none of it and also deviates on one of these
    #: (no GPUs: "GPU models none" says nothing "GPUs 0" did not)
    absent_covered_by: Tuple[str, ...] = ()
    #: in a tie, none of it is the target (errors of a node's own check: none is better)
    tie_to_none: bool = False


SPECS: Tuple[Spec, ...] = (
    Spec("driver.branch", "driver branch", "error", "ED751", "version"),
    Spec("driver.version", "driver", "warning", "ED752", "version", ("driver.branch",)),
    Spec("driver.cuda", "driver's CUDA", "error", "ED753", "version", ("driver.branch", "driver.version")),
    Spec("driver.kernel_module", "kernel module", "warning", "ED754", "version", ("driver.branch", "driver.version")),
    Spec("driver.flavor", "kernel-module flavour", "warning", "ED755", "text", ("driver.branch",), ("open",)),
    Spec("gpu.count", "GPUs", "error", "ED756", "number"),
    Spec("gpu.models", "GPU models", "error", "ED757", "text", absent_covered_by=("gpu.count",)),
    Spec(
        "gpu.power_limit", "power limit", "warning", "ED758", "text", ("gpu.models",), absent_covered_by=("gpu.count",)
    ),
    Spec(
        "gpu.max_sm_clock",
        "max SM clock",
        "warning",
        "ED759",
        "text",
        ("gpu.models",),
        absent_covered_by=("gpu.count",),
    ),
    Spec("gpu.ecc", "ECC mode", "warning", "ED760", "text", ("gpu.models",), ("on",)),
    Spec("torch.version", "torch", "error", "ED761", "version"),
    Spec("torch.cuda", "torch's CUDA", "error", "ED762", "version", ("torch.version",)),
    Spec(
        "torch.gpu",
        "torch on the GPUs",
        "error",
        "ED763",
        "text",
        ("torch.version", "gpu.count", "driver.branch"),
        ("usable",),
    ),
    Spec("torch.cudnn", "cuDNN", "warning", "ED764", "version", ("torch.version",)),
    Spec("torch.nccl", "NCCL", "error", "ED765", "version", ("torch.version",)),
    Spec("python.version", "Python", "warning", "ED766", "version"),
    Spec("toolkits", "CUDA toolkits", "warning", "ED767", "text"),
    Spec("container_toolkit", "container toolkit", "warning", "ED768", "version"),
    Spec("os", "OS", "warning", "ED769", "text"),
    Spec("kernel", "Linux kernel", "info", "ED770", "text", ("os",)),
)
SPEC_BY_KEY = {s.key: s for s in SPECS}
#: The row of the node's own check errors (its findings are ED771, by code, not by majority).
OWN_ERRORS = Spec("check.errors", "errors of its own check", "error", "ED771", tie_to_none=True)


@dataclass(frozen=True)
class FactRow:
    """One fact across the fleet: each node's value, the majority (or median), who deviates."""

    key: str
    label: str
    severity: Severity
    majority: Value
    count: int  # nodes with the majority value
    known: int  # nodes that know the fact
    values: Mapping[str, Value]  # node name -> value, for the nodes that know it
    deviating: Tuple[str, ...] = ()
    tie: bool = False
    reference: Literal["majority", "median", "zero"] = "majority"
    note: Optional[str] = None  # "bf16@8192 on NVIDIA H200"

    @property
    def differs(self) -> bool:
        return bool(self.deviating)


@dataclass(frozen=True)
class NodeFinding:
    node: str
    finding: Finding


@dataclass(frozen=True)
class Verdict:
    node: str
    verdict: VerdictKind
    codes: Tuple[str, ...] = ()
    #: the facts it deviates on, as "driver branch 570" (for the one-line summary)
    what: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Drift:
    """Everything the fleet's rules found (renderers show it; nothing is computed after this)."""

    nodes: Tuple[NodeFacts, ...]
    rows: Tuple[FactRow, ...]  # facts that differ, and the measured ones
    same: Tuple[FactRow, ...]  # facts every node that knows them agrees on
    findings: Tuple[NodeFinding, ...]
    verdicts: Tuple[Verdict, ...]
    notes: Tuple[str, ...] = ()
    #: ``--suppress CODE``: the codes asked for (empty: none) and the findings they hid, counted nowhere
    suppress: Tuple[str, ...] = ()
    suppressed: Tuple[NodeFinding, ...] = ()

    @property
    def exit_code(self) -> int:
        return findings_exit_code(f.finding for f in self.findings)


# --- formatting shared by titles and evidence -------------------------------------------------------


def show(value: Value) -> str:
    """A value as people read it: ``None`` is "none", 640.23 is "640.2"."""
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:.1f}" if value < 1000 else f"{value:.0f}"
    return str(value)


def names(items: Sequence[str], limit: int = LIST_NAMES) -> str:
    """``gpu-01, gpu-02 (+3 more)``."""
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


# --- majority -----------------------------------------------------------------------------------------


def _rank(spec: Spec, value: Value) -> Tuple[Any, ...]:
    """Sort key for a tie: higher wins; ``None`` lowest; preferred text first."""
    if value is None:
        return (0,)
    if spec.order == "version":
        return (1, version_key(str(value)))
    if spec.order == "number" and isinstance(value, (int, float)):
        return (1, float(value))
    return (1, str(value) in spec.prefer, str(value))


def majority(spec: Spec, values: Iterable[Value]) -> Tuple[Value, int, bool]:
    """(the target value, how many nodes have it, whether it was a tie).

    >>> majority(SPEC_BY_KEY["driver.branch"], ["580", "580", "570"])
    ('580', 2, False)
    >>> majority(SPEC_BY_KEY["driver.branch"], ["570", "580"])
    ('580', 1, True)
    """
    counts = Counter(values)
    top = max(counts.values())
    leaders = [v for v, c in counts.items() if c == top]
    if spec.tie_to_none and None in leaders:
        return None, top, len(leaders) > 1
    best = max(leaders, key=lambda v: _rank(spec, v))
    return best, top, len(leaders) > 1


def compare(spec: Spec, nodes: Sequence[NodeFacts]) -> Optional[FactRow]:
    """The row of ``spec`` across the reporting nodes; None where fewer than two know it."""
    values = {n.name: n.value(spec.key) for n in nodes if n.status == "reported" and n.knows(spec.key)}
    if len(values) < 2:
        return None
    target, count, tie = majority(spec, values.values())
    deviating = tuple(name for name, v in values.items() if v != target)
    return FactRow(spec.key, spec.label, spec.severity, target, count, len(values), values, deviating, tie)


# --- findings of the compared facts --------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What a fix needs beyond the node: the table (driver packages, torch indexes), the rows."""

    table: Any
    rows: Mapping[str, FactRow]
    power_targets: Mapping[str, float] = field(default_factory=dict)  # GPU model -> fleet limit
    clock_targets: Mapping[str, int] = field(default_factory=dict)


def _majority_of(ctx: Context, key: str) -> Value:
    row = ctx.rows.get(key)
    return row.majority if row else None


def _fix(spec: Spec, node: NodeFacts, target: Value, ctx: Context) -> Tuple[str, ...]:
    key = spec.key
    if key in ("driver.branch", "driver.cuda"):
        branch = _majority_of(ctx, "driver.branch")
        return fixes.driver(node, str(branch) if branch else None, _majority_of(ctx, "driver.version"), ctx.table)
    if key == "driver.version":
        return fixes.driver(node, str(_majority_of(ctx, "driver.branch") or "") or None, target, ctx.table)
    if key == "driver.kernel_module":
        return fixes.own_fixes(node, ("ED102",)) or fixes.reload_module()
    if key == "driver.flavor":
        branch = _majority_of(ctx, "driver.branch") or node.value("driver.branch")
        return fixes.driver(node, str(branch) if branch else None, None, ctx.table, open_modules=target == "open")
    if key == "gpu.count":
        return fixes.missing_gpu(node)
    if key == "gpu.models":
        return fixes.other_models(node, target)
    if key == "gpu.power_limit":
        return fixes.power_limit(
            node,
            [
                (g, ctx.power_targets[g.name or ""])
                for g in node.gpus
                if g.name in ctx.power_targets
                and g.power_limit_w is not None
                and g.power_limit_w != ctx.power_targets[g.name or ""]
            ],
        )
    if key == "gpu.max_sm_clock":
        return fixes.clocks(
            node,
            [
                g
                for g in node.gpus
                if g.name in ctx.clock_targets and g.max_sm_clock_mhz != ctx.clock_targets[g.name or ""]
            ],
        )
    if key == "gpu.ecc":
        on = target != "off"
        return fixes.ecc_mode(node, on, [g for g in node.gpus if g.ecc_enabled is not None and g.ecc_enabled != on])
    if key in ("torch.version", "torch.cuda", "torch.gpu"):
        return fixes.own_fixes(node) + fixes.torch(node, _majority_of(ctx, "torch.version"), ctx.table)
    if key in ("torch.cudnn", "torch.nccl"):
        return fixes.libraries(
            node, "cuDNN" if key == "torch.cudnn" else "NCCL", target, _majority_of(ctx, "torch.version")
        )
    if key == "python.version":
        return fixes.python_version(target)
    if key == "toolkits":
        return fixes.toolkits(node, target, ctx.table)
    if key == "container_toolkit":
        return fixes.container_toolkit(node, target)
    return fixes.image(node, spec.label, target)


def _evidence(row: FactRow, node: NodeFacts) -> Tuple[str, ...]:
    groups: Dict[Value, List[str]] = {}
    for name, value in row.values.items():
        groups.setdefault(value, []).append(name)
    where = f" ({node.sources[0]})" if node.sources else ""
    lines = [
        f"{node.name}: {row.label} {show(row.values[node.name])}{where}",
        f"{show(row.majority)} on {len(groups[row.majority])} of {row.known} nodes: {names(groups[row.majority])}",
    ]
    for value, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        if value not in (row.majority, row.values[node.name]):
            lines.append(f"{show(value)} on {len(members)}: {names(members)}")
    return tuple(lines)


def _title(row: FactRow, node: NodeFacts) -> str:
    mine = show(row.values[node.name])
    if row.tie:
        return (
            f"{node.name}: {row.label} {mine}; the nodes are split with no majority, and the "
            f"{'higher' if SPEC_BY_KEY.get(row.key, OWN_ERRORS).order != 'text' else 'first'} "
            f"{show(row.majority)} is taken as the fleet's"
        )
    return f"{node.name}: {row.label} {mine}, where {row.count} of {row.known} nodes have {show(row.majority)}"


def fact_findings(rows: Mapping[str, FactRow], nodes: Mapping[str, NodeFacts], ctx: Context) -> List[NodeFinding]:
    out = []
    for spec in SPECS:
        row = rows.get(spec.key)
        if row is None:
            continue
        for name in row.deviating:
            node = nodes[name]
            covers = spec.covered_by + (spec.absent_covered_by if row.values[name] is None else ())
            if any(name in rows[c].deviating for c in covers if c in rows):
                continue
            out.append(
                NodeFinding(
                    name,
                    Finding(
                        spec.code,
                        spec.severity,
                        _title(row, node),
                        evidence=_evidence(row, node),
                        fix=_fix(spec, node, row.majority, ctx),
                        reference=REFERENCE,
                        area="fleet",
                        explanation=codes.meaning(spec.code),
                    ),
                )
            )
    return out


# --- the node's own check --------------------------------------------------------------------------


def own_errors(row: Optional[FactRow], nodes: Sequence[NodeFacts]) -> List[NodeFinding]:
    """ED771 for each node whose check reported error codes the fleet's majority does not have."""
    common = set(str(row.majority).split(", ")) if row is not None and row.majority else set()
    out = []
    for node in nodes:
        extra = [f for f in node.check_errors if f.code not in common]
        if not extra or node.status != "reported":
            continue
        listed = ", ".join(dict.fromkeys(f.code for f in extra))
        others = f"; the majority's own checks report {row.majority}" if row is not None and row.majority else ""
        out.append(
            NodeFinding(
                node.name,
                Finding(
                    "ED771",
                    "error",
                    f"{node.name}: its own check reports {listed}{others}",
                    evidence=tuple(f"{f.code} {f.title}" for f in extra)
                    + tuple(e for f in extra for e in f.evidence[:2]),
                    fix=fixes.own_fixes(node, {f.code for f in extra}),
                    reference=REFERENCE,
                    area="fleet",
                    explanation=codes.meaning("ED771"),
                ),
            )
        )
    return out


# --- health counters (absolute, not by majority) ----------------------------------------------------


def health(nodes: Sequence[NodeFacts]) -> Tuple[List[NodeFinding], List[FactRow]]:
    findings: List[NodeFinding] = []
    rows: List[FactRow] = []
    reported = [n for n in nodes if n.status == "reported"]

    def total(node: NodeFacts, attr: str) -> Optional[int]:
        counts = [getattr(g, attr) for g in node.gpus if getattr(g, attr) is not None]
        return sum(counts) if counts else None

    checks: Tuple[Tuple[str, str, str, Severity], ...] = (
        ("ecc_uncorrected", "uncorrected ECC errors", "ED772", "error"),
        ("remap_pending", "row remaps pending", "ED773", "error"),
        ("remap_failure", "row remaps failed", "ED773", "error"),
        ("ecc_corrected", "corrected ECC errors", "ED774", "warning"),
    )
    for attr, label, code, severity in checks:
        values = {n.name: total(n, attr) for n in reported if total(n, attr) is not None}
        if not values or not any(values.values()):
            continue
        zero = sum(1 for v in values.values() if v == 0)
        if attr == "ecc_corrected" and zero * 2 < len(values):
            continue  # most of the fleet counts corrected errors: nothing odd about one node
        deviating = tuple(name for name, v in values.items() if v)
        rows.append(FactRow(f"gpu.{attr}", label, severity, 0, zero, len(values), values, deviating, reference="zero"))
        for name in deviating:
            node = next(n for n in reported if n.name == name)
            bad = [g for g in node.gpus if getattr(g, attr)]
            if code == "ED773" and any(f.node == name and f.finding.code == "ED773" for f in findings):
                continue
            findings.append(
                NodeFinding(
                    name,
                    Finding(
                        code,
                        severity,
                        f"{name}: {label} on GPU {', '.join(str(g.index) for g in bad)}",
                        evidence=tuple(
                            f"GPU {g.index} ({g.name or 'GPU'}, {g.uuid or 'no UUID'}): {getattr(g, attr)} "
                            f"{label} (NVML, volatile)"
                            for g in bad
                        ),
                        fix=fixes.health(node, bad, attr == "remap_failure"),
                        reference=REFERENCE,
                        area="fleet",
                        explanation=codes.meaning(code),
                    ),
                )
            )
    return findings, rows


# --- measured speed ----------------------------------------------------------------------------------

_DTYPE_RANK = {"bf16": 4, "fp16": 3, "tf32": 2, "fp32": 1}


def _point_rank(point: str, count: int) -> Tuple[int, int, int]:
    dtype, _, n = point.partition("@")
    return count, _DTYPE_RANK.get(dtype, 0), int(n) if n.isdigit() else 0


def reference_points(nodes: Sequence[NodeFacts]) -> Dict[str, str]:
    """GPU model -> the point measured on most of its GPUs (ties: bf16 first, then the larger size)."""
    seen: Dict[str, Counter] = {}
    for node in nodes:
        for g in node.gpus:
            if g.tflops:
                seen.setdefault(g.name or "unknown GPU", Counter()).update(g.tflops.keys())
    return {model: max(c, key=lambda p: _point_rank(p, c[p])) for model, c in seen.items()}


def slow_gpus(nodes: Sequence[NodeFacts], fraction: float = SLOW_FRACTION) -> Tuple[List[NodeFinding], List[FactRow]]:
    """ED775 for each GPU more than ``fraction`` below the fleet's median of its model, and a row
    per model with each node's slowest GPU."""
    findings: List[NodeFinding] = []
    rows: List[FactRow] = []
    reported = [n for n in nodes if n.status == "reported"]
    for model, point in sorted(reference_points(reported).items()):
        measured = [
            (n, g, g.tflops[point])
            for n in reported
            for g in n.gpus
            if (g.name or "unknown GPU") == model and point in g.tflops
        ]
        if len(measured) < 2:
            continue
        median = statistics.median(v for _, _, v in measured)
        floor = median * (1 - fraction)
        per_node: Dict[str, float] = {}
        slow: Dict[str, List[Tuple[GpuFacts, float]]] = {}
        for n, g, v in measured:
            per_node[n.name] = min(per_node.get(n.name, v), v)
            if v < floor:
                slow.setdefault(n.name, []).append((g, v))
        rows.append(
            FactRow(
                f"measured.tflops:{model}",
                f"{model} TFLOP/s",
                "error",
                round(median, 1),
                sum(1 for v in per_node.values() if v >= floor),
                len(per_node),
                per_node,
                tuple(slow),
                reference="median",
                note=f"{point}, slowest GPU of each node",
            )
        )
        for name, gpus in slow.items():
            node = next(n for n in reported if n.name == name)
            worst = min(v for _, v in gpus)
            findings.append(
                NodeFinding(
                    name,
                    Finding(
                        "ED775",
                        "error",
                        f"{name}: GPU {', '.join(str(g.index) for g, _ in gpus)} at {show(worst)} TFLOP/s, "
                        f"{(1 - worst / median) * 100:.0f}% below the fleet's median {show(median)} for {model}",
                        evidence=tuple(
                            f"GPU {g.index} ({g.uuid or model}): {v:.1f} TFLOP/s at {point}" for g, v in gpus
                        )
                        + (
                            f"median of {len(measured)} {model} GPUs at {point}: {median:.1f} TFLOP/s; slow below "
                            f"{floor:.1f} ({fraction:.0%} under)",
                        ),
                        fix=fixes.slow(node, [(g, point) for g, _ in gpus]),
                        reference=REFERENCE,
                        area="fleet",
                        explanation=codes.meaning("ED775"),
                    ),
                )
            )
    return findings, rows


# --- nodes that did not report ----------------------------------------------------------------------


def absent(nodes: Sequence[NodeFacts]) -> List[NodeFinding]:
    out = []
    for node in nodes:
        if node.status == "missing":
            why = node.notes[0] if node.notes else "it did not join"
            out.append(
                NodeFinding(
                    node.name,
                    Finding(
                        "ED780",
                        "error",
                        f"{node.name}: did not report ({why})",
                        evidence=node.notes,
                        fix=fixes.missing(node, node.info.get("master")),
                        reference=REFERENCE,
                        area="fleet",
                        explanation=codes.meaning("ED780"),
                    ),
                )
            )
        for path, reason in node.unreadable:
            out.append(
                NodeFinding(
                    node.name,
                    Finding(
                        "ED781",
                        "error",
                        f"{node.name}: {reason}",
                        evidence=(path,),
                        fix=fixes.unreadable(path),
                        reference=REFERENCE,
                        area="fleet",
                        explanation=codes.meaning("ED781"),
                    ),
                )
            )
    return out


# --- everything ----------------------------------------------------------------------------------------


def _targets(nodes: Sequence[NodeFacts], attr: str) -> Dict[str, Any]:
    """GPU model -> the most common value of ``attr`` among its GPUs in the fleet (ties: the higher)."""
    seen: Dict[str, Counter] = {}
    for node in nodes:
        for g in node.gpus:
            value = getattr(g, attr)
            if value is not None:
                seen.setdefault(g.name or "", Counter())[value] += 1
    return {m: max(c, key=lambda v: (c[v], v)) for m, c in seen.items()}


def verdicts(nodes: Sequence[NodeFacts], findings: Sequence[NodeFinding], rows: Sequence[FactRow]) -> List[Verdict]:
    out = []
    for node in nodes:
        mine = [f.finding for f in findings if f.node == node.name]
        codes = tuple(dict.fromkeys(f.code for f in sort_findings(mine)))
        what = tuple(f"{r.label} {show(r.values[node.name])}" for r in rows if node.name in r.deviating)
        kind: VerdictKind
        if node.status in ("missing", "unreadable"):
            kind = node.status
        elif any(f.severity == "error" for f in mine):
            kind = "deviates"
        elif any(f.severity == "warning" for f in mine):
            kind = "warning"
        else:
            kind = "ok"
        out.append(Verdict(node.name, kind, codes, what))
    return out


def analyze(
    nodes: Sequence[NodeFacts],
    table: Any = None,
    slow_fraction: float = SLOW_FRACTION,
    extra: Sequence[NodeFinding] = (),
    suppress: Sequence[str] = (),
) -> Drift:
    """The fleet's rows, findings and verdicts for ``nodes`` (named uniquely already); ``extra``:
    findings made elsewhere about these nodes (the comms phase of a gather), counted in the verdicts.
    ``suppress``: ``--suppress`` codes, split off (:func:`envdoctor.checks.kept`) before any verdict."""
    reported = [n for n in nodes if n.status == "reported"]
    by_name = {n.name: n for n in nodes}
    rows: Dict[str, FactRow] = {}
    for spec in SPECS + (OWN_ERRORS,):
        row = compare(spec, reported)
        if row is not None:
            rows[spec.key] = row
    ctx = Context(table, rows, _targets(reported, "power_limit_w"), _targets(reported, "max_sm_clock_mhz"))
    found = fact_findings(rows, by_name, ctx) + own_errors(rows.get(OWN_ERRORS.key), reported)
    found_health, health_rows = health(reported)
    found_slow, slow_rows = slow_gpus(reported, slow_fraction)
    found += found_health + found_slow + absent(nodes) + list(extra)
    every = found
    found = checks.kept(every, suppress, finding=lambda f: f.finding)
    shown = {id(f) for f in found}
    hidden = tuple(f for f in every if id(f) not in shown)
    order = {n.name: i for i, n in enumerate(nodes)}
    found.sort(
        key=lambda f: (order.get(f.node, 0), {"error": 0, "warning": 1, "info": 2}[f.finding.severity], f.finding.code)
    )
    differing = [r for r in rows.values() if r.differs] + health_rows + slow_rows
    same = [r for r in rows.values() if not r.differs]
    notes = []
    if len(reported) < 2:
        notes.append(f"{len(reported)} node{'s' if len(reported) != 1 else ''} reported: nothing to compare")
    return Drift(
        tuple(nodes),
        tuple(differing),
        tuple(same),
        tuple(found),
        tuple(verdicts(nodes, found, differing)),
        tuple(notes),
        checks.suppressed_codes(suppress),
        hidden,
    )


__all__ = [
    "Drift",
    "FactRow",
    "NodeFinding",
    "SLOW_FRACTION",
    "SPECS",
    "Spec",
    "Verdict",
    "analyze",
    "compare",
    "majority",
    "names",
    "show",
]

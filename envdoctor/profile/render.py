"""``envdoctor profile``'s text and its ``envdoctor.profile/1`` document (renderers never compute)."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Dict, List, Optional, Sequence, Tuple, TypedDict

from envdoctor import __version__
from envdoctor.doctypes import Json
from envdoctor.documents import stamp
from envdoctor.facts.serde import to_data
from envdoctor.findings import Finding, summary
from envdoctor.lines import finding_lines, verdict
from envdoctor.profile.facts import Breakdown, StepTimes, SyncSite, Throughput
from envdoctor.profile.host import ProfileRun, output_tail
from envdoctor.style import Style

SCHEMA = "envdoctor.profile/1"


def _ms(seconds: Optional[float]) -> str:
    return "?" if seconds is None else f"{seconds * 1e3:.1f} ms"


def _pct(x: Optional[float]) -> str:
    return "?" if x is None else f"{100 * x:.0f}%"


def _row(name: str, seconds: float, step: float, indent: int = 2) -> str:
    share = seconds / step if step > 0 else 0.0
    return f"{' ' * indent}{name:<28} {_ms(seconds):>10}  {_pct(share):>4}"


def breakdown_lines(b: Breakdown) -> List[str]:
    out = [f"Where a step goes ({_ms(b.step_s)} per profiled step)"]
    if b.device == "cuda" and b.busy_s is not None and b.idle_s is not None:
        out.append(_row("GPU busy", b.busy_s, b.step_s))
        for s in b.compute:
            out.append(_row(s.name, s.seconds, b.step_s, 4))
        for s in b.copies:
            out.append(_row(f"copies {s.name}", s.seconds, b.step_s, 4))
        for s in b.comms:
            out.append(_row(f"comms {s.name}", s.seconds, b.step_s, 4))
        out.append(_row("GPU idle", b.idle_s, b.step_s))
    else:
        out.append("  CPU-only torch: no GPU timeline; the CPU's top-level operators stand for the work")
        for s in b.compute:
            out.append(_row(s.name, s.seconds, b.step_s, 4))
        for s in b.comms:
            out.append(_row(f"comms {s.name}", s.seconds, b.step_s, 4))
    if b.comm_s > 0:
        out.append(f"  communication {_ms(b.comm_s)} per step, {_pct(b.comm_overlap)} of it overlapped with compute")
    cpu = [
        f"waiting for batches {_ms(b.dataloader_s)} ({_pct(b.dataloader_s / b.step_s if b.step_s else None)})",
        f"optimizer step {_ms(b.optimizer_s)} ({_pct(b.optimizer_s / b.step_s if b.step_s else None)})",
    ]
    if b.kernels_per_step is not None:
        cpu.append(
            f"{b.kernels_per_step:.0f} kernels, {b.launches_per_step or 0:.0f} launches per step, "
            f"median kernel {b.median_kernel_us or 0:.1f} us"
        )
    out.append("  CPU side: " + "; ".join(cpu))
    return out


def throughput_lines(t: Throughput) -> List[str]:
    if t.tflops is None:
        return ["Throughput: torch's FLOP counter found no matmul, convolution or attention FLOPs in a step"]
    parts = [
        f"{t.tflops:.3g} TFLOP/s ({t.flops_per_step / 1e12:.3g} TFLOP per step by torch's FLOP counter)"
        if t.flops_per_step
        else f"{t.tflops:.3g} TFLOP/s"
    ]
    if t.mfu is not None:
        parts.append(f"MFU {_pct(t.mfu)} of the datasheet's {t.peak_tflops:g} TFLOP/s ({t.peak_dtype})")
    else:
        parts.append("no datasheet peak for this device in envdoctor's table")
    if t.mfu_bench is not None:
        parts.append(f"{_pct(t.mfu_bench)} of the {t.bench_tflops:.4g} TFLOP/s bench measured here")
    return ["Throughput: " + "; ".join(parts)]


def render_text(
    run: ProfileRun,
    throughput: Throughput,
    findings: Tuple[Finding, ...],
    command: Sequence[str],
    style: Style,
    rank: int = 0,
    world: int = 1,
) -> str:
    title = f"envdoctor profile: {' '.join(command)}" + (f" (rank {rank} of {world})" if world > 1 else "")
    lines = [style(title, "bold")]
    tgt = run.target
    device = f"{tgt.get('device')} ({tgt.get('capability')})" if tgt.get("cuda") else "CPU only"
    lines.append(f"  target  torch {tgt.get('torch', '?')}, {device}")
    fig = run.figures or {}
    if fig:
        opt = fig.get("optimizer") or {}
        by = (
            "optimizer step" + (f" ({opt.get('class')}, fused={opt.get('fused')})" if opt else "")
            if fig.get("mode") == "optimizer"
            else "outermost model forward (no optimizer)"
        )
        lines.append(f"  a step  one {by}")
    t = run.times
    if t is not None:
        base = (
            f"; without the profiler {_ms(t.baseline_s)} (overhead {_pct(t.overhead)})"
            if t.baseline_s is not None
            else ""
        )
        lines.append(
            f"  steps   {len(fig.get('profiled_s') or [])} profiled: {_ms(t.mean_s)} per step "
            f"(spread {_pct(t.spread)}){base}"
        )
    if run.trace:
        lines.append(f"  trace   {run.trace} (open in https://ui.perfetto.dev or HolisticTraceAnalysis)")
    if fig.get("peak_allocated") is not None:
        lines.append(
            f"  memory  peak allocated {fig['peak_allocated'] / 2**30:.2f} GiB, reserved "
            f"{fig.get('peak_reserved', 0) / 2**30:.2f} GiB"
        )
    lines.append("")
    if run.breakdown is not None:
        lines += breakdown_lines(run.breakdown)
        if run.syncs:
            lines.append(
                "  host syncs: "
                + "; ".join(
                    f"{s.where} {s.op} {s.per_step:g}/step ({_ms(s.seconds_per_step)} waiting)" for s in run.syncs[:3]
                )
            )
        lines.append("")
        lines += throughput_lines(throughput)
        lines.append("")
    if run.error:
        lines.append(style(f"No profile: {run.error}", "error"))
        tail = output_tail(run)
        if tail:
            lines.append("The script's last output:")
            lines += ["  " + ln for ln in tail]
        lines.append("")
    script = run.script
    if run.error is None and script.get("finished") is False and script.get("error"):
        lines.append(f"The script failed after the profiled steps: {script['error']}")
        lines.append("")
    lines.append("Findings")
    lines += finding_lines(findings, style) or ["  none"]
    lines.append("")
    lines.append(verdict(findings, style) if run.error is None else "Verdict: nothing was profiled (see above).")
    return "\n".join(lines) + "\n"


class _ProfileCounts(TypedDict):
    exit_code: int
    findings: Annotated[int, Json(minimum=0)]
    errors: Annotated[int, Json(minimum=0)]
    warnings: Annotated[int, Json(minimum=0)]


class ProfileSummary(_ProfileCounts, total=False):
    """findings.summary's counts (every document's) and how many findings in all; 'info' is
    not required: the documents written before it lack it."""

    info: Annotated[int, Json(minimum=0)]


class RankLine(TypedDict):
    """Rank 0's line for each rank under a launcher."""

    rank: Optional[int]
    steps: Optional[Dict[str, Any]]
    error: Optional[str]


class _ProfileKeys(TypedDict):
    schema: str
    envdoctor_version: str
    created_at: Optional[str]
    command: List[str]
    rank: Annotated[int, Json(minimum=0)]
    world_size: Annotated[int, Json(minimum=1)]
    target: Dict[str, Any]
    figures: Optional[Dict[str, Any]]
    steps: Optional[StepTimes]
    breakdown: Optional[Breakdown]
    throughput: Throughput
    syncs: List[SyncSite]
    script: Dict[str, Any]
    trace: Optional[str]
    error: Optional[str]
    findings: List[Finding]
    summary: ProfileSummary


class ProfileDocument(_ProfileKeys, total=False):
    """One rank's profiled steps: times are seconds per profiled step; shares are of the step (the
    GPU's window on a GPU). Written per rank as profile-rank<N>.json under a launcher."""

    ranks: List[RankLine]


def document(
    run: ProfileRun,
    throughput: Throughput,
    findings: Tuple[Finding, ...],
    command: Sequence[str],
    exit_code: int,
    rank: int = 0,
    world: int = 1,
) -> Dict[str, Any]:
    fig = dict(run.figures or {})
    fig.pop("trace", None)
    doc: ProfileDocument = {
        "schema": SCHEMA,
        "envdoctor_version": __version__,
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": list(command),
        "rank": rank,
        "world_size": world,
        "target": run.target,
        "figures": fig or None,
        "steps": to_data(run.times),
        "breakdown": to_data(run.breakdown),
        "throughput": to_data(throughput),
        "syncs": to_data(run.syncs),
        "script": run.script,
        "trace": run.trace,
        "error": run.error,
        "findings": [to_data(f) for f in findings],
        "summary": {**summary(findings), "findings": len(findings), "exit_code": exit_code},
    }
    return stamp(doc, exit_code)


def merged_lines(docs: Sequence[Dict[str, Any]], world: int) -> List[str]:
    """rank 0's view of every rank: step time, GPU busy, communication, the slowest rank named."""
    lines = [f"All ranks ({len(docs)} of {world} reported)"]
    rows: List[Tuple[float, int]] = []
    for d in sorted(docs, key=lambda d: int(d.get("rank") or 0)):
        steps, b = d.get("steps") or {}, d.get("breakdown") or {}
        mean = steps.get("mean_s")
        busy = b.get("busy_s")
        step = b.get("step_s") or 0
        lines.append(
            f"  rank {d.get('rank')}: "
            + (f"{mean * 1e3:.1f} ms per step" if isinstance(mean, float) else f"no profile ({d.get('error')})")
            + (f", GPU busy {100 * busy / step:.0f}%" if isinstance(busy, float) and step else "")
            + (f", comms {100 * b['comm_s'] / step:.0f}%" if step and b.get("comm_s") else "")
        )
        if isinstance(mean, float):
            rows.append((mean, int(d.get("rank") or 0)))
    if len(rows) >= 2:
        slow, fast = max(rows), min(rows)
        lines.append(f"  slowest rank {slow[1]}: {slow[0] / fast[0]:.2f}x the fastest (rank {fast[1]})")
    missing = world - len(docs)
    if missing > 0:
        lines.append(f"  {missing} rank(s) wrote no report in time")
    return lines

"""Verify check of the benchmark: ED712 a point slower than the tolerance (or failed), ED728 a slower
small, launch-sensitive point. Pure: a Pair in, outcomes out; the bench package loads only here."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.bench.facts import BenchPoint
from envdoctor.findings import Finding
from envdoctor.verify.pair import NotCompared, Outcome, Pair, Same


def _steady(point: BenchPoint, sms: int | None) -> bool:
    """A compute-bound point whose product fills the GPU: its speed is the GPU's, run after run."""
    from envdoctor.bench.analysis import TILE

    if point.bound == "launch":
        return False
    tiles = (-(-point.n // TILE)) ** 2
    return tiles >= (sms or 100)


def bench(pair: Pair) -> Iterator[Outcome]:
    """ED712 per point slower than the tolerance (or failed), with clocks/power context.

    A point that is launch-bound (then or now), or too small to give every SM an output tile,
    measures how fast the CPU issues products more than the GPU; such points vary by a third or
    more from run to run on the same machine (seen on the H200: every n <= 512 point 35% slower
    in a second run minutes later), so their slowdown is ED728, a change, not a regression.
    A failed point is a regression whatever its size.
    """
    before, after, tolerance_pct = pair.before_bench, pair.after_bench, pair.tolerance_pct
    if before is None:
        return
    if after is None:
        yield NotCompared("bench: the baseline has one; add --bench to compare")
        return
    from envdoctor.bench.analysis import compare_bench  # the bench package loads only when asked

    base_ok = [p for p in before.points if p.status == "ok" and p.tflops]
    if not base_ok:
        yield NotCompared("bench: the baseline has no measured point")
        return
    from envdoctor.bench.chart import format_rate  # 0.105, 1.23, 51.2: a CPU's rate keeps its digits

    names = {d.index: d.name for d in list(before.devices) + list(after.devices) if d.name}
    cpu = {d.index for d in list(before.devices) + list(after.devices) if d.kind == "cpu"}

    def label(device: int) -> str:
        """ "GPU 0 (NVIDIA H200)", or "CPU (x86_64)" for a run without a GPU."""
        name = f" ({names[device]})" if device in names else ""
        return f"CPU{name}" if device in cpu else f"GPU {device}{name}"

    def rate(tflops: float | None) -> str:
        return format_rate(tflops)

    fix: tuple[str, ...] = (
        "nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE   # throttle reasons, clocks, power limit",
        "envdoctor bench   # measure again on an idle GPU",
    )
    if cpu and not any(d.kind != "cpu" for d in after.devices):
        fix = ("envdoctor bench   # measure again with nothing else running (the CPU is shared)",)
    now_ok = [p for p in after.points if p.status == "ok" and p.tflops]
    if after.error is not None and not now_ok:
        yield Finding(
            "ED712",
            "error",
            "The benchmark no longer runs",
            evidence=(after.error.message, f"the baseline measured {len(base_ok)} point(s)"),
            fix=("envdoctor check   # why torch cannot use the GPU",),
            area="bench",
        )
        return
    points: dict[tuple[int, str, int], list[BenchPoint]] = {}
    for p in list(before.points) + list(after.points):
        points.setdefault((p.device, p.dtype, p.n), []).append(p)
    sms = {d.index: d.multiprocessors for d in list(before.devices) + list(after.devices) if d.multiprocessors}
    launch_bound: list[str] = []
    slow = 0
    for r in compare_bench(before, after, tolerance_pct):
        where = label(r.device)
        if r.current_tflops is None:
            title = f"Bench point fails now: {where} {r.dtype} n={r.n} (was {rate(r.baseline_tflops)} TFLOP/s)"
        elif not all(_steady(p, sms.get(r.device)) for p in points.get((r.device, r.dtype, r.n), ())):
            launch_bound.append(
                f"{where} {r.dtype} n={r.n}: {rate(r.baseline_tflops)} -> {rate(r.current_tflops)} "
                f"TFLOP/s ({r.change_pct:+.1f}%)"
            )
            continue
        else:
            title = (
                f"Bench slower: {where} {r.dtype} n={r.n}: {rate(r.baseline_tflops)} -> "
                f"{rate(r.current_tflops)} TFLOP/s ({r.change_pct:+.1f}%, tolerance {tolerance_pct:g}%)"
            )
        slow += 1
        yield Finding("ED712", "error", title, evidence=tuple(r.context), fix=fix, area="bench")
    if launch_bound:
        yield Finding(
            "ED728",
            "info",
            f"Bench slower at {len(launch_bound)} small, launch-sensitive point(s)",
            evidence=tuple(launch_bound),
            area="bench",
            explanation="Small products measure how fast the CPU issues them more than the GPU "
            "(launch-bound, or too few output tiles to fill every SM); they vary by a "
            "third from run to run.",
        )
    if after.error is not None:
        yield Finding(
            "ED712",
            "error",
            "The benchmark stopped early",
            evidence=(after.error.message, f"{len(now_ok)} of the baseline's {len(base_ok)} point(s) measured"),
            fix=fix,
            area="bench",
        )
    compared = {(p.device, p.dtype, p.n) for p in now_ok} & {(p.device, p.dtype, p.n) for p in base_ok}
    within = len(compared) - slow - len(launch_bound)
    if not compared:
        yield NotCompared("bench: no point measured both times (other sizes or dtypes)")
    elif within > 0:
        yield Same(f"bench: {within} of {len(compared)} point(s) within {tolerance_pct:g}% of the baseline")

"""Pure analysis of a benchmark: datasheet efficiency, what bounds each point, the Tensor Core
verdict, slow siblings, and regressions against a baseline; :func:`analyze` also runs the memory
and layers analyses (``bench/memory.py``, ``bench/layers.py``) and the findings.

Nothing here reads the machine or the table; the host attaches the datasheet rates to each
:class:`BenchDevice` first (``datasheet(model)``), then calls :func:`analyze`.

>>> dev = BenchDevice(0, name="NVIDIA H200", capability="9.0", launch_us=5.0,
...                   peaks={"fp32": 67.0, "fp16": 989.4}, bandwidth_gbs=4800.0)
>>> bound(BenchPoint(0, "fp16", 8192, tflops=640.0, ms=1.718), dev)[0]
'compute'
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.bench import layers, memory
from envdoctor.bench.attribution import attribute
from envdoctor.bench.facts import (
    BenchDevice,
    BenchPoint,
    BenchResult,
    LayerPoint,
    MemoryPoint,
    NvmlSample,
    Regression,
    Verdict,
)
from envdoctor.bench.rules import bench_findings

__all__ = ["analyze", "attribute", "bound", "compare_bench", "datasheet", "decode_reasons", "verdict"]

#: NVML clock-event ("throttle") reason bits, as nvml.h defines them, and envdoctor's names.
REASON_BITS: Tuple[Tuple[int, str], ...] = (
    (0x001, "gpu_idle"),
    (0x002, "applications_clocks"),
    (0x004, "sw_power_cap"),
    (0x008, "hw_slowdown"),
    (0x010, "sync_boost"),
    (0x020, "sw_thermal"),
    (0x040, "hw_thermal"),
    (0x080, "hw_power_brake"),
    (0x100, "display_clocks"),
)
#: Reasons that lower the clock under load (the others are idle or settings).
THROTTLING = ("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")
#: A point whose time per product is within this factor of one launch is bound by launches.
LAUNCH_FACTOR = 1.5
#: cuBLAS works on output tiles of about this size; fewer tiles than SMs leave the GPU part idle.
TILE = 128
#: fp16 above this multiple of the datasheet fp32 (non-Tensor-Core) peak needs Tensor Cores.
TC_PEAK_FACTOR = 1.5
#: Without a datasheet, a measured fp16/fp32 ratio at least this large confirms them.
TC_RATIO = 2.0
#: --device all: a GPU this much under its siblings' median is flagged.
SIBLING_TOLERANCE = 0.10

_PEAK_FIELDS = {"fp32": "fp32_tflops", "tf32": "tf32_tflops", "fp16": "fp16_tflops", "bf16": "bf16_tflops"}


def decode_reasons(mask: Optional[int]) -> Tuple[str, ...]:
    """``decode_reasons(0x5) == ("gpu_idle", "sw_power_cap")``; unknown bits as ``bit_0x200``."""
    if not mask:
        return ()
    names = [name for bit, name in REASON_BITS if mask & bit]
    known = sum(bit for bit, _ in REASON_BITS)
    rest = mask & ~known
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"bit_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return tuple(names)


def datasheet(model: Any) -> Dict[str, Any]:
    """The BenchDevice fields for a table ``GpuModel`` (or None): peaks, bandwidth, source."""
    if model is None:
        return {}
    peaks = {}
    for dtype, attr in _PEAK_FIELDS.items():
        value = getattr(model, attr, None)
        if isinstance(value, (int, float)) and value > 0:
            peaks[dtype] = float(value)
    bw = getattr(model, "bandwidth_gbs", None)
    doubtful = set(getattr(model, "unconfirmed_fields", ()) or ())
    used = set(_PEAK_FIELDS.values()) | {"bandwidth_gbs"}
    return {
        "model": getattr(model, "name", None),
        "peaks": peaks,
        "bandwidth_gbs": float(bw) if isinstance(bw, (int, float)) and bw > 0 else None,
        "peaks_unconfirmed": bool(getattr(model, "unconfirmed", False)) or bool(doubtful & used),
        "peaks_source": getattr(model, "source", None),
    }


# --- per point -------------------------------------------------------------------------------


def _dur(us: float) -> str:
    """``_dur(16410.6) == '16.41 ms'``, ``_dur(0.33) == '0.33 us'``."""
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.2f} us"


def bound(point: BenchPoint, device: BenchDevice) -> Tuple[Optional[str], Optional[str]]:
    """("launch" | "memory" | "compute" | None, why) for one measured point.

    Launch: the time per product is within 1.3x of one tiny product with the queue full. Memory
    vs compute: the roofline of the datasheet, 3 n^2 elements over the bandwidth against 2 n^3
    FLOPs over the dense peak; None when the table has no rates for this device.
    """
    if point.ms is None:
        return None, None
    us = point.ms * 1000.0
    if device.launch_us and us <= LAUNCH_FACTOR * device.launch_us:
        return "launch", (
            f"{_dur(us)} per product, launching one costs {_dur(device.launch_us)}:"
            " the CPU's launch rate sets this number"
        )
    peak = device.peaks.get(point.dtype)
    if not peak or not device.bandwidth_gbs:
        return None, "no datasheet rates for this device"
    t_flops = point.flops / (peak * 1e12) * 1e6
    t_bytes = point.bytes_moved / (device.bandwidth_gbs * 1e9) * 1e6
    if t_bytes > t_flops:
        kind, why = (
            "memory",
            (
                f"moving {point.bytes_moved / 1e6:.1f} MB takes {_dur(t_bytes)} at "
                f"{device.bandwidth_gbs:g} GB/s, more than the {_dur(t_flops)} of "
                f"arithmetic at {peak:g} TFLOP/s"
            ),
        )
    else:
        kind, why = (
            "compute",
            (f"{_dur(t_flops)} of arithmetic at {peak:g} TFLOP/s outweighs {_dur(t_bytes)} of memory traffic"),
        )
    tiles = (-(-point.n // TILE)) ** 2
    if device.kind == "cuda" and device.multiprocessors and tiles < device.multiprocessors:
        why += (
            f"; only about {tiles} output tiles of {TILE}x{TILE} for {device.multiprocessors} "
            "SMs: too small to fill the GPU"
        )
    return kind, why


def analyze_point(point: BenchPoint, device: BenchDevice, samples: Sequence[NvmlSample] = ()) -> BenchPoint:
    """Peak, efficiency, bound and the NVML context of one point."""
    point = attribute(point, samples, device.nvml_index)
    peak = device.peaks.get(point.dtype)
    eff = point.tflops / peak if (peak and point.tflops is not None) else None
    b, why = bound(point, device)
    return replace(point, peak_tflops=peak, efficiency=eff, bound=b, bound_why=why)


# --- per device ------------------------------------------------------------------------------


def _best(points: Sequence[BenchPoint], dtype: str) -> Optional[BenchPoint]:
    """The ok point of ``dtype`` at the largest size measured."""
    ok = [p for p in points if p.dtype == dtype and p.status == "ok" and p.tflops]
    return max(ok, key=lambda p: (p.n, p.tflops or 0.0)) if ok else None


def _cc(device: BenchDevice) -> Optional[Tuple[int, int]]:
    try:
        major, minor = (device.capability or "").split(".")
        return int(major), int(minor)
    except ValueError:
        return None


def _throttle_story(points: Sequence[BenchPoint], device: BenchDevice) -> List[str]:
    why: List[str] = []
    reasons: List[str] = []
    for p in points:
        reasons.extend(r for r in p.reasons if r in THROTTLING and r not in reasons)
    if reasons:
        why.append("the GPU was throttled during the fp16 points: " + ", ".join(reasons))
    clocks = [p.sm_clock_mhz for p in points if p.sm_clock_mhz]
    if clocks and device.max_sm_clock_mhz and max(clocks) < 0.6 * device.max_sm_clock_mhz:
        why.append(f"the SM clock stayed at {max(clocks)} MHz of {device.max_sm_clock_mhz} MHz")
    return why


def verdict(
    device: BenchDevice,
    points: Sequence[BenchPoint],
    *,
    torch_version: Optional[str] = None,
    nvml_gpus: Optional[int] = None,
    cuda_error: Optional[str] = None,
) -> Verdict:
    """Tensor Cores: confirmed, not delivering, absent, or no verdict, with the reasons.

    Confirmed when fp16 exceeds 1.5x the datasheet fp32 (non-Tensor-Core) peak, a rate
    impossible without them; for a GPU not in the table, when fp16 runs at least 2x fp32.
    """
    i = device.index
    if device.kind == "cpu":
        if nvml_gpus:
            cause = (
                f"torch {torch_version} is a CPU-only build"
                if torch_version and "+cpu" in torch_version
                else f"torch {torch_version} cannot use the GPU" + (f" ({cuda_error})" if cuda_error else "")
            )
            return Verdict(
                i,
                "not_delivering",
                f"Tensor Cores not delivering: {cause}; NVML sees {nvml_gpus} GPU(s), the benchmark ran on the CPU",
                (cause, "see `envdoctor recommend` for a CUDA build of torch"),
            )
        return Verdict(i, "none", "No GPU: fp32 measured on the CPU; no Tensor Core verdict")
    cc = _cc(device)
    if cc is not None and cc < (7, 0):
        return Verdict(
            i,
            "absent",
            f"No Tensor Cores on this architecture (compute capability "
            f"{device.capability}): fp16 and fp32 share the same units",
        )
    fp16 = _best(points, "fp16")
    fp32 = _best(points, "fp32")
    if fp16 is None:
        failed = [p for p in points if p.dtype == "fp16" and p.status != "ok"]
        if failed:
            return Verdict(
                i,
                "not_delivering",
                f"Tensor Cores not delivering: fp16 n={failed[0].n} failed ({failed[0].error})",
                (failed[0].error or "failed",),
            )
        return Verdict(i, "none", "No Tensor Core verdict: fp16 was not measured (add --dtype fp16)")
    ratio = None
    if fp32 is not None and fp32.tflops:
        same = [p for p in points if p.dtype == "fp32" and p.n == fp16.n and p.status == "ok" and p.tflops]
        base = same[0] if same else fp32
        ratio = (fp16.tflops or 0.0) / (base.tflops or 1.0)
    peak32 = device.peaks.get("fp32")
    if peak32:
        threshold = TC_PEAK_FACTOR * peak32
        confirmed = (fp16.tflops or 0.0) > threshold
        how = (
            f"fp16 runs {ratio:.1f}x fp32"
            if ratio is not None
            else f"fp16 runs {(fp16.tflops or 0.0) / peak32:.1f}x the fp32 datasheet peak"
        )
        basis = (
            f"{fp16.tflops:.1f} TFLOP/s at n={fp16.n} exceeds 1.5x the {peak32:g} TFLOP/s "
            f"fp32 datasheet peak, impossible without them"
        )
    else:
        if ratio is None:
            return Verdict(
                i,
                "none",
                "No Tensor Core verdict: this GPU is not in envdoctor's table "
                "and fp32 was not measured to compare with (add --dtype fp32)",
            )
        threshold = None
        confirmed = ratio >= TC_RATIO
        how = f"fp16 runs {ratio:.1f}x fp32"
        basis = "judged by the measured fp16/fp32 ratio (this GPU is not in envdoctor's table)"
    if confirmed:
        return Verdict(i, "confirmed", f"Tensor Cores confirmed: {how}", (basis,), ratio)
    fp16_points = [p for p in points if p.dtype == "fp16" and p.status == "ok"]
    if fp16_points and all(p.bound in ("launch", "memory") for p in fp16_points):
        return Verdict(
            i,
            "none",
            f"No Tensor Core verdict: the largest fp16 size, n={fp16.n}, is "
            f"{fp16.bound}-bound (add --size 4096 or larger)",
            (),
            ratio,
        )
    why = _throttle_story(fp16_points, device)
    if not why:
        expected = f"more than {threshold:.0f} TFLOP/s" if threshold is not None else f"at least {TC_RATIO:g}x fp32"
        why = [
            f"fp16 reached {fp16.tflops:.1f} TFLOP/s at n={fp16.n}, expected {expected}; no "
            "throttling was seen, so the fp16 kernels may not use the Tensor Cores (a torch or "
            "cuBLAS that predates this GPU? see `envdoctor check`)"
        ]
    return Verdict(i, "not_delivering", f"Tensor Cores not delivering: {how}", tuple(why), ratio)


def explain(device: BenchDevice, points: Sequence[BenchPoint]) -> List[str]:
    """Why the sustained rate sits below the burst and the datasheet, from the NVML samples."""
    notes = []
    for dtype in ("fp16", "bf16", "tf32", "fp32"):
        p = _best(points, dtype)
        if p is None or p.tflops is None or p.bound != "compute":
            continue
        parts = []
        if p.burst_tflops and p.burst_tflops > 1.05 * p.tflops:
            parts.append(f"the first repeat ran at {p.burst_tflops:.0f} TFLOP/s, the settled median at {p.tflops:.0f}")
        if p.sm_clock_mhz and device.max_sm_clock_mhz:
            parts.append(f"SM clock {p.sm_clock_mhz} of {device.max_sm_clock_mhz} MHz")
        if p.power_w and device.power_limit_w:
            parts.append(f"power {p.power_w:.0f} W of a {device.power_limit_w:.0f} W limit")
        throttled = [r for r in p.reasons if r in THROTTLING]
        if throttled:
            parts.append("throttled: " + ", ".join(throttled))
        if parts:
            notes.append(f"{dtype} n={p.n}: " + "; ".join(parts))
        if dtype == "fp16" and "sw_power_cap" in throttled:
            notes.append(
                "the power cap, not the chip, sets the sustained rate: short bursts run faster than long training steps"
            )
    return notes


def siblings(
    devices: Sequence[BenchDevice], points: Sequence[BenchPoint], tolerance: float = SIBLING_TOLERANCE
) -> Tuple[str, ...]:
    """GPUs more than ``tolerance`` slower than the median of their siblings (the other GPUs) at
    the largest common points. With two GPUs the sibling is the other one: a median that counted
    the slow GPU itself would hide a 15% gap."""
    gpus = [d for d in devices if d.kind == "cuda" and not d.error]
    if len(gpus) < 2:
        return ()
    flagged = []
    for dtype in ("fp16", "bf16", "tf32", "fp32"):
        sizes = [p.n for p in points if p.dtype == dtype and p.status == "ok" and p.tflops]
        if not sizes:
            continue
        n = max(sizes)
        by_dev = {p.device: p.tflops for p in points if p.dtype == dtype and p.n == n and p.status == "ok" and p.tflops}
        if len(by_dev) < 2:
            continue
        for d in gpus:
            value = by_dev.get(d.index)
            others = [v for i, v in by_dev.items() if i != d.index]
            if value is None or not others:
                continue
            med = statistics.median(others)
            if value < (1.0 - tolerance) * med:
                flagged.append(
                    f"GPU {d.index} ({d.name}): {dtype} n={n} runs {value:.1f} TFLOP/s, "
                    f"{100 * (1 - value / med):.0f}% below its siblings' median of {med:.1f}"
                )
    return tuple(flagged)


def analyze(result: BenchResult) -> BenchResult:
    """Fill every point's analysis, the verdicts of the suites that ran, the slow siblings, the
    explanations and the findings."""
    by_index = {d.index: d for d in result.devices}
    points = tuple(
        analyze_point(p, by_index[p.device], result.samples) if p.device in by_index else p for p in result.points
    )
    verdicts = []
    notes = list(result.notes)
    memory_points: List[MemoryPoint] = []
    layer_points: List[LayerPoint] = []
    for d in result.devices:
        mine = [p for p in points if p.device == d.index]
        if d.error:
            continue
        prefix = f"GPU {d.index}: " if len(result.devices) > 1 else ""
        if "matmul" in result.suites:
            verdicts.append(
                verdict(
                    d,
                    mine,
                    torch_version=result.torch_version,
                    nvml_gpus=result.nvml_gpus,
                    cuda_error=result.cuda_error,
                )
            )
            notes.extend(prefix + n for n in explain(d, mine))
        for p in mine:
            if p.dtype == "fp32" and (
                p.tf32 or (p.status == "wrong" and p.rel_error is not None and p.rel_error < 5e-3)
            ):
                err = "?" if p.rel_error is None else f"{p.rel_error:.1g}"
                notes.append(
                    f"{prefix}fp32 n={p.n}: looks like TF32 arithmetic (error {err}, TF32 read "
                    f"back as {p.tf32}): is TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 set?"
                )
                break
        if d.peaks_unconfirmed and d.peaks:
            notes.append(f"{prefix}the datasheet rates for {d.model} are unconfirmed in envdoctor's table")
        mem = [memory.analyze_memory_point(p, d, result.samples) for p in result.memory_points if p.device == d.index]
        memory_points.extend(mem)
        if "memory" in result.suites:
            verdicts.append(memory.memory_verdict(d, mem))
            l2 = memory.l2_note(d, mem)
            if l2:
                notes.append(prefix + l2)
        bandwidth, source = layers.bandwidth_for_layers(d, memory.measured_bandwidth(d, mem))
        lay = [
            layers.analyze_layer_point(p, d, bandwidth, source, result.samples)
            for p in result.layer_points
            if p.device == d.index
        ]
        layer_points.extend(lay)
        if "layers" in result.suites:
            checks = [c for c in result.flop_checks if c.device == d.index]
            reference = [p for p in result.reference_points if p.device == d.index and p.tflops]
            verdicts.append(layers.layers_verdict(d, lay, checks, reference, "matmul" in result.suites))
    known = set(by_index)
    memory_points.extend(p for p in result.memory_points if p.device not in known)
    layer_points.extend(p for p in result.layer_points if p.device not in known)
    analysed = replace(
        result,
        points=points,
        verdicts=tuple(verdicts),
        outliers=siblings(result.devices, points),
        notes=tuple(notes),
        memory_points=tuple(memory_points),
        layer_points=tuple(layer_points),
    )
    return replace(analysed, findings=bench_findings(analysed))


# --- regressions -----------------------------------------------------------------------------


def _context(before: BenchPoint, after: Optional[BenchPoint], device: Optional[BenchDevice]) -> Tuple[str, ...]:
    ctx = []
    if after is None:
        return ("the point was not measured this time",)
    if after.sm_clock_mhz or before.sm_clock_mhz:
        top = f" (max {device.max_sm_clock_mhz})" if device and device.max_sm_clock_mhz else ""
        ctx.append(f"SM clock {before.sm_clock_mhz or '?'} -> {after.sm_clock_mhz or '?'} MHz{top}")
    if after.power_w or before.power_w:
        limit = f" (limit {device.power_limit_w:.0f} W)" if device and device.power_limit_w else ""
        ctx.append(f"power {before.power_w or '?'} -> {after.power_w or '?'} W{limit}")
    if after.temperature_c or before.temperature_c:
        ctx.append(f"temperature {before.temperature_c or '?'} -> {after.temperature_c or '?'} C")
    new = [r for r in after.reasons if r in THROTTLING and r not in before.reasons]
    if new:
        ctx.append("throttled now, not before: " + ", ".join(new))
    if after.bound == "launch" or before.bound == "launch":
        ctx.append("launch-bound: the CPU's launch rate, not the GPU, sets this number")
    return tuple(ctx)


def compare_bench(baseline: BenchResult, current: BenchResult, tolerance_pct: float) -> Tuple[Regression, ...]:
    """Points of ``current`` slower than ``baseline`` by more than ``tolerance_pct`` percent, or
    failed where they passed, matched by (device, dtype, n); each with clocks/power context.

    Points measured in only one of the two runs are not compared.
    """
    now = {(p.device, p.dtype, p.n): p for p in current.points}
    devices = {d.index: d for d in current.devices}
    out = []
    for b in baseline.points:
        if b.status != "ok" or not b.tflops:
            continue
        key = (b.device, b.dtype, b.n)
        c = now.get(key)
        if c is None:
            continue
        if c.status != "ok" or not c.tflops:
            out.append(
                Regression(
                    b.device,
                    b.dtype,
                    b.n,
                    b.tflops,
                    None,
                    None,
                    (f"{c.status}: {c.error}",) + _context(b, c, devices.get(b.device)),
                )
            )
            continue
        change = 100.0 * (c.tflops - b.tflops) / b.tflops
        if change < -abs(tolerance_pct):
            out.append(
                Regression(
                    b.device, b.dtype, b.n, b.tflops, c.tflops, round(change, 1), _context(b, c, devices.get(b.device))
                )
            )
    return tuple(out)

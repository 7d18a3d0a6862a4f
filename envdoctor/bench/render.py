"""Text for people from a BenchResult (the wording is not a stable interface; ``--json`` is).

>>> print(render_bench_text(result))
envdoctor bench in /opt/torch/.venv/bin/python3 (python3 on PATH)

GPU 0, NVIDIA H200 (compute capability 9.0), torch 2.11.0+cu130
...
Tensor Cores confirmed: fp16 runs 12.4x fp32
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from envdoctor.bench.chart import chart, format_rate, log_bars
from envdoctor.bench.facts import SUITES, BenchDevice, BenchPoint, BenchResult, LayerPoint, MemoryPoint, Verdict
from envdoctor.bench.memory import elements_label
from envdoctor.style import paint
from envdoctor.units import format_bytes

_STATE_KIND = {"confirmed": "ok", "not_delivering": "error", "absent": "warning", "none": "warning", "below": "warning"}


def _num(x: Optional[float], fmt: str = ".1f") -> str:
    return "-" if x is None else format(x, fmt)


def _check(p: BenchPoint) -> str:
    if p.status == "ok":
        return f"ok {p.rel_error:.0e}" if p.rel_error is not None else "ok"
    return "WRONG" if p.status == "wrong" else "FAILED"


def _device_title(d: BenchDevice, result: BenchResult) -> str:
    torch = f"torch {result.torch_version}" if result.torch_version else "torch"
    if d.kind == "cpu":
        return f"CPU ({d.name}, {d.multiprocessors} threads), {torch}"
    cc = f" (compute capability {d.capability})" if d.capability else ""
    return f"GPU {d.index}, {d.name}{cc}, {torch}"


def _table(points: List[BenchPoint], color: bool) -> List[str]:
    head: Tuple[str, ...] = ("dtype", "n", "TFLOP/s", "burst", "datasheet", "eff", "bound", "SM MHz", "W", "C", "check")
    rows: List[Tuple[str, ...]] = []
    for p in points:
        rows.append(
            (
                p.dtype,
                str(p.n),
                format_rate(p.tflops),
                format_rate(p.burst_tflops),
                _num(p.peak_tflops, "g"),
                "-" if p.efficiency is None else f"{100 * p.efficiency:.0f}%",
                p.bound or "-",
                _num(p.sm_clock_mhz, "d") if p.sm_clock_mhz else "-",
                _num(p.power_w, ".0f"),
                _num(p.temperature_c, "d") if p.temperature_c is not None else "-",
                _check(p),
            )
        )
    # columns with nothing to say on this device (no datasheet, no NVML) are left out
    keep = [i for i in range(len(head)) if i < 4 or i == 10 or any(r[i] != "-" for r in rows)]
    head = tuple(head[i] for i in keep)
    rows = [tuple(r[i] for i in keep) for r in rows]
    left = {keep.index(i) for i in (0, 6, 10) if i in keep}
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]

    def line(r: tuple) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    out = [line(head)]
    for p, r in zip(points, rows):
        text = line(r)
        if p.status != "ok":
            text = paint(text, "error", color)
        out.append(text)
    return out


def _columns(head: Sequence[str], rows: Sequence[Tuple[str, ...]], left: Sequence[int]) -> List[str]:
    """Aligned lines: the columns in ``left`` flush left, the others right; empty columns dropped."""
    keep = [i for i in range(len(head)) if any(r[i] not in ("-", "") for r in rows) or i in left]
    top = tuple(head[i] for i in keep)
    body = [tuple(r[i] for i in keep) for r in rows]
    lefts = {keep.index(i) for i in left if i in keep}
    widths = [max(len(r[i]) for r in body + [top]) for i in range(len(top))]

    def line(r: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i in lefts else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return [line(top)] + [line(r) for r in body]


def _gbs(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.3f}"


def _memory_section(
    d: BenchDevice, points: List[MemoryPoint], color: bool, chart_width: int, ascii_only: bool
) -> List[str]:
    """The memory table (one row per size, mul and copy side by side) and the GB/s chart."""
    if d.kind == "cpu":
        title = "CPU memory bandwidth (fp32 vectors; GB/s = bytes read + written / time)"
    else:
        l2 = f"; L2: both buffers fit in the {format_bytes(d.l2_bytes)} L2" if d.l2_bytes else ""
        title = f"memory bandwidth (fp32 vectors; GB/s = bytes read + written / time{l2})"
    out = [title]
    head = ("n", "buffer", "where", "mul GB/s", "copy GB/s", "datasheet", "eff", "SM MHz", "mem MHz", "W")
    rows: List[Tuple[str, ...]] = []
    for n in sorted({p.n for p in points}):
        mine = {p.op: p for p in points if p.n == n}
        first = mine.get("copy") or mine.get("mul") or next(iter(mine.values()))
        best = max((p for p in mine.values() if p.gbs), key=lambda p: p.gbs or 0.0, default=None)
        where = "-" if first.l2_resident is None else ("L2" if first.l2_resident else "HBM")

        cells = {
            op: "-" if p is None else _gbs(p.gbs) if p.status == "ok" else p.status.upper()
            for op, p in ((op, mine.get(op)) for op in ("mul", "copy"))
        }
        rows.append(
            (
                elements_label(n),
                format_bytes(first.bytes),
                where,
                cells["mul"],
                cells["copy"],
                _num(first.datasheet_gbs, "g"),
                "-" if best is None or best.efficiency is None else f"{100 * best.efficiency:.0f}%",
                str(best.sm_clock_mhz) if best and best.sm_clock_mhz else "-",
                str(best.mem_clock_mhz) if best and best.mem_clock_mhz else "-",
                _num(best.power_w, ".0f") if best else "-",
            )
        )
    out.extend(_columns(head, rows, (0, 1, 2)))
    bars = [
        (elements_label(p.n), p.op, float(p.gbs or 0.0))
        for p in sorted(points, key=lambda p: (p.n, p.op != "mul"))
        if p.status == "ok" and p.gbs
    ]
    if bars:
        out.append("")
        out.extend(log_bars(bars, "GB/s, log scale", width=chart_width, color=color, ascii_only=ascii_only, fmt=_gbs))
    for what, why in d.memory_skipped.items():
        out.append(f"skipped memory {what}: {why}")
    for p in points:
        if p.status != "ok":
            out.append(
                paint(
                    f"memory {p.op} n={p.n} {p.status.upper()}: {p.error}",
                    "33" if p.status == "skipped" else "31",
                    color,
                )
            )
    return out


_LAYER_NAMES = {"bert": "bert", "gpt2": "gpt2", "t5_encoder": "t5-enc", "t5_decoder": "t5-dec", "llama": "llama"}


def _layers_section(d: BenchDevice, points: List[LayerPoint], color: bool) -> List[str]:
    """One row per (layer, dtype, attention, b, s), fwd and fwd+bwd side by side."""
    rates = ", ".join(f"{k} {format_rate(v)}" for k, v in sorted(d.matmul_rates.items()))
    tf32 = "" if d.kind != "cuda" or d.tf32_default is None else f"; TF32 matmul {'on' if d.tf32_default else 'off'}"
    out = [
        "transformer layers (TFLOP/s from the analytic FLOPs; %mm: of the matmul rate measured in this run"
        + (f", {rates} TFLOP/s" if rates else "")
        + tf32
        + ")"
    ]
    head = (
        "layer",
        "dtype",
        "attention",
        "kernel",
        "b",
        "s",
        "fwd",
        "%mm",
        "fwd+bwd",
        "%mm",
        "%sheet",
        "bound",
        "MHz",
        "W",
    )
    rows: List[Tuple[str, ...]] = []
    keys: Dict[Tuple[str, str, str, int, int], Dict[str, LayerPoint]] = {}
    for p in points:
        keys.setdefault((p.layer, p.dtype, p.attention, p.batch, p.seq), {})[p.mode] = p
    broken: List[LayerPoint] = []
    for (layer, dtype, attn, b, s), modes in keys.items():
        fwd, both = modes.get("fwd"), modes.get("fwd+bwd")
        main = both or fwd
        assert main is not None

        def rate(p: Optional[LayerPoint]) -> Tuple[str, str]:
            if p is None:
                return "-", "-"
            if p.status != "ok":
                return p.status.upper(), "-"
            return format_rate(p.tflops), "-" if p.of_matmul is None else f"{100 * p.of_matmul:.0f}%"

        kernel = "/".join(dict.fromkeys(k for k in (fwd.kernel if fwd else None, both.kernel if both else None) if k))
        rows.append(
            (
                _LAYER_NAMES.get(layer, layer),
                dtype,
                attn,
                kernel or "-",
                str(b),
                str(s),
                *rate(fwd),
                *rate(both),
                "-" if main.efficiency is None else f"{100 * main.efficiency:.0f}%",
                main.bound or "-",
                str(main.sm_clock_mhz) if main.sm_clock_mhz else "-",
                _num(main.power_w, ".0f"),
            )
        )
        broken.extend(p for p in modes.values() if p.status != "ok")
    out.extend(_columns(head, rows, (0, 1, 2, 3, 11)))
    if any(p.of_matmul is not None and p.of_matmul > 1.0 for p in points):
        from envdoctor.bench.layers import ABOVE_MATMUL

        out.append(f"%mm {ABOVE_MATMUL}")
    for what, why in d.layers_skipped.items():
        out.append(f"skipped layers {what}: {why}")
    for p in broken:
        out.append(
            paint(
                f"{p.layer} {p.dtype} {p.attention} {p.mode} b={p.batch} s={p.seq} {p.status.upper()}: {p.error}",
                "33" if p.status == "skipped" else "31",
                color,
            )
        )
    return out


def _verdict_lines(v: Optional[Verdict], color: bool) -> List[str]:
    if v is None:
        return []
    return ["", paint(v.line, _STATE_KIND.get(v.state, ""), color)] + [f"  {w}" for w in v.why]


def render_bench_text(result: BenchResult, color: bool = False, chart_width: int = 40, ascii_only: bool = False) -> str:
    """The report: per device a table, the chart and the verdict; then notes, timing, sampling."""
    out: List[str] = []
    target = f"{result.python} ({result.chosen_by})" if result.chosen_by else (result.python or "?")
    out.append(f"envdoctor bench in {target}")
    if result.error is not None and not (result.points or result.memory_points or result.layer_points):
        out.append(paint(f"error: {result.error.message}", "error", color))
        return "\n".join(out) + "\n"
    verdicts = {(v.device, v.suite): v for v in result.verdicts}
    for d in result.devices:
        out.append("")
        out.append(paint(_device_title(d, result), "bold", color))
        if d.error:
            out.append(paint(f"  could not be measured: {d.error}", "error", color))
            continue
        mine = [p for p in result.points if p.device == d.index]
        if d.model and d.peaks:
            src = " (unconfirmed)" if d.peaks_unconfirmed else ""
            out.append(
                f"datasheet: {d.model}{src}, dense TFLOP/s "
                + ", ".join(f"{k} {v:g}" for k, v in d.peaks.items())
                + (f", {d.bandwidth_gbs:g} GB/s" if d.bandwidth_gbs else "")
            )
        elif d.kind == "cuda":
            out.append("datasheet: not in envdoctor's table (no efficiency or memory/compute bound)")
        if d.launch_us is not None:
            out.append(f"one launch: {d.launch_us:.1f} us (a 16x16 product with the queue full)")
        if mine:
            out.append("")
            out.extend(_table(mine, color))
            out.append("")
            out.extend(chart(mine, width=chart_width, color=color, ascii_only=ascii_only))
        for what, why in d.skipped.items():
            out.append(f"skipped {what}: {why}")
        for p in mine:
            if p.status != "ok":
                out.append(paint(f"{p.dtype} n={p.n} {p.status.upper()}: {p.error}", "error", color))
        out.extend(_verdict_lines(verdicts.get((d.index, "matmul")), color))
        memory = [p for p in result.memory_points if p.device == d.index]
        if memory or d.memory_skipped:
            out.append("")
            out.extend(_memory_section(d, memory, color, chart_width, ascii_only))
        out.extend(_verdict_lines(verdicts.get((d.index, "memory")), color))
        layers = [p for p in result.layer_points if p.device == d.index]
        if layers or d.layers_skipped:
            out.append("")
            out.extend(_layers_section(d, layers, color))
        out.extend(_verdict_lines(verdicts.get((d.index, "layers")), color))
    for o in result.outliers:
        out.append(paint(f"slow GPU: {o}", "error", color))
    if result.notes:
        out.append("")
        out.extend(f"note: {n}" for n in result.notes)
    bounds = [p for p in result.points if p.bound in ("launch", "memory")]
    if bounds:
        out.append(
            "note: bound = what limits the point: launch (the CPU issuing products), memory "
            "(bytes over bandwidth), compute (FLOPs over the peak); eff = TFLOP/s / datasheet"
        )
    if result.layer_points:
        out.append(
            "note: layers: bound = what sets a call's time: launch (the CPU takes 80% of it or more to "
            "issue the call, measured where the child could, else kernels x one launch: such a point "
            "times the CPU), else the larger of compute (the products at the matmul rate) and memory "
            "(the other operations' bytes at the measured bandwidth), overhead (the estimates explain "
            "under half of it); fwd runs under no_grad, fwd+bwd with the gradients set to None first; "
            "docs/bench.md has the FLOP formulas"
        )
    for f in result.findings:
        out.append(paint(f"{f.code} {f.severity}: {f.title}", "error" if f.severity == "error" else "warning", color))
        out.extend(f"  {e}" for e in f.evidence)
    per_suite = (
        " (" + ", ".join(f"{k} {result.suite_s[k]:.1f} s" for k in SUITES if k in result.suite_s) + ")"
        if len(result.suite_s) > 1
        else ""
    )
    timing = [
        f"{name} {v:.1f} s{per_suite if name == 'measurement' else ''}"
        for name, v in (
            ("torch import", result.import_s),
            ("CUDA start", result.init_s),
            ("measurement", result.measure_s),
            ("child total", result.wall_s),
        )
        if v is not None
    ]
    if timing:
        out.append("time: " + ", ".join(timing))
    if result.sampling:
        out.append(result.sampling)
    if result.error is not None:
        out.append(paint(f"error: {result.error.message}", "error", color))
    return "\n".join(out) + "\n"

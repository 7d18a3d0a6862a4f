"""Text for people from a BenchResult (the wording is not a stable interface; ``--json`` is).

>>> print(render_bench_text(result))
envdoctor bench in /opt/torch/.venv/bin/python3 (python3 on PATH)

GPU 0, NVIDIA H200 (compute capability 9.0), torch 2.11.0+cu130
...
Tensor Cores confirmed: fp16 runs 12.4x fp32
"""

from __future__ import annotations

from typing import List, Optional

from envdoctor.bench.chart import chart, format_rate
from envdoctor.facts.bench import BenchDevice, BenchPoint, BenchResult
from envdoctor.render.style import paint

_STATE_KIND = {"confirmed": "ok", "not_delivering": "error", "absent": "warning", "none": "warning"}


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
    head = ("dtype", "n", "TFLOP/s", "burst", "datasheet", "eff", "bound", "SM MHz", "W", "C", "check")
    rows = []
    for p in points:
        rows.append((
            p.dtype, str(p.n), format_rate(p.tflops), format_rate(p.burst_tflops), _num(p.peak_tflops, "g"),
            "-" if p.efficiency is None else f"{100 * p.efficiency:.0f}%",
            p.bound or "-", _num(p.sm_clock_mhz, "d") if p.sm_clock_mhz else "-",
            _num(p.power_w, ".0f"), _num(p.temperature_c, "d") if p.temperature_c is not None else "-",
            _check(p),
        ))
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


def render_bench_text(result: BenchResult, color: bool = False, chart_width: int = 40,
                      ascii_only: bool = False) -> str:
    """The report: per device a table, the chart and the verdict; then notes, timing, sampling."""
    out: List[str] = []
    target = f"{result.python} ({result.chosen_by})" if result.chosen_by else (result.python or "?")
    out.append(f"envdoctor bench in {target}")
    if result.error is not None and not result.points:
        out.append(paint(f"error: {result.error.message}", "error", color))
        return "\n".join(out) + "\n"
    verdicts = {v.device: v for v in result.verdicts}
    for d in result.devices:
        out.append("")
        out.append(paint(_device_title(d, result), "bold", color))
        if d.error:
            out.append(paint(f"  could not be measured: {d.error}", "error", color))
            continue
        mine = [p for p in result.points if p.device == d.index]
        if d.model and d.peaks:
            src = " (unconfirmed)" if d.peaks_unconfirmed else ""
            out.append(f"datasheet: {d.model}{src}, dense TFLOP/s "
                       + ", ".join(f"{k} {v:g}" for k, v in d.peaks.items())
                       + (f", {d.bandwidth_gbs:g} GB/s" if d.bandwidth_gbs else ""))
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
        v = verdicts.get(d.index)
        if v is not None:
            out.append("")
            out.append(paint(v.line, _STATE_KIND.get(v.state, ""), color))
            out.extend(f"  {w}" for w in v.why)
    for o in result.outliers:
        out.append(paint(f"slow GPU: {o}", "error", color))
    if result.notes:
        out.append("")
        out.extend(f"note: {n}" for n in result.notes)
    bounds = [p for p in result.points if p.bound in ("launch", "memory")]
    if bounds:
        out.append("note: bound = what limits the point: launch (the CPU issuing products), memory "
                   "(bytes over bandwidth), compute (FLOPs over the peak); eff = TFLOP/s / datasheet")
    timing = [f"{name} {v:.1f} s" for name, v in (("torch import", result.import_s),
                                                  ("CUDA start", result.init_s),
                                                  ("measurement", result.measure_s),
                                                  ("child total", result.wall_s)) if v is not None]
    if timing:
        out.append("time: " + ", ".join(timing))
    if result.sampling:
        out.append(result.sampling)
    if result.error is not None:
        out.append(paint(f"error: {result.error.message}", "error", color))
    return "\n".join(out) + "\n"

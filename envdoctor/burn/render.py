"""Text for people from a BurnResult (the wording is not a stable interface; ``--json`` is).

>>> print(render_burn_text(result))                                 # doctest: +SKIP
envdoctor burn in /opt/torch/.venv/bin/python3 (python3 on PATH), torch 2.11.0+cu130
60 s of load per GPU (bf16, fp32, fp64 n=8192), then a memory test of at most 6 s
<BLANKLINE>
GPU 0, NVIDIA H200: OK
  bf16   659.4 TFLOP/s sustained (expected 660), burst 781.2; 11,873 products, all bit-equal to the first
...
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from envdoctor.burn.chart import chart
from envdoctor.burn.facts import BurnGpu, BurnResult, Counters, Phase
from envdoctor.findings import Finding

_SEVERITY_COLOR = {"error": "31", "warning": "33", "info": "36"}
_VERDICT_COLOR = {"OK": "32", "FAULTY": "31", "NONE": "33"}


def _c(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def _n(x: Optional[float], fmt: str = ".0f", unit: str = "") -> str:
    return "-" if x is None else format(x, fmt) + unit


def _rate(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x:.1f}" if x >= 10 else f"{x:.3g}"


def _who(g: BurnGpu) -> str:
    return "CPU" if g.kind == "cpu" else f"GPU {g.index}"


def _phase_line(p: Phase) -> str:
    if p.status == "failed" and not p.intervals:
        return f"  {p.dtype:<6} failed: {p.error}"
    head = f"  {p.dtype:<6} {_rate(p.sustained_tflops):>7} TFLOP/s sustained"
    if p.expected_tflops:
        head += f" (expected {p.expected_tflops:g}{', unconfirmed' if p.expected_unconfirmed else ''})"
    head += f", burst {_rate(p.burst_tflops)}"
    how = "bit-equal to the first" if p.compare == "bitwise" else "equal to the first within the tolerance"
    if p.mismatches:
        check = f"{p.bad_products} of {p.products:,} products DIFFERED from the first ({p.mismatches:,} elements)"
    else:
        check = f"{p.products:,} products, all {how}"
    extra = ""
    if p.status in ("stopped", "missing", "failed", "wrong"):
        extra = f" [{p.status}{': ' + p.error if p.error else ''}]"
    return f"{head}; {check}{extra}"


def _memtest_line(g: BurnGpu) -> Optional[str]:
    m = g.memtest
    if m is None:
        return None
    size = f"{m.bytes / 2**30:.1f} GiB" if m.bytes >= 2**30 else f"{m.bytes / 2**20:.0f} MiB"
    if m.status in ("skipped", "stopped") and not m.passes:
        return f"  memory {m.status}: {m.error}" if m.error else f"  memory {m.status}"
    patterns = sorted({p.pattern for p in m.passes})
    result = f"{m.mismatches:,} WRONG words" if m.mismatches else "no wrong word"
    passes = f"{len(m.passes)} pass" + ("" if len(m.passes) == 1 else "es")
    line = f"  memory {size}, {passes} in {m.seconds:.1f} s ({', '.join(patterns)}): {result}"
    if m.status == "failed" and m.error:
        line += f" [failed: {m.error}]"
    return line + (f"; {m.note}" if m.note else "")


def _counters_line(d: Optional[Counters], end: Optional[Counters]) -> Optional[str]:
    if d is None:
        return None
    parts = [f"ECC corrected +{_n(d.ecc_corrected, 'd')}, uncorrected +{_n(d.ecc_uncorrected, 'd')}"]
    if end is not None and end.remap_pending is not None:
        parts.append(f"remap pending {end.remap_pending}, failure {end.remap_failure}")
    parts.append(f"PCIe replay +{_n(d.pcie_replay, 'd')}")
    if d.nvlink_active:
        parts.append(
            f"NVLink ({d.nvlink_active} active) recovery +{_n(d.nvlink_recovery, 'd')}, "
            f"CRC +{(d.nvlink_crc_flit or 0) + (d.nvlink_crc_data or 0)}"
        )
    else:
        parts.append("no NVLink")
    if d.power_violation_ns is not None:
        parts.append(
            f"power-capped {d.power_violation_ns / 1e9:.1f} s, thermal {(d.thermal_violation_ns or 0) / 1e9:.1f} s"
        )
    return "  counters " + "; ".join(parts)


def _gpu_lines(g: BurnGpu, color: bool, width: int, ascii_only: bool) -> List[str]:
    title = f"{_who(g)}, {g.name or '?'}" + (f" (compute capability {g.capability})" if g.capability else "")
    out = [
        _c(
            f"{title}: {g.verdict if g.verdict != 'NONE' else 'no GPU verdict (CPU run)'}",
            _VERDICT_COLOR.get(g.verdict, "0"),
            color,
        )
    ]
    for p in g.phases:
        out.append(_phase_line(p))
    for what, why in g.skipped.items():
        out.append(f"  skipped {what}: {why}")
    line = _memtest_line(g)
    if line:
        out.append(line)
    s = g.summary
    if s is not None and s.samples:
        temp = f"  temperature max {_n(s.temperature_max_c, 'd')} C, steady {_n(s.temperature_steady_c)} C"
        if g.slowdown_c:
            temp += f" (slowdown at {g.slowdown_c} C)"
        if s.memory_temperature_max_c is not None:
            temp += f"; memory max {s.memory_temperature_max_c} C"
        out.append(temp)
        out.append(
            f"  power median {_n(s.power_median_w)} W, max {_n(s.power_max_w)} W"
            + (f" of {g.power_limit_w:.0f} W" if g.power_limit_w else "")
            + (f"; energy {s.energy_j / 1000:.1f} kJ" if s.energy_j is not None else "")
        )
        out.append(
            f"  clocks SM {_n(s.sm_clock_min_mhz, 'd')}-{_n(s.sm_clock_max_mhz, 'd')} MHz (median "
            f"{_n(s.sm_clock_median_mhz)}"
            + (f", max {g.max_sm_clock_mhz}" if g.max_sm_clock_mhz else "")
            + f"), memory {_n(s.mem_clock_median_mhz)} MHz; utilisation {_n(s.utilization_median_pct)}%"
        )
        reasons = ", ".join(f"{r} {n}" for r, n in sorted(s.reasons.items(), key=lambda kv: -kv[1])) or "none"
        out.append(f"  reasons  {reasons} (of {s.samples} samples under load)")
    counters = _counters_line(g.counter_deltas, g.counters_end)
    if counters:
        out.append(counters)
    if g.nvml_index is not None:
        out.append("  Xid      " + (", ".join(f"{x.xid} ({x.severity})" for x in g.xids) or "none"))
    if g.child is not None and g.child.state not in ("ok",):
        out.append(_c(f"  process  {g.child.state}: {g.child.message or ''}".rstrip(": "), "31", color))
    lines = chart_lines(g, width, ascii_only)
    if lines:
        out.append("")
        out.extend("  " + x for x in lines)
    return out


def chart_lines(
    g: BurnGpu, width: int = 48, ascii_only: bool = False, span: Optional[Tuple[float, float]] = None
) -> List[str]:
    """The terminal chart of one device (also what ``--plot`` shows where matplotlib is missing)."""
    rows: List[Tuple[str, Sequence[Tuple[float, float]]]] = []
    for p in g.phases:
        rows.append((f"{p.dtype} TFLOP/s", [(i.end, i.tflops) for i in p.intervals if i.tflops]))
    rows.append(("temperature C", [(s.t, float(s.temperature_c)) for s in g.samples if s.temperature_c is not None]))
    rows.append(("power W", [(s.t, s.power_w) for s in g.samples if s.power_w is not None]))
    rows.append(("SM clock MHz", [(s.t, float(s.sm_clock_mhz)) for s in g.samples if s.sm_clock_mhz is not None]))
    throttled = [s.t for s in g.samples if s.fault]
    return chart(f"{_who(g)} {g.name or ''}".strip(), rows, throttled, width=width, ascii_only=ascii_only, span=span)


def _finding_lines(f: Finding, color: bool) -> List[str]:
    out = [_c(f"{f.severity} {f.code}: {f.title}", _SEVERITY_COLOR.get(f.severity, "0"), color)]
    out.extend(f"    {e}" for e in f.evidence if e)
    out.extend(f"    fix: {x}" for x in f.fix)
    return out


def _table(result: BurnResult) -> List[str]:
    dtypes: List[str] = []
    for g in result.gpus:
        dtypes.extend(p.dtype for p in g.phases if p.dtype not in dtypes)
    head = ["device", "verdict", "max C", "steady C", "power W", "SM MHz", "energy kJ"] + [
        f"{d} sust/burst" for d in dtypes
    ]
    rows = []
    for g in result.gpus:
        s = g.summary
        phases = {p.dtype: p for p in g.phases}
        rows.append(
            [
                _who(g),
                g.verdict,
                _n(s.temperature_max_c, "d") if s else "-",
                _n(s.temperature_steady_c) if s else "-",
                (_n(s.power_median_w) + (f"/{g.power_limit_w:.0f}" if g.power_limit_w else "")) if s else "-",
                _n(s.sm_clock_median_mhz) if s else "-",
                _n(s.energy_j / 1000, ".1f") if s and s.energy_j is not None else "-",
            ]
            + [
                f"{_rate(phases[d].sustained_tflops)}/{_rate(phases[d].burst_tflops)}" if d in phases else "-"
                for d in dtypes
            ]
        )
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    return [
        "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in [head] + rows
    ]


def render_burn_text(result: BurnResult, color: bool = False, chart_width: int = 48, ascii_only: bool = False) -> str:
    """The report: per device its figures, chart and findings; then the summary table and verdict."""
    out: List[str] = []
    target = f"{result.python} ({result.chosen_by})" if result.chosen_by else (result.python or "?")
    torch = f", torch {result.torch_version}" if result.torch_version else ""
    out.append(f"envdoctor burn in {target}{torch}")
    if result.error is not None:
        out.append(_c(f"error: {result.error.message}", "31", color))
        return "\n".join(out) + "\n"
    asked = ", ".join(result.dtypes) if result.dtypes else "the default dtypes"
    memtest = f", then a memory test of at most {result.memtest_s:g} s" if result.memtest_s else ""
    out.append(
        f"{result.seconds:g} s of load per device ({asked}){memtest}"
        + ("; stopped early" if result.interrupted else "")
    )
    for g in result.gpus:
        out.append("")
        out.extend(_gpu_lines(g, color, chart_width, ascii_only))
        for f in g.findings:
            out.extend("  " + x for x in _finding_lines(f, color))
    if result.findings:
        out.append("")
        for f in result.findings:
            out.extend(_finding_lines(f, color))
    if result.notes:
        out.append("")
        out.extend(f"note: {n}" for n in result.notes)
    if result.gpus:
        out.append("")
        out.extend(_table(result))
    out.append("")
    for line in (
        result.sampling,
        result.xid_watch,
        f"wall time {result.wall_s:.1f} s" if result.wall_s is not None else None,
    ):
        if line:
            out.append(line)
    failed = result.faulty or any(f.severity == "error" for f in result.findings)
    out.append(_c(verdict_line(result), "31" if failed else "32", color))
    return "\n".join(out) + "\n"


def verdict_line(result: BurnResult) -> str:
    """One line: which devices are FAULTY and why (their error codes), or that all are OK."""
    if result.error is not None:
        return f"verdict: none ({result.error.message})"
    bad = result.faulty
    if bad:
        parts = [f"{_who(g)} ({', '.join(sorted({f.code for f in g.findings if f.severity == 'error'}))})" for g in bad]
        return f"verdict: FAULTY: {'; '.join(parts)}"
    empty = [f.code for f in result.findings if f.severity == "error"]
    if empty:
        return f"verdict: none: the run failed ({', '.join(empty)})"
    if result.cpu_run:
        return "verdict: CPU run, every product correct; no GPU verdict"
    return f"verdict: OK: every GPU ({len(result.gpus)}) passed"

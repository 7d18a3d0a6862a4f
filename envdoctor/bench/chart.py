"""Terminal bar charts on a log scale: TFLOP/s by size and dtype (rates span four decades), and
GB/s by size for the memory suite (``log_bars``).

>>> print("\\n".join(chart([BenchPoint(0, "fp16", 8192, tflops=633.6),
...                         BenchPoint(0, "fp32", 8192, tflops=51.2)], width=20)))
TFLOP/s, log scale  10        100       1000
n=8192  fp32        ███████▏               51.2
        fp16        ██████████████████    633.6
"""

from __future__ import annotations

import math
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from envdoctor.bench.facts import DTYPES, BenchPoint
from envdoctor.style import paint

_EIGHTHS = " ▏▎▍▌▋▊▉█"
_COLORS = {"fp32": "blue", "tf32": "cyan", "fp16": "green", "bf16": "magenta", "mul": "yellow", "copy": "cyan"}


def _bar(cells: float, ascii_only: bool) -> str:
    cells = max(cells, 0.0)
    full = int(cells)
    if ascii_only:
        return "#" * full + ("+" if cells - full >= 0.5 else "")
    part = _EIGHTHS[int(round((cells - full) * 8))] if cells > full else ""
    return ("█" * full + part.strip()) if part != "█" else "█" * (full + 1)


def chart(points: Sequence[BenchPoint], width: int = 40, color: bool = False, ascii_only: bool = False) -> List[str]:
    """Lines of the chart: one group per size, one bar per dtype, value at the end."""
    ok = [p for p in points if p.status == "ok" and p.tflops and p.tflops > 0]
    order = {d: i for i, d in enumerate(DTYPES)}
    rows = []
    for n in sorted({p.n for p in ok}):
        for p in sorted((p for p in ok if p.n == n), key=lambda p: order.get(p.dtype, 99)):
            rows.append((f"n={n}", p.dtype, float(p.tflops or 0.0)))
    return log_bars(rows, "TFLOP/s, log scale", width=width, color=color, ascii_only=ascii_only)


def log_bars(
    rows: Sequence[Tuple[str, str, float]],
    label: str,
    width: int = 40,
    color: bool = False,
    ascii_only: bool = False,
    fmt: Optional[Callable[[float], str]] = None,
    colors: Optional[Mapping[str, str]] = None,
) -> List[str]:
    """Bars on a log scale for (group, series, value) rows, in order; the group is named once.

    >>> print("\\n".join(log_bars([("64Ki", "copy", 70.1), ("256Mi", "copy", 4232.7)], "GB/s, log scale",
    ...                            width=20, fmt=lambda x: f"{x:.0f}")))
    GB/s, log scale     10    100   1000  10000
    64Ki    copy        █████▏                70
    256Mi   copy        ███████████████▊    4233
    """
    show: Callable[[float], str] = fmt if fmt is not None else format_rate
    colors = _COLORS if colors is None else colors
    rows = [r for r in rows if r[2] > 0]
    if not rows:
        return []
    lo = 10.0 ** math.floor(math.log10(min(v for _, _, v in rows)))
    hi = 10.0 ** math.ceil(math.log10(max(v for _, _, v in rows)))
    if hi <= lo:
        hi = lo * 10
    decades = round(math.log10(hi / lo))
    per = max(1, width // decades)
    width = per * decades
    head = " " * (20 - len(label)) if len(label) < 20 else " "
    ticks = "".join(f"{_fmt(lo * 10**k):<{per}}" for k in range(decades)) + _fmt(hi)
    lines = [label + head + ticks]
    value_w = max(len(show(v)) for _, _, v in rows)
    last = None
    for group, series, value in rows:
        cells = math.log10(value / lo) / decades * width
        bar = _bar(cells, ascii_only)
        pad = " " * (width - len(bar) + 2)
        bar = paint(bar, colors.get(series, ""), color)
        name = group if group != last else ""
        last = group
        lines.append(f"{name:<8}{series:<12}{bar}{pad}{show(value):>{value_w}}")
    return lines


def format_rate(x: Optional[float]) -> str:
    """TFLOP/s to three significant digits at most: 634.8, 51.2, 1.23, 0.105, 0.000153; None as '-'.

    >>> format_rate(0.000153), format_rate(0.0), format_rate(0.053)
    ('0.000153', '0', '0.053')
    """
    if x is None:
        return "-"
    if 0 < abs(x) < 0.01:  # a CPU at a small size: keep three significant digits, never "0.000"
        return f"{x:.3g}" if abs(x) >= 1e-4 else f"{x:.2e}"
    if x == 0:
        return "0"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def _fmt(x: float) -> str:
    return f"{x:g}" if x < 1 else f"{int(round(x))}"

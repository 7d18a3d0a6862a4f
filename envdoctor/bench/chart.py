"""A terminal bar chart of TFLOP/s by size and dtype, on a log scale (rates span four decades).

>>> print("\\n".join(chart([BenchPoint(0, "fp16", 8192, tflops=633.6),
...                         BenchPoint(0, "fp32", 8192, tflops=51.2)], width=20)))
TFLOP/s, log scale  10        100       1000
n=8192  fp32        ███████▏               51.2
        fp16        ██████████████████    633.6
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence

from envdoctor.facts.bench import DTYPES, BenchPoint
from envdoctor.render.style import paint

_EIGHTHS = " ▏▎▍▌▋▊▉█"
_COLORS = {"fp32": "blue", "tf32": "cyan", "fp16": "green", "bf16": "magenta"}


def _bar(cells: float, ascii_only: bool) -> str:
    cells = max(cells, 0.0)
    full = int(cells)
    if ascii_only:
        return "#" * full + ("+" if cells - full >= 0.5 else "")
    part = _EIGHTHS[int(round((cells - full) * 8))] if cells > full else ""
    return ("█" * full + part.strip()) if part != "█" else "█" * (full + 1)


def chart(points: Sequence[BenchPoint], width: int = 40, color: bool = False,
          ascii_only: bool = False) -> List[str]:
    """Lines of the chart: one group per size, one bar per dtype, value at the end."""
    ok = [p for p in points if p.status == "ok" and p.tflops and p.tflops > 0]
    if not ok:
        return []
    lo = 10.0 ** math.floor(math.log10(min(p.tflops for p in ok)))   # type: ignore[type-var]
    hi = 10.0 ** math.ceil(math.log10(max(p.tflops for p in ok)))    # type: ignore[type-var]
    if hi <= lo:
        hi = lo * 10
    decades = round(math.log10(hi / lo))
    per = max(1, width // decades)
    width = per * decades
    label = "TFLOP/s, log scale"
    head = " " * (20 - len(label)) if len(label) < 20 else " "
    ticks = "".join(f"{_fmt(lo * 10 ** k):<{per}}" for k in range(decades)) + _fmt(hi)
    lines = [label + head + ticks]
    value_w = max(len(format_rate(p.tflops)) for p in ok)
    order = {d: i for i, d in enumerate(DTYPES)}
    for n in sorted({p.n for p in ok}):
        row = sorted((p for p in ok if p.n == n), key=lambda p: order.get(p.dtype, 99))
        for i, p in enumerate(row):
            cells = math.log10(p.tflops / lo) / decades * width   # type: ignore[operator]
            bar = _bar(cells, ascii_only)
            pad = " " * (width - len(bar) + 2)
            bar = paint(bar, _COLORS.get(p.dtype, ""), color)
            name = f"n={n}" if i == 0 else ""
            lines.append(f"{name:<8}{p.dtype:<12}{bar}{pad}{format_rate(p.tflops):>{value_w}}")
    return lines


def format_rate(x: Optional[float]) -> str:
    """TFLOP/s to three significant digits at most: 634.8, 51.2, 1.23, 0.105; None as '-'."""
    if x is None:
        return "-"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def _fmt(x: float) -> str:
    return f"{x:g}" if x < 1 else f"{int(round(x))}"

"""A compact terminal chart of a burn: one row per series, all on one time axis.

Each row is scaled between its own lowest and highest value (printed at its left); a column is
the mean of the points that fall in it; blank where the series has no point (a dtype outside its
part of the load). The last row marks the samples with a fault clock-event reason::

    GPU 0 NVIDIA H200            0 s .......................................... 150 s
    bf16 TFLOP/s     631-780     █▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄
    temperature C     33-60      ▁▇▇██████████████████████████████████████
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple

_BLOCKS = "▁▂▃▄▅▆▇█"
_ASCII = ".:-=+*#@"

Series = Sequence[Tuple[float, float]]


def row(points: Series, t0: float, t1: float, width: int, ascii_only: bool = False) -> Tuple[str, str]:
    """(the range label, the row) for ``points`` [(t, value)] between ``t0`` and ``t1``."""
    levels = _ASCII if ascii_only else _BLOCKS
    if not points or t1 <= t0:
        return "", " " * width
    values = [v for _, v in points]
    lo, hi = min(values), max(values)
    buckets: List[List[float]] = [[] for _ in range(width)]
    for t, v in points:
        col = min(width - 1, max(0, int((t - t0) / (t1 - t0) * width)))
        buckets[col].append(v)
    cells = []
    for b in buckets:
        if not b:
            cells.append(" ")
            continue
        mean = sum(b) / len(b)
        level = 0 if hi <= lo else int(round((mean - lo) / (hi - lo) * (len(levels) - 1)))
        cells.append(levels[level])
    return f"{_fmt(lo)}-{_fmt(hi)}" if hi > lo else _fmt(lo), "".join(cells)


def marks(times: Iterable[float], t0: float, t1: float, width: int, ascii_only: bool = False) -> str:
    cells = [" "] * width
    for t in times:
        if t1 > t0:
            cells[min(width - 1, max(0, int((t - t0) / (t1 - t0) * width)))] = "!" if ascii_only else "▲"
    return "".join(cells)


def chart(
    title: str,
    rows: Sequence[Tuple[str, Series]],
    throttled: Sequence[float] = (),
    width: int = 48,
    ascii_only: bool = False,
    span: Optional[Tuple[float, float]] = None,
) -> List[str]:
    """The lines for one device: a time axis, then ``rows`` [(name, points)], then the marks."""
    times = [t for _, pts in rows for t, _ in pts] + list(throttled)
    if not times:
        return []
    t0, t1 = span if span is not None else (min(times), max(times))
    t1 = max(t1, t0 + 1e-6)
    drawn = [(name, *row(pts, t0, t1, width, ascii_only)) for name, pts in rows if pts]
    lw = max([len(label) for _, label, _ in drawn] + [9])
    head = f"{title[: 16 + lw]:<{17 + lw}} 0 s " + "." * max(0, width - 10) + f" {t1 - t0:.0f} s"
    out = [head]
    for name, label, cells in drawn:
        out.append(f"{name:<16} {label:>{lw}} {cells}")
    if throttled:
        out.append(f"{'throttled':<16} {'':>{lw}} {marks(throttled, t0, t1, width, ascii_only)}")
    return out


def _fmt(x: float) -> str:
    """``_fmt(659.42) == '659'``, ``_fmt(0.1583) == '0.158'``."""
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}".rstrip("0").rstrip(".")
    return f"{x:.3g}"

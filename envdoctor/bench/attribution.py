"""The NVML samples taken during one point of any suite: median clocks, power, temperature, and
every throttle reason seen (pure).

>>> from envdoctor.bench.facts import MemoryPoint, NvmlSample
>>> p = MemoryPoint(0, "copy", 1 << 28, started=10.0, ended=10.2)
>>> s = [NvmlSample(10.05, 0, 1980, 512.0, 44, (), 0, 3201), NvmlSample(10.15, 0, 1980, 530.0, 45, (), 0, 3201)]
>>> q = attribute(p, s, 0)
>>> q.sm_clock_mhz, q.mem_clock_mhz, q.power_w, q.samples
(1980, 3201, 521.0, 2)
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Iterable, List, Optional, Sequence, TypeVar

from envdoctor.bench.facts import NvmlSample

P = TypeVar("P")


def _median(values: Sequence[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def attribute(point: P, samples: Iterable[NvmlSample], nvml_index: Optional[int]) -> P:
    """``point`` (a BenchPoint, MemoryPoint or LayerPoint) with the samples of its GPU taken
    between its ``started`` and ``ended``; the memory clock only where the point has the field."""
    started = getattr(point, "started", None)
    ended = getattr(point, "ended", None)
    if nvml_index is None or started is None or ended is None:
        return point
    mine = [s for s in samples if s.gpu == nvml_index and started <= s.t <= ended]
    if not mine:
        return dataclasses.replace(point, samples=0)  # type: ignore[type-var]
    clock = _median([s.sm_clock_mhz for s in mine if s.sm_clock_mhz is not None])
    power = _median([s.power_w for s in mine if s.power_w is not None])
    temp = _median([s.temperature_c for s in mine if s.temperature_c is not None])
    reasons: List[str] = []
    for s in mine:
        reasons.extend(r for r in s.reasons if r not in reasons)
    fields = dict(
        sm_clock_mhz=int(round(clock)) if clock is not None else None,
        power_w=round(power, 1) if power is not None else None,
        temperature_c=int(round(temp)) if temp is not None else None,
        reasons=tuple(reasons),
        samples=len(mine),
    )
    if any(f.name == "mem_clock_mhz" for f in dataclasses.fields(point)):  # type: ignore[arg-type]
        mem = _median([s.mem_clock_mhz for s in mine if s.mem_clock_mhz is not None])
        fields["mem_clock_mhz"] = int(round(mem)) if mem is not None else None
    return dataclasses.replace(point, **fields)  # type: ignore[type-var]

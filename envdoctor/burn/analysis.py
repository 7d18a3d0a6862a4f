"""Pure figures of a burn: NVML readings as samples and counters, counter changes, the sustained
and burst rates of each dtype, and the per-GPU summary. Nothing here reads the machine.

Sustained rate: the median of the interval rates (about 0.5 s each) after a warm-up of 10% of
the dtype's load, at least 1 s: on the H200 the first products run near 780 TFLOP/s until the
power cap bites within 0.2 s, then hold 645-677 (tests/fixtures/h200-burn). Burst: the fastest
single product.

>>> sustained([Interval("bf16", 0.0, 0.5, 300, 0.5, 780.0), Interval("bf16", 0.5, 1.0, 300, 0.5, 660.0),
...            Interval("bf16", 1.0, 1.5, 300, 0.5, 658.0), Interval("bf16", 1.5, 2.0, 300, 0.5, 662.0)])
(660.0, 1.0)
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from envdoctor.burn.facts import BurnGpu, Counters, Interval, Phase, Sample, Summary

#: share of a dtype's load treated as warm-up, and its floor in seconds
WARMUP_SHARE = 0.1
WARMUP_MIN_S = 1.0


def sample(values: Mapping[str, Any], t: float, names: Any = None, faults: Any = None) -> Sample:
    """A :class:`Sample` from one NVML reading's values (``envdoctor.nvml.SAMPLE`` fields).

    ``names`` turns the reasons mask into names, ``faults`` into the names that are not benign
    (``Health.reason_names``, ``Health.fault_reasons``)."""
    mask = values.get("reasons_mask")
    return Sample(
        t=t,
        temperature_c=values.get("temperature_c"),
        memory_temperature_c=values.get("memory_temperature_c"),
        power_w=_round(values.get("power_w"), 3),
        sm_clock_mhz=values.get("sm_clock_mhz"),
        mem_clock_mhz=values.get("mem_clock_mhz"),
        reasons_mask=mask,
        reasons=tuple(names(mask)) if names is not None and mask is not None else (),
        fault=bool(faults(mask)) if faults is not None and mask is not None else False,
        utilization_pct=values.get("utilization_pct"),
        energy_j=_round(values.get("energy_j"), 3),
    )


def counters(values: Mapping[str, Any], errors: Mapping[str, str] = {}) -> Counters:
    """:class:`Counters` from one NVML reading of ``COUNTERS`` plus ``nvlinks``."""
    rows = values.get("remapped_rows") or {}
    links = values.get("nvlinks") or []
    active = [link for link in links if link.get("active")]

    def link_sum(name: str) -> Optional[int]:
        got = [link.get("errors", {}).get(name) for link in active]
        got = [g for g in got if g is not None]
        return sum(got) if got else None

    return Counters(
        ecc_corrected=values.get("ecc_corrected"),
        ecc_uncorrected=values.get("ecc_uncorrected"),
        remap_correctable=rows.get("correctable"),
        remap_uncorrectable=rows.get("uncorrectable"),
        remap_pending=rows.get("pending"),
        remap_failure=rows.get("failure"),
        pcie_replay=values.get("pcie_replay"),
        power_violation_ns=values.get("power_violation_ns"),
        thermal_violation_ns=values.get("thermal_violation_ns"),
        nvlink_active=len(active) if links else None,
        nvlink_replay=link_sum("replay"),
        nvlink_recovery=link_sum("recovery"),
        nvlink_crc_flit=link_sum("crc_flit"),
        nvlink_crc_data=link_sum("crc_data"),
        unsupported=tuple(sorted(k for k, why in errors.items() if why)),
    )


_DELTA_FIELDS = (
    "ecc_corrected",
    "ecc_uncorrected",
    "remap_correctable",
    "remap_uncorrectable",
    "remap_pending",
    "remap_failure",
    "pcie_replay",
    "power_violation_ns",
    "thermal_violation_ns",
    "nvlink_replay",
    "nvlink_recovery",
    "nvlink_crc_flit",
    "nvlink_crc_data",
)


def delta(start: Optional[Counters], end: Optional[Counters]) -> Optional[Counters]:
    """``end - start`` per counter (None where either is unknown); active links as at the end.

    >>> delta(Counters(ecc_corrected=3, pcie_replay=None), Counters(ecc_corrected=5, pcie_replay=1)).ecc_corrected
    2
    """
    if start is None or end is None:
        return None
    out: Dict[str, Any] = {}
    for name in _DELTA_FIELDS:
        a, b = getattr(start, name), getattr(end, name)
        out[name] = b - a if a is not None and b is not None else None
    return Counters(nvlink_active=end.nvlink_active, unsupported=end.unsupported, **out)


def sustained(intervals: Sequence[Interval]) -> Tuple[Optional[float], Optional[float]]:
    """(median rate after the warm-up, the warm-up in seconds); (None, None) without rates."""
    rated = sorted((i for i in intervals if i.tflops), key=lambda i: i.start)
    if not rated:
        return None, None
    begin, end = rated[0].start, rated[-1].end
    warm = max(WARMUP_MIN_S, WARMUP_SHARE * (end - begin))
    after = [i.tflops for i in rated if i.start >= begin + warm and i.tflops]
    if not after:  # a load shorter than its warm-up: its second half
        after = [i.tflops for i in rated[len(rated) // 2 :] if i.tflops]
        warm = rated[len(rated) // 2].start - begin
    return statistics.median(after), round(warm, 3)


def phase_figures(phase: Phase) -> Phase:
    """The phase with its sustained and burst rates filled in."""
    rate, warm = sustained(phase.intervals)
    fastest = [i.fastest_tflops for i in phase.intervals if i.fastest_tflops]
    return replace(
        phase, sustained_tflops=_sig(rate), warmup_s=warm, burst_tflops=_sig(max(fastest)) if fastest else None
    )


def load_window(phases: Iterable[Phase]) -> Tuple[Optional[float], Optional[float]]:
    """(start, end) of the load, from the phases' times and their intervals."""
    starts: List[float] = []
    ends: List[float] = []
    for p in phases:
        starts.extend(t for t in [p.started] + [i.start for i in p.intervals] if t is not None)
        ends.extend(t for t in [p.ended] + [i.end for i in p.intervals] if t is not None)
    return (min(starts), max(ends)) if starts and ends else (None, None)


def under_load(samples: Sequence[Sample], phases: Sequence[Phase]) -> List[Sample]:
    """The samples taken while the products ran (all of them when the load's times are unknown)."""
    start, end = load_window(phases)
    if start is None or end is None:
        return list(samples)
    return [s for s in samples if start <= s.t <= end]


def summarize(gpu: BurnGpu) -> Summary:
    """Temperatures, power, clocks, energy and reasons of one GPU."""
    loaded = under_load(gpu.samples, gpu.phases)
    start, end = load_window(gpu.phases)
    temps = [s.temperature_c for s in loaded if s.temperature_c is not None]
    late = [
        s.temperature_c
        for s in loaded
        if s.temperature_c is not None and start is not None and end is not None and s.t >= start + (end - start) / 2
    ]
    mem_temps = [s.memory_temperature_c for s in loaded if s.memory_temperature_c is not None]
    power = [s.power_w for s in loaded if s.power_w is not None]
    clocks = [s.sm_clock_mhz for s in loaded if s.sm_clock_mhz is not None]
    mem_clocks = [s.mem_clock_mhz for s in loaded if s.mem_clock_mhz is not None]
    util = [s.utilization_pct for s in loaded if s.utilization_pct is not None]
    energy = [s.energy_j for s in gpu.samples if s.energy_j is not None]
    reasons: Dict[str, int] = {}
    faults = 0
    masked = 0
    for s in loaded:
        for r in s.reasons:
            reasons[r] = reasons.get(r, 0) + 1
        if s.reasons_mask is not None:
            masked += 1
            faults += s.fault
    return Summary(
        load_s=round(end - start, 3) if start is not None and end is not None else None,
        samples=len(loaded),
        temperature_max_c=max(temps) if temps else None,
        temperature_steady_c=_median(late) if late else _median(temps),
        memory_temperature_max_c=max(mem_temps) if mem_temps else None,
        power_median_w=_round(_median(power), 1),
        power_max_w=_round(max(power), 1) if power else None,
        sm_clock_median_mhz=_median(clocks),
        sm_clock_min_mhz=min(clocks) if clocks else None,
        sm_clock_max_mhz=max(clocks) if clocks else None,
        mem_clock_median_mhz=_median(mem_clocks),
        utilization_median_pct=_median(util),
        energy_j=round(energy[-1] - energy[0], 1) if len(energy) >= 2 else None,
        reasons=reasons,
        fault_samples=faults,
        fault_share=round(faults / masked, 4) if masked else None,
    )


def _median(values: Sequence[float]) -> Optional[float]:
    return float(statistics.median(values)) if values else None


def _round(x: Optional[float], digits: int) -> Optional[float]:
    return None if x is None else round(float(x), digits)


def _sig(x: Optional[float], digits: int = 4) -> Optional[float]:
    """Four significant digits: 659.4, 0.1583 (CPU rates are small)."""
    if x is None or x == 0:
        return x
    return float(f"{x:.{digits}g}")

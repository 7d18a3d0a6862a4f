"""Pure figures diag takes from the parts' results: the targeted-power figures of a burn, the
bench's matmul and HBM figures per device.

>>> from envdoctor.burn.facts import BurnGpu, Phase, Sample
>>> g = BurnGpu(0, power_limit_w=700.0, max_sm_clock_mhz=1980, phases=(Phase("bf16", 8192, started=0.0, ended=9.0),),
...             samples=tuple(Sample(float(t), power_w=699.0, sm_clock_mhz=1500) for t in range(10)))
>>> f = power_figures(g)
>>> f["power_median_w"], f["power_fraction"], f["sm_clock_median_mhz"], f["clock_fraction"], f["samples"]
(699.0, 0.9986, 1500.0, 0.7576, 10)
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, Optional, Sequence

from envdoctor.bench.facts import BenchResult
from envdoctor.burn.analysis import under_load
from envdoctor.burn.facts import BurnGpu

#: the dtype whose load drives a GPU to its power limit (Tensor Core products)
POWER_DTYPES = ("bf16", "fp16")


def power_figures(g: BurnGpu) -> Dict[str, Any]:
    """Median power and SM clock over the samples of the Tensor Core phase (else every phase),
    against the enforced power limit and the maximum SM clock."""
    phases = [p for p in g.phases if p.dtype in POWER_DTYPES] or list(g.phases)
    loaded = [s for s in under_load(g.samples, phases) if s.power_w is not None]
    if not loaded:
        return {"samples": 0}
    power = statistics.median(s.power_w for s in loaded if s.power_w is not None)
    clocks = [s.sm_clock_mhz for s in loaded if s.sm_clock_mhz is not None]
    clock = float(statistics.median(clocks)) if clocks else None
    return {
        "power_median_w": round(power, 1),
        "power_fraction": round(power / g.power_limit_w, 4) if g.power_limit_w else None,
        "sm_clock_median_mhz": clock,
        "clock_fraction": round(clock / g.max_sm_clock_mhz, 4) if clock and g.max_sm_clock_mhz else None,
        "samples": len(loaded),
    }


def matmul_figure(bench: BenchResult, device: int, dtype: str, n: int) -> Optional[float]:
    """The bench's rate of one (device, dtype, n) point, None when it did not run or failed."""
    for p in bench.points:
        if p.device == device and p.dtype == dtype and p.n == n and p.status == "ok":
            return p.tflops
    return None


def hbm_figure(bench: BenchResult, device: int) -> Optional[float]:
    """The best GB/s of the device's memory points that do not fit in the L2 (HBM, not cache)."""
    rates = [
        p.gbs
        for p in bench.memory_points
        if p.device == device and p.status == "ok" and p.gbs and p.l2_resident is False
    ]
    return max(rates) if rates else None


def median(values: Sequence[float]) -> Optional[float]:
    return statistics.median(values) if values else None

"""What ``envdoctor bench`` measured: matrix-product rates per device, dtype and size.

The child process (``envdoctor/child/bench_matmul.py``, run by the target interpreter) fills the
measurement fields; the host adds the NVML samples it took meanwhile and the analysis (datasheet
peak, efficiency, bound, verdict). Saved with ``serde.to_data`` and reloaded with
``serde.from_data(BenchResult, data)`` by ``snapshot --bench`` / ``verify --bench``.

>>> p = BenchPoint(device=0, dtype="fp16", n=8192, status="ok", tflops=640.2, ms=1.717)
>>> p.flops, p.bytes_moved
(1099511627776, 402653184)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from envdoctor.facts.base import ProbeError

#: The version of the ``--json`` document; bump it when a field changes meaning or goes away.
SCHEMA = "envdoctor.bench/1"

#: dtype name -> bytes per element ("tf32" is fp32 storage, computed on the Tensor Cores).
ITEMSIZE: Dict[str, int] = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
DTYPES: Tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16")
DEFAULT_SIZES: Tuple[int, ...] = (128, 512, 2048, 8192)
#: Seconds of measurement per device by default (torch import and CUDA start come on top).
DEFAULT_BUDGET = 6.0


@dataclass(frozen=True)
class NvmlSample:
    """One reading of one GPU, taken by envdoctor's process while the child ran.

    ``t`` is ``time.time()``; ``reasons`` are the decoded clock-event (throttle) reasons,
    e.g. ``("sw_power_cap",)``.
    """

    t: float
    gpu: int                                   # NVML index
    sm_clock_mhz: Optional[int] = None
    power_w: Optional[float] = None
    temperature_c: Optional[int] = None
    reasons: Tuple[str, ...] = ()
    reasons_mask: Optional[int] = None


@dataclass(frozen=True)
class BenchDevice:
    """One device the child measured, with the datasheet rates envdoctor's table has for it."""

    index: int                                 # torch's device index in the child (0 for the CPU)
    kind: str = "cuda"                         # "cuda" or "cpu"
    name: Optional[str] = None                 # "NVIDIA H200"
    capability: Optional[str] = None           # "9.0"
    multiprocessors: Optional[int] = None
    memory_bytes: Optional[int] = None
    uuid: Optional[str] = None                 # "GPU-c7d3a8fe-..."
    pci_bus_id: Optional[str] = None
    launch_us: Optional[float] = None          # measured cost of one tiny product, queue full
    skipped: Dict[str, str] = field(default_factory=dict)   # dtype -> why it was not measured
    nvml_index: Optional[int] = None
    max_sm_clock_mhz: Optional[int] = None
    power_limit_w: Optional[float] = None
    model: Optional[str] = None                # the table row matched: "NVIDIA H200"
    peaks: Dict[str, float] = field(default_factory=dict)  # dtype -> datasheet dense TFLOP/s
    bandwidth_gbs: Optional[float] = None
    peaks_unconfirmed: bool = False
    peaks_source: Optional[str] = None
    error: Optional[str] = None                # the device could not be measured at all


@dataclass(frozen=True)
class BenchPoint:
    """One (device, dtype, n): ``a @ b`` with ``a``, ``b`` random n x n matrices.

    ``status``: "ok", "wrong" (the result failed the float64 check, whatever its speed) or
    "failed" (an error such as CUDA out of memory). ``repeats_ms`` holds the time per product of
    each timed repeat, in order; ``tflops`` comes from their median, ``burst_tflops`` from the
    first repeat after warm-up.
    """

    device: int
    dtype: str
    n: int
    status: str = "ok"
    tflops: Optional[float] = None
    ms: Optional[float] = None                 # median time per product
    burst_tflops: Optional[float] = None
    best_tflops: Optional[float] = None
    repeats_ms: Tuple[float, ...] = ()
    launches: int = 0                          # products per timed repeat
    warmup: int = 0                            # products run before timing
    rel_error: Optional[float] = None          # ||c - ref|| / ||ref|| on a slice, ref in float64
    error_bound: Optional[float] = None
    tf32: Optional[bool] = None                # TF32 state read back during the point
    started: Optional[float] = None            # time.time() in the child
    ended: Optional[float] = None
    error: Optional[str] = None
    # filled by the host's analysis
    peak_tflops: Optional[float] = None        # datasheet dense peak for this dtype
    efficiency: Optional[float] = None         # tflops / peak_tflops
    bound: Optional[str] = None                # "launch", "memory", "compute"; None: cannot tell
    bound_why: Optional[str] = None
    sm_clock_mhz: Optional[int] = None         # median of the samples taken during the point
    power_w: Optional[float] = None
    temperature_c: Optional[int] = None
    reasons: Tuple[str, ...] = ()              # throttle reasons seen during the point
    samples: int = 0

    @property
    def flops(self) -> int:
        return 2 * self.n ** 3

    @property
    def bytes_moved(self) -> int:
        """Each input read once and the output written once: 3 n^2 elements."""
        return 3 * self.n * self.n * ITEMSIZE.get(self.dtype, 4)


@dataclass(frozen=True)
class Verdict:
    """Are the Tensor Cores there and delivering, on one device?

    ``state``: "confirmed", "not_delivering" (exit 1), "absent" (the architecture has none),
    or "none" (no verdict possible: CPU, fp16 not measured, sizes too small).
    """

    device: int
    state: str
    line: str                                  # "Tensor Cores confirmed: fp16 runs 12.4x fp32"
    why: Tuple[str, ...] = ()
    ratio: Optional[float] = None              # measured fp16 / fp32 at the largest size


@dataclass(frozen=True)
class Regression:
    """One point slower than the baseline by more than the tolerance (``compare_bench``)."""

    device: int
    dtype: str
    n: int
    baseline_tflops: Optional[float]
    current_tflops: Optional[float]            # None: the point failed or is missing now
    change_pct: Optional[float]                # -14.2 means 14.2% slower
    context: Tuple[str, ...] = ()              # clocks, power and throttling then and now


@dataclass(frozen=True)
class BenchResult:
    """One ``envdoctor bench`` run: the document ``--json`` prints."""

    schema: str = SCHEMA
    python: Optional[str] = None               # the target interpreter
    chosen_by: Optional[str] = None            # "--python", "python3 on PATH", "envdoctor's own"
    python_version: Optional[str] = None
    torch_version: Optional[str] = None        # "2.11.0+cu130"
    torch_cuda: Optional[str] = None           # "13.0"; None on a CPU-only build
    cuda_error: Optional[str] = None           # why torch could not use a GPU
    nvml_gpus: Optional[int] = None            # GPUs NVML sees (None: NVML not readable)
    dtypes: Tuple[str, ...] = ()
    sizes: Tuple[int, ...] = ()
    budget_s: Optional[float] = None           # measurement seconds per device
    import_s: Optional[float] = None           # import torch in the child
    init_s: Optional[float] = None             # CUDA start in the child
    measure_s: Optional[float] = None
    wall_s: Optional[float] = None             # the child from start to exit, as the host saw it
    devices: Tuple[BenchDevice, ...] = ()
    points: Tuple[BenchPoint, ...] = ()
    samples: Tuple[NvmlSample, ...] = ()
    sampling: Optional[str] = None             # "nvml every 50 ms (instant power)", or why none
    verdicts: Tuple[Verdict, ...] = ()
    outliers: Tuple[str, ...] = ()             # --device all: GPUs slower than their siblings
    notes: Tuple[str, ...] = ()
    created_at: Optional[str] = None           # ISO 8601, UTC
    error: Optional[ProbeError] = None         # the run as a whole failed (no torch, hang, crash)

    @property
    def failed_points(self) -> Tuple[BenchPoint, ...]:
        return tuple(p for p in self.points if p.status != "ok")

"""What ``envdoctor profile`` measured: frozen facts, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

DEFAULT_STEPS = 5
DEFAULT_WARMUP = 3
#: Steps timed without the profiler, to measure its overhead on the profiled ones.
BASELINE_STEPS = 3
DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Share:
    """One slice of the step: ``seconds`` per step and its share of the step's wall time."""

    name: str
    seconds: float
    share: float


@dataclass(frozen=True)
class SyncSite:
    """A call that made the host wait for the device, at the user's line (``train.py:41``)."""

    op: str
    where: str
    function: str
    per_step: float
    seconds_per_step: float


@dataclass(frozen=True)
class Breakdown:
    """One rank's profiled steps, per step on average. ``busy``/``idle`` are the GPU's (None on a
    CPU-only torch); ``compute`` splits the busy time (GPU kernels, or the CPU's top-level ops)."""

    device: str  # "cuda" or "cpu"
    step_s: float  # the profiled window's wall time per step
    busy_s: Optional[float]
    idle_s: Optional[float]
    compute: Tuple[Share, ...]
    copies: Tuple[Share, ...]
    comms: Tuple[Share, ...]
    comm_s: float
    comm_overlap: Optional[float]  # share of the communication time that overlaps computation
    dataloader_s: float
    optimizer_s: float
    matmul_fp32_s: float  # matmuls without Tensor Cores (fp32 without TF32)
    matmul_s: float
    kernels_per_step: Optional[float]
    launches_per_step: Optional[float]
    median_kernel_us: Optional[float]
    matmul_dtype: Optional[str] = None  # the dtype most matmul time ran in: bf16, fp16, tf32, fp32


@dataclass(frozen=True)
class StepTimes:
    mean_s: float
    spread: float  # (max - min) / mean over the profiled steps
    baseline_s: Optional[float]  # the steps timed without the profiler
    overhead: Optional[float]  # profiled / baseline - 1


@dataclass(frozen=True)
class Throughput:
    flops_per_step: Optional[float]
    tflops: Optional[float]  # achieved, from the profiler's FLOP counts
    peak_tflops: Optional[float]  # the datasheet's, for the dtype most matmuls ran in
    peak_dtype: Optional[str]
    peak_source: Optional[str]
    mfu: Optional[float]  # tflops / peak_tflops
    bench_tflops: Optional[float]  # the matmul rate bench measured here (--bench FILE)
    mfu_bench: Optional[float]

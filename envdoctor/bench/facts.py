"""What ``envdoctor bench`` measured: matrix-product rates per device, dtype and size (the matmul
suite), memory bandwidth by size (memory), transformer layers (layers).

The child process (``envdoctor/bench/target/bench.py``, run by the target interpreter) fills the
measurement fields; the host adds the NVML samples it took meanwhile and the analysis (datasheet
peak, efficiency, bound, verdicts, findings). Saved with ``serde.to_data`` and reloaded with
``serde.from_data(BenchResult, data)`` by ``snapshot --bench`` / ``verify --bench``. Keys are
only ever added to ``envdoctor.bench/1``: a document of an older envdoctor loads (the memory
and layers keys take their empty defaults, ``suites`` is ``("matmul",)``).

>>> p = BenchPoint(device=0, dtype="fp16", n=8192, status="ok", tflops=640.2, ms=1.717)
>>> p.flops, p.bytes_moved
(1099511627776, 402653184)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Dict, Literal, Optional, Tuple

from envdoctor.doctypes import Json
from envdoctor.facts.base import ProbeError
from envdoctor.findings import Finding

#: The version of the ``--json`` document; bump it when a field changes meaning or goes away.
SCHEMA = "envdoctor.bench/1"

#: dtype name -> bytes per element ("tf32" is fp32 storage, computed on the Tensor Cores).
ITEMSIZE: Dict[str, int] = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
DTYPES: Tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16")
DEFAULT_SIZES: Tuple[int, ...] = (128, 512, 2048, 8192)
#: Seconds of matmul measurement per device by default (torch import and CUDA start come on top).
DEFAULT_BUDGET = 6.0
Suite = Literal["matmul", "memory", "layers"]
SUITES: Tuple[Suite, ...] = ("matmul", "memory", "layers")
DEFAULT_SUITES: Tuple[Suite, ...] = ("matmul", "memory")
#: Seconds of measurement per device of the other suites at the default budget; they scale with --budget.
SUITE_BUDGET: Dict[str, float] = {"matmul": DEFAULT_BUDGET, "memory": 2.0, "layers": 5.0}
#: fp32 elements per buffer of the memory suite: 64Ki (256 KiB) to 256Mi (1 GiB, 2 GiB moved a call).
MEMORY_SIZES: Tuple[int, ...] = tuple(1 << k for k in (16, 18, 20, 22, 24, 25, 26, 27, 28))
MemoryOp = Literal["mul", "copy"]
LAYERS: Tuple[str, ...] = ("bert", "gpt2", "t5_encoder", "t5_decoder", "llama")
#: What the layers are called in the reports.
LAYER_TITLES: Dict[str, str] = {
    "bert": "BERT-large encoder layer",
    "gpt2": "GPT-2-medium block",
    "t5_encoder": "T5-large encoder layer",
    "t5_decoder": "T5-large decoder layer",
    "llama": "Llama-style block (GQA, SwiGLU)",
}


@dataclass(frozen=True)
class NvmlSample:
    """One reading of one GPU, taken by envdoctor's process while the child ran.

    ``t`` is ``time.time()``; ``reasons`` are the decoded clock-event (throttle) reasons,
    e.g. ``("sw_power_cap",)``.
    """

    t: float
    gpu: int  # NVML index
    sm_clock_mhz: Optional[int] = None
    power_w: Optional[float] = None
    temperature_c: Optional[int] = None
    reasons: Tuple[str, ...] = ()
    reasons_mask: Optional[int] = None
    mem_clock_mhz: Optional[int] = None


@dataclass(frozen=True)
class BenchDevice:
    """One device the child measured, with the datasheet rates envdoctor's table has for it."""

    index: int  # torch's device index in the child (0 for the CPU)
    kind: Annotated[str, Json(enum=["cuda", "cpu"])] = "cuda"
    name: Optional[str] = None  # "NVIDIA H200"
    capability: Optional[str] = None  # "9.0"
    multiprocessors: Optional[int] = None
    memory_bytes: Optional[int] = None
    uuid: Optional[str] = None  # "GPU-c7d3a8fe-..."
    pci_bus_id: Optional[str] = None
    launch_us: Optional[float] = None  # measured cost of one tiny product, queue full
    skipped: Dict[str, str] = field(default_factory=dict)  # dtype -> why it was not measured
    nvml_index: Optional[int] = None
    max_sm_clock_mhz: Optional[int] = None
    power_limit_w: Optional[float] = None
    model: Optional[str] = None  # the table row matched: "NVIDIA H200"
    peaks: Dict[str, float] = field(default_factory=dict)  # dtype -> datasheet dense TFLOP/s
    bandwidth_gbs: Optional[float] = None
    peaks_unconfirmed: bool = False
    peaks_source: Optional[str] = None
    error: Optional[str] = None  # the device could not be measured at all
    # added with the memory and layers suites
    l2_bytes: Optional[int] = None  # torch.cuda.get_device_properties().L2_cache_size
    max_mem_clock_mhz: Optional[int] = None
    tf32_default: Optional[bool] = None  # the user's TF32 matmul setting (the layers ran with it)
    memory_skipped: Dict[str, str] = field(default_factory=dict)  # "n=268435456" -> why not measured
    layers_skipped: Dict[str, str] = field(default_factory=dict)  # "bf16", "llama" -> why not
    matmul_rates: Dict[str, float] = field(default_factory=dict)  # dtype -> matmul TFLOP/s the layers compare with
    layer_dims: Dict[str, Dict[str, int]] = field(default_factory=dict)  # layer -> h, heads, kv_heads, ffn
    sdpa: Dict[str, Any] = field(default_factory=dict)  # backends switched on, priority, flash_impl, enable_gqa


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
    status: Annotated[str, Json(enum=["ok", "wrong", "failed"])] = "ok"
    tflops: Optional[float] = None
    ms: Optional[float] = None  # median time per product
    burst_tflops: Optional[float] = None
    best_tflops: Optional[float] = None
    repeats_ms: Tuple[float, ...] = ()
    launches: int = 0  # products per timed repeat
    warmup: int = 0  # products run before timing
    rel_error: Optional[float] = None  # ||c - ref|| / ||ref|| on a slice, ref in float64
    error_bound: Optional[float] = None
    tf32: Optional[bool] = None  # TF32 state read back during the point
    started: Optional[float] = None  # time.time() in the child
    ended: Optional[float] = None
    error: Optional[str] = None
    # filled by the host's analysis
    peak_tflops: Optional[float] = None  # datasheet dense peak for this dtype
    efficiency: Optional[float] = None  # tflops / peak_tflops
    bound: Optional[str] = None  # "launch", "memory", "compute"; None: cannot tell
    bound_why: Optional[str] = None
    sm_clock_mhz: Optional[int] = None  # median of the samples taken during the point
    power_w: Optional[float] = None
    temperature_c: Optional[int] = None
    reasons: Tuple[str, ...] = ()  # throttle reasons seen during the point
    samples: int = 0
    reference: bool = False  # run by the layers suite for its peak (no matmul suite)

    @property
    def flops(self) -> int:
        return 2 * self.n**3

    @property
    def bytes_moved(self) -> int:
        """Each input read once and the output written once: 3 n^2 elements."""
        return 3 * self.n * self.n * ITEMSIZE.get(self.dtype, 4)


@dataclass(frozen=True)
class MemoryPoint:
    """One (device, op, n) of the memory suite: ``op`` over fp32 vectors of n elements.

    ``op``: "mul" is ``torch.mul(a, 1.2, out=c)`` (mli's ``a * 1.2`` into a preallocated output),
    "copy" is ``c.copy_(a)``. ``gbs`` = (bytes read + written) / time, from the median repeat.
    ``status``: "ok", "wrong" (the output is not what the op computes), "skipped" (the buffers
    do not fit: out of memory), "failed".
    """

    device: int
    op: str
    n: int
    status: str = "ok"
    bytes: int = 0  # one buffer: 4 n
    moved_bytes: int = 0  # read + written by one call: 8 n
    gbs: Optional[float] = None
    ms: Optional[float] = None
    burst_gbs: Optional[float] = None
    best_gbs: Optional[float] = None
    repeats_ms: Tuple[float, ...] = ()
    launches: int = 0
    warmup: int = 0
    started: Optional[float] = None
    ended: Optional[float] = None
    error: Optional[str] = None
    # filled by the host's analysis
    l2_resident: Optional[bool] = None  # both buffers fit in the L2 (None: L2 size unknown, CPU)
    datasheet_gbs: Optional[float] = None
    efficiency: Optional[float] = None  # gbs / datasheet_gbs (L2-resident points may exceed 1)
    sm_clock_mhz: Optional[int] = None
    mem_clock_mhz: Optional[int] = None
    power_w: Optional[float] = None
    temperature_c: Optional[int] = None
    reasons: Tuple[str, ...] = ()
    samples: int = 0


@dataclass(frozen=True)
class LayerPoint:
    """One (device, layer, dtype, attention, mode, batch, seq) of the layers suite.

    ``attention``: "eager" (softmax(Q K^T) V from matmuls) or "sdpa"; ``mode``: "fwd" (under
    no_grad) or "fwd+bwd". ``flops`` is the analytic count (mli's convention, docs/bench.md);
    ``kernel`` the attention kernel that ran: "eager", or for SDPA "flash", "efficient",
    "cudnn", "math", "unknown" (``kernel_how`` says how it was found out). ``ops`` and
    ``other_bytes`` come from one call under a counting dispatch mode: kernels launched
    (about), and bytes read and written by the operations that are not products.
    """

    device: int
    layer: str
    dtype: str
    attention: str
    mode: str
    batch: int
    seq: int
    status: str = "ok"  # ok, wrong (NaN/Inf), skipped (out of memory, too slow), failed
    flops: float = 0.0
    tflops: Optional[float] = None
    ms: Optional[float] = None  # median time of one call
    burst_tflops: Optional[float] = None
    best_tflops: Optional[float] = None
    repeats_ms: Tuple[float, ...] = ()
    launches: int = 0
    warmup: int = 0
    issue_ms: Optional[float] = None  # the CPU's time to issue one call onto an idle queue (GPU)
    heat_ms: Optional[float] = None  # calls run untimed right before the repeats (power cap)
    kernel: Optional[str] = None
    kernel_how: Optional[str] = None
    kernel_choice: Optional[str] = None  # torch._fused_sdp_choice, where it differs from what ran
    tf32: Optional[bool] = None  # the TF32 matmul setting read back during the point
    ops: Optional[int] = None
    matmul_ops: Optional[int] = None
    other_bytes: Optional[int] = None
    profile_error: Optional[str] = None
    started: Optional[float] = None
    ended: Optional[float] = None
    error: Optional[str] = None
    # filled by the host's analysis
    matmul_tflops: Optional[float] = None  # the matmul rate of this dtype measured in the same run
    of_matmul: Optional[float] = None  # tflops / matmul_tflops
    peak_tflops: Optional[float] = None  # datasheet dense peak of this dtype
    efficiency: Optional[float] = None  # tflops / peak_tflops
    matmul_share: Optional[float] = None  # the products at matmul_tflops, as a share of the time
    memory_share: Optional[float] = None  # other_bytes at the measured (else datasheet) bandwidth
    launch_share: Optional[float] = None  # ops x the launch cost
    bound: Optional[str] = None  # "compute", "memory", "launch"; None: cannot tell
    bound_why: Optional[str] = None
    sm_clock_mhz: Optional[int] = None
    power_w: Optional[float] = None
    temperature_c: Optional[int] = None
    reasons: Tuple[str, ...] = ()
    samples: int = 0


@dataclass(frozen=True)
class FlopCheck:
    """FlopCounterMode's count of one call of a layer beside envdoctor's analytic count.

    ``attention_fwd`` is the analytic share of the attention scores and values (4 b s^2 h per
    attention): what FlopCounterMode misses where it has no formula for the kernel (SDPA on the
    CPU), and what the flash backward recomputes.
    """

    device: int
    layer: str
    attention: str
    dtype: str
    batch: int
    seq: int
    analytic_fwd: float
    analytic_fwd_bwd: float
    attention_fwd: Optional[float] = None
    counted_fwd: Optional[float] = None
    counted_fwd_bwd: Optional[float] = None
    kernel: Optional[str] = None
    error: Optional[str] = None


@dataclass(frozen=True)
class Verdict:
    """One suite's verdict on one device.

    matmul (Tensor Cores) ``state``: "confirmed", "not_delivering" (exit 1), "absent" (the
    architecture has none), or "none" (no verdict possible: CPU, fp16 not measured, sizes too
    small). memory: "confirmed" (at least 80% of the datasheet), "below" (a warning),
    "not_delivering" (under 65%: exit 1), "none" (CPU, no datasheet, nothing past the L2).
    layers: "none" (a summary, no judgement) or "not_delivering" (a layer gave NaN/Inf).
    """

    device: int
    state: Annotated[str, Json(enum=["confirmed", "below", "not_delivering", "absent", "none"])]
    line: str  # "Tensor Cores confirmed: fp16 runs 12.4x fp32"
    why: Tuple[str, ...] = ()
    ratio: Optional[float] = None  # matmul: fp16 / fp32; memory: measured / datasheet
    suite: str = "matmul"
    code: Optional[str] = None  # the finding code where the verdict is one ("ED605")


@dataclass(frozen=True)
class Regression:
    """One point slower than the baseline by more than the tolerance (``compare_bench``)."""

    device: int
    dtype: str
    n: int
    baseline_tflops: Optional[float]
    current_tflops: Optional[float]  # None: the point failed or is missing now
    change_pct: Optional[float]  # -14.2 means 14.2% slower
    context: Tuple[str, ...] = ()  # clocks, power and throttling then and now


@dataclass(frozen=True)
class BenchResult:
    """One ``envdoctor bench`` run: the document ``--json`` prints."""

    #: the keys every bench document has had since the first (a snapshot keeps one, verify reads it
    #: back; the other fields may be missing from one written before them: from_data fills them)
    json_required = (
        "schema",
        "python",
        "torch_version",
        "dtypes",
        "sizes",
        "devices",
        "points",
        "samples",
        "verdicts",
        "error",
    )

    schema: str = SCHEMA
    python: Optional[str] = None  # the target interpreter
    chosen_by: Optional[str] = None  # "--python", "python3 on PATH", "envdoctor's own"
    python_version: Optional[str] = None
    torch_version: Optional[str] = None  # "2.11.0+cu130"
    torch_cuda: Optional[str] = None  # "13.0"; None on a CPU-only build
    cuda_error: Optional[str] = None  # why torch could not use a GPU
    nvml_gpus: Optional[int] = None  # GPUs NVML sees (None: NVML not readable)
    dtypes: Tuple[str, ...] = ()
    sizes: Tuple[int, ...] = ()
    budget_s: Optional[float] = None  # measurement seconds per device
    import_s: Optional[float] = None  # import torch in the child
    init_s: Optional[float] = None  # CUDA start in the child
    measure_s: Optional[float] = None
    wall_s: Optional[float] = None  # the child from start to exit, as the host saw it
    devices: Tuple[BenchDevice, ...] = ()
    points: Tuple[BenchPoint, ...] = ()
    samples: Tuple[NvmlSample, ...] = ()
    sampling: Optional[str] = None  # "nvml every 50 ms (instant power)", or why none
    verdicts: Tuple[Verdict, ...] = ()
    outliers: Tuple[str, ...] = ()  # --device all: GPUs slower than their siblings
    notes: Tuple[str, ...] = ()
    created_at: Optional[str] = None  # ISO 8601, UTC
    error: Optional[ProbeError] = None  # the run as a whole failed (no torch, hang, crash)
    # added with the memory and layers suites
    suites: Tuple[str, ...] = ("matmul",)
    memory_sizes: Tuple[int, ...] = ()
    memory_budget_s: Optional[float] = None
    layers_budget_s: Optional[float] = None
    suite_s: Dict[str, float] = field(default_factory=dict)  # measurement seconds per suite (all devices)
    memory_points: Tuple[MemoryPoint, ...] = ()
    layer_points: Tuple[LayerPoint, ...] = ()
    reference_points: Tuple[BenchPoint, ...] = ()  # matmul run by the layers suite for its peak
    flop_checks: Tuple[FlopCheck, ...] = ()
    findings: Tuple[Finding, ...] = ()

    @property
    def failed_points(self) -> Tuple[BenchPoint, ...]:
        """Matmul points that failed or were wrong (what ``verify`` and the exit code count)."""
        return tuple(p for p in self.points if p.status != "ok")

    @property
    def broken_points(self) -> Tuple[Any, ...]:
        """Points of every suite that were wrong or failed; a point skipped for lack of memory is not."""
        suites: Tuple[Any, ...] = (*self.memory_points, *self.layer_points)
        return self.failed_points + tuple(p for p in suites if p.status in ("wrong", "failed"))

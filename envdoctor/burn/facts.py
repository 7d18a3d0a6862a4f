"""What ``envdoctor burn`` saw: per GPU the load's rates and checks, the NVML samples, the counters,
the Xid events, and the verdict. ``--json`` prints :class:`BurnResult` (``"envdoctor.burn/1"``).

The child (``envdoctor/burn/target/burn.py``, in the target interpreter) fills the phases and the memory
test; envdoctor's own process fills the samples, counters and Xids (NVML); the analysis
(:mod:`envdoctor.burn.analysis`) the figures; the rules (:mod:`envdoctor.burn.rules`) the verdict.

>>> Interval("bf16", 10.0, 10.5, products=300, gemm_s=0.4995, tflops=660.4).products
300
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.findings import Finding

#: The version of the ``--json`` document; bump it when a field changes meaning or goes away.
SCHEMA = "envdoctor.burn/1"
#: What the load can run: bf16/fp16 (fp32 accumulate), tf32 (fp32 storage on Tensor Cores), fp32, fp64.
DTYPES: Tuple[str, ...] = ("bf16", "fp16", "tf32", "fp32", "fp64")
DEFAULT_SECONDS = 60.0
MIN_SECONDS = 5.0
MAX_SECONDS = 24 * 3600.0
#: n of the n x n products on a GPU and on the CPU
GPU_N = 8192
CPU_N = 256


@dataclass(frozen=True)
class Interval:
    """About half a second of one dtype's load on one device (``start``/``end``: time.time())."""

    dtype: str
    start: float
    end: float
    products: int = 0
    gemm_s: float = 0.0  # time inside the products (CUDA events); compares not counted
    tflops: Optional[float] = None  # 2 n^3 products / gemm_s
    fastest_tflops: Optional[float] = None  # the fastest single product of the interval
    mismatches: int = 0  # elements that differed from the first product
    bad_count: int = 0  # products with at least one differing element
    bad_products: Tuple[int, ...] = ()  # their numbers within the dtype's load (the first few)
    bitwise_differences: int = 0  # CPU: products within the tolerance but not bit-equal


@dataclass(frozen=True)
class Phase:
    """One dtype's load on one device.

    ``status``: "ok"; "miscompare" (a product differed from the first); "wrong" (the first
    product failed the float64 check); "failed" (an error such as CUDA out of memory or an
    illegal address); "stopped" (Ctrl-C before its time was up); "missing" (the child died
    before it finished, only its intervals are known).
    """

    dtype: str
    n: int
    status: str = "ok"
    compare: str = "bitwise"  # "bitwise" (GPU) or "tolerance" (CPU)
    tolerance: Optional[str] = None  # the rule, in words, when compare is "tolerance"
    products: int = 0
    mismatches: int = 0
    bad_products: int = 0
    first_bad_product: Optional[int] = None
    bitwise_differences: int = 0
    ref_error: Optional[float] = None  # ||c0 - ref|| / ||ref|| on a slice, ref in float64
    ref_bound: Optional[float] = None
    tf32: Optional[bool] = None  # TF32 read back during an fp32/tf32 load
    started: Optional[float] = None
    ended: Optional[float] = None
    error: Optional[str] = None
    intervals: Tuple[Interval, ...] = ()
    # filled by the analysis
    sustained_tflops: Optional[float] = None  # median interval rate after the warm-up
    burst_tflops: Optional[float] = None  # the fastest single product
    warmup_s: Optional[float] = None
    expected_tflops: Optional[float] = None  # data/health.toml, for this GPU model, dtype and n
    expected_power_w: Optional[float] = None  # the power limit the expected figure was measured at
    expected_source: Optional[str] = None
    expected_unconfirmed: bool = False


@dataclass(frozen=True)
class MemPass:
    """One pass of the memory pattern test: every word written, then every word read back."""

    pattern: str  # "address", "inverse address", "0x55555555", "0xaaaaaaaa", "random"
    bytes: int
    mismatches: int  # 32-bit words that read back wrong
    seconds: float = 0.0
    first_bad: Optional[int] = None  # byte offset (in the tested memory) of the first wrong word


@dataclass(frozen=True)
class MemTest:
    """``status``: "ok", "mismatch", "failed", "stopped", "skipped" (``error`` says why)."""

    status: str
    bytes: int = 0
    free_bytes: Optional[int] = None  # free GPU memory before the test
    total_bytes: Optional[int] = None
    passes: Tuple[MemPass, ...] = ()
    mismatches: int = 0
    seconds: float = 0.0
    error: Optional[str] = None
    note: Optional[str] = None


@dataclass(frozen=True)
class Sample:
    """One NVML reading of one GPU, by envdoctor's own process (``t``: time.time())."""

    t: float
    temperature_c: Optional[int] = None
    memory_temperature_c: Optional[int] = None  # None where the GPU does not report it
    power_w: Optional[float] = None
    sm_clock_mhz: Optional[int] = None
    mem_clock_mhz: Optional[int] = None
    reasons_mask: Optional[int] = None  # clock-event (throttle) reasons, NVML's bits
    reasons: Tuple[str, ...] = ()  # the same, by name ("sw_power_cap", ...)
    fault: bool = False  # a reason other than idle, the power cap or a setting
    utilization_pct: Optional[int] = None
    energy_j: Optional[float] = None  # the GPU's energy counter since the driver loaded


@dataclass(frozen=True)
class Counters:
    """Error and violation counters of one GPU (since the driver loaded), or their change over the
    run. None: the GPU does not report it (``unsupported`` names those)."""

    ecc_corrected: Optional[int] = None  # volatile ECC counts
    ecc_uncorrected: Optional[int] = None
    remap_correctable: Optional[int] = None  # rows remapped for correctable / uncorrectable errors
    remap_uncorrectable: Optional[int] = None
    remap_pending: Optional[int] = None  # 1: a remap waits for a GPU reset
    remap_failure: Optional[int] = None  # 1: a row could not be remapped
    pcie_replay: Optional[int] = None
    power_violation_ns: Optional[int] = None  # time held back by the power limit
    thermal_violation_ns: Optional[int] = None  # time held back by temperature
    nvlink_active: Optional[int] = None  # active NVLinks; None: none reported
    nvlink_replay: Optional[int] = None  # summed over the links
    nvlink_recovery: Optional[int] = None
    nvlink_crc_flit: Optional[int] = None
    nvlink_crc_data: Optional[int] = None
    unsupported: Tuple[str, ...] = ()


@dataclass(frozen=True)
class XidSeen:
    """One Xid event NVML delivered for the GPU during the run, with its meaning from data/xid.toml."""

    t: float
    xid: int
    severity: str = "warning"  # "critical", "warning", "app", "info"; unknown codes: warning
    meaning: Optional[str] = None
    action: Optional[str] = None
    mnemonic: Optional[str] = None


@dataclass(frozen=True)
class ChildOutcome:
    """How the GPU's child process ended: ``state`` "ok", "hung" (silent past the idle limit),
    "died" (a signal, an exit status, no answer), "failed" (it answered with an error) or "stopped"."""

    state: str
    message: Optional[str] = None
    stage: Optional[str] = None  # the step it was in
    seconds: float = 0.0
    returncode: Optional[int] = None
    stderr: str = ""


@dataclass(frozen=True)
class Summary:
    """The figures a person reads first, from the samples taken under load."""

    load_s: Optional[float] = None
    samples: int = 0  # samples under load
    temperature_max_c: Optional[int] = None
    temperature_steady_c: Optional[float] = None  # median over the last half of the load
    memory_temperature_max_c: Optional[int] = None
    power_median_w: Optional[float] = None
    power_max_w: Optional[float] = None
    sm_clock_median_mhz: Optional[float] = None
    sm_clock_min_mhz: Optional[int] = None
    sm_clock_max_mhz: Optional[int] = None
    mem_clock_median_mhz: Optional[float] = None
    utilization_median_pct: Optional[float] = None
    energy_j: Optional[float] = None  # used over the whole run (first to last sample)
    reasons: Dict[str, int] = field(default_factory=dict)  # reason -> samples under load that show it
    fault_samples: int = 0  # samples under load with a fault reason
    fault_share: Optional[float] = None  # their share of the samples under load


@dataclass(frozen=True)
class BurnGpu:
    """One device burned (one child): what it is, what it did, what NVML saw, the verdict.

    ``verdict``: "OK", "FAULTY" (an error finding) or "NONE" (a CPU run: no GPU verdict).
    """

    index: int  # torch's device index (0 for the CPU)
    kind: str = "cuda"  # "cuda" or "cpu"
    name: Optional[str] = None
    capability: Optional[str] = None
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    memory_bytes: Optional[int] = None
    multiprocessors: Optional[int] = None
    nvml_index: Optional[int] = None
    power_limit_w: Optional[float] = None
    max_sm_clock_mhz: Optional[int] = None
    max_mem_clock_mhz: Optional[int] = None
    slowdown_c: Optional[int] = None  # NVML temperature thresholds
    shutdown_c: Optional[int] = None
    gpu_max_c: Optional[int] = None
    mem_max_c: Optional[int] = None
    skipped: Dict[str, str] = field(default_factory=dict)  # dtype -> why it was not loaded
    phases: Tuple[Phase, ...] = ()
    memtest: Optional[MemTest] = None
    samples: Tuple[Sample, ...] = ()
    counters_start: Optional[Counters] = None
    counters_end: Optional[Counters] = None
    counter_deltas: Optional[Counters] = None
    xids: Tuple[XidSeen, ...] = ()
    child: Optional[ChildOutcome] = None
    summary: Optional[Summary] = None
    verdict: str = "NONE"
    findings: Tuple[Finding, ...] = ()
    notes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class BurnResult:
    """One ``envdoctor burn`` run: the document ``--json`` prints."""

    schema: str = SCHEMA
    python: Optional[str] = None
    chosen_by: Optional[str] = None
    python_version: Optional[str] = None
    torch_version: Optional[str] = None
    torch_cuda: Optional[str] = None
    cpu_run: bool = False  # no GPU: the load ran on the CPU, no GPU-health verdict
    seconds: float = DEFAULT_SECONDS  # load seconds asked for, per device
    device: str = "all"  # as asked: "all" or an index
    dtypes: Tuple[str, ...] = ()  # as asked; () = the default plan
    memtest_s: Optional[float] = None  # the memory test's time limit
    created_at: Optional[str] = None
    wall_s: Optional[float] = None  # from the first NVML reading to the last
    interrupted: bool = False  # Ctrl-C: what ran is reported
    sample_interval_s: Optional[float] = None
    sampling: Optional[str] = None  # what NVML sampled, or why nothing
    xid_watch: Optional[str] = None  # "watching N GPUs", or why not
    gpus: Tuple[BurnGpu, ...] = ()
    findings: Tuple[Finding, ...] = ()  # about the run, not one GPU (e.g. an Xid of a GPU not burned)
    notes: Tuple[str, ...] = ()
    error: Optional[ProbeError] = None  # the run could not start (no torch, bad --device, ...)

    @property
    def faulty(self) -> Tuple[BurnGpu, ...]:
        return tuple(g for g in self.gpus if g.verdict == "FAULTY")

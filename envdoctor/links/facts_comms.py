"""What ``envdoctor comms`` measured: per collective and size the time and bandwidths, per GPU pair
the one-way copy bandwidth, host<->GPU copies, and how each rank ended. The versioned document
``envdoctor.comms/1`` is ``to_data`` of :class:`CommsResult` (plus its findings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from envdoctor.facts.base import ProbeError

SCHEMA = "envdoctor.comms/1"


@dataclass(frozen=True)
class CommsPoint:
    """One collective at one size. ``bytes`` is nccl-tests' S (see envdoctor.links.plan.SIZE_MEANING)."""

    collective: str
    bytes: int
    count: int = 0  # float32 elements of each rank's input
    dtype: str = "float32"
    status: str = "ok"  # ok, skipped, failed
    reason: Optional[str] = None
    warmup: int = 0
    iters: int = 0
    time_us: Optional[float] = None  # per call, averaged over ranks (nccl-tests -a 1)
    time_max_us: Optional[float] = None  # the slowest rank's
    algbw_gbps: Optional[float] = None  # S / time, decimal GB/s
    busbw_gbps: Optional[float] = None  # algbw x nccl-tests' factor
    wrong: Optional[int] = None  # wrong elements over all ranks (0: the result was right)
    algo: Optional[str] = None  # what NCCL said it ran: Ring, Tree, NVLS, ...
    proto: Optional[str] = None  # LL, LL128, Simple
    ratio: Optional[float] = None  # busbw / expected peak of the slowest path


@dataclass(frozen=True)
class PairPoint:
    """One-way copy from rank ``src``'s GPU to rank ``dst``'s (send/recv)."""

    src: int
    dst: int
    bytes: int
    iters: int
    gbps: Optional[float] = None
    wrong: int = 0
    path: Optional[str] = None  # "NV18", "PHB", ... from the topology
    expected_gbps: Optional[float] = None
    ratio: Optional[float] = None


@dataclass(frozen=True)
class HostCopy:
    """Pinned host memory to the GPU (h2d) or back (d2h)."""

    direction: str
    bytes: int
    iters: int
    gbps: Optional[float] = None
    expected_gbps: Optional[float] = None  # the GPU's PCIe link, one direction
    ratio: Optional[float] = None


@dataclass(frozen=True)
class RankOutcome:
    rank: int
    status: str  # ok, failed (an error it reported), hung, died, stopped
    local_rank: Optional[int] = None
    host: Optional[str] = None
    device: Optional[str] = None  # "cuda:1 NVIDIA H200" or "CPU"
    gpu: Optional[int] = None  # the NVML index of its GPU, where known
    stage: Optional[str] = None  # the last step it announced
    message: Optional[str] = None
    seconds: Optional[float] = None


@dataclass(frozen=True)
class Expected:
    """What the links should carry: the slowest path between the GPUs used, from data/links.toml."""

    peak_gbps: Optional[float] = None  # one direction
    path: Optional[str] = None  # "NV18", "PCIe Gen4 x16", ...
    basis: Optional[str] = None
    kind: Optional[str] = None  # nvlink or pcie
    achievable_fraction: Optional[float] = None
    achievable_gbps: Optional[float] = None
    published_gbps: Optional[float] = None  # a published all-reduce figure of the same setup, if any
    published_source: Optional[str] = None
    confirmed: bool = True
    gpu_name: Optional[str] = None  # the model of the GPUs used, when they are all one model
    note: Optional[str] = None


@dataclass(frozen=True)
class CommsResult:
    """One comms run, rank 0's view: what was measured between which GPUs, each figure against its
    expected peak (docs/links.md lists the keys and what 'bytes', nccl-tests' S, means per collective)."""

    #: the keys every comms document has had (recorded ones lack some later fields)
    json_required = (
        "schema",
        "backend",
        "launcher",
        "world_size",
        "points",
        "pairs",
        "host_copies",
        "ranks",
        "expected",
        "error",
    )

    schema: str = SCHEMA
    created_at: Optional[str] = None
    envdoctor_version: Optional[str] = None
    backend: str = "nccl"
    launcher: str = "envdoctor"  # envdoctor, torchrun, slurm, mpirun, env
    world_size: int = 0
    hosts: Tuple[str, ...] = ()
    python: Optional[str] = None
    torch_version: Optional[str] = None
    nccl_version: Optional[str] = None
    nccl_env: Dict[str, str] = field(default_factory=dict)  # NCCL_NVLS_ENABLE & co. as the ranks saw them
    nvls_available: Optional[bool] = None  # NCCL's INIT log: multicast available
    nvls_used: Optional[bool] = None  # a TUNING line said Algo NVLS (or NVLSTree)
    transports: Tuple[str, ...] = ()  # NCCL's channel transports: P2P/CUMEM, P2P/IPC, SHM, NET/IB ...
    nccl_log: Optional[str] = None  # where the algorithm came from, or why it is unknown
    method: Dict[str, str] = field(default_factory=dict)  # timing method, in words
    points: Tuple[CommsPoint, ...] = ()
    pairs: Tuple[PairPoint, ...] = ()
    host_copies: Tuple[HostCopy, ...] = ()
    host_copy_note: Optional[str] = None
    ranks: Tuple[RankOutcome, ...] = ()
    expected: Expected = field(default_factory=Expected)
    notes: Tuple[str, ...] = ()
    wall_s: Optional[float] = None
    error: Optional[ProbeError] = None  # the run as a whole could not start or finish

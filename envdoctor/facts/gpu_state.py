"""What is on each GPU right now (nvidia-smi's main screen): who holds it, what an operator changed.

Read through :mod:`envdoctor.nvml` by :mod:`envdoctor.probes.gpu_state`; judged by
:mod:`envdoctor.rules.gpu_state` (ED170-ED184) in ``check`` and ``diag``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from envdoctor.facts.base import ProbeError

#: NVML's compute modes (nvmlComputeMode_t); 1 (exclusive thread) was removed from NVML.
COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}


@dataclass(frozen=True)
class GpuProcess:
    """One process with a context on a GPU. ``visible`` is False where its pid is not in this pid
    namespace (another container, or the host seen from a container): its name is then unknown."""

    pid: int
    kind: str = "C"  # C compute, G graphics (nvidia-smi's Type)
    used_mib: Optional[int] = None  # None: the driver does not say
    name: Optional[str] = None  # /proc/PID/comm
    state: Optional[str] = None  # /proc/PID/stat's state letter: R, S, D, Z ...
    visible: bool = True


@dataclass(frozen=True)
class GpuState:
    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    bus_id: Optional[str] = None
    memory_used_mib: Optional[int] = None
    memory_total_mib: Optional[int] = None
    utilization_pct: Optional[int] = None
    memory_utilization_pct: Optional[int] = None
    processes: Tuple[GpuProcess, ...] = ()
    processes_error: Optional[str] = None  # why the process list could not be read
    own_processes: int = 0  # envdoctor's own children on the GPU (the torch probe), not counted
    compute_mode: Optional[str] = None  # default, exclusive_process, prohibited
    persistence_mode: Optional[bool] = None
    mig_mode: Optional[bool] = None  # current
    mig_pending: Optional[bool] = None  # after the next GPU reset
    mig_devices: Optional[int] = None  # MIG instances that exist
    power_limit_w: Optional[float] = None  # enforced
    default_power_limit_w: Optional[float] = None
    max_sm_clock_mhz: Optional[int] = None
    sm_clock_mhz: Optional[int] = None
    app_sm_clock_mhz: Optional[int] = None  # nvidia-smi -ac
    default_app_sm_clock_mhz: Optional[int] = None
    reasons_mask: Optional[int] = None  # clock-event reasons now
    retired_pages_pending: Optional[bool] = None
    remapped_pending: Optional[bool] = None  # row remapping waits for a GPU reset
    remapped_failure: Optional[bool] = None  # the remapping failed: the GPU needs service
    temperature_c: Optional[int] = None
    errors: Dict[str, str] = field(default_factory=dict)  # field -> why NVML did not answer


@dataclass(frozen=True)
class GpuStateFacts:
    gpus: Tuple[GpuState, ...] = ()
    source: Optional[str] = None  # "nvml"
    error: Optional[ProbeError] = None

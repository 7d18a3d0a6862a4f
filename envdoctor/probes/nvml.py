"""The driver and its GPUs as NVML reports them, for ``check`` (through :mod:`envdoctor.nvml`).

A missing library, an unloaded driver or a version mismatch is a fact (``NvmlView.error``);
a field a GPU does not support is ``None`` without dropping the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.gpu import GpuInfo
from envdoctor.nvml import IDENTITY, Reading, session_for


@dataclass(frozen=True)
class NvmlView:
    driver: Optional[str] = None  # nvmlSystemGetDriverVersion: "580.159.04"
    cuda: Optional[str] = None  # nvmlSystemGetCudaDriverVersion 13000 -> "13.0"
    nvml_version: Optional[str] = None
    gpus: Tuple[GpuInfo, ...] = ()
    error: Optional[ProbeError] = None


def gpu_info(r: Reading) -> GpuInfo:
    """One GPU's identity fields as the driver facts hold them."""
    memory = r.values.get("memory") or {}
    pci = r.values.get("pci") or {}
    return GpuInfo(
        index=r.index,
        name=r.values.get("name"),
        uuid=r.values.get("uuid"),
        compute_capability=r.values.get("compute_capability"),
        memory_total_mib=int(memory["total"] // (1024 * 1024)) if memory.get("total") else None,
        pci_bus_id=pci.get("bus_id"),
        serial=r.values.get("serial"),
        power_limit_w=r.values.get("power_limit_w") or None,
        max_sm_clock_mhz=r.values.get("max_sm_clock_mhz"),
        source="nvml",
    )


def read_nvml(nv: Any = None, shared: Any = None) -> NvmlView:
    """Everything NVML says about the driver and each GPU. ``nv`` defaults to ``pynvml``;
    ``shared``: the inspection's one session (``envdoctor.nvml.Shared``)."""
    with session_for(nv, shared) as session:
        if session.error is not None:
            return NvmlView(error=session.error)
        system = session.system().values
        gpus = tuple(gpu_info(r) for r in session.read_all(IDENTITY))
        return NvmlView(
            system.get("driver_version"),
            system.get("cuda_version"),
            system.get("nvml_version"),
            gpus,
            session.count_error,
        )

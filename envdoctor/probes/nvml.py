"""Read the driver through NVML (``pynvml`` from nvidia-ml-py, which loads libnvidia-ml.so.1).

A missing library, an unloaded driver or a version mismatch is a fact (``NvmlView.error``);
a field a GPU does not support is ``None`` without dropping the GPU (as gpustat does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.gpu import GpuInfo


@dataclass(frozen=True)
class NvmlView:
    driver: Optional[str] = None          # nvmlSystemGetDriverVersion: "580.159.04"
    cuda: Optional[str] = None            # nvmlSystemGetCudaDriverVersion 13000 -> "13.0"
    nvml_version: Optional[str] = None
    gpus: Tuple[GpuInfo, ...] = ()
    error: Optional[ProbeError] = None


def cuda_from_int(value: int) -> str:
    """NVML encodes CUDA 13.0 as 13000 and 12.8 as 12080."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _explain(nv: Any, exc: Exception) -> ProbeError:
    message = _text(exc) or type(exc).__name__
    value = getattr(exc, "value", None)
    if value == getattr(nv, "NVML_ERROR_LIBRARY_NOT_FOUND", 12):
        return ProbeError("not_found", "NVML library libnvidia-ml.so.1 not found "
                          "(the NVIDIA driver's user-space part is not installed)")
    if value == getattr(nv, "NVML_ERROR_DRIVER_NOT_LOADED", 9):
        return ProbeError("unavailable", "NVML: Driver Not Loaded (no NVIDIA kernel module is running)")
    if value == getattr(nv, "NVML_ERROR_NO_PERMISSION", 4):
        return ProbeError("permission", f"NVML: {message}")
    return ProbeError("exit_status", f"NVML: {message}")


def _field(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception:
        return None


def read_nvml(nv: Any = None) -> NvmlView:
    """Everything NVML says about the driver and each GPU. ``nv`` defaults to ``pynvml``."""
    if nv is None:
        try:
            import pynvml as nv  # type: ignore[no-redef]
        except ImportError:
            return NvmlView(error=ProbeError("not_found", "the NVML binding (nvidia-ml-py) is not installed"))
    try:
        nv.nvmlInit()
    except Exception as exc:
        return NvmlView(error=_explain(nv, exc))
    try:
        driver = _field(lambda: _text(nv.nvmlSystemGetDriverVersion()))
        cuda_int = _field(nv.nvmlSystemGetCudaDriverVersion)
        nvml_version = _field(lambda: _text(nv.nvmlSystemGetNVMLVersion()))
        try:
            count = nv.nvmlDeviceGetCount()
        except Exception as exc:
            return NvmlView(driver, cuda_from_int(cuda_int) if cuda_int else None, nvml_version,
                            error=_explain(nv, exc))
        gpus = []
        for i in range(count):
            h = _field(lambda: nv.nvmlDeviceGetHandleByIndex(i))
            if h is None:
                gpus.append(GpuInfo(index=i, source="nvml"))
                continue
            cap = _field(lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
            mem = _field(lambda: nv.nvmlDeviceGetMemoryInfo(h))
            pci = _field(lambda: nv.nvmlDeviceGetPciInfo(h))
            power = _field(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
            gpus.append(GpuInfo(
                index=i,
                name=_field(lambda: _text(nv.nvmlDeviceGetName(h))),
                uuid=_field(lambda: _text(nv.nvmlDeviceGetUUID(h))),
                compute_capability=f"{cap[0]}.{cap[1]}" if cap else None,
                memory_total_mib=int(mem.total // (1024 * 1024)) if mem is not None else None,
                pci_bus_id=_text(pci.busId) if pci is not None else None,
                serial=_field(lambda: _text(nv.nvmlDeviceGetSerial(h))),
                power_limit_w=power / 1000.0 if power else None,
                max_sm_clock_mhz=_field(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
                source="nvml",
            ))
        return NvmlView(driver, cuda_from_int(cuda_int) if cuda_int else None, nvml_version, tuple(gpus))
    finally:
        _field(nv.nvmlShutdown)

"""The one NVML wrapper: every part of envdoctor that reads NVML reads it here.

``pynvml`` (nvidia-ml-py) loads ``libnvidia-ml.so.1``. Errors are data at three levels, as
gpustat and nvitop do it: NVML that does not start is ``Session.error``; a GPU whose handle
fails is kept with the error; a field a GPU does not support, or that fails, is ``None`` in
``Reading.values`` and its reason is in ``Reading.errors`` ("not supported" is an answer, not a
failure). Only NVML's own errors, and the ``AttributeError``/``TypeError`` of a binding that is
older or newer than the call, are caught: anything else is a bug and is raised.

On the H200 (recorded in tests/fixtures/h200-driver580-cuda13/nvml.json)::

    >>> with Session() as nv:                                          # doctest: +SKIP
    ...     r = nv.read(0, ("name", "pcie", "power_limit_w", "numa_node"))
    >>> r.values["name"], r.values["pcie"], r.values["power_limit_w"]  # doctest: +SKIP
    ('NVIDIA H200', {'gen': 5, 'width': 16, 'max_gen': 5, 'max_width': 16, 'gpu_max_gen': 5}, 700.0)
    >>> r.errors["numa_node"]                                         # doctest: +SKIP
    'not supported'

Field names are the keys of :data:`FIELDS` (one GPU) and :data:`PAIR_FIELDS` (two GPUs).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar

from envdoctor.facts.base import ProbeError
from envdoctor.parse.visible import HIDES_ALL, visible_count

NOT_SUPPORTED = "not supported"

# --- which NVML GPU a torch device is ------------------------------------------------------------

PCI_ADDRESS = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


T = TypeVar("T")


def pci_address(bus_id: Optional[str]) -> Optional[str]:
    """NVML's ``"00000000:17:00.0"`` (or torch's, any case) -> sysfs's ``"0000:17:00.0"``; None for anything else."""
    if not bus_id:
        return None
    s = bus_id.strip().lower()
    if not PCI_ADDRESS.match(s):
        return None
    domain, rest = s.split(":", 1)
    return f"{int(domain, 16):04x}:{rest}"


@dataclass(frozen=True)
class NvmlGpu:
    """What tells one of NVML's GPUs from the others."""

    index: int
    uuid: Optional[str] = None
    bus_id: Optional[str] = None
    name: Optional[str] = None


def _uuid(value: Optional[str]) -> str:
    """``GPU-c7d3...`` and torch's ``c7d3...`` alike, lower case."""
    s = (value or "").strip().lower()
    return s[4:] if s.startswith("gpu-") else s


def match_device(
    uuid: Optional[str],
    bus_id: Optional[str],
    cuda_index: Optional[int],
    gpus: Sequence[NvmlGpu],
    env: Mapping[str, str],
) -> Optional[int]:
    """The NVML index of the torch device ``cuda:<cuda_index>`` that reports ``uuid`` and ``bus_id``
    (each may be None), or None where nothing says which it is. In this order:

    1. the UUID (with or without its ``GPU-`` prefix; a MIG instance's is not its GPU's);
    2. the PCI bus id;
    3. the index, as CUDA maps it: ``CUDA_VISIBLE_DEVICES`` picks the physical GPU (by index, or by
       UUID or a UUID's start, as CUDA reads it), and a physical index is NVML's index only where
       CUDA counts in PCI bus order as NVML does: ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, or CUDA's default
       ``FASTEST_FIRST`` on a machine of one GPU model (equally fast GPUs keep PCI bus order).

    >>> two = [NvmlGpu(0, "GPU-aa", "00000000:17:00.0", "NVIDIA H200"),
    ...        NvmlGpu(1, "GPU-bb", "00000000:2A:00.0", "NVIDIA L4")]
    >>> match_device("bb", None, 0, two, {}), match_device(None, "0000:17:00.0", 1, two, {})
    (1, 0)
    >>> match_device(None, None, 0, two, {"CUDA_VISIBLE_DEVICES": "1"}), match_device(None, None, 0, two,
    ...     {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    (None, 1)
    """
    if uuid and _uuid(uuid):
        found = [g.index for g in gpus if g.uuid and _uuid(g.uuid) == _uuid(uuid)]
        if len(found) == 1:
            return found[0]
    bus = pci_address(bus_id)
    if bus:
        found = [g.index for g in gpus if pci_address(g.bus_id) == bus]
        if len(found) == 1:
            return found[0]
    if cuda_index is None or cuda_index < 0 or not gpus:
        return None
    visible = env.get("CUDA_VISIBLE_DEVICES")
    physical = cuda_index
    if visible is not None:
        if visible.strip() in HIDES_ALL or cuda_index >= visible_count(visible, len(gpus)):
            return None
        entry = visible.split(",")[cuda_index].strip()
        if not (entry.isascii() and entry.isdigit()):  # a UUID or the start of one: CUDA's own match
            found = [g.index for g in gpus if g.uuid and _uuid(g.uuid).startswith(_uuid(entry))]
            return found[0] if len(found) == 1 else None
        physical = int(entry)
    one_model = len({g.name for g in gpus}) == 1 and gpus[0].name is not None
    if env.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST").strip() == "PCI_BUS_ID" or one_model or len(gpus) == 1:
        return physical if any(g.index == physical for g in gpus) else None
    return None


_NOT_SUPPORTED_CODES = (3,)  # NVML_ERROR_NOT_SUPPORTED
_INVALID_ARGUMENT = 2  # NVML_ERROR_INVALID_ARGUMENT: e.g. a link index past the last


def cuda_from_int(value: int) -> str:
    """NVML encodes CUDA 13.0 as 13000 and 12.8 as 12080.

    >>> cuda_from_int(13000), cuda_from_int(12080)
    ('13.0', '12.8')
    """
    return f"{value // 1000}.{(value % 1000) // 10}"


def text(value: Any) -> str:
    """NVML strings come as bytes from old bindings and str from new ones."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class Reading:
    """One GPU's (or one pair's) answers: ``values`` by field name, ``errors`` for the rest."""

    index: int
    values: Mapping[str, Any] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    time: float = 0.0  # time.time() when read

    def get(self, name: str, default: Any = None) -> Any:
        value = self.values.get(name)
        return default if value is None else value


@dataclass(frozen=True)
class XidEvent:
    """One XID (critical error) event NVML delivered for a GPU."""

    gpu: int  # NVML index
    xid: int
    time: float  # time.time() when envdoctor received it


# --- the fields -------------------------------------------------------------------------------
# Each takes (pynvml module, device handle) and returns plain Python data.


def _memory(nv: Any, h: Any) -> Dict[str, int]:
    m = nv.nvmlDeviceGetMemoryInfo(h)
    return {"total": int(m.total), "used": int(m.used), "free": int(m.free)}


def _pci(nv: Any, h: Any) -> Dict[str, Any]:
    p = nv.nvmlDeviceGetPciInfo(h)
    return {"bus_id": text(p.busId), "device_id": f"0x{(int(p.pciDeviceId) >> 16) & 0xFFFF:04x}"}


def _pcie(nv: Any, h: Any) -> Dict[str, Optional[int]]:
    """Current and maximum link generation and width (a card at Gen3 x8 in a Gen5 x16 slot)."""
    out: Dict[str, Optional[int]] = {}
    for key, name in (
        ("gen", "nvmlDeviceGetCurrPcieLinkGeneration"),
        ("width", "nvmlDeviceGetCurrPcieLinkWidth"),
        ("max_gen", "nvmlDeviceGetMaxPcieLinkGeneration"),
        ("max_width", "nvmlDeviceGetMaxPcieLinkWidth"),
        ("gpu_max_gen", "nvmlDeviceGetGpuMaxPcieLinkGeneration"),
    ):
        out[key] = _int(_optional(nv, name, h))
    if out["gen"] is None and out["width"] is None:
        raise _Unsupported()
    return out


def _power_limits(nv: Any, h: Any) -> Dict[str, Optional[float]]:
    lo_hi = _optional(nv, "nvmlDeviceGetPowerManagementLimitConstraints", h)
    default = _optional(nv, "nvmlDeviceGetPowerManagementDefaultLimit", h)
    return {
        "min_w": lo_hi[0] / 1000.0 if lo_hi else None,
        "max_w": lo_hi[1] / 1000.0 if lo_hi else None,
        "default_w": default / 1000.0 if default else None,
    }


def _thresholds(nv: Any, h: Any) -> Dict[str, Optional[int]]:
    kinds = {"shutdown": 0, "slowdown": 1, "mem_max": 2, "gpu_max": 3}
    out = {k: _int(_optional(nv, "nvmlDeviceGetTemperatureThreshold", h, v)) for k, v in kinds.items()}
    if all(v is None for v in out.values()):
        raise _Unsupported()
    return out


def _field_value(nv: Any, h: Any, field_id: int) -> float:
    v = nv.nvmlDeviceGetFieldValues(h, [field_id])[0]
    if int(v.nvmlReturn) != 0:
        raise _Unsupported() if int(v.nvmlReturn) in _NOT_SUPPORTED_CODES else nv.NVMLError(int(v.nvmlReturn))
    # nvmlValueType_t: 0 double, 1 uint, 2 ulong, 3 ulonglong, 4 slonglong, 5 sint, 6 ushort
    name = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    return float(getattr(v.value, name.get(int(v.valueType), "uiVal")))


def _reasons(nv: Any, h: Any) -> int:
    try:
        return int(nv.nvmlDeviceGetCurrentClocksEventReasons(h))
    except AttributeError:  # nvidia-ml-py older than 12.535
        return int(nv.nvmlDeviceGetCurrentClocksThrottleReasons(h))


def _ecc(nv: Any, h: Any, error_type: int) -> int:
    return int(nv.nvmlDeviceGetTotalEccErrors(h, error_type, 0))  # 0: NVML_VOLATILE_ECC


def _remapped(nv: Any, h: Any) -> Dict[str, int]:
    corr, unc, pending, failure = nv.nvmlDeviceGetRemappedRows(h)
    return {"correctable": int(corr), "uncorrectable": int(unc), "pending": int(pending), "failure": int(failure)}


def _violation_ns(nv: Any, h: Any, policy: int) -> int:
    return int(nv.nvmlDeviceGetViolationStatus(h, policy).violationTime)


def _pair_of_modes(call: Callable[[], Any]) -> Dict[str, int]:
    current, pending = call()
    return {"current": int(current), "pending": int(pending)}


def _cpu_affinity(nv: Any, h: Any) -> List[int]:
    """CPU ids the GPU is close to (``nvidia-smi topo -m``'s "CPU Affinity"), from 64-bit masks."""
    words = 16  # 1024 CPUs
    masks = nv.nvmlDeviceGetCpuAffinity(h, words)
    cpus = [w * 64 + b for w, mask in enumerate(list(masks)[:words]) for b in range(64) if int(mask) >> b & 1]
    if not cpus:
        raise _Unsupported()
    return cpus


def _numa_node(nv: Any, h: Any) -> int:
    """The host NUMA node nearest the GPU (``nvidia-smi topo -m``'s "NUMA Affinity"), from the
    memory-affinity mask; ``nvmlDeviceGetNumaNodeId`` is another thing (GPUs that are NUMA nodes)."""
    masks = nv.nvmlDeviceGetMemoryAffinity(h, 1, 0)  # 0: NVML_AFFINITY_SCOPE_NODE
    nodes = [w * 64 + b for w, mask in enumerate(list(masks)) for b in range(64) if int(mask) >> b & 1]
    if not nodes:
        raise _Unsupported()
    return nodes[0]


#: NVML's NVLink version numbers (NVML_NVLINK_VERSION_*) are not the generations: 6 is NVLink 4.0.
NVLINK_GENERATIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}


def _nvlinks(nv: Any, h: Any) -> List[Dict[str, Any]]:
    """Every NVLink the GPU has: active or not, version, the other end (PCI bus, GPU or switch), errors."""
    links: List[Dict[str, Any]] = []
    for link in range(int(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18))):
        try:
            active = bool(nv.nvmlDeviceGetNvLinkState(h, link))
        except nv.NVMLError as exc:
            if _code(exc) in _NOT_SUPPORTED_CODES + (_INVALID_ARGUMENT,):
                break
            raise
        entry: Dict[str, Any] = {"link": link, "active": active}
        version = _int(_optional(nv, "nvmlDeviceGetNvLinkVersion", h, link))
        entry["version"] = version
        entry["generation"] = NVLINK_GENERATIONS.get(version) if version is not None else None
        remote = _optional(nv, "nvmlDeviceGetNvLinkRemotePciInfo", h, link)
        entry["remote_bus_id"] = text(remote.busId) if remote is not None else None
        kind = _int(_optional(nv, "nvmlDeviceGetNvLinkRemoteDeviceType", h, link))  # 0 GPU, 1 IBM NPU, 2 switch
        entry["remote_type"] = {0: "gpu", 1: "ibmnpu", 2: "switch"}.get(kind) if kind is not None else None
        errors = {}
        for name, counter in (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3)):
            errors[name] = _int(_optional(nv, "nvmlDeviceGetNvLinkErrorCounter", h, link, counter))
        entry["errors"] = errors
        links.append(entry)
    if not links:
        raise _Unsupported()
    return links


def _fabric(nv: Any, h: Any) -> Dict[str, Any]:
    """NVSwitch fabric state on HGX boards (Fabric Manager): state and status of the GPU's probe.

    The struct is the caller's, passed by reference; the versioned call where the binding has it
    (its legacy struct has the wrong layout in nvidia-ml-py 12.550-13.590).
    """
    if hasattr(nv, "nvmlDeviceGetGpuFabricInfoV") and hasattr(nv, "c_nvmlGpuFabricInfoV_t"):
        info = nv.c_nvmlGpuFabricInfoV_t()
        nv.nvmlDeviceGetGpuFabricInfoV(h, ctypes.byref(info))
    else:
        info = nv.c_nvmlGpuFabricInfo_t()
        nv.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(info))
    states = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
    state = states.get(int(info.state), str(int(info.state)))
    if state == "not_supported":
        raise _Unsupported()
    return {"state": state, "status": int(info.status), "clique": int(info.cliqueId)}


def _processes(nv: Any, h: Any) -> List[Dict[str, Any]]:
    """Processes holding a context on the GPU (``nvidia-smi``'s Processes table): compute (C) and
    graphics (G). ``used`` is None where the driver does not say (Windows WDDM, some containers)."""
    out: List[Dict[str, Any]] = []
    seen = set()
    for kind, name in (("C", "nvmlDeviceGetComputeRunningProcesses"), ("G", "nvmlDeviceGetGraphicsRunningProcesses")):
        try:
            found = getattr(nv, name)(h)
        except nv.NVMLError as exc:
            if _code(exc) in _NOT_SUPPORTED_CODES and kind == "G":
                continue
            raise
        for p in found or ():
            pid = int(p.pid)
            if (pid, kind) in seen:
                continue
            seen.add((pid, kind))
            used = getattr(p, "usedGpuMemory", None)
            # NVML_VALUE_NOT_AVAILABLE is (unsigned long long) -1
            out.append(
                {"pid": pid, "kind": kind, "used": None if used is None or int(used) >= (1 << 63) else int(used)}
            )
    return out


def _mig_devices(nv: Any, h: Any) -> int:
    """MIG instances that exist on a GPU in MIG mode (``nvidia-smi mig -lgi``'s count)."""
    count = int(nv.nvmlDeviceGetMaxMigDeviceCount(h))
    found = 0
    for i in range(count):
        if _optional(nv, "nvmlDeviceGetMigDeviceHandleByIndex", h, i) is not None:
            found += 1
    return found


def _app_clocks(nv: Any, h: Any) -> Dict[str, Optional[int]]:
    """The applications clocks set (``nvidia-smi -ac``) and their defaults, SM and memory."""
    out = {
        "sm": _int(_optional(nv, "nvmlDeviceGetApplicationsClock", h, nv.NVML_CLOCK_SM)),
        "mem": _int(_optional(nv, "nvmlDeviceGetApplicationsClock", h, nv.NVML_CLOCK_MEM)),
        "default_sm": _int(_optional(nv, "nvmlDeviceGetDefaultApplicationsClock", h, nv.NVML_CLOCK_SM)),
        "default_mem": _int(_optional(nv, "nvmlDeviceGetDefaultApplicationsClock", h, nv.NVML_CLOCK_MEM)),
    }
    if all(v is None for v in out.values()):
        raise _Unsupported()
    return out


FIELDS: Dict[str, Callable[[Any, Any], Any]] = {
    # identity
    "name": lambda nv, h: text(nv.nvmlDeviceGetName(h)),
    "uuid": lambda nv, h: text(nv.nvmlDeviceGetUUID(h)),
    "serial": lambda nv, h: text(nv.nvmlDeviceGetSerial(h)),
    "pci": _pci,
    "compute_capability": lambda nv, h: "{}.{}".format(*nv.nvmlDeviceGetCudaComputeCapability(h)),
    "vbios": lambda nv, h: text(nv.nvmlDeviceGetVbiosVersion(h)),
    "memory": _memory,
    # limits
    "power_limit_w": lambda nv, h: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0,
    "power_limits": _power_limits,
    "max_sm_clock_mhz": lambda nv, h: int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
    "max_mem_clock_mhz": lambda nv, h: int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)),
    "temperature_thresholds": _thresholds,
    # modes and links
    "persistence_mode": lambda nv, h: bool(nv.nvmlDeviceGetPersistenceMode(h)),
    "compute_mode": lambda nv, h: int(nv.nvmlDeviceGetComputeMode(h)),
    "ecc_mode": lambda nv, h: _pair_of_modes(lambda: nv.nvmlDeviceGetEccMode(h)),
    "mig_mode": lambda nv, h: _pair_of_modes(lambda: nv.nvmlDeviceGetMigMode(h)),
    "pcie": _pcie,
    "numa_node": _numa_node,
    "gpu_numa_id": lambda nv, h: int(nv.nvmlDeviceGetNumaNodeId(h)),
    "cpu_affinity": _cpu_affinity,
    "nvlinks": _nvlinks,
    "fabric": _fabric,
    # what changes every second
    "temperature_c": lambda nv, h: int(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
    "memory_temperature_c": lambda nv, h: int(_field_value(nv, h, int(getattr(nv, "NVML_FI_DEV_MEMORY_TEMP", 82)))),
    "power_w": lambda nv, h: _field_value(nv, h, int(getattr(nv, "NVML_FI_DEV_POWER_INSTANT", 186))) / 1000.0,
    "average_power_w": lambda nv, h: nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
    "energy_j": lambda nv, h: nv.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0,
    "sm_clock_mhz": lambda nv, h: int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
    "mem_clock_mhz": lambda nv, h: int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
    "reasons_mask": _reasons,
    "utilization_pct": lambda nv, h: int(nv.nvmlDeviceGetUtilizationRates(h).gpu),
    "memory_utilization_pct": lambda nv, h: int(nv.nvmlDeviceGetUtilizationRates(h).memory),
    # live state (check and diag): who holds the GPU, what an operator changed
    "processes": _processes,
    "mig_devices": _mig_devices,
    "applications_clocks": _app_clocks,
    "retired_pages_pending": lambda nv, h: bool(int(nv.nvmlDeviceGetRetiredPagesPendingStatus(h))),
    # counters (burn takes their change over the run)
    "ecc_corrected": lambda nv, h: _ecc(nv, h, 0),
    "ecc_uncorrected": lambda nv, h: _ecc(nv, h, 1),
    "remapped_rows": _remapped,
    "pcie_replay": lambda nv, h: int(nv.nvmlDeviceGetPcieReplayCounter(h)),
    "power_violation_ns": lambda nv, h: _violation_ns(nv, h, 0),
    "thermal_violation_ns": lambda nv, h: _violation_ns(nv, h, 1),
}

#: What ``check`` shows per GPU.
IDENTITY = ("name", "uuid", "compute_capability", "memory", "pci", "serial", "power_limit_w", "max_sm_clock_mhz")
#: What a bench or burn sample holds.
SAMPLE = (
    "sm_clock_mhz",
    "mem_clock_mhz",
    "power_w",
    "temperature_c",
    "memory_temperature_c",
    "reasons_mask",
    "utilization_pct",
    "energy_j",
)
#: What the live state (``check`` and ``diag``) reads per GPU.
STATE = (
    "name",
    "uuid",
    "pci",
    "memory",
    "utilization_pct",
    "memory_utilization_pct",
    "processes",
    "compute_mode",
    "persistence_mode",
    "mig_mode",
    "mig_devices",
    "power_limit_w",
    "power_limits",
    "max_sm_clock_mhz",
    "sm_clock_mhz",
    "applications_clocks",
    "reasons_mask",
    "retired_pages_pending",
    "remapped_rows",
    "temperature_c",
)
#: The counters whose change over a run matters.
COUNTERS = (
    "ecc_corrected",
    "ecc_uncorrected",
    "remapped_rows",
    "pcie_replay",
    "power_violation_ns",
    "thermal_violation_ns",
)

_TOPOLOGY = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
_P2P = {
    0: "ok",
    1: "chipset not supported",
    2: "GPU not supported",
    3: "IOH topology not supported",
    4: "disabled by registry key",
    5: "not supported",
    6: "unknown",
}

PAIR_FIELDS: Dict[str, Callable[[Any, Any, Any], Any]] = {
    # nvidia-smi topo -m's legend for PCIe paths (NV# comes from the NVLinks' remote ends)
    "path": lambda nv, a, b: _TOPOLOGY.get(int(nv.nvmlDeviceGetTopologyCommonAncestor(a, b)), "?"),
    "p2p_read": lambda nv, a, b: _P2P.get(int(nv.nvmlDeviceGetP2PStatus(a, b, 0)), "unknown"),
    "p2p_write": lambda nv, a, b: _P2P.get(int(nv.nvmlDeviceGetP2PStatus(a, b, 1)), "unknown"),
    "p2p_nvlink": lambda nv, a, b: _P2P.get(int(nv.nvmlDeviceGetP2PStatus(a, b, 2)), "unknown"),
}


class _Unsupported(Exception):
    """A field the GPU answers for but does not have (an empty NVLink list, no thresholds)."""


def _code(exc: BaseException) -> Optional[int]:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _optional(nv: Any, function: str, *args: Any) -> Any:
    """``nv.<function>(*args)``: a sub-value that may be missing without failing its field."""
    try:
        return getattr(nv, function)(*args)
    except (nv.NVMLError, AttributeError, TypeError):
        return None


def _int(value: Any) -> Optional[int]:
    return None if value is None else int(value)


def _why(nv: Any, exc: BaseException) -> str:
    if isinstance(exc, _Unsupported) or _code(exc) in _NOT_SUPPORTED_CODES:
        return NOT_SUPPORTED
    if isinstance(exc, (AttributeError, TypeError)):
        return f"this nvidia-ml-py cannot ask it ({type(exc).__name__}: {exc})"
    return f"NVML: {text(exc) or type(exc).__name__}"


def explain_init(nv: Any, exc: BaseException) -> ProbeError:
    """nvmlInit failed: say why, in words a person can act on."""
    message = text(exc) or type(exc).__name__
    value = _code(exc)
    if value == int(getattr(nv, "NVML_ERROR_LIBRARY_NOT_FOUND", 12)):
        return ProbeError(
            "not_found",
            "NVML library libnvidia-ml.so.1 not found (the NVIDIA driver's user-space part is not installed)",
        )
    if value == int(getattr(nv, "NVML_ERROR_DRIVER_NOT_LOADED", 9)):
        return ProbeError("unavailable", "NVML: Driver Not Loaded (no NVIDIA kernel module is running)")
    if value == int(getattr(nv, "NVML_ERROR_NO_PERMISSION", 4)):
        return ProbeError("permission", f"NVML: {message}")
    return ProbeError("exit_status", f"NVML: {message}")


class Session:
    """One NVML session (``nvmlInit`` ... ``nvmlShutdown``). Never raises NVML's errors.

    ``nv`` is the pynvml module; tests pass a fake that replays recorded answers.
    """

    def __init__(self, nv: Any = None) -> None:
        self.error: Optional[ProbeError] = None
        self.count_error: Optional[ProbeError] = None
        self._handles: List[Any] = []
        self._handle_errors: Dict[int, str] = {}
        self._open = False
        self._lock = threading.Lock()
        self.nv: Any = nv
        if nv is None:
            try:
                import pynvml  # the one place envdoctor imports it
            except ImportError:
                self.error = ProbeError("not_found", "the NVML binding (nvidia-ml-py) is not installed")
                return
            self.nv = nv = pynvml
        try:
            nv.nvmlInit()
        except (nv.NVMLError, OSError, AttributeError) as exc:
            self.error = explain_init(nv, exc)
            return
        self._open = True
        try:
            count = int(nv.nvmlDeviceGetCount())
        except nv.NVMLError as exc:
            self.count_error = explain_init(nv, exc)
            count = 0
        for i in range(count):
            try:
                self._handles.append(nv.nvmlDeviceGetHandleByIndex(i))
            except nv.NVMLError as exc:
                self._handles.append(None)
                self._handle_errors[i] = _why(nv, exc)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._open:
            self._open = False
            try:
                self.nv.nvmlShutdown()
            except self.nv.NVMLError:
                pass

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def count(self) -> int:
        return len(self._handles)

    def system(self) -> Reading:
        """Driver version, the driver's CUDA and NVML's own version."""
        nv = self.nv
        calls: Dict[str, Callable[[], Any]] = {
            "driver_version": lambda: text(nv.nvmlSystemGetDriverVersion()),
            "cuda_version": lambda: cuda_from_int(int(nv.nvmlSystemGetCudaDriverVersion())),
            "nvml_version": lambda: text(nv.nvmlSystemGetNVMLVersion()),
        }
        return self._ask(-1, calls)

    def read(self, index: int, fields: Iterable[str]) -> Reading:
        """The named fields of GPU ``index``; an unknown name is a bug (KeyError)."""
        names = tuple(fields)
        handle = self._handles[index] if 0 <= index < len(self._handles) else None
        if handle is None:
            why = self._handle_errors.get(index, "no such GPU")
            return Reading(index, {n: None for n in names}, {n: why for n in names}, time.time())
        return self._ask(index, {n: functools.partial(FIELDS[n], self.nv, handle) for n in names})

    def read_all(self, fields: Iterable[str]) -> Tuple[Reading, ...]:
        names = tuple(fields)
        return tuple(self.read(i, names) for i in range(self.count))

    def pair(self, a: int, b: int, fields: Iterable[str] = tuple(PAIR_FIELDS)) -> Reading:
        """How GPU ``a`` reaches GPU ``b``: the PCIe path and P2P support. ``index`` is ``a``."""
        names = tuple(fields)
        ha = self._handles[a] if 0 <= a < self.count else None
        hb = self._handles[b] if 0 <= b < self.count else None
        if ha is None or hb is None:
            return Reading(a, {n: None for n in names}, {n: "no such GPU" for n in names}, time.time())
        return self._ask(a, {n: functools.partial(PAIR_FIELDS[n], self.nv, ha, hb) for n in names})

    def _ask(self, index: int, calls: Mapping[str, Callable[[], Any]]) -> Reading:
        values: Dict[str, Any] = {}
        errors: Dict[str, str] = {}
        now = time.time()
        for name, call in calls.items():
            try:
                with self._lock:
                    values[name] = call()
            except (self.nv.NVMLError, AttributeError, TypeError, _Unsupported) as exc:
                values[name] = None
                errors[name] = _why(self.nv, exc)
        return Reading(index, values, errors, now)

    def watch_xid(self, indices: Optional[Sequence[int]] = None) -> XidWatch:
        return XidWatch(self, range(self.count) if indices is None else indices)


class Shared:
    """One NVML session for the probes of one inspection (driver, GPU state, links): the first
    probe to ask opens it (``nvmlInit`` and the device handles, once), the others reuse it, and
    the inspection closes it after the last. Each probe used to open and shut down its own.

    >>> shared = Shared(nv)                                            # doctest: +SKIP
    >>> with session_for(nv, shared) as s: ...                         # doctest: +SKIP
    """

    def __init__(self, nv: Any = None) -> None:
        self.nv = nv
        self._lock = threading.Lock()
        self._session: Optional[Session] = None

    def get(self) -> Session:
        with self._lock:
            if self._session is None:
                self._session = Session(self.nv)
            return self._session

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()


#: The threads of :func:`started` given up on (no answer by their deadline), for :func:`settle`.
_LEFT: List[threading.Thread] = []
_LEFT_LOCK = threading.Lock()


def started(
    read: Callable[[], T],
    name: str,
    timeout: Optional[float] = None,
    late: Optional[Callable[[ProbeError], T]] = None,
) -> Callable[[], T]:
    """``read()`` in a daemon thread started now; the function returned waits for it -- until
    ``timeout`` seconds after the start, then ``late(error)`` with a "timeout" ProbeError (the
    thread is left behind, for :func:`settle`), or, without a timeout, until it ends (a read whose
    every command is bounded: nvidia-smi's). What ``read`` raised is raised by the wait, in the
    caller's thread. The one start-now, wait-later thread of the probes::

        wait = started(lambda: read_nvml(nv), "envdoctor-nvml", 5.0, lambda e: NvmlView(error=e))
        ...  # other work meanwhile
        view = wait()
    """
    if timeout is not None and late is None:
        raise ValueError("a timeout needs late(): what the wait answers when it passes")
    box: List[T] = []
    failure: List[BaseException] = []

    def work() -> None:
        try:
            box.append(read())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=work, name=name, daemon=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    worker.start()

    def wait() -> T:
        worker.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if failure:
            raise failure[0]
        if box:
            return box[0]
        assert late is not None and timeout is not None  # join(None) returns when the thread ended
        with _LEFT_LOCK:
            if worker not in _LEFT:
                _LEFT.append(worker)
        return late(ProbeError("timeout", f"NVML did not answer in {timeout:g} s"))

    return wait


def bounded(read: Callable[[], T], timeout: float, name: str, late: Callable[[ProbeError], T]) -> T:
    """``read()`` (a probe's NVML reads) in a daemon thread waited for ``timeout`` seconds, as every
    NVML probe runs (a call can hang in the driver): its answer; ``late(error)`` with a "timeout"
    ProbeError when it gave none in time (the thread is left behind, a daemon, for :func:`settle`);
    what it raised is raised here, in the caller's thread (:func:`started`, waited for at once)::

        bounded(lambda: read_state(ctx), ctx.timeout, "envdoctor-gpu-state", lambda e: GpuStateFacts(error=e))
    """
    return started(read, name, timeout, late)()


#: How long :func:`settle` waits, all threads together, for the ones given up on.
SETTLE_S = 0.5


def settle(limit: float = SETTLE_S) -> List[str]:
    """Wait at most ``limit`` seconds, all together, for the threads :func:`started` gave up on
    (an NVML call that blocked in the driver past its probe's timeout), each waited for once; the
    names of those still running, which the process's exit then ends (each is a daemon).
    ``clicore.finish`` calls it before it ends envdoctor's own process."""
    deadline = time.monotonic() + limit
    with _LEFT_LOCK:
        left, _LEFT[:] = list(_LEFT), []
    for worker in left:
        worker.join(max(0.0, deadline - time.monotonic()))
    return [w.name for w in left if w.is_alive()]


@contextlib.contextmanager
def session_for(nv: Any = None, shared: Optional[Shared] = None) -> Iterator[Session]:
    """The inspection's shared session (left open for the next probe), or a session of its own."""
    if shared is not None:
        yield shared.get()
        return
    with Session(nv) as session:
        yield session


class XidWatch:
    """XID (critical error) events of the GPUs, from an NVML event set. ``error`` says why not."""

    def __init__(self, session: Session, indices: Iterable[int]) -> None:
        self.session = session
        self.error: Optional[str] = None
        self._set: Any = None
        self._by_handle: Dict[int, int] = {}
        nv = session.nv
        if nv is None or not session.ok:
            self.error = "NVML is not available"
            return
        try:
            self._set = nv.nvmlEventSetCreate()
            for i in indices:
                h = session._handles[i]
                if h is None:
                    continue
                nv.nvmlDeviceRegisterEvents(h, int(getattr(nv, "nvmlEventTypeXidCriticalError", 8)), self._set)
                self._by_handle[id(h)] = i
        except (nv.NVMLError, AttributeError, TypeError) as exc:
            self.error = _why(nv, exc)

    def wait(self, timeout_ms: int) -> List[XidEvent]:
        """Events that arrive within ``timeout_ms`` (at most one per call, as NVML delivers them)."""
        if self._set is None or self.error:
            time.sleep(timeout_ms / 1000.0)
            return []
        nv = self.session.nv
        try:
            data = nv.nvmlEventSetWait_v2(self._set, timeout_ms)
        except nv.NVMLError as exc:
            if _code(exc) != int(getattr(nv, "NVML_ERROR_TIMEOUT", 10)):
                self.error = _why(nv, exc)
            return []
        gpu = self._index_of(data.device)
        return [XidEvent(gpu, int(data.eventData), time.time())]

    def _index_of(self, device: Any) -> int:
        found = self._by_handle.get(id(device))
        if found is not None:
            return found
        try:
            uuid = text(self.session.nv.nvmlDeviceGetUUID(device))
            for i, h in enumerate(self.session._handles):
                if h is not None and text(self.session.nv.nvmlDeviceGetUUID(h)) == uuid:
                    return i
        except (self.session.nv.NVMLError, AttributeError, TypeError):
            pass
        return -1

    def close(self) -> None:
        if self._set is not None:
            try:
                self.session.nv.nvmlEventSetFree(self._set)
            except (self.session.nv.NVMLError, AttributeError):
                pass
            self._set = None


class Sampler:
    """Reads ``fields`` of every GPU every ``interval`` seconds in a thread, until :meth:`stop`.

    ``readings`` holds one :class:`Reading` per GPU per tick. Instant power (``power_w``) falls
    back to the driver's averaged figure where a GPU does not report it; ``power_kind`` says which.
    """

    def __init__(self, session: Session, fields: Sequence[str], interval: float) -> None:
        self.session = session
        self.fields = tuple(fields)
        self.interval = interval
        self.readings: List[Reading] = []
        self.power_kind = "instant power"
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> bool:
        """False when there is nothing to sample (NVML not there, no GPU)."""
        if not self.session.ok or self.session.count == 0:
            return False
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="envdoctor-nvml-sampler", daemon=True)
        self._thread.start()
        return True

    def sample(self) -> None:
        fields = self.fields
        for i in range(self.session.count):
            r = self.session.read(i, fields)
            if "power_w" in fields and r.errors.get("power_w") == NOT_SUPPORTED:
                self.fields = fields = tuple("average_power_w" if f == "power_w" else f for f in fields)
                self.power_kind = "power averaged by the driver"
                r = self.session.read(i, fields)
            if "average_power_w" in r.values and "power_w" not in r.values:
                values = dict(r.values)
                values["power_w"] = values.pop("average_power_w")
                r = Reading(r.index, values, r.errors, r.time)
            self.readings.append(r)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=max(2.0, 2 * self.interval))
            self._thread = None
            self.sample()

"""Facts about NVIDIA devices on the PCI bus and the driver that runs them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from envdoctor.doctypes import ComputeCapability, DriverVersion
from envdoctor.facts.base import ProbeError


@dataclass(frozen=True)
class PciDevice:
    """One NVIDIA display/3D controller as ``/sys/bus/pci/devices/0000:00:06.0`` shows it."""

    address: str  # "0000:00:06.0"
    vendor_id: str  # "0x10de"
    device_id: str  # "0x2335"
    class_code: str  # "0x030200"
    subsystem_vendor_id: Optional[str] = None
    subsystem_device_id: Optional[str] = None
    name: Optional[str] = None  # "GH100 [H200 SXM 141GB]"
    name_source: Optional[str] = None  # "/usr/share/misc/pci.ids" or "envdoctor table"
    compute_capability: ComputeCapability = None  # from envdoctor's table, "9.0"
    architecture: Optional[str] = None  # "Hopper"
    kernel_driver: Optional[str] = None  # bound driver: "nvidia", "nouveau", "vfio-pci"


@dataclass(frozen=True)
class PciFacts:
    devices: tuple[PciDevice, ...] = ()
    source: Optional[str] = None  # "/sys/bus/pci/devices"
    json_required = ("error",)  # a saved report's area always says whether its probe failed
    error: Optional[ProbeError] = None


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as the driver reports it (NVML or nvidia-smi)."""

    index: int
    name: Optional[str] = None  # "NVIDIA H200"
    uuid: Optional[str] = None  # "GPU-c7d3a8fe-..."
    compute_capability: ComputeCapability = None  # "9.0"
    memory_total_mib: Optional[int] = None  # 143771
    pci_bus_id: Optional[str] = None  # "00000000:00:06.0"
    serial: Optional[str] = None
    power_limit_w: Optional[float] = None
    max_sm_clock_mhz: Optional[int] = None
    source: Optional[str] = None  # "nvml" or "nvidia-smi"


@dataclass(frozen=True)
class DriverFacts:
    """The kernel module, the user-space driver (NVML, nvidia-smi) and the GPUs they see.

    ``kernel_module_version`` comes from ``/sys/module/nvidia/version`` or
    ``/proc/driver/nvidia/version``; ``userspace_version`` from NVML or nvidia-smi. After a driver
    upgrade without a reboot the two differ.
    """

    kernel_module_version: DriverVersion = None  # "580.159.04"
    kernel_module_source: Optional[str] = None  # "/sys/module/nvidia/version"
    kernel_module_flavor: Optional[str] = None  # "open" or "proprietary"
    userspace_version: DriverVersion = None  # "580.159.04" (libnvidia-ml / nvidia-smi)
    driver_version: DriverVersion = None  # the best answer of all sources
    driver_cuda: Optional[str] = None  # "13.0": the highest CUDA this driver supports
    nvml_version: Optional[str] = None
    gpus: tuple[GpuInfo, ...] = ()
    sources: dict[str, str] = field(default_factory=dict)  # fact name -> source that answered
    nvml_error: Optional[ProbeError] = None
    smi_path: Optional[str] = None
    smi_error: Optional[ProbeError] = None
    smi_gpus: tuple[GpuInfo, ...] = ()  # nvidia-smi's own view, for the cross-check
    mismatch: bool = False  # kernel module != user-space library
    cuda_visible_devices: Optional[str] = None
    nvidia_visible_devices: Optional[str] = None
    dev_nodes: tuple[str, ...] = ()  # /dev/nvidia0, /dev/nvidiactl, ... present
    json_required = ("error",)  # a saved report's area always says whether its probe failed
    error: Optional[ProbeError] = None


def mismatch_evidence(d: DriverFacts, after_upgrade: bool = False) -> List[str]:
    """What shows a kernel module and a user-space driver of different versions (a driver upgraded
    without a reboot), for check's ED102 and verify's ED701: both versions with where each was read,
    and the mismatch as nvidia-smi or NVML said it. ``after_upgrade`` (verify) says which is old::

        ["kernel module 570.133.20 still loaded (/sys/module/nvidia/version)",
         "user-space driver 580.159.04 installed (/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.159.04)"]
    """
    out = []
    if d.kernel_module_version:
        out.append(
            f"kernel module {d.kernel_module_version}{' still loaded' if after_upgrade else ''} "
            f"({d.kernel_module_source})"
        )
    if d.userspace_version:
        out.append(
            f"user-space driver {d.userspace_version}{' installed' if after_upgrade else ''} "
            f"({d.sources.get('userspace_version')})"
        )
    out.extend(e.message for e in (d.smi_error, d.nvml_error) if e is not None and "mismatch" in e.message)
    return out


def driver_in_effect(d: DriverFacts) -> Optional[str]:
    """The driver version every command names for this machine (check's rules, recommend, verify).

    After an upgrade without a reboot (``mismatch``: the loaded kernel module is older than the
    installed user-space driver) it is the installed one, which the reboot the mismatch finding asks
    for loads; otherwise the probe's best answer (NVML, then nvidia-smi, then the kernel module),
    else whichever source answered.

    >>> driver_in_effect(DriverFacts(kernel_module_version="570.133.20", userspace_version="580.159.04",
    ...                              driver_version="570.133.20", mismatch=True))
    '580.159.04'
    """
    if d.mismatch and d.userspace_version:
        return d.userspace_version
    return d.driver_version or d.userspace_version or d.kernel_module_version

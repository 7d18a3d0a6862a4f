"""NVIDIA display/3D controllers on the PCI bus, read from ``/sys/bus/pci/devices``.

Works with no driver at all, so a fresh machine still shows its GPU::

    /sys/bus/pci/devices/0000:00:06.0/vendor  -> 0x10de
    /sys/bus/pci/devices/0000:00:06.0/device  -> 0x2335
    /sys/bus/pci/devices/0000:00:06.0/class   -> 0x030200
    /sys/bus/pci/devices/0000:00:06.0/driver  -> ../../../bus/pci/drivers/nvidia
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.gpu import PciDevice, PciFacts
from envdoctor.parse.pciids import nvidia_devices
from envdoctor.probes.context import Context

SYS_PCI = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"
PCI_IDS = ("/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids", "/usr/share/pci.ids")


def _field(ctx: Context, address: str, name: str) -> Optional[str]:
    text, _ = ctx.read(f"{SYS_PCI}/{address}/{name}")
    return text.strip().lower() if text else None


def _kernel_driver(ctx: Context, address: str) -> Optional[str]:
    try:
        return os.path.basename(os.readlink(ctx.path(f"{SYS_PCI}/{address}/driver")))
    except OSError:
        return None


def _pci_names(ctx: Context) -> Tuple[Dict[str, str], Optional[str]]:
    for path in PCI_IDS:
        text, _ = ctx.read(path, limit=8 << 20)
        if text:
            return nvidia_devices(text), path
    return {}, None


def gpu_addresses(ctx: Context) -> Tuple[str, ...]:
    """NVIDIA display/3D controllers on the PCI bus (vendor 0x10de, class 0x03xxxx) in bus order,
    which is NVML's and nvidia-smi's GPU order: ``("0000:00:06.0",)`` on the H200 VM."""
    out = []
    for address in sorted(ctx.listdir(SYS_PCI)):
        vendor = _field(ctx, address, "vendor")
        cls = _field(ctx, address, "class")
        if vendor == NVIDIA_VENDOR and cls and cls.startswith("0x03"):
            out.append(address)
    return tuple(out)


def probe(ctx: Context) -> PciFacts:
    if not ctx.exists(SYS_PCI):
        if ctx.exists("/sys/bus"):
            return PciFacts(source=SYS_PCI)  # a machine (or VM) without PCI: nothing to list
        return PciFacts(error=ProbeError("unavailable", f"{SYS_PCI} is not readable here (no sysfs)"))
    found: List[Tuple[str, str, str]] = [
        (address, _field(ctx, address, "device") or "unknown", _field(ctx, address, "class") or "")
        for address in gpu_addresses(ctx)
    ]
    if not found:
        return PciFacts(source=SYS_PCI)
    names, names_path = _pci_names(ctx)
    devices = []
    for address, device, cls in found:
        name = names.get(device)
        devices.append(
            PciDevice(
                address=address,
                vendor_id=NVIDIA_VENDOR,
                device_id=device,
                class_code=cls,
                subsystem_vendor_id=_field(ctx, address, "subsystem_vendor"),
                subsystem_device_id=_field(ctx, address, "subsystem_device"),
                name=name,
                name_source=names_path if name else None,
                kernel_driver=_kernel_driver(ctx, address),
            )
        )
    return PciFacts(devices=tuple(devices), source=SYS_PCI)

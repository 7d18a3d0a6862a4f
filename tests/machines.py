"""Machines rebuilt from recorded real output: a file root plus fake executables.

``h200(tmp_path)`` is the H200 of tests/fixtures/h200-driver580-cuda13 (driver 580.159.04, open
kernel module, one GPU); ``cpu_box(tmp_path)`` is the GPU-less CI machine. Tests change one thing
at a time (a hung nvidia-smi, a newer user-space library, ...) to make one finding fire.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Optional

from envdoctor.parse.nvidia_smi import QUERY_FIELDS
from envdoctor.probes.context import Context
from tests.fakenvml import FakeNvml as _RecordedNvml
from tests.fakes import FIXTURES, FakeBin, recorded

H200 = "h200-driver580-cuda13"
CPU = "cpu-nvcc13-docker-client"

UBUNTU_2404 = recorded(H200, "os.txt").split("Linux vm")[0]
DEBIAN_12 = recorded(CPU, "os.txt").split("Linux vm")[0]

SMI_MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.159\n"
SMI_NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n"
)


def write_tree(root: Path, files: Dict[str, str], links: Optional[Dict[str, str]] = None) -> Path:
    for path, text in files.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for path, target in (links or {}).items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, p)
    return root


class FakeNvml(_RecordedNvml):
    """The H200's recorded NVML answers (tests/fixtures/h200-driver580-cuda13/nvml.json), with no
    serial (as on the machine the driver tests were written for); ``fail=(code, text)`` makes
    nvmlInit fail as a real driver does, ``hang`` makes it sleep 30 s."""

    def __init__(self, fail: Optional[tuple] = None, gpus: int = 1, hang: bool = False) -> None:
        recorded = _RecordedNvml.recorded(H200, gpus=gpus)
        super().__init__(recorded.recording, init_error=fail, hang=30.0 if hang else 0.0)
        for i in range(gpus):
            self.set(i, "nvmlDeviceGetSerial", {"error": 3})
        if gpus == 1:
            self.set(0, "nvmlDeviceGetUUID", "GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4")


def h200_pci() -> Dict[str, str]:
    """/sys/bus/pci/devices/0000:00:06.0 as recorded on the H200 (tests/fixtures/.../sysfs-pci)."""
    folder = FIXTURES / H200 / "sysfs-pci" / "0000:00:06.0"
    return {
        f"/sys/bus/pci/devices/0000:00:06.0/{f.name}": f.read_text()
        for f in folder.iterdir()
        if f.name != "driver.link"
    }


def h200_files() -> Dict[str, str]:
    return {
        **h200_pci(),
        "/etc/os-release": UBUNTU_2404,
        "/proc/version": "Linux version 6.18.44-fc-v657-gpu (builder@sandboxing) (gcc (GCC) 15.3.0)\n",
        "/proc/sys/kernel/osrelease": "6.18.44-fc-v657-gpu\n",
        "/proc/modules": "nvidia_uvm 1 0 - Live 0x0\nnvidia 1 1 nvidia_uvm, Live 0x0\n",
        "/sys/module/nvidia/version": "580.159.04\n",
        "/proc/driver/nvidia/version": recorded(H200, "proc-driver.txt"),
        "/sys/bus/pci/devices/0000:00:00.0/vendor": "0x8086\n",
        "/sys/bus/pci/devices/0000:00:00.0/device": "0x0d57\n",
        "/sys/bus/pci/devices/0000:00:00.0/class": "0x060000\n",
        "/dev/nvidia0": "",
        "/dev/nvidiactl": "",
        "/dev/nvidia-uvm": "",
        "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04": "",
        "/.dockerenv": "",
    }


SMI_QUERY_ARGS = "--query-gpu=" + ",".join(QUERY_FIELDS) + " --format=csv,nounits"


def h200_smi(bin: FakeBin, query: Optional[str] = None, rc: int = 0, stderr: str = "") -> None:
    """nvidia-smi of the H200: the recorded query, --version and banner outputs."""
    bin.add(
        "nvidia-smi",
        stdout=recorded(H200, "nvidia-smi.txt"),
        by_args={
            SMI_QUERY_ARGS: (recorded(H200, "nvidia-smi-query.txt") if query is None else query, stderr, rc),
            "--version": (recorded(H200, "nvidia-smi-version.txt"), "", 0),
            "topo -m": (recorded(H200, "nvidia-smi-topo.txt"), "", 0),
        },
    )


def h200(
    tmp_path: Path,
    nvml: object = None,
    files: Optional[Dict[str, Optional[str]]] = None,
    env: Optional[Dict[str, str]] = None,
    timeout: float = 5.0,
) -> Context:
    """The H200 machine; ``files`` overrides (None deletes) entries of the recorded tree."""
    tree = h200_files()
    for k, v in (files or {}).items():
        if v is None:
            tree.pop(k, None)
        else:
            tree[k] = v
    lib = "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04"
    links = {
        "/sys/bus/pci/devices/0000:00:06.0/driver": (FIXTURES / H200 / "sysfs-pci/0000:00:06.0/driver.link")
        .read_text()
        .strip()
    }
    if lib in tree:
        links["/usr/local/nvidia/lib64/libnvidia-ml.so.1"] = "libnvidia-ml.so.580.159.04"
    root = write_tree(tmp_path / "root", tree, links)
    bin = FakeBin(tmp_path)
    h200_smi(bin)
    return Context(
        root=root, env=bin.env(**(env or {})), timeout=timeout, nvml=nvml if nvml is not None else FakeNvml()
    )


def cpu_box(tmp_path: Path, env: Optional[Dict[str, str]] = None) -> Context:
    """The GPU-less CI machine (tests/fixtures/cpu-nvcc13-docker-client)."""
    root = write_tree(
        tmp_path / "root",
        {
            "/etc/os-release": DEBIAN_12,
            "/proc/version": "Linux version 6.18.44-fc-v782 (gcc) #1 SMP\n",
            "/proc/modules": "virtio_net 1 0 - Live 0x0\n",
            "/sys/bus/pci/devices/0000:00:00.0/vendor": "0x8086\n",
            "/sys/bus/pci/devices/0000:00:00.0/device": "0x0d57\n",
            "/sys/bus/pci/devices/0000:00:00.0/class": "0x060000\n",
            "/sys/module/virtio/uevent": "",
            "/.dockerenv": "",
        },
    )
    bin = FakeBin(tmp_path)
    return Context(
        root=root, env=bin.env(**(env or {})), timeout=5.0, nvml=FakeNvml(fail=(12, "NVML Shared Library Not Found"))
    )

"""Typed, immutable rows of the compatibility table (one dataclass per kind of fact).

Every row carries ``source`` (a URL or ``owner/repo@commit:path``), ``checked`` (the date a person
or agent compared it with that source, ``"2026-11-29"`` or ``"2026-11"``), ``unconfirmed`` (the whole
row could not be verified) and ``unconfirmed_fields`` (single fields that could not be).

>>> CudaRelease("12.8.0", "570.26", "570.65", source="https://docs.nvidia.com/...", checked="2026-11-29").minor
'12.8'

The closed sets of strings a row field takes are the ``Literal`` types below; the loader checks a
value against them (``typing.get_args``), so a new value is added here once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Optional

from envdoctor.table.schema import parse_version

CudaKind = Literal["ga", "update", "rc", "preview"]
Designation = Literal["LTSB", "PB", "NFB"]  # long-term, production, new-feature branch
KernelModules = Literal["proprietary", "either", "open"]
VariantKind = Literal["cuda", "cpu", "rocm", "xpu"]
CondaStory = Literal["pytorch-channel", "conda-forge"]
MirrorKind = Literal["pep503", "find-links", "conda"]
DistroFamily = Literal["debian", "rhel", "fedora", "suse", "amazon"]
PackageManager = Literal["apt", "dnf", "zypper"]

#: A directory name of the wheel index: ``cu128``, ``cu92`` (torch < 1.8), ``cpu``, ``xpu``,
#: ``rocm6.3``, ``rocm5.4.2``. The one pattern for the table and the index client.
VARIANT_NAME = re.compile(r"^(cpu|xpu|cu\d{2,3}|rocm\d+(?:\.\d+){0,2})$")
#: A CUDA variant: ``cu128``.
CUDA_VARIANT = re.compile(r"^cu\d{2,3}$")


class Sourced:
    """The one base of every sourced row of every table file (data/*.toml: the compatibility
    table's rows, links.toml's, health.toml's and xid.toml's, extensions.toml's): whether the row,
    or one field of it, is confirmed against its source. Each row dataclass declares ``source``,
    ``checked``, ``unconfirmed``, ``unconfirmed_fields`` and ``note`` last (a dataclass base cannot
    hold fields with defaults before the row's own); ``table.schema.load_rows`` loads them all."""

    unconfirmed: bool
    unconfirmed_fields: tuple[str, ...]

    def confirmed(self, name: Optional[str] = None) -> bool:
        """``row.confirmed()``: the row as a whole; ``row.confirmed("tf32_tflops")``: that field.

        A field with its own source (``glibc`` with ``glibc_source``, ``datacenter`` with
        ``datacenter_source``) was checked against that source on its own: only
        ``unconfirmed_fields`` makes it doubtful, not the row-wide ``unconfirmed``.
        """
        if name is not None and getattr(self, f"{name}_source", None):
            return name not in self.unconfirmed_fields
        if self.unconfirmed:
            return False
        return name is None or name not in self.unconfirmed_fields


_Sourced = Sourced  # the name the rows below were written with


@dataclass(frozen=True)
class CudaRelease(_Sourced):
    """One CUDA toolkit release: "12.8.0" (12.8 GA) needs driver >= 570.26 on Linux."""

    version: str  # "12.8.1"
    min_driver_linux: str  # "570.124.06"
    min_driver_windows: Optional[str]  # "572.61"; None where NVIDIA says N/A (13.x)
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    kind: CudaKind = "ga"
    label: str = ""  # "12.8 Update 1", as NVIDIA names it
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None

    @property
    def minor(self) -> str:
        """ "12.8" for "12.8.1"."""
        major, minor = parse_version(self.version).release[:2]
        return f"{major}.{minor}"

    @property
    def major(self) -> int:
        return parse_version(self.version).release[0]


@dataclass(frozen=True)
class MinorCompat(_Sourced):
    """Minor-version compatibility of a CUDA major: 12.x apps run on >= 525.60.13, with limits."""

    major: int  # 12
    min_driver_linux: str  # "525.60.13"
    min_driver_windows: Optional[str]
    limitations: tuple[str, ...]  # what does not work below a release's own driver
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    below_driver: Optional[str] = None  # "580": the MVC row's upper bound (newer drivers: backward compat)
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class DriverBranch(_Sourced):
    """A data-center driver branch: R535 is the CUDA 12 long-term branch."""

    branch: str  # "535"
    designation: Designation
    cuda_major: int  # highest CUDA major without the forward-compat package
    end_of_life: Optional[str]  # "2026-06"
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class Architecture(_Sourced):
    """A compute capability: "8.6" is Ampere, sm_86, first compiled by CUDA 11.1."""

    cc: str  # "8.6"
    sm: str  # "sm_86"
    name: str  # "Ampere"
    first_cuda: str  # "11.1"
    dropped_cuda: Optional[str]  # "13.0" for Maxwell/Pascal/Volta
    min_driver_branch: Optional[str]  # "455": branch of first_cuda's minimum driver
    last_driver_branch: Optional[str]  # "580": last branch for a retired architecture
    tensor_cores: tuple[str, ...]  # ("tf32", "bf16", "fp16", "int8", "int4")
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    jetson: bool = False
    kernel_modules: KernelModules = "either"  # which flavour of NVIDIA's kernel modules drives it
    kernel_modules_source: Optional[str] = None
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None

    @property
    def cc_tuple(self) -> tuple[int, int]:
        major, minor = self.cc.split(".")
        return int(major), int(minor)


@dataclass(frozen=True)
class GpuSeries(_Sourced):
    """What a GeForce name implies when no model row names it: "rtx 40" (RTX 40xx) is 8.9; a
    model row like "rtx 2050" (an Ampere chip in the RTX 20 series) wins over its series."""

    label: str  # "RTX 40xx", "RTX 2050 (GA107)"
    match: str  # "rtx 40" (a series), "rtx 2050" or "rtx 3050 a" (a model)
    cc: str  # "8.9"
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None

    @property
    def is_model(self) -> bool:
        """ "rtx 2050" names one model (four digits); "rtx 40" a whole series (two)."""
        return len(self.match.split()[1]) == 4


@dataclass(frozen=True)
class GpuModel(_Sourced):
    """A GPU model with dense datasheet peaks in TFLOP/s (tensor-core rates for tf32/fp16/bf16)."""

    name: str  # "NVIDIA H200", as NVML reports it
    aliases: tuple[str, ...]  # ("H200", "H200 SXM", ...)
    pci_ids: tuple[str, ...]  # ("0x2335",)
    cc: str  # "9.0"
    memory_gib: Optional[float]  # 141.0, as the datasheet writes it
    bandwidth_gbs: Optional[float]  # 4800.0
    fp32_tflops: Optional[float]  # non-tensor FP32
    tf32_tflops: Optional[float]
    fp16_tflops: Optional[float]  # FP16 with FP32 accumulate
    bf16_tflops: Optional[float]
    fp16_half_rate_accum: bool  # GeForce: FP32-accumulate at half the FP16-accumulate rate
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    fp16_fp16acc_tflops: Optional[float] = None
    fp8_tflops: Optional[float] = None
    pci_source: Optional[str] = None
    datacenter: bool = False  # an NVIDIA data-center GPU: may run forward compatibility (cuda-compat)
    datacenter_source: Optional[str] = None  # where NVIDIA lists the model as a data-center GPU
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None

    def is_datacenter(self) -> Optional[bool]:
        """True/False from the ``datacenter`` flag; None when the table does not confirm it (a
        workstation RTX board that may be one of NVIDIA's unnamed "NGC Server Ready" SKUs)."""
        return bool(self.datacenter) if self.confirmed("datacenter") else None

    @property
    def fp32_nontensor_tflops(self) -> Optional[float]:
        return self.fp32_tflops


@dataclass(frozen=True)
class ChipFamily(_Sourced):
    """PCI device-id ranges of one chip family: 0x2300-0x23ff is GH100 (cc 9.0)."""

    chip: str  # "GH100"
    cc: str
    pci_ranges: tuple[tuple[int, int], ...]
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None

    def contains(self, device_id: int) -> bool:
        return any(lo <= device_id <= hi for lo, hi in self.pci_ranges)


@dataclass(frozen=True)
class TorchVariant(_Sourced):
    """One wheel variant of one torch release: 2.8.0 cu128 carries sm_70 ... sm_120."""

    name: str  # "cu128"
    cuda: Optional[str]  # "12.8"; None for cpu/rocm/xpu
    arch_list: tuple[str, ...]  # ("sm_70", ..., "sm_120"), "compute_XY" = PTX
    platforms: tuple[str, ...]  # ("linux_x86_64", "linux_aarch64", "win_amd64")
    unconfirmed: bool = False
    arch_list_aarch64: tuple[str, ...] = ()
    manylinux: Optional[str] = None  # overrides the release's tag (2.6 cu126)
    glibc: Optional[str] = None
    source: Optional[str] = None
    checked: Optional[str] = None
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class TorchPatch:
    version: str  # "2.7.1"
    torchvision: Optional[str]  # "0.22.1"
    torchaudio: Optional[str]  # "2.7.1"; None from 2.12 (no torchaudio release)


@dataclass(frozen=True)
class TorchRelease(_Sourced):
    """A torch minor release ("2.8.0" and its patches) with its wheel variants."""

    version: str  # "2.8.0"
    pythons: tuple[str, ...]  # ("3.9", ..., "3.13", "3.13t")
    variants: tuple[TorchVariant, ...]
    pypi_default: str  # "cu128"
    manylinux: str  # "manylinux_2_28"
    glibc: str  # "2.28"
    torchvision: Optional[str]  # of the first patch
    torchaudio: Optional[str]
    conda: CondaStory
    pytorch_cuda: tuple[str, ...]  # pytorch-cuda=X versions on -c pytorch -c nvidia (1.13-2.5)
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    patches: tuple[TorchPatch, ...] = ()
    conda_cudatoolkit: tuple[str, ...] = ()
    released: Optional[str] = None
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None

    @property
    def minor(self) -> str:
        major, minor = parse_version(self.version).release[:2]
        return f"{major}.{minor}"

    def variant(self, name: str) -> Optional[TorchVariant]:
        """``TorchRelease.variant("cu128")``; None when this release has no such wheels."""
        return next((v for v in self.variants if v.name == name), None)

    def patch(self, version: str) -> Optional[TorchPatch]:
        return next((p for p in self.patches if parse_version(p.version) == parse_version(version)), None)


@dataclass(frozen=True)
class Variant(_Sourced):
    """A directory of the wheel index: cu128 is CUDA 12.8 at .../whl/cu128, driver >= 570.26."""

    name: str  # "cu128"
    cuda: Optional[str]  # "12.8"
    index_url: str  # "https://download.pytorch.org/whl/cu128"
    min_driver_linux: Optional[str]  # "570.26" (the CUDA GA's own floor)
    kind: VariantKind
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    min_driver_windows: Optional[str] = None
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None


@dataclass(frozen=True)
class Mirror(_Sourced):
    name: str
    url: str
    note: Optional[str]
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    kind: MirrorKind = "pep503"
    unconfirmed_fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class NgcRelease(_Sourced):
    """An NGC PyTorch container: 25.01 is CUDA 12.8.0, torch 2.6.0a0, Ubuntu 24.04."""

    tag: str  # "25.01"
    cuda: str  # "12.8.0"
    torch: str  # "2.6.0a0+ecf3bae40a"
    ubuntu: Optional[str]  # "24.04"
    python: Optional[str]  # "3.12"
    min_driver: str  # "570": the branch the notes require
    forward_compat_branches: tuple[str, ...]  # ("470.57", "525.85", "535.86", "545.23")
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    min_cc: Optional[str] = None  # "7.5": the lowest compute capability the notes support
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None

    @property
    def image(self) -> str:
        return f"nvcr.io/nvidia/pytorch:{self.tag}-py3"


@dataclass(frozen=True)
class Distro(_Sourced):
    """A distribution NVIDIA's CUDA repository serves: ubuntu 22.04 is repos/ubuntu2204."""

    id: str  # "ubuntu" (os-release ID)
    version: str  # "22.04"
    family: DistroFamily
    repo_dir: str  # "ubuntu2204"
    cuda_lines: tuple[str, ...]  # ("11.7", ..., "13.2")
    toolkit_package: str  # "cuda-toolkit-{major}-{minor}"
    driver_packages: tuple[str, ...]  # ("cuda-drivers", "nvidia-open", ...)
    source: str = ""
    checked: str = ""
    unconfirmed: bool = False
    package_manager: Optional[PackageManager] = None
    distro_driver_packages: tuple[str, ...] = ()  # Ubuntu archive: "nvidia-driver-{branch}", ...
    also_ids: tuple[str, ...] = ()  # ("rocky", "almalinux", "ol")
    keyring_package: Optional[str] = None
    glibc: Optional[str] = None  # "2.35": the release's glibc (None: varies by point release)
    glibc_source: Optional[str] = None
    #: the packages that hold the running kernel's headers, as the package manager's arguments:
    #: "linux-headers-$(uname -r)" (the family's, unless the row gives its own)
    kernel_headers: Optional[str] = None
    kernel_headers_source: Optional[str] = None
    kernel_headers_checked: Optional[str] = None
    #: the certificate DKMS signs modules with for Secure Boot ("/var/lib/dkms/mok.pub"; Ubuntu:
    #: "/var/lib/shim-signed/mok/MOK.der"), created when it first builds a module, and the command
    #: that enrolls it without sudo (None: "mokutil --import <dkms_mok>")
    dkms_mok: Optional[str] = None
    dkms_mok_enroll: Optional[str] = None
    dkms_mok_source: Optional[str] = None
    dkms_mok_checked: Optional[str] = None
    unconfirmed_fields: tuple[str, ...] = ()
    note: Optional[str] = None

    def toolkit_package_for(self, cuda: str) -> str:
        """``"cuda-toolkit-12-8"`` for ``"12.8"`` (or ``"12.8.1"``)."""
        major, minor = parse_version(cuda).release[:2]
        return self.toolkit_package.format(major=major, minor=minor)

    def repo_url(self, arch: str = "x86_64") -> str:
        return f"https://developer.download.nvidia.com/compute/cuda/repos/{self.repo_dir}/{arch}/"

    def mok_enroll(self) -> Optional[str]:
        """The command (without sudo) that queues :attr:`dkms_mok` for enrolment at the next boot."""
        if not self.dkms_mok:
            return None
        return self.dkms_mok_enroll or f"mokutil --import {self.dkms_mok}"


# Field names each kind of row may mark in unconfirmed_fields.
def field_names(cls: type) -> tuple[str, ...]:
    return tuple(f for f in cls.__dataclass_fields__)  # type: ignore[attr-defined]

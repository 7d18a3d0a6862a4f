"""Facts about the operating system, the container, the CPU, the system compiler and the interpreter
running envdoctor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Optional

from envdoctor.doctypes import GlibcVersion, Json
from envdoctor.facts.base import ProbeError


@dataclass(frozen=True)
class SystemFacts:
    """``ubuntu 24.04 / x86_64 / glibc 2.39 / in docker``."""

    os_id: Optional[str] = None  # "ubuntu", "debian", "rhel", "darwin"
    os_version: Optional[str] = None  # "24.04"
    os_name: Optional[str] = None  # "Ubuntu 24.04.3 LTS"
    os_like: tuple[str, ...] = ()  # ("debian",)
    os_codename: Optional[str] = None  # "noble"
    platform: str = "linux"  # sys.platform of envdoctor's interpreter
    kernel: Optional[str] = None  # "6.18.44-fc-v657-gpu"
    arch: Optional[str] = None  # "x86_64", "aarch64"
    glibc: GlibcVersion = None  # "2.39"; None on musl or macOS
    python: Optional[str] = None  # envdoctor's own Python, "3.11.7"
    python_executable: Optional[str] = None
    hostname: Optional[str] = None
    user: Optional[str] = None
    home: Optional[str] = None
    wsl: Optional[str] = None  # "wsl1", "wsl2" or None
    container: Optional[str] = None  # "docker", "podman", "kubernetes", "apptainer", "container"
    container_evidence: Optional[str] = None  # "/.dockerenv exists"
    nouveau_loaded: Optional[bool] = None  # None: could not tell
    secure_boot: Optional[bool] = None  # None: not readable
    secure_boot_source: Optional[str] = None
    env: dict[str, str] = field(default_factory=dict)  # relevant variables, secrets masked
    #: the variables that change how torch/CUDA/NCCL behave (probes/system.py BEHAVIOUR_ENV), as set:
    #: {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NCCL_DEBUG": "INFO"}
    torch_env: dict[str, str] = field(default_factory=dict)
    cpu_model: Annotated[Optional[str], Json(maxLength=300)] = None  # "Intel(R) Xeon(R) Processor" (/proc/cpuinfo)
    cpu_count: Annotated[Optional[int], Json(minimum=1)] = None  # logical CPUs listed in /proc/cpuinfo
    #: "gcc (Ubuntu 13.3.0-6ubuntu2~24.04.1) 13.3.0": gcc --version, first line
    gcc: Annotated[Optional[str], Json(maxLength=300)] = None
    gcc_version: Optional[str] = None  # "13.3.0"
    gcc_error: Optional[ProbeError] = None  # gcc on PATH but it failed or hung
    json_required = ("error",)  # a saved report's area always says whether its probe failed
    error: Optional[ProbeError] = None

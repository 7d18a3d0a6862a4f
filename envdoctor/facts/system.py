"""Facts about the operating system, the container and the interpreter running envdoctor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from envdoctor.facts.base import ProbeError


@dataclass(frozen=True)
class SystemFacts:
    """``ubuntu 24.04 / x86_64 / glibc 2.39 / in docker``."""

    os_id: Optional[str] = None             # "ubuntu", "debian", "rhel", "darwin"
    os_version: Optional[str] = None        # "24.04"
    os_name: Optional[str] = None           # "Ubuntu 24.04.3 LTS"
    os_like: tuple[str, ...] = ()           # ("debian",)
    os_codename: Optional[str] = None       # "noble"
    platform: str = "linux"                 # sys.platform of envdoctor's interpreter
    kernel: Optional[str] = None            # "6.18.44-fc-v657-gpu"
    arch: Optional[str] = None              # "x86_64", "aarch64"
    glibc: Optional[str] = None             # "2.39"; None on musl or macOS
    python: Optional[str] = None            # envdoctor's own Python, "3.11.7"
    python_executable: Optional[str] = None
    hostname: Optional[str] = None
    user: Optional[str] = None
    home: Optional[str] = None
    wsl: Optional[str] = None               # "wsl1", "wsl2" or None
    container: Optional[str] = None         # "docker", "podman", "kubernetes", "apptainer", "container"
    container_evidence: Optional[str] = None  # "/.dockerenv exists"
    nouveau_loaded: Optional[bool] = None   # None: could not tell
    secure_boot: Optional[bool] = None      # None: not readable
    secure_boot_source: Optional[str] = None
    env: dict[str, str] = field(default_factory=dict)  # relevant variables, secrets masked
    error: Optional[ProbeError] = None

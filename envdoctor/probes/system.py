"""The operating system, the container, WSL, nouveau and Secure Boot.

Cheap files only (``/etc/os-release``, ``/proc/version``, ``/.dockerenv``, efivars); no command.
"""

from __future__ import annotations

import getpass
import os
import platform
import re
import socket
import sys
from typing import Dict, Optional, Tuple

import distro

from envdoctor.facts.system import SystemFacts
from envdoctor.probes.context import Context
from envdoctor.redact import mask_env

#: Environment variables worth reporting (values of secret-looking ones are masked).
_RELEVANT_ENV = re.compile(
    r"^(CUDA_\w*|NVIDIA_\w*|NV_\w*|LD_LIBRARY_PATH|LD_PRELOAD|PATH|CONDA_\w*|MAMBA_\w*|VIRTUAL_ENV|"
    r"PYTHONPATH|PYTORCH_\w*|TORCH_\w*|PIP_\w*INDEX\w*|UV_\w*INDEX\w*|UV_TORCH_BACKEND|ENVDOCTOR_\w*|"
    r"DOCKER_HOST|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|XLA_\w*|HF_\w*TOKEN\w*)$"
)

_SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0a6c3b5ba5e"


def parse_wsl(proc_version: str) -> Optional[str]:
    """``Linux version 5.15.153.1-microsoft-standard-WSL2 ...`` -> "wsl2"; WSL1 says
    ``Microsoft`` without ``WSL2``/``standard`` (its kernel is emulated: 4.4.0-19041-Microsoft)."""
    low = proc_version.lower()
    if "microsoft" not in low:
        return None
    return "wsl2" if ("wsl2" in low or "microsoft-standard" in low) else "wsl1"


def detect_container(ctx: Context) -> Tuple[Optional[str], Optional[str]]:
    """(kind, evidence) from the markers each runtime leaves."""
    env = ctx.env
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes", "KUBERNETES_SERVICE_HOST is set"
    if env.get("APPTAINER_CONTAINER") or env.get("SINGULARITY_CONTAINER") or ctx.exists("/.singularity.d"):
        return "apptainer", "APPTAINER_CONTAINER/SINGULARITY_CONTAINER or /.singularity.d"
    if ctx.exists("/run/.containerenv") or env.get("container") == "podman":
        return "podman", "/run/.containerenv exists"
    if ctx.exists("/.dockerenv"):
        return "docker", "/.dockerenv exists"
    cgroup, _ = ctx.read("/proc/1/cgroup")
    if cgroup:
        for marker, kind in (("kubepods", "kubernetes"), ("libpod", "podman"), ("docker", "docker"),
                             ("containerd", "container")):
            if marker in cgroup:
                return kind, f"/proc/1/cgroup mentions {marker}"
    if env.get("container"):
        return "container", f"container={env['container']}"
    return None, None


def parse_secure_boot(data: bytes) -> Optional[bool]:
    """An efivar is 4 attribute bytes then the value: ``07 00 00 00 01`` means enabled."""
    if len(data) < 5:
        return None
    return data[4] == 1


def _secure_boot(ctx: Context) -> Tuple[Optional[bool], Optional[str]]:
    try:
        with open(ctx.path(_SECURE_BOOT_VAR), "rb") as fh:
            return parse_secure_boot(fh.read(16)), "efivars SecureBoot"
    except FileNotFoundError:
        if ctx.exists("/sys/firmware/efi"):
            return None, None
        # an empty /sys/firmware is a mask (Docker and podman mount an empty tmpfs over it), not a
        # machine booted without UEFI, whose /sys/firmware still holds acpi, dmi, memmap: unknown
        if ctx.listdir("/sys/firmware"):
            return False, "no /sys/firmware/efi: not booted through UEFI"
        return None, None
    except OSError:
        return None, None


def _nouveau(ctx: Context) -> Optional[bool]:
    modules, err = ctx.read("/proc/modules")
    if modules is not None:
        return any(line.split(" ", 1)[0] == "nouveau" for line in modules.splitlines())
    if ctx.exists("/sys/module/nouveau"):
        return True
    return None if err else (False if ctx.exists("/sys/module") else None)


def _glibc() -> Optional[str]:
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        return None
    if value and value.startswith("glibc "):
        return value.split()[1]
    return None


def _os_release(ctx: Context) -> Dict[str, object]:
    dist = distro.LinuxDistribution(include_lsb=False, include_uname=False,
                                    root_dir=None if str(ctx.root) == "/" else str(ctx.root))
    like = tuple(dist.like().split()) if dist.like() else ()
    return {
        "os_id": dist.id() or None,
        "os_version": dist.version() or None,
        "os_name": dist.name(pretty=True) or None,
        "os_like": like,
        "os_codename": dist.codename() or None,
    }


def _user(env: Dict[str, str]) -> Optional[str]:
    try:
        return env.get("USER") or getpass.getuser()
    except Exception:  # getpass raises when the uid has no passwd entry (containers)
        return None


def probe(ctx: Context) -> SystemFacts:
    proc_version, _ = ctx.read("/proc/version")
    kernel, _ = ctx.read("/proc/sys/kernel/osrelease")
    container, evidence = detect_container(ctx)
    secure_boot, sb_source = _secure_boot(ctx)
    env = {k: mask_env(k, v) for k, v in sorted(ctx.env.items()) if _RELEVANT_ENV.match(k)}
    info = _os_release(ctx) if sys.platform.startswith("linux") or str(ctx.root) != "/" else {
        "os_id": "darwin" if sys.platform == "darwin" else sys.platform,
        "os_version": platform.mac_ver()[0] or None, "os_name": platform.platform(), "os_like": (),
        "os_codename": None,
    }
    return SystemFacts(
        platform=sys.platform,
        kernel=(kernel or "").strip() or platform.release() or None,
        arch=platform.machine() or None,
        glibc=_glibc(),
        python=platform.python_version(),
        python_executable=sys.executable,
        hostname=socket.gethostname() or None,
        user=_user(ctx.env),
        home=ctx.env.get("HOME"),
        wsl=parse_wsl(proc_version) if proc_version else None,
        container=container,
        container_evidence=evidence,
        nouveau_loaded=_nouveau(ctx),
        secure_boot=secure_boot,
        secure_boot_source=sb_source,
        env=env,
        **info,
    )

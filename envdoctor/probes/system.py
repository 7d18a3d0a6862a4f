"""The operating system, the container, WSL, nouveau, Secure Boot, the CPU, the system GCC and the
environment variables that change how torch, CUDA and NCCL behave.

Cheap files (``/etc/os-release``, ``/proc/version``, ``/proc/cpuinfo``, ``/.dockerenv``, efivars) and
one command, ``gcc --version`` (bounded by ``GCC_TIMEOUT``), for a bug report's "GCC version". Under
another root (``--root``/``ENVDOCTOR_ROOT``: a mounted image) glibc and GCC are the image's, read from
its files (the banner in its libc.so.6, the version folder of /usr/lib/gcc/<triplet>/), never this
host's: nothing of the image is run.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
from typing import Dict, Optional, Tuple

import distro

from envdoctor.facts.base import ProbeError
from envdoctor.facts.system import SystemFacts
from envdoctor.parse.compiler import parse_gcc_version
from envdoctor.parse.cpuinfo import LIMIT as CPUINFO_LIMIT
from envdoctor.parse.cpuinfo import parse_cpuinfo
from envdoctor.parse.libc import parse_libc_banner
from envdoctor.probes.context import Context
from envdoctor.redact import mask_env

#: Environment variables worth reporting (values of secret-looking ones are masked).
_RELEVANT_ENV = re.compile(
    r"^(CUDA_\w*|NVIDIA_\w*|NV_\w*|LD_LIBRARY_PATH|LD_PRELOAD|PATH|CONDA_\w*|MAMBA_\w*|VIRTUAL_ENV|"
    r"PYTHONPATH|PYTORCH_\w*|TORCH_\w*|PIP_\w*INDEX\w*|UV_\w*INDEX\w*|UV_TORCH_BACKEND|ENVDOCTOR_\w*|"
    r"DOCKER_HOST|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|XLA_\w*|HF_\w*TOKEN\w*)$"
)

#: The variables that change what torch, CUDA, cuBLAS, NCCL, Triton and the CPU thread pools do, shown
#: in ``check`` and its Markdown (torch.utils.collect_env shows only the allocator and module-loading
#: ones). Names here, or starting with one of BEHAVIOUR_PREFIXES; values masked like every output.
BEHAVIOUR_ENV = (
    # which GPUs, in which order
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    # the CUDA driver and runtime
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_PATH",
    "CUDA_CACHE_MAXSIZE",
    "CUDA_FORCE_PTX_JIT",
    "CUDA_DISABLE_PTX_JIT",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_AUTO_BOOST",
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_MPS_LOG_DIRECTORY",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_TF32_OVERRIDE",
    # math libraries
    "CUBLAS_WORKSPACE_CONFIG",
    "CUBLASLT_WORKSPACE_SIZE",
    "CUBLAS_LOGINFO_DBG",
    "CUBLASLT_LOG_LEVEL",
    "CUDNN_LOGINFO_DBG",
    "CUDNN_LOGLEVEL_DBG",
    "CUDNN_LOGDEST_DBG",
    # CPU thread pools
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "KMP_AFFINITY",
    "KMP_BLOCKTIME",
    "MKL_THREADING_LAYER",
    # loading
    "LD_PRELOAD",
)
#: torch's own (TORCH_CUDA_ARCH_LIST, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE, TORCH_NCCL_*, TORCH_LOGS,
#: TORCHINDUCTOR_*, PYTORCH_CUDA_ALLOC_CONF, PYTORCH_NVML_BASED_CUDA_CHECK, ...), NCCL's, Triton's.
BEHAVIOUR_PREFIXES = ("TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "PYTORCH_", "NCCL_", "TRITON_")
#: At most this many variables, each value cut to VALUE_LIMIT characters.
MAX_BEHAVIOUR_ENV = 100
VALUE_LIMIT = 500
#: ``gcc --version`` may take this long (a wrapper such as ccache or a network home can be slow).
GCC_TIMEOUT = 5.0

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
        for marker, kind in (
            ("kubepods", "kubernetes"),
            ("libpod", "podman"),
            ("docker", "docker"),
            ("containerd", "container"),
        ):
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


#: Where an image keeps its libc.so.6 (Debian/Ubuntu multiarch, then RHEL/SUSE/Arch), and how much
#: of it is read (the banner sits near the end of a 2 MB file).
LIBC_PATHS = (
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib64/libc.so.6",
    "/usr/lib/libc.so.6",
    "/lib/libc.so.6",
)
LIBC_LIMIT = 8 << 20
GCC_LIBDIRS = (
    "/usr/lib/gcc/x86_64-linux-gnu",
    "/usr/lib/gcc/x86_64-redhat-linux",
    "/usr/lib/gcc/aarch64-linux-gnu",
    "/usr/lib/gcc/aarch64-redhat-linux",
    "/usr/lib64/gcc/x86_64-suse-linux",
    "/usr/lib/gcc/x86_64-pc-linux-gnu",
)


def _other_root(ctx: Context) -> bool:
    return str(ctx.root) != "/"


def _image_glibc(ctx: Context) -> Optional[str]:
    """glibc of the image under ``ctx.root``: the banner in its libc.so.6 (None: not found)."""
    for path in LIBC_PATHS:
        try:
            with open(ctx.path(path), "rb") as fh:
                data = fh.read(LIBC_LIMIT)
        except (OSError, ValueError):
            continue
        found = parse_libc_banner(data)
        if found:
            return found
    return None


def _image_gcc(ctx: Context) -> Tuple[Optional[str], Optional[str], Optional[ProbeError]]:
    """GCC of the image: the newest version folder of /usr/lib/gcc/<triplet>/ where it has a gcc
    (nothing of the image is run: its programs may not even run on this host)."""
    if not (ctx.exists("/usr/bin/gcc") or ctx.exists("/usr/local/bin/gcc")):
        return None, None, None
    for libdir in GCC_LIBDIRS:
        versions = [v for v in ctx.listdir(libdir) if re.fullmatch(r"\d+(\.\d+)*", v)]
        if versions:
            newest = max(versions, key=lambda v: tuple(int(x) for x in v.split(".")))
            return f"gcc {newest} ({libdir}/{newest} in the image; not run)", newest, None
    return None, None, None


def _os_release(ctx: Context) -> Dict[str, object]:
    dist = distro.LinuxDistribution(
        include_lsb=False, include_uname=False, root_dir=None if str(ctx.root) == "/" else str(ctx.root)
    )
    like = tuple(dist.like().split()) if dist.like() else ()
    return {
        "os_id": dist.id() or None,
        "os_version": dist.version() or None,
        "os_name": dist.name(pretty=True) or None,
        "os_like": like,
        "os_codename": dist.codename() or None,
    }


def _user(env: Dict[str, str]) -> Optional[str]:
    if env.get("USER"):
        return env["USER"]
    import getpass  # here: where USER is set it is not needed (imports are a good part of check's time)

    try:
        return getpass.getuser()
    except Exception:  # getpass raises when the uid has no passwd entry (containers)
        return None


def behaviour_env(env: Dict[str, str]) -> Dict[str, str]:
    """The variables of ``BEHAVIOUR_ENV`` and ``BEHAVIOUR_PREFIXES`` that are set, sorted, masked.

    >>> behaviour_env({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "HOME": "/root",
    ...                "NCCL_DEBUG": "INFO", "TORCH_SECRET_TOKEN": "abc", "OMP_NUM_THREADS": "8"})
    {'NCCL_DEBUG': 'INFO', 'OMP_NUM_THREADS': '8', 'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True', \
'TORCH_SECRET_TOKEN': '***'}
    """
    names = sorted(k for k in env if k in BEHAVIOUR_ENV or k.startswith(BEHAVIOUR_PREFIXES))
    out = {}
    for name in names[:MAX_BEHAVIOUR_ENV]:
        value = env[name]
        if len(value) > VALUE_LIMIT:
            value = value[:VALUE_LIMIT] + " [cut]"
        out[name] = mask_env(name, value)
    return out


def _cpu(ctx: Context) -> Tuple[Optional[str], Optional[int]]:
    text, _ = ctx.read("/proc/cpuinfo", limit=CPUINFO_LIMIT)
    return parse_cpuinfo(text) if text else (None, None)


def _gcc(ctx: Context) -> Tuple[Optional[str], Optional[str], Optional[ProbeError]]:
    """(first line, version, error) of ``gcc --version``; all None when there is no gcc on PATH."""
    exe = ctx.which("gcc")
    if exe is None:
        return None, None, None
    ran = ctx.run([exe, "--version"], timeout=min(ctx.timeout, GCC_TIMEOUT))
    if ran.error is not None:
        return None, None, ran.error
    line, version = parse_gcc_version(ran.stdout)
    if line is None:
        return None, None, ProbeError("unparseable", f"{exe} --version printed no compiler version", f"{exe} --version")
    return line, version, None


def probe(ctx: Context) -> SystemFacts:
    proc_version, _ = ctx.read("/proc/version")
    kernel, _ = ctx.read("/proc/sys/kernel/osrelease")
    container, evidence = detect_container(ctx)
    secure_boot, sb_source = _secure_boot(ctx)
    cpu_model, cpu_count = _cpu(ctx)
    other = _other_root(ctx)  # a mounted image: its glibc and GCC, never this host's
    gcc, gcc_version, gcc_error = _image_gcc(ctx) if other else _gcc(ctx)
    env = {k: mask_env(k, v) for k, v in sorted(ctx.env.items()) if _RELEVANT_ENV.match(k)}
    info = (
        _os_release(ctx)
        if sys.platform.startswith("linux") or str(ctx.root) != "/"
        else {
            "os_id": "darwin" if sys.platform == "darwin" else sys.platform,
            "os_version": platform.mac_ver()[0] or None,
            "os_name": platform.platform(),
            "os_like": (),
            "os_codename": None,
        }
    )
    return SystemFacts(
        platform=sys.platform,
        kernel=(kernel or "").strip() or platform.release() or None,
        arch=platform.machine() or None,
        glibc=_image_glibc(ctx) if other else _glibc(),
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
        torch_env=behaviour_env(ctx.env),
        cpu_model=cpu_model,
        cpu_count=cpu_count,
        gcc=gcc,
        gcc_version=gcc_version,
        gcc_error=gcc_error,
        **info,
    )

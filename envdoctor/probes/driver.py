"""The NVIDIA driver: kernel module, user-space library (NVML), nvidia-smi, and the GPUs they see.

Sources, cheap first: ``/sys/module/nvidia/version`` and ``/proc/driver/nvidia/version`` (the
loaded kernel module), the ``libnvidia-ml.so.<version>`` file (the installed user-space driver),
NVML, then ``nvidia-smi --query-gpu=... --format=csv,nounits`` as a further source and a
cross-check. The best answer of each fact is kept with the name of the source that gave it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.gpu import DriverFacts, GpuInfo
from envdoctor.nvml import started
from envdoctor.parse import major_minor
from envdoctor.parse import nvidia_smi as smi
from envdoctor.parse.nvidia_proc import parse_library_version, parse_module_version, parse_proc_version
from envdoctor.probes.context import Context
from envdoctor.probes.reasons import MAX_REASON, unreadable

if TYPE_CHECKING:
    from envdoctor.probes.nvml import NvmlView

WSL_LIB = "/usr/lib/wsl/lib"
#: How much of nvidia-smi's output the text checks (mismatch, no devices, library version) read.
MAX_TEXT = 65536
#: Folders where distributions, NVIDIA's runfile, containers and WSL put libnvidia-ml.so.<version>.
LIB_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/run/nvidia/driver/usr/lib64",
    WSL_LIB,
)


def _kernel_module(ctx: Context) -> Tuple[Optional[str], Optional[str], Optional[str], Optional[ProbeError]]:
    """(version, source, flavor, error) of the loaded kernel module."""
    flavor = None
    proc, proc_err = ctx.read("/proc/driver/nvidia/version")
    proc_version = None
    if proc:
        proc_version, flavor = parse_proc_version(proc)
    sys_text, sys_err = ctx.read("/sys/module/nvidia/version")
    if sys_text and parse_module_version(sys_text):
        return parse_module_version(sys_text), "/sys/module/nvidia/version", flavor, None
    if proc_version:
        return proc_version, "/proc/driver/nvidia/version", flavor, None
    return None, None, None, proc_err or sys_err


def _library_version(ctx: Context) -> Tuple[Optional[str], Optional[str]]:
    """The version in the name of the installed ``libnvidia-ml.so.<version>``, and its path."""
    for folder in LIB_DIRS:
        try:  # the loader follows libnvidia-ml.so.1: the version it points to is the one in use
            target = os.path.basename(os.readlink(ctx.path(f"{folder}/libnvidia-ml.so.1")))
            version = parse_library_version(target)
            if version:
                return version, f"{folder}/{target}"
        except OSError:
            pass
        for name in ctx.listdir(folder):  # thousands of names in /usr/lib/x86_64-linux-gnu: test cheaply
            version = parse_library_version(name) if name.startswith("libnvidia-ml.so.") else None
            if version:
                return version, f"{folder}/{name}"
    return None, None


def _smi_path(ctx: Context) -> Tuple[Optional[str], Optional[ProbeError]]:
    """nvidia-smi on PATH, else WSL's; else (None, why) when something named nvidia-smi on PATH is
    not a program (a directory, a file without the execute bit)."""
    found, not_program = ctx.locate("nvidia-smi")
    if found:
        return found, None
    wsl = ctx.path(f"{WSL_LIB}/nvidia-smi")
    try:
        if wsl.is_file():
            return str(wsl), None
    except OSError:  # an unreadable folder on the way
        pass
    return None, not_program


def _read_smi(ctx: Context, path: str, need_cuda: Callable[[], bool]) -> Dict[str, Any]:
    """Ask nvidia-smi; returns gpus, driver, cuda, error, raw text. ``need_cuda()`` is asked once the
    query has answered: whether the driver's CUDA must come from ``nvidia-smi --version`` too."""
    out: Dict[str, Any] = {"gpus": (), "driver": None, "cuda": None, "error": None, "text": ""}
    fields = list(smi.QUERY_FIELDS)
    ran = ctx.run([path, "--query-gpu=" + ",".join(fields), "--format=csv,nounits"])
    if ran.returncode and "compute_cap" in ran.output and "not a valid field" in ran.output:
        fields.remove("compute_cap")  # drivers before about R510
        ran = ctx.run([path, "--query-gpu=" + ",".join(fields), "--format=csv,nounits"])
    out["text"] = ran.output[:MAX_TEXT]
    if ran.error:
        own = _smi_message(ran.output) if ran.error.kind == "exit_status" else None
        out["error"] = ProbeError(ran.error.kind, own or ran.error.message, ran.error.command)
        return out
    try:
        out["gpus"] = smi.parse_query_gpu(ran.stdout)
        out["driver"] = smi.query_driver_version(ran.stdout)
    except smi.SmiParseError as exc:
        if smi.is_no_devices(ran.output[:MAX_TEXT]):
            out["error"] = ProbeError("exit_status", "nvidia-smi: No devices were found")
        else:
            out["error"] = unreadable("nvidia-smi", ran, str(exc), "nvidia-smi --query-gpu")
        return out
    if need_cuda():
        ver = ctx.run([path, "--version"])
        try:
            parsed = smi.parse_version(ver.stdout) if ver.ok else smi.parse_banner(ctx.run([path]).stdout)
            out["cuda"] = parsed.get("cuda")
        except smi.SmiParseError:
            pass
    return out


def _smi_message(text: str) -> Optional[str]:
    """The first line of nvidia-smi's own complaint, as it printed it (cut at MAX_REASON)."""
    for line in text[:MAX_TEXT].splitlines():
        line = line.strip()
        if line:
            return f"nvidia-smi: {line if len(line) <= MAX_REASON else line[:MAX_REASON] + ' [...]'}"
    return None


def _start_nvml(ctx: Context) -> Callable[[], NvmlView]:
    """Read NVML in a thread of its own, so nvidia-smi runs meanwhile; the function returned waits
    for the answer until ``ctx.timeout`` after the start (NVML calls can block in the kernel;
    they never hang the report)."""
    from envdoctor.probes.nvml import NvmlView, read_nvml  # here: nvidia-smi is started first

    if ctx.nvml is None and str(ctx.root) != "/":
        skipped = NvmlView(error=ProbeError("unavailable", "NVML not consulted when reading another root"))
        return lambda: skipped
    return started(
        lambda: read_nvml(ctx.nvml, ctx.nvml_shared),
        "envdoctor-nvml",
        ctx.timeout,
        lambda error: NvmlView(error=error),
    )


def _start_smi(ctx: Context, path: str, need_cuda: Callable[[], bool]) -> Callable[[], Dict[str, Any]]:
    """:func:`_read_smi` in a thread of its own, so nvidia-smi (the slowest source: it starts NVML
    in a process of its own) runs while the files are read; the function returned waits for it
    (each command it runs is bounded by ``ctx.timeout``)."""

    return started(lambda: _read_smi(ctx, path, need_cuda), "envdoctor-nvidia-smi")


def probe(ctx: Context) -> DriverFacts:
    # nvidia-smi first, then NVML (its binding's import is CPU work the other probes' threads share)
    nvml: List[Callable[[], NvmlView]] = []
    nvml_started = threading.Event()

    def need_cuda() -> bool:  # asked in nvidia-smi's thread, once its query answered
        nvml_started.wait()
        return bool(nvml) and nvml[0]().cuda is None  # no NVML started: the probe is raising

    smi_path, not_program = _smi_path(ctx)
    asked = _start_smi(ctx, smi_path, need_cuda) if smi_path else None
    try:
        nvml.append(_start_nvml(ctx))
    except BaseException:
        # nvidia-smi's thread is not left running unobserved: it asks nothing more (need_cuda),
        # it is waited for (each command bounded), and what NVML's start raised is raised
        nvml_started.set()
        if asked is not None:
            with contextlib.suppress(Exception):  # the first failure is the one raised
                asked()
        raise
    nvml_started.set()
    module_version, module_source, flavor, module_err = _kernel_module(ctx)
    lib_version, lib_path = _library_version(ctx)
    s: Dict[str, Any] = (
        asked() if asked is not None else {"gpus": (), "driver": None, "cuda": None, "error": not_program, "text": ""}
    )
    nv = nvml[0]()
    sources: Dict[str, str] = {}
    if module_version:
        sources["kernel_module_version"] = module_source or ""
    userspace = lib_version or (smi.library_version_in_error(s["text"]) if s["text"] else None)
    if userspace:
        sources["userspace_version"] = lib_path or "nvidia-smi error text"
    elif nv.driver:
        userspace, sources["userspace_version"] = nv.driver, "nvml"
    driver = nv.driver or s["driver"] or module_version
    if driver:
        sources["driver_version"] = "nvml" if nv.driver else ("nvidia-smi" if s["driver"] else module_source or "")
    cuda = nv.cuda or s["cuda"]
    if cuda:
        sources["driver_cuda"] = "nvml" if nv.cuda else "nvidia-smi"
    gpus: Tuple[GpuInfo, ...] = nv.gpus or s["gpus"]
    if gpus:
        sources["gpus"] = "nvml" if nv.gpus else "nvidia-smi"
    mismatch_text = any(
        e is not None and smi.is_mismatch(e.message) for e in (nv.error, s["error"])
    ) or smi.is_mismatch(s["text"])
    mismatch = mismatch_text or bool(
        module_version
        and userspace
        and (major_minor(module_version) or module_version) != (major_minor(userspace) or userspace)
    )
    dev_nodes = tuple(f"/dev/{n}" for n in ctx.listdir("/dev") if n.startswith("nvidia"))
    return DriverFacts(
        kernel_module_version=module_version,
        kernel_module_source=module_source,
        kernel_module_flavor=flavor,
        userspace_version=userspace,
        driver_version=driver,
        driver_cuda=cuda,
        nvml_version=nv.nvml_version,
        gpus=gpus,
        sources=sources,
        nvml_error=nv.error,
        smi_path=smi_path,
        smi_error=s["error"],
        smi_gpus=s["gpus"],
        mismatch=mismatch,
        cuda_visible_devices=ctx.env.get("CUDA_VISIBLE_DEVICES"),
        nvidia_visible_devices=ctx.env.get("NVIDIA_VISIBLE_DEVICES"),
        dev_nodes=dev_nodes,
        error=module_err,
    )

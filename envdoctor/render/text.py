"""Human text: grouped by area, one line per fact, a mark per finding, a closing verdict.

Declared unstable: scripts use ``--json``. Colours only when asked (``render.style`` decides).
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Tuple

from envdoctor.facts import Facts
from envdoctor.facts.base import ProbeError
from envdoctor.facts.python import IndexConfig
from envdoctor.findings import Finding
from envdoctor.lines import findings_section
from envdoctor.links.render_topo import links_rows
from envdoctor.stack.render import extension_rows
from envdoctor.style import Style
from envdoctor.units import format_bytes

Row = Tuple[str, str]


def _err(e: Optional[ProbeError]) -> str:
    """``failed: WHY``; a program that is not there is said as the probe said it ("docker: not
    installed (/opt/bin/docker is a directory, not a program)")."""
    if e is None:
        return ""
    return e.message if e.kind == "not_found" else f"failed: {e.message}"


def _absent(label: str, e: Optional[ProbeError]) -> str:
    """ "not installed", or the probe's sentence why, without the label it starts with."""
    if e is None:
        return "not installed"
    return e.message[len(label) + 2 :] if e.message.startswith(f"{label}: ") else e.message


#: Programs an area's error may be about, besides the area's own (docker's: podman, the toolkit's tools).
_TOOLS = ("docker", "podman", "nvidia-ctk", "nvidia-container-cli", "conda", "mamba", "micromamba", "nvcc")


def _error_row(label: str, e: ProbeError) -> Row:
    """An area's error as a row, named by the program it is about: ("podman", "not installed
    (/opt/bin/podman is a directory, not a program)"), ("podman", "failed: ...")."""
    tool, sep, rest = e.message.partition(": ")
    if e.kind == "not_found" and sep and rest.startswith("not installed (") and " " not in tool:
        return tool, rest
    ran = (e.command or "").split(" ", 1)[0].rsplit("/", 1)[-1]
    return (ran if ran in _TOOLS else label), _err(e)


def _cut(text: str, limit: int = 200) -> str:
    """A value as set, or its start when it is longer than a line can show (the JSON keeps it whole)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _gib(mib: Optional[int]) -> str:
    return format_bytes(mib << 20, places=0, unit="GiB") if mib else "? GiB"


def system_rows(f: Facts) -> List[Row]:
    s = f.system
    rows = [
        (
            "OS",
            ", ".join(
                x
                for x in (
                    s.os_name or s.os_id,
                    f"kernel {s.kernel}" if s.kernel else None,
                    s.arch,
                    f"glibc {s.glibc}" if s.glibc else None,
                )
                if x
            ),
        )
    ]
    if s.container:
        rows.append(("Container", f"{s.container} ({s.container_evidence})"))
    if s.wsl:
        rows.append(("WSL", s.wsl.upper()))
    if s.nouveau_loaded:
        rows.append(("nouveau", "loaded"))
    if s.secure_boot is not None:
        rows.append(("Secure Boot", f"{'enabled' if s.secure_boot else 'off'} ({s.secure_boot_source})"))
    if s.cpu_model or s.cpu_count:
        rows.append(("CPU", ", ".join(x for x in (s.cpu_model, s.cpu_count and f"{s.cpu_count} logical CPUs") if x)))
    if s.gcc or s.gcc_error:
        rows.append(("GCC", s.gcc or _err(s.gcc_error)))
    rows.append(("envdoctor", f"{f.envdoctor_version} on Python {s.python} ({s.python_executable})"))
    return rows


def gpu_rows(f: Facts) -> List[Row]:
    d = f.driver
    rows: List[Row] = []
    if f.pci.error:
        rows.append(("PCI", _err(f.pci.error)))
    for dev in f.pci.devices:
        arch = (
            f", {dev.architecture} {dev.compute_capability}"
            if dev.architecture
            else (f", compute {dev.compute_capability}" if dev.compute_capability else "")
        )
        rows.append(
            (
                f"PCI {dev.address}",
                f"{dev.name or 'NVIDIA device'} [{dev.vendor_id[2:]}:{dev.device_id[2:]}]"
                f"{arch}, kernel driver: {dev.kernel_driver or 'none'}",
            )
        )
    if not f.pci.devices and not f.pci.error:
        rows.append(("PCI", "no NVIDIA display/3D controller"))
    if d.kernel_module_version:
        flavor = f"{d.kernel_module_flavor} kernel module, " if d.kernel_module_flavor else ""
        rows.append(("Kernel module", f"{d.kernel_module_version} ({flavor}{d.kernel_module_source})"))
    else:
        rows.append(("Kernel module", "not loaded" + (f" ({_err(d.error)})" if d.error else "")))
    if d.userspace_version and d.userspace_version != d.kernel_module_version:
        rows.append(("User-space driver", f"{d.userspace_version} ({d.sources.get('userspace_version')})"))
    if d.driver_version:
        rows.append(("Driver", f"{d.driver_version} (from {d.sources.get('driver_version')})"))
    if d.driver_cuda:
        rows.append(
            (
                "Driver's CUDA",
                f"{d.driver_cuda}: the newest CUDA this driver runs (from {d.sources.get('driver_cuda')})",
            )
        )
    for g in d.gpus:
        rows.append(
            (
                f"GPU {g.index}",
                ", ".join(
                    x
                    for x in (
                        g.name,
                        f"compute {g.compute_capability}" if g.compute_capability else None,
                        _gib(g.memory_total_mib),
                        g.pci_bus_id,
                        g.uuid,
                        f"via {g.source}",
                    )
                    if x
                ),
            )
        )
    rows.extend(state_rows(f))
    rows.append(("NVML", _err(d.nvml_error) if d.nvml_error else f"ok{' ' + d.nvml_version if d.nvml_version else ''}"))
    if d.smi_path:
        rows.append(("nvidia-smi", f"{d.smi_path}" + (f": {_err(d.smi_error)}" if d.smi_error else ": ok")))
    else:
        rows.append(("nvidia-smi", _absent("nvidia-smi", d.smi_error)))
    if d.cuda_visible_devices is not None:
        rows.append(("CUDA_VISIBLE_DEVICES", _cut(repr(d.cuda_visible_devices))))
    if d.nvidia_visible_devices is not None:
        rows.append(("NVIDIA_VISIBLE_DEVICES", _cut(d.nvidia_visible_devices)))
    return rows


def state_rows(f: Facts) -> List[Row]:
    """What runs on each GPU now (facts.gpu_state), and the IB/RoCE adapters (facts.fabric)."""
    from envdoctor.render.fabric import fabric_lines

    rows: List[Row] = []
    for g in getattr(getattr(f, "gpu_state", None), "gpus", ()):
        procs = ", ".join(
            f"pid {p.pid} {p.name or '(not visible here)'}" + (f" {p.used_mib} MiB" if p.used_mib is not None else "")
            for p in g.processes
        )
        used = f"{g.memory_used_mib}/{g.memory_total_mib} MiB used" if g.memory_used_mib is not None else None
        rows.append(
            (
                f"GPU {g.index} now",
                ", ".join(
                    x
                    for x in (
                        f"{len(g.processes)} process(es)" + (f" ({procs})" if procs else ""),
                        f"{g.utilization_pct}% busy" if g.utilization_pct is not None else None,
                        used,
                        f"compute mode {g.compute_mode}" if g.compute_mode else None,
                        f"power limit {g.power_limit_w:g} W" if g.power_limit_w else None,
                    )
                    if x
                ),
            )
        )
    fabric = getattr(f, "fabric", None)
    for i, line in enumerate(fabric_lines(fabric) if fabric is not None else ()):
        rows.append(("Fabric" if i == 0 else "", line))
    return rows


def toolkit_rows(f: Facts) -> List[Row]:
    t = f.toolkits
    rows: List[Row] = []
    if t.error:
        rows.append(_error_row("nvcc", t.error))
    for k in t.toolkits:
        used = "  <- CUDA extension builds use this" if t.extension_root and k.root == t.extension_root else ""
        version = k.version or (_err(k.error) if k.error else "version unknown")
        rows.append((f"CUDA {k.release or '?'}", f"{version} at {k.root} (found via {', '.join(k.found_via)}){used}"))
    if not t.toolkits and not t.error:
        rows.append(("nvcc", "no CUDA toolkit found (torch wheels do not need one)"))
    if t.cuda_home:
        rows.append(("CUDA_HOME", t.cuda_home))
    return rows


def conda_rows(f: Facts) -> List[Row]:
    c = f.conda
    if c.error:
        return [_error_row("conda", c.error)]
    if not c.exe:
        return [("conda", "not installed")]
    rows = [(c.flavor or "conda", f"{c.version or '?'} at {c.exe}")]
    if c.active_prefix:
        rows.append(("Active env", f"{c.active_name or '?'} ({c.active_prefix})"))
    if c.virtual_cuda:
        rows.append(("__cuda", c.virtual_cuda))
    for p in c.packages:
        rows.append((p.name, " ".join(x for x in (p.version, p.build, f"[{p.channel}]" if p.channel else None) if x)))
    return rows


def docker_rows(f: Facts) -> List[Row]:
    k = f.docker
    rows: List[Row] = []
    if k.error:
        rows.append(_error_row("docker", k.error))
    if k.client:
        rows.append(("docker", f"client {k.client_version or '?'} at {k.client}"))
        daemon = {"ok": f"running, server {k.server_version or '?'}", None: "not checked"}.get(
            k.daemon, f"{(k.daemon or '').replace('_', ' ')}: {k.daemon_error or ''}".strip(": ")
        )
        rows.append(("Daemon", daemon))
        if k.runtimes:
            default = f" (default {k.default_runtime})" if k.default_runtime else ""
            rows.append(("Runtimes", ", ".join(k.runtimes) + default))
    elif not any(label == "docker" for label, _ in rows):
        rows.append(("docker", "not installed"))
    if k.podman:
        rows.append(("podman", f"{k.podman_version or '?'} at {k.podman}"))
    if k.cdi_specs:
        rows.append(("CDI specs", ", ".join(k.cdi_specs)))
    for label, path, version in (
        ("nvidia-ctk", k.nvidia_ctk, k.nvidia_ctk_version),
        ("nvidia-container-cli", k.nvidia_container_cli, k.nvidia_container_cli_version),
    ):
        if path:
            rows.append((label, f"{version or '?'} at {path}"))
    if k.client and not (k.nvidia_ctk or k.nvidia_container_cli):
        rows.append(("Container toolkit", "not installed"))
    return rows


def _torch_failure(e: ProbeError, stage: Optional[str], python: Optional[str]) -> str:
    """What happened to the torch check, after "installed (2.11.0+cu130), but ": "import torch
    crashed: SIGSEGV during import torch", "import torch did not finish: ... in 60 s ..."."""
    step = stage or "the torch check"
    detail = e.message
    for prefix in (f"{python} was killed by ", f"{python} "):
        if python and detail.startswith(prefix):
            detail = detail[len(prefix) :]
            break
    if e.kind == "timeout":  # "did not finish the torch check in 60 s during import torch"
        limit = re.search(r"\bin (\d[\d.]*) s\b", detail)
        return f"{step} did not finish in {limit.group(1) if limit else '?'} s (--torch-timeout gives it longer)"
    what = {"crashed": "crashed", "exit_status": "exited with an error", "interrupted": "was stopped"}.get(
        e.kind, "failed"
    )
    return f"{step} {what}: {detail}"


def python_rows(f: Facts) -> List[Row]:
    p, t = f.python, f.torch
    rows: List[Row] = []
    if p.error:
        rows.append(("Python", _err(p.error)))
    else:
        kind = "venv" if p.venv else ("conda env" if p.conda_env else "system")
        rows.append(("Python", f"{p.version} at {p.executable} ({kind}; chosen by {p.chosen_by})"))
        rows.append(("pip", p.pip or "absent"))
    if "torch" in f.skipped:
        rows.append(("torch", "not inspected (--skip torch)"))
        return rows
    if t.error and t.installed and t.version:  # the check did not finish: only the package metadata is known
        rows.append(("torch", f"installed ({t.version}), but {_torch_failure(t.error, t.stage, p.executable)}"))
        return rows
    if t.error:
        rows.append(("torch", _err(t.error)))
    if t.import_error:
        rows.append(("torch", f"installed but import fails: {t.import_error}"))
    elif not t.installed and not t.error:
        rows.append(
            (
                "torch",
                (f"not installed in {p.executable}" if p.executable and t.elsewhere else "not installed")
                + elsewhere_text(f),
            )
        )
    elif not t.installed and t.elsewhere:
        rows.append(("torch elsewhere", elsewhere_text(f).removeprefix("; ")))
    if t.installed and t.version:
        build = f"CUDA {t.cuda}" if t.cuda else (f"ROCm/HIP {t.hip}" if t.hip else "CPU-only build")
        took = f", imported in {t.import_seconds:.1f} s" if t.import_seconds else ""
        rows.append(("torch", f"{t.version} ({build})" + took))
        built = ", ".join(
            x
            for x in (
                t.compiler and f"built with {t.compiler}",
                t.debug_build and "a debug build",
                t.cpu_capability and f"CPU kernels {t.cpu_capability}",
            )
            if x
        )
        if built:
            rows.append(("torch build", built))
        if t.arch_list:
            rows.append(("Kernels for", " ".join(t.arch_list)))
        if t.cudnn_version:
            rows.append(("cuDNN loaded", f"{t.cudnn_version}" + (f" from {t.cudnn_path}" if t.cudnn_path else "")))
        if t.nccl_version:
            rows.append(("NCCL", f"{t.nccl_version}" + (f" from {t.nccl_path}" if t.nccl_path else "")))
        if t.cuda_available is not None:
            why = t.cuda_error or ("a CPU-only build" if not (t.cuda or t.hip) else "no reason given")
            rows.append(("CUDA available", "yes" if t.cuda_available else f"no: {why}"))
        for dev in t.devices:
            rows.append((f"cuda:{dev.index}", f"{dev.name}, compute {dev.capability}"))
        if t.tiny_op:
            rows.append(("Tiny CUDA op", t.tiny_op))
        for name, version in (("torchvision", t.torchvision), ("torchaudio", t.torchaudio)):
            if version:
                rows.append((name, version))
    rows.extend(package_rows(p.packages))
    rows.extend(index_rows(p.index_config))
    return rows


def index_rows(c: IndexConfig, shown: int = 6) -> List[Row]:
    """What pip and uv install from (URLs masked by the probe), the torch base envdoctor uses, the proxy.

    >>> from envdoctor.facts.python import ConfiguredIndex
    >>> index_rows(IndexConfig(indexes=(ConfiguredIndex("https://m/whl/cu128", "index", "pip", "PIP_INDEX_URL"),),
    ...                        torch_base="https://m/whl", torch_base_source="PIP_INDEX_URL: https://m/whl/cu128",
    ...                        proxies={"HTTPS_PROXY": "http://proxy:3128"}))
    [('Indexes', 'pip index https://m/whl/cu128 (PIP_INDEX_URL)'), ('Torch index base', \
'https://m/whl (from PIP_INDEX_URL: https://m/whl/cu128): index and recommend use it'), \
('Proxy', 'HTTPS_PROXY=http://proxy:3128')]
    """
    rows: List[Row] = []
    items = [
        f"{i.tool} {i.role} {i.url or '(none)'} ({i.source}{', explicit' if i.explicit else ''}"
        f"{', torch pinned to it' if i.torch_pinned else ''})"
        for i in c.indexes
    ]
    if items:
        more = f"; and {len(items) - shown} more" if len(items) > shown else ""
        rows.append(("Indexes", "; ".join(items[:shown]) + more))
    if c.torch_base:
        rows.append(("Torch index base", f"{c.torch_base} (from {c.torch_base_source}): index and recommend use it"))
    if c.proxies:
        rows.append(("Proxy", ", ".join(f"{k}={v}" for k, v in c.proxies.items())))
    rows.extend(("Config problem", problem) for problem in c.problems)
    return rows


def elsewhere_text(f: Facts) -> str:
    """ "; these have it: /opt/torch/.venv/bin/python (2.11.0+cu130, venv) -- use --python PATH", or ""."""
    t = f.torch
    if not t.elsewhere:
        return ""
    where = ", ".join(f"{e.python} ({e.version}, {e.kind})" for e in t.elsewhere)
    more = " and maybe more (the scan stopped at its bound)" if t.elsewhere_cut else ""
    return f"; these have it: {where}{more} -- use --python PATH"


#: Shown elsewhere in the section (the torch rows), so not repeated among the packages.
_SHOWN = ("torch", "torchvision", "torchaudio")
#: NVIDIA's packages that are not CUDA library wheels: the NVML bindings, the old index helper.
_NOT_CUDA_WHEELS = ("nvidia-ml-py", "nvidia-pyindex")


def package_rows(packages: dict[str, str]) -> List[Row]:
    """The target's numpy/triton/torch*/nvidia-* versions: one row, and one for the CUDA library
    wheels (nvidia-*, their prefix cut); NVIDIA's packages that are not CUDA libraries (the NVML
    binding) stay among the others, named in full.

    >>> package_rows({"numpy": "2.5.2", "nvidia-nccl-cu13": "2.28.9", "torch": "2.11.0", "triton": "3.6.0",
    ...               "nvidia-ml-py": "13.615.71"})
    [('Packages', 'numpy 2.5.2, nvidia-ml-py 13.615.71, triton 3.6.0'), ('nvidia-*', 'nccl-cu13 2.28.9')]
    """

    def cuda_wheel(name: str) -> bool:
        return name.startswith("nvidia-") and not name.startswith(_NOT_CUDA_WHEELS)

    plain = [f"{n} {v}" for n, v in sorted(packages.items()) if not cuda_wheel(n) and n not in _SHOWN]
    nvidia = [f"{n[len('nvidia-') :]} {v}" for n, v in sorted(packages.items()) if cuda_wheel(n)]
    rows: List[Row] = []
    if plain:
        rows.append(("Packages", ", ".join(plain)))
    if nvidia:
        rows.append(("nvidia-*", ", ".join(nvidia)))
    return rows


def env_rows(f: Facts) -> List[Row]:
    """The variables that change how torch, CUDA and NCCL behave (probes/system.py BEHAVIOUR_ENV)."""
    shown = {
        "CUDA_VISIBLE_DEVICES": f.driver.cuda_visible_devices,
        "NVIDIA_VISIBLE_DEVICES": f.driver.nvidia_visible_devices,
    }
    return [
        (name, value if value else repr(value))
        for name, value in sorted(f.system.torch_env.items())
        if shown.get(name) is None
    ]  # those two are in the GPU section when the driver probe read them


SECTIONS = (
    ("System", system_rows),
    ("GPU and driver", gpu_rows),
    ("GPU links", links_rows),
    ("CUDA toolkits", toolkit_rows),
    ("Conda", conda_rows),
    ("Docker and the NVIDIA Container Toolkit", docker_rows),
    ("Python and torch", python_rows),
    ("Extensions above torch", extension_rows),
    ("Environment that changes torch, CUDA and NCCL", env_rows),
)


def _skipped(f: Facts, title: str) -> bool:
    if title == "Environment that changes torch, CUDA and NCCL":
        return not f.system.torch_env  # a section only when one of the variables is set
    area = {
        "CUDA toolkits": "toolkits",
        "Conda": "conda",
        "Docker and the NVIDIA Container Toolkit": "docker",
        "Extensions above torch": "torch",
    }
    return area.get(title) in f.skipped


def render(
    facts: Facts,
    findings: Tuple[Finding, ...],
    color: bool = False,
    extra: Iterable[str] = (),
    suppressed: Tuple[Finding, ...] = (),
) -> str:
    """The report; ``extra`` lines (a section of their own, e.g. ``check -v``) go before the findings."""
    style = Style(color)
    out: List[str] = []
    for title, rows_of in SECTIONS:
        if _skipped(facts, title):
            continue
        out.append(style(title, "bold"))
        rows = rows_of(facts)
        width = max((len(k) for k, _ in rows), default=0)
        out.extend(f"  {k.ljust(width)}  {v}" for k, v in rows)
        out.append("")
    extra = list(extra)
    if extra:
        out.extend(extra + [""])
    out.extend(findings_section(tuple(findings), style, suppressed))
    return "\n".join(out) + "\n"

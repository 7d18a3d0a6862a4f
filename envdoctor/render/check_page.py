"""The HTML page of ``envdoctor check --html`` (and of a snapshot), from the report document.

check_page(report_document(facts, findings))    # one self-contained page (envdoctor.htmlpage)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, List, Optional

from envdoctor.htmlpage import findings, fmt, kv, page, para, redact_document, section, table
from envdoctor.redact import Redactor


def _verdict(summary: Mapping[str, Any]) -> str:
    errors, warnings = summary.get("errors") or 0, summary.get("warnings") or 0
    if not errors and not warnings:
        return "no problems found"
    said = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((errors, "error"), (warnings, "warning")) if n]
    return ", ".join(said) + (": fix the errors first (each with its commands below)" if errors else "")


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _message(error: Any) -> Any:
    return error.get("message") if isinstance(error, Mapping) else error


def report_sections(doc: Mapping[str, Any]) -> List[str]:
    """The facts of a report as tables: system, GPUs and driver, torch, toolkits, conda, docker."""
    f = _obj(doc.get("facts"))
    sysf, drv, tor = _obj(f.get("system")), _obj(f.get("driver")), _obj(f.get("torch"))
    py, tk, conda, dk = _obj(f.get("python")), _obj(f.get("toolkits")), _obj(f.get("conda")), _obj(f.get("docker"))
    out = [
        section(
            "System",
            kv(
                [
                    ("OS", sysf.get("os_name")),
                    ("kernel", sysf.get("kernel")),
                    ("arch", sysf.get("arch")),
                    ("glibc", sysf.get("glibc")),
                    ("host", sysf.get("hostname")),
                    ("container", sysf.get("container")),
                    ("WSL", sysf.get("wsl")),
                    ("Secure Boot", sysf.get("secure_boot")),
                    ("nouveau loaded", sysf.get("nouveau_loaded")),
                ]
            ),
            id="system",
        )
    ]
    gpus = drv.get("gpus") or []
    out.append(
        section(
            "Driver and GPUs",
            kv(
                [
                    ("driver", drv.get("driver_version")),
                    ("CUDA the driver runs", drv.get("driver_cuda")),
                    (
                        "kernel module",
                        f"{fmt(drv.get('kernel_module_version'))} ({fmt(drv.get('kernel_module_flavor'))})",
                    ),
                    ("NVML", drv.get("nvml_version") or _message(drv.get("nvml_error"))),
                    ("nvidia-smi", drv.get("smi_path") or _message(drv.get("smi_error"))),
                    ("CUDA_VISIBLE_DEVICES", drv.get("cuda_visible_devices")),
                    ("error", _message(drv.get("error"))),
                ]
            ),
            table(
                ["GPU", "name", "compute capability", "memory MiB", "bus"],
                [
                    [
                        g.get("index"),
                        g.get("name"),
                        g.get("compute_capability"),
                        g.get("memory_total_mib"),
                        g.get("pci_bus_id"),
                    ]
                    for g in gpus
                    if isinstance(g, Mapping)
                ],
            )
            if gpus
            else para("No GPU seen by the driver.", "muted"),
            id="driver",
        )
    )
    devices = tor.get("devices") or []
    out.append(
        section(
            "Torch in the target Python",
            kv(
                [
                    ("Python", py.get("executable")),
                    ("chosen by", py.get("chosen_by")),
                    ("version", py.get("version")),
                    ("torch", tor.get("version") if tor.get("installed") else "not installed"),
                    ("built for CUDA", tor.get("cuda")),
                    ("cuDNN", tor.get("cudnn_version")),
                    ("NCCL", tor.get("nccl_version")),
                    ("arch list", tor.get("arch_list")),
                    ("CUDA available", tor.get("cuda_available")),
                    ("tiny op on the GPU", tor.get("tiny_op")),
                    ("import took (s)", tor.get("import_seconds")),
                    ("installed by", tor.get("installer")),
                    ("import error", tor.get("import_error")),
                    ("error", _message(tor.get("error"))),
                ]
            ),
            table(
                ["device", "name", "capability", "memory bytes", "SMs"],
                [
                    [
                        d.get("index"),
                        d.get("name"),
                        d.get("capability"),
                        d.get("memory_bytes"),
                        d.get("multiprocessors"),
                    ]
                    for d in devices
                    if isinstance(d, Mapping)
                ],
            )
            if devices
            else "",
            id="torch",
        )
    )
    toolkits = tk.get("toolkits") or []
    out.append(
        section(
            "CUDA toolkits",
            table(
                ["root", "version", "nvcc"],
                [[t.get("root"), t.get("version"), t.get("nvcc")] for t in toolkits if isinstance(t, Mapping)],
            )
            if toolkits
            else para("No CUDA toolkit (nvcc) found: torch's wheels do not need one.", "muted"),
            kv(
                [
                    ("CUDA_HOME", tk.get("cuda_home")),
                    ("nvcc on PATH", tk.get("nvcc_on_path")),
                    ("extension builds use", tk.get("extension_toolkit")),
                ]
            ),
            id="toolkits",
        )
    )
    if conda.get("exe") or conda.get("error"):
        out.append(
            section(
                "conda",
                kv(
                    [
                        ("conda", conda.get("exe")),
                        ("version", conda.get("version")),
                        ("active env", conda.get("active_name") or conda.get("active_prefix")),
                        ("channels", conda.get("channels")),
                        ("error", _message(conda.get("error"))),
                    ]
                ),
                id="conda",
            )
        )
    if dk.get("client") or dk.get("error"):
        out.append(
            section(
                "Docker",
                kv(
                    [
                        ("client", dk.get("client_version")),
                        ("server", dk.get("server_version")),
                        ("runtimes", dk.get("runtimes")),
                        ("default runtime", dk.get("default_runtime")),
                        ("NVIDIA Container Toolkit", dk.get("nvidia_ctk_version")),
                        ("error", _message(dk.get("error"))),
                    ]
                ),
                id="docker",
            )
        )
    skipped = f.get("skipped") or []
    if skipped:
        out.append(para(f"Not checked (--skip): {', '.join(map(str, skipped))}.", "muted"))
    return out


def check_page(doc: Mapping[str, Any], machine: Optional[Redactor] = None, command: str = "check") -> str:
    """The page of a report: the verdict, the findings with their fixes, the facts, a bench if it holds one."""
    d = redact_document(doc, machine)
    summary = d.get("summary") or {}
    code = int(summary.get("exit_code") or 0)
    host = _obj(_obj(d.get("facts")).get("system")).get("hostname") or ""
    body = [
        section("Findings", findings(d.get("findings") or (), "No problems found."), id="findings"),
        *report_sections(d),
    ]
    if isinstance(d.get("bench"), Mapping):
        from envdoctor.bench.page import bench_sections

        body += bench_sections(d["bench"])
    return page(command, str(host), code, _verdict(summary), body, d)

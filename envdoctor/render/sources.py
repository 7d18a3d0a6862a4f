"""``check --verbose``: where each area's facts came from and how long each step took.

Sources and timings
  system    0.004 s
  pci       0.002 s  /sys/bus/pci/devices
  driver    0.151 s  kernel module: /sys/module/nvidia/version; driver: nvml; driver's CUDA: nvml; GPUs: nvml
  python    0.118 s  /opt/torch/.venv/bin/python3 (python3 on PATH)
  probes    0.152 s  all of the above, run at the same time
  table     0.070 s  envdoctor's compatibility table (data/*.toml)
  findings  0.012 s  the checks
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Tuple

from envdoctor.facts import Facts
from envdoctor.style import Style

#: DriverFacts.sources keys, as a person reads them
_DRIVER_FACTS = {
    "kernel_module_version": "kernel module",
    "userspace_version": "user-space driver",
    "driver_version": "driver",
    "driver_cuda": "driver's CUDA",
    "gpus": "GPUs",
}


def _area_sources(facts: Facts) -> Dict[str, str]:
    d, t, c, p = facts.driver, facts.toolkits, facts.conda, facts.python
    out = {
        "system": "; ".join(x for x in (facts.system.container_evidence, facts.system.secure_boot_source) if x),
        "pci": facts.pci.source or "",
        "driver": "; ".join(f"{_DRIVER_FACTS.get(k, k)}: {v}" for k, v in d.sources.items() if v),
        "toolkits": "; ".join(f"CUDA {k.release or '?'}: {k.version_source}" for k in t.toolkits if k.version_source),
        "conda": "; ".join(x for x in (c.source, c.packages_source) if x),
        "docker": "",
        "python": f"{p.executable} ({p.chosen_by})" if p.executable else "",
    }
    return out


def sources_lines(facts: Facts, seconds: Mapping[str, float], style: Style) -> List[str]:
    """The section's lines: one per probe (seconds, sources), then the probes together, the
    table and the checks."""
    sources = _area_sources(facts)
    rows: List[Tuple[str, str, str]] = []
    for area, took in facts.probe_seconds.items():
        if area == "total":
            continue
        rows.append((area, f"{took:.3f} s", sources.get(area, "")))
    if "total" in facts.probe_seconds:
        rows.append(("probes", f"{facts.probe_seconds['total']:.3f} s", "all of the above, run at the same time"))
    if "table" in seconds:
        rows.append(("table", f"{seconds['table']:.3f} s", "envdoctor's compatibility table (data/*.toml)"))
    if "findings" in seconds:
        rows.append(("findings", f"{seconds['findings']:.3f} s", "the checks"))
    width = max((len(a) for a, _, _ in rows), default=0)
    lines = [style("Sources and timings", "bold")]
    lines.extend(f"  {a.ljust(width)}  {s}" + (f"  {style(src, 'dim')}" if src else "") for a, s, src in rows)
    return lines

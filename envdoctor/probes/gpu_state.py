"""The live state of every GPU (nvidia-smi's main screen) through the one NVML wrapper.

A process NVML names is looked up in ``/proc`` under the context's root: its name from
``/proc/PID/comm``, its state from ``/proc/PID/stat`` (``Z``: a zombie still holding the GPU). A
pid that is not there belongs to another pid namespace (a container sees the host's pids, or the
host another container's): it is kept, marked not visible, never dropped.

    >>> facts = probe(Context())                          # doctest: +SKIP
    >>> facts.gpus[0].compute_mode, facts.gpus[0].processes      # doctest: +SKIP
    ('default', ())
"""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.gpu_state import COMPUTE_MODES, GpuProcess, GpuState, GpuStateFacts
from envdoctor.nvml import STATE, Reading, bounded, session_for
from envdoctor.probes.context import Context

MIB = 1024 * 1024


def parse_stat_state(text: Optional[str]) -> Optional[str]:
    """The state letter of a /proc/PID/stat line (the name in parentheses may hold spaces).

    >>> parse_stat_state("4242 (python3 x) Z 1 4242 4242 0 -1 4194560 ...")
    'Z'
    """
    if not text or ")" not in text:
        return None
    rest = text.rsplit(")", 1)[1].split()
    return rest[0] if rest else None


def parse_stat_ppid(text: Optional[str]) -> Optional[int]:
    """The parent pid of a /proc/PID/stat line.

    >>> parse_stat_ppid("4242 (python3 x) S 4100 4242 4242 0 -1 4194560 ...")
    4100
    """
    if not text or ")" not in text:
        return None
    rest = text.rsplit(")", 1)[1].split()
    return int(rest[1]) if len(rest) > 1 and rest[1].isdigit() else None


def process(ctx: Context, entry: Any) -> Tuple[GpuProcess, bool]:
    """One process of NVML's list, with what /proc under ``ctx.root`` says of it, and whether it
    is envdoctor's own child (the torch probe, diag's tiny op: their context is not another job)."""
    pid = int(entry.get("pid", 0))
    used = entry.get("used")
    comm, _ = ctx.read(f"/proc/{pid}/comm", limit=4096)
    stat, _ = ctx.read(f"/proc/{pid}/stat", limit=4096)
    visible = comm is not None or stat is not None
    own = parse_stat_ppid(stat) == os.getpid()
    return GpuProcess(
        pid,
        str(entry.get("kind") or "C"),
        int(used) // MIB if isinstance(used, int) else None,
        comm.strip() if comm else None,
        parse_stat_state(stat),
        visible,
    ), own


def gpu_state(ctx: Context, r: Reading) -> GpuState:
    v = r.values
    memory = v.get("memory") or {}
    limits = v.get("power_limits") or {}
    mig = v.get("mig_mode") or {}
    app = v.get("applications_clocks") or {}
    remapped = v.get("remapped_rows") or {}
    seen = [process(ctx, p) for p in (v.get("processes") or ()) if isinstance(p, dict)]
    procs = tuple(p for p, own in seen if not own)
    mode = v.get("compute_mode")
    return GpuState(
        index=r.index,
        name=v.get("name"),
        uuid=v.get("uuid"),
        bus_id=(v.get("pci") or {}).get("bus_id"),
        memory_used_mib=int(memory["used"]) // MIB if memory.get("used") is not None else None,
        memory_total_mib=int(memory["total"]) // MIB if memory.get("total") is not None else None,
        utilization_pct=v.get("utilization_pct"),
        memory_utilization_pct=v.get("memory_utilization_pct"),
        processes=procs,
        processes_error=r.errors.get("processes"),
        own_processes=len(seen) - len(procs),
        compute_mode=COMPUTE_MODES.get(mode, str(mode)) if mode is not None else None,
        persistence_mode=v.get("persistence_mode"),
        mig_mode=bool(mig["current"]) if "current" in mig else None,
        mig_pending=bool(mig["pending"]) if "pending" in mig else None,
        mig_devices=v.get("mig_devices"),
        power_limit_w=v.get("power_limit_w"),
        default_power_limit_w=limits.get("default_w"),
        max_sm_clock_mhz=v.get("max_sm_clock_mhz"),
        sm_clock_mhz=v.get("sm_clock_mhz"),
        app_sm_clock_mhz=app.get("sm"),
        default_app_sm_clock_mhz=app.get("default_sm"),
        reasons_mask=v.get("reasons_mask"),
        retired_pages_pending=v.get("retired_pages_pending"),
        remapped_pending=bool(remapped["pending"]) if "pending" in remapped else None,
        remapped_failure=bool(remapped["failure"]) if "failure" in remapped else None,
        temperature_c=v.get("temperature_c"),
        errors={k: e for k, e in r.errors.items()},
    )


def read_state(ctx: Context) -> GpuStateFacts:
    with session_for(ctx.nvml, ctx.nvml_shared) as session:
        if session.error is not None:
            return GpuStateFacts(error=session.error)
        return GpuStateFacts(tuple(gpu_state(ctx, r) for r in session.read_all(STATE)), "nvml", session.count_error)


def probe(ctx: Context) -> GpuStateFacts:
    """NVML in a thread bounded by ``ctx.timeout``; not consulted under another root without a fake."""
    if ctx.nvml is None and str(ctx.root) != "/":
        return GpuStateFacts(error=ProbeError("unavailable", "NVML not consulted when reading another root"))
    return bounded(
        lambda: read_state(ctx), ctx.timeout, "envdoctor-gpu-state", lambda error: GpuStateFacts(error=error)
    )

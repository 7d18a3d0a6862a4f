"""ED160-ED167: the live state of each GPU (who holds it, what an operator changed). Pure.

Facts from :mod:`envdoctor.probes.gpu_state`. In ``check`` a GPU in use is a warning (a person may
well be running their own job); ``diag`` asks as a scheduler does before it places a job, with
``wanted=True``, and then a GPU in use, or exclusive and taken, is an error.

>>> from envdoctor.facts.gpu_state import GpuProcess, GpuState, GpuStateFacts
>>> s = GpuStateFacts((GpuState(0, "NVIDIA H200", processes=(GpuProcess(4242, "C", 70000, "python3", "S"),)),))
>>> [(f.code, f.severity) for f in state_findings(s, wanted=True)]
[('ED160', 'error')]
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, List, Optional

from envdoctor.codes import CODES
from envdoctor.facts import Facts
from envdoctor.facts.gpu_state import GpuProcess, GpuState, GpuStateFacts
from envdoctor.findings import Finding, Severity

REF_QUERIES = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"
REF_COMPUTE_MODE = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#compute-modes"
REF_REMAP = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
REF_CLOCKS = "https://docs.nvidia.com/deploy/nvidia-smi/index.html"
#: utilisation at or above this with no process listed still means another job is on the GPU
#: (processes of another pid namespace may be missing from NVML's list in some containers)
BUSY_PCT = 10
#: app clocks or a power limit this far below the default count as lowered
LOWERED = 0.95


def _label(g: GpuState) -> str:
    return f"GPU {g.index} ({g.name or 'NVIDIA GPU'}{', ' + g.bus_id if g.bus_id else ''})"


def _proc(p: GpuProcess) -> str:
    who = p.name if p.visible else "pid not visible here (another container or the host)"
    used = f", {p.used_mib} MiB" if p.used_mib is not None else ""
    state = f", state {p.state}" if p.state and p.state != "S" and p.state != "R" else ""
    return f"pid {p.pid} {who} ({'compute' if p.kind == 'C' else 'graphics'}{used}{state})"


def _f(
    code: str,
    severity: Severity,
    title: str,
    evidence: Iterable[str],
    fix: Iterable[str] = (),
    reference: Optional[str] = REF_QUERIES,
) -> Finding:
    return Finding(
        code,
        severity,
        title,
        tuple(evidence),
        tuple(fix),
        reference=reference,
        area="gpu",
        explanation=CODES[code].meaning,
    )


def _kill_fix(g: GpuState, procs: Iterable[GpuProcess]) -> List[str]:
    out = [f"nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv -i {g.index}"]
    for p in procs:
        if p.visible:
            out.append(f"ps -o pid,user,etime,cmd -p {p.pid}   # then, if it is stale: kill {p.pid}")
    return out


def busy(g: GpuState, wanted: bool) -> Iterator[Finding]:
    """ED160: processes hold the GPU (or it is busy with none listed); ED161: a zombie holds it."""
    zombies = [p for p in g.processes if p.state == "Z"]
    live = [p for p in g.processes if p.state != "Z"]
    if zombies:
        yield _f(
            "ED161",
            "error",
            f"{_label(g)} is held by a zombie process",
            [_proc(p) for p in zombies] + [f"{g.memory_used_mib} MiB of {g.memory_total_mib} MiB in use"],
            [
                f"ps -o pid,ppid,stat,cmd -p {','.join(str(p.pid) for p in zombies)}   # its parent must reap it",
                "# if the parent is gone or stuck, the memory comes back only with a GPU reset or a reboot:",
                f"sudo nvidia-smi --gpu-reset -i {g.index}",
            ],
        )
    util = g.utilization_pct or 0
    # envdoctor's own child (check's torch probe, diag's tiny op) may be what keeps the GPU busy
    if live or (util >= BUSY_PCT and not g.own_processes):
        evidence = [_proc(p) for p in live]
        if not live:
            evidence.append("no process listed (another pid namespace, or NVML cannot list them here)")
        evidence.append(f"utilisation {util}%, {g.memory_used_mib} MiB of {g.memory_total_mib} MiB in use")
        sev: Severity = "error" if wanted else "warning"
        yield _f("ED160", sev, f"{_label(g)} is in use by another process", evidence, _kill_fix(g, live))


def compute_mode(g: GpuState, wanted: bool) -> Iterator[Finding]:
    """ED162: exclusive-process with a process on it, or prohibited: a job cannot start there."""
    if g.compute_mode == "prohibited":
        yield _f(
            "ED162",
            "error",
            f"{_label(g)} is in compute mode Prohibited: no process may use it",
            ["nvmlDeviceGetComputeMode: prohibited"],
            [f"sudo nvidia-smi -i {g.index} -c DEFAULT"],
            REF_COMPUTE_MODE,
        )
    elif g.compute_mode == "exclusive_process":
        taken = [p for p in g.processes if p.kind == "C"]
        if taken:
            yield _f(
                "ED162",
                "error",
                f"{_label(g)} is exclusive to one process and one holds it: a second job "
                "fails with 'all CUDA-capable devices are busy or unavailable'",
                [f"compute mode exclusive_process, {_proc(taken[0])}"],
                _kill_fix(g, taken) + [f"sudo nvidia-smi -i {g.index} -c DEFAULT   # if sharing is wanted"],
                REF_COMPUTE_MODE,
            )
        else:
            yield _f(
                "ED162",
                "info",
                f"{_label(g)} is exclusive to one process",
                ["compute mode exclusive_process: a second process on this GPU fails to create a context"],
                (),
                REF_COMPUTE_MODE,
            )


def limits(g: GpuState) -> Iterator[Finding]:
    """ED163: the power limit set below the default; ED164: application clocks below the default."""
    if g.power_limit_w and g.default_power_limit_w and g.power_limit_w < LOWERED * g.default_power_limit_w:
        yield _f(
            "ED163",
            "warning",
            f"{_label(g)} runs under a lowered power limit",
            [f"enforced {g.power_limit_w:g} W, default {g.default_power_limit_w:g} W"],
            [f"sudo nvidia-smi -i {g.index} -pl {g.default_power_limit_w:g}   # back to the default"],
            REF_CLOCKS,
        )
    app, default = g.app_sm_clock_mhz, g.default_app_sm_clock_mhz
    if app and default and app < LOWERED * default:
        yield _f(
            "ED164",
            "warning",
            f"{_label(g)} has its clocks held below the default",
            [f"applications SM clock {app} MHz, default {default} MHz"],
            [
                f"sudo nvidia-smi -i {g.index} -rac   # reset the applications clocks",
                f"sudo nvidia-smi -i {g.index} -rgc   # reset locked GPU clocks (nvidia-smi -lgc)",
            ],
            REF_CLOCKS,
        )
    elif g.reasons_mask is not None and g.reasons_mask & 0x2:
        yield _f(
            "ED164",
            "warning",
            f"{_label(g)} has its clocks held by the applications-clocks setting",
            [f"clock-event reasons 0x{g.reasons_mask:x} (applications clocks setting)"],
            [f"sudo nvidia-smi -i {g.index} -rac", f"sudo nvidia-smi -i {g.index} -rgc"],
            REF_CLOCKS,
        )


def memory_health(g: GpuState) -> Iterator[Finding]:
    """ED165: retired pages or remapped rows wait for a reset; a failed remapping needs service."""
    if g.remapped_failure:
        yield _f(
            "ED165",
            "error",
            f"{_label(g)}: row remapping failed: the GPU needs service",
            ["nvmlDeviceGetRemappedRows: failure"],
            [f"nvidia-smi -q -d ROW_REMAPPER -i {g.index}", "# report it to the vendor (RMA)"],
            REF_REMAP,
        )
    pending = [
        what for what, on in (("remapped rows", g.remapped_pending), ("retired pages", g.retired_pages_pending)) if on
    ]
    if pending:
        yield _f(
            "ED165",
            "warning",
            f"{_label(g)}: {' and '.join(pending)} wait for a GPU reset",
            [f"{what} pending" for what in pending],
            [f"sudo nvidia-smi --gpu-reset -i {g.index}   # with nothing running on it; or reboot"],
            REF_REMAP,
        )


def mig_pending(g: GpuState) -> Iterator[Finding]:
    """ED166: MIG mode changes at the next reset (what runs now is not what was configured)."""
    if g.mig_mode is not None and g.mig_pending is not None and g.mig_mode != g.mig_pending:
        yield _f(
            "ED166",
            "warning",
            f"{_label(g)}: MIG mode is {'on' if g.mig_mode else 'off'} until a GPU reset, "
            f"then {'on' if g.mig_pending else 'off'}",
            [f"MIG current {g.mig_mode}, pending {g.mig_pending}"],
            [f"sudo nvidia-smi --gpu-reset -i {g.index}"],
            "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html",
        )
    elif g.mig_mode and g.mig_devices == 0:
        yield _f(
            "ED166",
            "error",
            f"{_label(g)} is in MIG mode with no MIG instance: nothing can run on it",
            ["MIG mode on, 0 GPU instances"],
            [
                f"nvidia-smi mig -i {g.index} -lgip   # the profiles this GPU offers",
                f"sudo nvidia-smi mig -i {g.index} -cgi PROFILE -C   # one of them, with its compute instance",
                f"sudo nvidia-smi -i {g.index} -mig 0   # or leave MIG mode",
            ],
            "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html",
        )


def state_findings(state: GpuStateFacts, wanted: bool = False) -> List[Finding]:
    out: List[Finding] = []
    for g in state.gpus:
        out.extend(busy(g, wanted))
        out.extend(compute_mode(g, wanted))
        out.extend(limits(g))
        out.extend(memory_health(g))
        out.extend(mig_pending(g))
    return out


def live_state(facts: Facts, table: Any) -> Iterator[Finding]:
    state = getattr(facts, "gpu_state", None)
    if isinstance(state, GpuStateFacts):
        yield from state_findings(state)


RULES = (live_state,)

"""``fit --measure``: run the workload in the target interpreter and read what it used.

The host reads the GPU's free memory through NVML (:mod:`envdoctor.nvml`) before the child
starts, runs ``envdoctor/fit/target/measure.py`` through the one child protocol
(:mod:`envdoctor.child`) with a time bound derived from the model, and builds a
:class:`~envdoctor.fit.facts.Measurement`. A child that hangs, crashes or is stopped with
Ctrl-C comes back as a Measurement with that status, never as an exception::

    >>> m = run_measure(spec, raw, est, "/opt/torch/.venv/bin/python3")      # doctest: +SKIP
    >>> m.status, m.peak_bytes, m.context_bytes                                # doctest: +SKIP
    ('measured', 86012723200, 748683264)

The time bound (``measure_timeout``): 150 s to start (torch and transformers imports, CUDA
start, the matmul point; 60 s on the CPU), 10 s per billion parameters to build the model, the
FLOPs of every step it runs at a floor rate far below any working GPU (2 TFLOP/s; 1 GFLOP/s on
the CPU), and 0.25 s per generated token. A run past it is a hang, reported as such.
"""

from __future__ import annotations

import os
import shlex
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Callable

from envdoctor.child import ChildRun, Job, run_child, run_children
from envdoctor.fit.analysis import compute_dtype
from envdoctor.fit.childconfig import child_model, child_workload
from envdoctor.fit.estimate import Estimate
from envdoctor.fit.facts import Measurement, MeasurementError, measurement_from_child
from envdoctor.fit.spec import ModelSpec
from envdoctor.nvml import NvmlGpu, Session, match_device

SCRIPT = "fit/target/measure.py"
#: seconds the target Python may take to answer a trivial start-up probe (no torch) before the
#: measurement: check's --torch-timeout default, so a Python that hangs at start is said in a
#: minute, not after the measurement's whole bound (332 s for Llama-3.2-1B)
START_PROBE_S = 60.0
START_S = 150.0
START_S_CPU = 60.0
BUILD_S_PER_BILLION = 10.0
FLOOR_FLOPS = 2e12
FLOOR_FLOPS_CPU = 1e9
TOKEN_S = 0.25
TIMED_STEPS = 3
#: --cpu takes tiny configs only: an estimated allocation and FLOPs per step at most these
CPU_MAX_BYTES = 4 * 2**30
CPU_MAX_FLOPS = 5e11
#: the matmul point for the MFU's measured peak
MATMUL_N, MATMUL_N_CPU = 8192, 512
MATMUL_BUDGET_S, MATMUL_BUDGET_S_CPU = 1.0, 0.3
#: the child never downloads: transformers and the Hub client are told so as well
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def measure_timeout(est: Estimate, cpu: bool = False, timed_steps: int = TIMED_STEPS) -> float:
    """Seconds the child may take for ``est``'s workload (module docstring)."""
    w = est.workload
    steps = (2 + timed_steps) if w.train else 2
    rate = FLOOR_FLOPS_CPU if cpu else FLOOR_FLOPS
    tokens = (w.new_tokens + 2) * TOKEN_S if not w.train else 0.0
    start = START_S_CPU if cpu else START_S
    return round(start + BUILD_S_PER_BILLION * est.params_total / 1e9 + steps * est.flops.per_step / rate + tokens, 1)


def cpu_problem(est: Estimate) -> str | None:
    """Why ``--cpu`` refuses this workload (too big for a CPU run), or None."""
    allocated = sum(t.bytes for t in est.terms if t.name not in ("context", "allocator_reserve"))
    if allocated > CPU_MAX_BYTES or est.flops.per_step > CPU_MAX_FLOPS:
        return (
            f"--measure --cpu takes tiny configs only: this one allocates about {allocated / 2**30:.2f} GiB and "
            f"{est.flops.per_step / 1e12:.2f} TFLOP per step (the limits are {CPU_MAX_BYTES / 2**30:.0f} GiB and "
            f"{CPU_MAX_FLOPS / 1e12:.1f} TFLOP); measure on a GPU, or give a smaller --batch, --seq or config"
        )
    return None


def child_config(
    spec: ModelSpec,
    raw: Mapping[str, Any],
    est: Estimate,
    cpu: bool = False,
    builder: str = "auto",
    seed: int = 0,
    timed_steps: int = TIMED_STEPS,
    budget_s: float | None = None,
    matmul: bool = True,
) -> dict[str, Any]:
    """``matmul``: run the matmul point for the MFU's measured peak (a benchmark of many runs does it once)."""
    w = est.workload
    dtype = compute_dtype(est)
    point = {
        "dtype": "fp32" if cpu else dtype,
        "n": MATMUL_N_CPU if cpu else MATMUL_N,
        "budget": MATMUL_BUDGET_S_CPU if cpu else MATMUL_BUDGET_S,
    }
    return {
        "model": child_model(spec, raw),
        "workload": child_workload(spec, w),
        "device": "cpu" if cpu else "cuda",
        "builder": builder,
        "seed": seed,
        "timed_steps": timed_steps,
        "budget_s": budget_s,
        "matmul": point if matmul else None,
    }


def free_before(nvml: Any = None) -> tuple[dict[int, int], tuple[NvmlGpu, ...], str | None]:
    """(free bytes by NVML index, NVML's GPUs to match the child's device with, why not read) from NVML."""
    session = Session(nvml)
    if session.error is not None:
        return {}, (), session.error.message
    try:
        readings = session.read_all(("uuid", "pci", "name", "memory"))
    finally:
        session.close()
    free: dict[int, int] = {}
    for r in readings:
        memory = r.values.get("memory")
        if isinstance(memory, dict) and isinstance(memory.get("free"), (int, float)):
            free[r.index] = int(memory["free"])
    gpus = tuple(
        NvmlGpu(r.index, r.values.get("uuid"), (r.values.get("pci") or {}).get("bus_id"), r.values.get("name"))
        for r in readings
        if r.index in free
    )
    return free, gpus, None if free else "NVML read no GPU memory"


def measurement_of(
    child: ChildRun,
    interrupted: bool,
    free: Mapping[int, int],
    gpus: Sequence[NvmlGpu],
    nvml_note: str | None,
    env: Mapping[str, str] | None = None,
) -> Measurement:
    """The Measurement of a finished (or failed, or stopped) child; pure. ``free`` and ``gpus`` are
    :func:`free_before`'s; the child's device is matched with NVML's by :func:`envdoctor.nvml.match_device`
    in the child's environment ``env``."""
    where = f" during {child.stage}" if child.stage else ""
    if interrupted or (child.error is not None and child.error.kind == "interrupted"):
        return Measurement("stopped", f"stopped (Ctrl-C or a stop request){where}", seconds=child.seconds)
    if child.result is None:
        message = child.error.message if child.error is not None else f"the child printed no result{where}"
        if (child.failure or {}).get("kind") == "no_torch":  # a run that cannot start: the command's exit 2
            return Measurement(
                "no_torch",
                f"torch is not installed in {child.python} (give --python the interpreter that has it)",
                python=child.python,
                seconds=child.seconds,
            )
        return Measurement("failed", message, python=child.python, seconds=child.seconds)
    doc: dict[str, Any] = child.result
    raw_device = doc.get("device")
    device: dict[str, Any] = raw_device if isinstance(raw_device, dict) else {}
    uuid = device.get("uuid") if isinstance(device.get("uuid"), str) else None
    bus = device.get("pci_bus_id") if isinstance(device.get("pci_bus_id"), str) else None
    index = device.get("index") if isinstance(device.get("index"), int) else None
    nvml_index = match_device(uuid, bus, index, gpus, {} if env is None else env)
    try:
        m = measurement_from_child(doc, free.get(nvml_index) if nvml_index is not None else None, child.seconds)
    except MeasurementError as exc:
        return Measurement("failed", f"the child's answer does not fit: {exc}", seconds=child.seconds)
    if m.device_kind == "cuda" and nvml_note and m.context_how:
        m = replace(m, notes=m.notes + (f"NVML: {nvml_note}",))
    return m


def start_probe(
    python: str,
    env: Mapping[str, str] | None = None,
    timeout: float = START_PROBE_S,
    stop: threading.Event | None = None,
) -> str | None:
    """Why ``python`` cannot take the measurement, when it does not answer a trivial start-up probe
    (``child/interpreter.py``: the standard library only) within ``timeout``; else None (other
    failures are the measurement's own to report, in its words)."""
    probe = run_child("interpreter.py", python=python, timeout=timeout, env=env, what="a start-up probe", stop=stop)
    if probe.result is None and probe.error is not None and probe.error.kind == "timeout":
        return (
            f"{python} did not answer a start-up probe (no torch imported) in {timeout:g} s: it hangs before "
            "running any code (a wrapper, a sitecustomize, a stalled disk); "
            f"`envdoctor check --python {shlex.quote(python)}` looks at it"
        )
    return None


#: the names torch reads the allocator setting from, the one it reads first first
#: (pytorch/pytorch@0ac71663 c10/core/AllocatorConfig.cpp: PYTORCH_ALLOC_CONF, then the deprecated
#: PYTORCH_CUDA_ALLOC_CONF)
ALLOC_CONF_NAMES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")


def measured_env(base: Mapping[str, str], alloc_conf: str) -> dict[str, str]:
    """The child's environment: ``base``, offline, and the allocator setting the estimate assumed
    under both names torch reads (none when it assumed the default), so a shell's
    PYTORCH_ALLOC_CONF, which torch reads first, cannot measure another setting than asked.

    >>> measured_env({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, "")["PYTORCH_CUDA_ALLOC_CONF"]
    Traceback (most recent call last):
    ...
    KeyError: 'PYTORCH_CUDA_ALLOC_CONF'
    >>> measured_env({"PYTORCH_ALLOC_CONF": "max_split_size_mb:64"}, "expandable_segments:True")["PYTORCH_ALLOC_CONF"]
    'expandable_segments:True'
    """
    env = dict(base)
    env.update(OFFLINE)
    for name in ALLOC_CONF_NAMES:
        env.pop(name, None)
        if alloc_conf:
            env[name] = alloc_conf
    return env


def run_measure(
    spec: ModelSpec,
    raw: Mapping[str, Any],
    est: Estimate,
    python: str,
    *,
    cpu: bool = False,
    builder: str = "auto",
    timeout: float | None = None,
    seed: int = 0,
    timed_steps: int = TIMED_STEPS,
    nvml: Any = None,
    env: Mapping[str, str] | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    stop: threading.Event | None = None,
    matmul: bool = True,
) -> Measurement:
    """Measure ``est``'s workload for ``spec`` (built from ``raw``, its config.json object) in ``python``.

    Never raises for the child's sake: every outcome is a Measurement (see the module docstring)."""
    limit = timeout if timeout is not None else measure_timeout(est, cpu, timed_steps)
    if limit > START_PROBE_S:  # a shorter bound says a hang soon enough by itself
        hung = start_probe(python, env, START_PROBE_S, stop)
        if hung is not None:
            return Measurement("failed", hung, python=python)
    config = child_config(
        spec, raw, est, cpu, builder, seed, timed_steps, budget_s=max(10.0, limit * 0.3), matmul=matmul
    )
    free: dict[int, int] = {}
    gpus: tuple[NvmlGpu, ...] = ()
    note: str | None = None
    if not cpu:
        free, gpus, note = free_before(nvml)
    child_env = measured_env(os.environ if env is None else env, est.workload.alloc_conf)
    job = Job(SCRIPT, config, python, limit, what="the fit measurement", env=child_env)
    hook = (lambda _i, e: on_event(e)) if on_event is not None else None
    runs, interrupted = run_children([job], on_event=hook, stop=stop)
    return measurement_of(runs[0], interrupted, free, gpus, note, child_env)

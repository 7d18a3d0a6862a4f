"""``envdoctor profile``, host side: run the user's script under the bootstrap, read the trace.

The script runs in the target interpreter through the one child transport (``run_child``), in the
user's folder, with the user's environment (a launcher's RANK/WORLD_SIZE pass through). What the
child printed of its own (the script's output) comes back as ``stderr``, bounded.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from envdoctor.child import ChildRun, run_child
from envdoctor.facts.base import ProbeError
from envdoctor.parse.jsontext import JsonError, loads_object
from envdoctor.profile import analysis
from envdoctor.profile.facts import BASELINE_STEPS, Breakdown, StepTimes, SyncSite, Throughput

SCRIPT = "profile/target/bootstrap.py"
#: A trace larger than this is not analysed (fewer --steps make it smaller).
MAX_TRACE_CHARS = 512 * 1024 * 1024


@dataclass(frozen=True)
class ProfileRun:
    """One rank's run: what the child said, the breakdown of its trace, and what went wrong."""

    child: ChildRun
    figures: Optional[Dict[str, Any]]  # the child's "profile" event (also when the script hung later)
    target: Dict[str, Any]
    script: Dict[str, Any]  # how the user's script ended
    breakdown: Optional[Breakdown]
    times: Optional[StepTimes]
    syncs: Tuple[SyncSite, ...]
    trace: Optional[str]  # the trace file kept (--trace), else None
    error: Optional[str]  # one line: why there is no profile


def step_times(figures: Mapping[str, Any]) -> Optional[StepTimes]:
    """Mean and spread of the profiled steps, the baseline's mean and the profiler's overhead.

    >>> t = step_times({"profiled_s": [0.11, 0.09, 0.10], "baseline_s": [0.1, 0.1]})
    >>> round(t.mean_s, 3), round(t.spread, 2), round(t.overhead, 2)
    (0.1, 0.2, 0.0)
    """
    steps = [x for x in figures.get("profiled_s") or [] if isinstance(x, (int, float)) and x > 0]
    if not steps:
        return None
    mean = sum(steps) / len(steps)
    base = [x for x in figures.get("baseline_s") or [] if isinstance(x, (int, float)) and x > 0]
    baseline = sum(base) / len(base) if base else None
    return StepTimes(mean, (max(steps) - min(steps)) / mean, baseline, (mean / baseline - 1.0) if baseline else None)


def sync_sites(figures: Mapping[str, Any], steps: int) -> Tuple[SyncSite, ...]:
    out = []
    for row in figures.get("syncs") or []:
        if not isinstance(row, dict):
            continue
        count, secs = row.get("count"), row.get("seconds")
        if not isinstance(count, int) or not isinstance(secs, (int, float)) or steps <= 0:
            continue
        out.append(
            SyncSite(
                str(row.get("op")), str(row.get("where")), str(row.get("function")), count / steps, float(secs) / steps
            )
        )
    return tuple(out)


def throughput(
    figures: Mapping[str, Any],
    times: Optional[StepTimes],
    b: Optional[Breakdown],
    target: Mapping[str, Any],
    peak: Optional[Tuple[float, str, str]],
    bench_tflops: Optional[float],
) -> Throughput:
    """Achieved TFLOP/s from the profiler's FLOP counts over the profiled steps, and the MFU
    against the datasheet peak (``peak``: TFLOP/s, dtype, source) and against bench's rate."""
    flops = figures.get("flops_per_step")
    per_step = float(flops) if isinstance(flops, (int, float)) and not isinstance(flops, bool) and flops > 0 else None
    tflops = per_step / times.mean_s / 1e12 if per_step is not None and times is not None else None
    rate, dtype, source = peak if peak is not None else (None, None, None)
    return Throughput(
        per_step,
        tflops,
        rate,
        dtype,
        source,
        tflops / rate if tflops is not None and rate else None,
        bench_tflops,
        tflops / bench_tflops if tflops is not None and bench_tflops else None,
    )


def run_profile(
    script: str,
    args: Sequence[str],
    *,
    python: str,
    steps: int,
    warmup: int,
    timeout: float,
    trace_dir: Optional[str],
    steps_by: str = "auto",
    stop_after: bool = False,
    rank: int = 0,
    detail: str = "light",
    env: Optional[Mapping[str, str]] = None,
) -> ProfileRun:
    """Run ``python script args`` under the profiler; never raises for the script's sake."""
    own = trace_dir is None
    folder = tempfile.mkdtemp(prefix="envdoctor-profile-") if own else trace_dir
    assert folder is not None
    trace = os.path.join(folder, f"trace-rank{rank}.json")
    try:
        config = {
            "script": script,
            "args": list(args),
            "steps": steps,
            "warmup": warmup,
            "baseline": BASELINE_STEPS,
            "trace": trace,
            "steps_by": steps_by,
            "stop_after": stop_after,
            "detail": detail,
        }
        child = run_child(
            SCRIPT, config, python=python, timeout=timeout, what=f"{steps} profiled steps of {script}", env=env
        )
        return _outcome(child, trace, None if own else trace)
    finally:
        if own:
            shutil.rmtree(folder, ignore_errors=True)


def _dtypes(figures: Mapping[str, Any]) -> Tuple[str, ...]:
    """The dtype most matmuls of the FLOP-counted step ran in, as torch's trace names it."""
    counts = figures.get("matmul_dtypes")
    if not isinstance(counts, dict) or not counts:
        return ()
    top = max(counts, key=lambda k: counts[k] if isinstance(counts[k], (int, float)) else 0)
    return (
        {"bfloat16": "c10::BFloat16", "float16": "c10::Half", "float32": "float", "float64": "double"}.get(
            str(top), str(top)
        ),
    )


def _event(child: ChildRun, kind: str) -> Optional[Dict[str, Any]]:
    found = child.of_kind(kind)
    value = found[-1].get(kind) if found else None
    return value if isinstance(value, dict) else None


def _outcome(child: ChildRun, trace_path: str, kept: Optional[str]) -> ProfileRun:
    figures = _event(child, "profile")
    if figures is None and child.result is not None and isinstance(child.result.get("profile"), dict):
        figures = child.result["profile"]
    target = _event(child, "target") or {}
    script: Dict[str, Any] = child.result.get("script", {}) if child.result else {}
    if not isinstance(script, dict):
        script = {}
    if figures is None:
        return ProfileRun(child, None, target, script, None, None, (), None, _why_none(child, script))
    breakdown, error = None, None
    try:
        with open(trace_path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_TRACE_CHARS + 1)
        breakdown = analysis.breakdown(
            loads_object(text, "the trace", max_chars=MAX_TRACE_CHARS),
            tf32=bool(target.get("tf32_matmul")),
            cc=target.get("capability"),
            dtypes=_dtypes(figures),
        )
        if breakdown is None:
            error = f"the trace {trace_path} holds no profiled step"
    except OSError as exc:
        error = f"the trace {trace_path} could not be read: {exc.strerror or exc}"
    except JsonError as exc:
        error = f"the trace {trace_path} is not one envdoctor can read: {exc}"
    times = step_times(figures)
    steps = len(figures.get("profiled_s") or [])
    return ProfileRun(child, figures, target, script, breakdown, times, sync_sites(figures, steps), kept, error)


def _why_none(child: ChildRun, script: Mapping[str, Any]) -> str:
    if child.failure is not None and child.failure.get("kind") == "no_torch":
        return str(child.failure.get("message"))
    if child.error is not None and child.result is None:
        return child.error.message
    seen = child.result.get("steps_seen", 0) if child.result else 0
    if script.get("finished") is False and script.get("error"):
        return f"the script failed after {seen} step(s): {script['error']}"
    if isinstance(script.get("exit"), int) and script["exit"] != 0:
        return f"the script exited with status {script['exit']} after {seen} step(s)"
    mode = (child.result or {}).get("mode")
    return (
        f"the script ended after {seen} step(s) ({mode or 'no optimizer step and at most one model forward'}); "
        "profiling needs --warmup + 3 + 1 + --steps of them: give fewer --steps/--warmup or a longer run"
    )


def problem(run: ProfileRun) -> Optional[ProbeError]:
    """The run's failure as the transport's error kind (for the exit code), or None."""
    if run.error is None:
        return None
    if run.child.failure is not None and run.child.failure.get("kind") == "no_torch":
        return ProbeError("unavailable", run.error)
    return run.child.error or ProbeError("exit_status", run.error)


def output_tail(run: ProfileRun, lines: int = 15) -> List[str]:
    """The last lines the script printed (its stdout and stderr both reach the child's stderr)."""
    text = run.child.stderr or ""
    keep = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("USDT:", "STAGE:"))]
    return keep[-lines:]

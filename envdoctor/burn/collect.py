"""What one burn child reported (its protocol events and answer) as a :class:`BurnGpu`; pure.

The host builds from the streamed events, not only from the final answer, so a child that dies
or hangs half-way still leaves the intervals, phases and memory passes it finished::

    >>> gpu = from_child(run)                                          # doctest: +SKIP
    >>> gpu.child.state, [p.status for p in gpu.phases]   # doctest: +SKIP
    ('hung', ['ok', 'missing'])
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.child import ChildRun
from envdoctor.burn.facts import BurnGpu, ChildOutcome, Interval, MemPass, MemTest, Phase
from envdoctor.facts.serde import DataError, from_data

#: child failures that are the target's, not a GPU's: the run as a whole cannot go on
RUN_FAILURES = ("no_torch", "import_failed", "python_too_old", "bad_device", "no_cuda")


def _load(cls: Any, data: Any, where: str) -> Any:
    try:
        return from_data(cls, data, where)
    except DataError:
        return None


def outcome(run: ChildRun) -> ChildOutcome:
    """How the child ended, in burn's words (hung, died, failed, stopped, ok)."""
    stopped = bool((run.result or {}).get("stopped"))
    base: Dict[str, Any] = dict(stage=run.stage, seconds=round(run.seconds, 3), returncode=run.returncode,
                                stderr=run.stderr[-2000:])
    if run.error is None:
        return ChildOutcome("stopped" if stopped else "ok", **base)
    e = run.error
    if e.kind == "interrupted":
        message = None if run.result is not None else f"{e.message}; it did not answer before it was killed"
        return ChildOutcome("stopped", message, **base)
    if e.kind == "timeout":
        return ChildOutcome("hung", e.message, **base)
    if run.failure is not None and run.failure.get("kind") != "internal":
        return ChildOutcome("failed", e.message, **base)
    return ChildOutcome("died", e.message, **base)


def from_child(run: ChildRun, index: int = 0) -> BurnGpu:
    """The device, phases, memory test and outcome of one child (``index``: the torch device asked for)."""
    device: Dict[str, Any] = {}
    intervals: Dict[str, List[Interval]] = {}
    phases: List[Phase] = []
    passes: List[MemPass] = []
    memtest: Optional[MemTest] = None
    notes: List[str] = []
    n = 0
    for e in run.events:
        kind = e.get("kind")
        if kind == "device" and isinstance(e.get("device"), dict):
            device = e["device"]
        elif kind == "plan":
            n = e["n"] if isinstance(e.get("n"), int) else n
            notes.extend(str(n) for n in e.get("notes") or [])
        elif kind == "interval":
            i = _load(Interval, e.get("interval"), "interval")
            if i is not None:
                intervals.setdefault(i.dtype, []).append(i)
        elif kind == "phase":
            p = _load(Phase, e.get("phase"), "phase")
            if p is not None:
                phases.append(p)
        elif kind == "mempass":
            m = _load(MemPass, e.get("mempass"), "mempass")
            if m is not None:
                passes.append(m)
        elif kind == "memtest":
            memtest = _load(MemTest, e.get("memtest"), "memtest")
    if not device and run.result and isinstance(run.result.get("device"), dict):
        device = run.result["device"]
    if run.result:
        notes.extend(str(n) for n in run.result.get("notes") or [] if str(n) not in notes)
    done = {p.dtype for p in phases}
    filled = []
    for p in phases:
        filled.append(_with_intervals(p, intervals.get(p.dtype, [])))
    for dtype, its in intervals.items():       # a load the child did not finish: only its intervals
        if dtype not in done:
            filled.append(_missing(dtype, n, its, device))
    if memtest is None and passes:
        memtest = MemTest("failed", bytes=passes[-1].bytes, passes=tuple(passes),
                          mismatches=sum(p.mismatches for p in passes),
                          error="the child ended during the memory test")
    elif memtest is not None and not memtest.passes and passes:
        memtest = replace(memtest, passes=tuple(passes))
    return BurnGpu(
        index=int(device.get("index", index)) if isinstance(device.get("index", index), int) else index,
        kind=str(device.get("kind") or ("cpu" if not device else "cuda")),
        name=_str(device.get("name")),
        capability=_str(device.get("capability")),
        uuid=_str(device.get("uuid")),
        pci_bus_id=_str(device.get("pci_bus_id")),
        memory_bytes=device.get("memory_bytes") if isinstance(device.get("memory_bytes"), int) else None,
        multiprocessors=device.get("multiprocessors") if isinstance(device.get("multiprocessors"), int) else None,
        skipped={str(k): str(v) for k, v in (device.get("skipped") or {}).items()},
        phases=tuple(filled),
        memtest=memtest,
        child=outcome(run),
        notes=tuple(notes),
    )


def _with_intervals(p: Phase, its: List[Interval]) -> Phase:
    return replace(p, intervals=tuple(sorted(its, key=lambda i: i.start)))


def _missing(dtype: str, n: int, its: List[Interval], device: Dict[str, Any]) -> Phase:
    its = sorted(its, key=lambda i: i.start)
    bad = [b for i in its for b in i.bad_products]
    return Phase(dtype, n=n, status="missing", compare="bitwise" if device.get("kind") == "cuda" else "tolerance",
                 products=sum(i.products for i in its), mismatches=sum(i.mismatches for i in its),
                 bad_products=sum(i.bad_count for i in its), first_bad_product=bad[0] if bad else None,
                 started=its[0].start, ended=its[-1].end, error="the child ended before this load finished",
                 intervals=tuple(its))


def _str(value: Any) -> Optional[str]:
    return str(value) if isinstance(value, (str, int, float)) and str(value) else None


def run_failure(runs: Tuple[ChildRun, ...]) -> Optional[Dict[str, Any]]:
    """The failure every child gave when it is the target's (no torch, bad --device, no CUDA)."""
    kinds = [(r.failure or {}).get("kind") for r in runs]
    if runs and all(k in RUN_FAILURES for k in kinds) and len(set(kinds)) == 1:
        return runs[0].failure
    return None

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

from envdoctor.burn.facts import BurnGpu, ChildOutcome, Interval, MemPass, MemTest, Phase
from envdoctor.child import ChildRun
from envdoctor.facts.serde import DataError, from_data
from envdoctor.parse.jsontext import opt_int, opt_str

#: The largest GPU index, matrix size or SM count read from a child; MAX_COUNT for byte counts.
MAX_N = 1 << 20
MAX_COUNT = 2**63 - 1

#: child failures that are the target's, not a GPU's: the run as a whole cannot go on
RUN_FAILURES = ("no_torch", "import_failed", "python_too_old", "bad_device", "no_cuda", "no_gpu")


def _load(cls: Any, data: Any, where: str) -> Any:
    try:
        return from_data(cls, data, where)
    except DataError:
        return None


def outcome(run: ChildRun) -> ChildOutcome:
    """How the child ended, in burn's words (hung, died, failed, stopped, ok)."""
    stopped = (run.result or {}).get("stopped") is True
    base: Dict[str, Any] = dict(
        stage=run.stage, seconds=round(run.seconds, 3), returncode=run.returncode, stderr=run.stderr[-2000:]
    )
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
            n = opt_int(e, "n", low=1, high=MAX_N) or n
            notes.extend(_notes(e.get("notes")))
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
        notes.extend(n for n in _notes(run.result.get("notes")) if n not in notes)
    done = {p.dtype for p in phases}
    filled = []
    for p in phases:
        filled.append(_with_intervals(p, intervals.get(p.dtype, [])))
    for dtype, its in intervals.items():  # a load the child did not finish: only its intervals
        if dtype not in done:
            filled.append(_missing(dtype, n, its, device))
    if memtest is None and passes:
        memtest = MemTest(
            "failed",
            bytes=passes[-1].bytes,
            passes=tuple(passes),
            mismatches=sum(p.mismatches for p in passes),
            error="the child ended during the memory test",
        )
    elif memtest is not None and not memtest.passes and passes:
        memtest = replace(memtest, passes=tuple(passes))
    skipped = device.get("skipped")
    given = opt_int(device, "index", low=0, high=MAX_N)
    return BurnGpu(
        index=index if given is None else given,
        kind=opt_str(device, "kind", max_chars=16) or ("cpu" if not device else "cuda"),
        name=opt_str(device.get("name")),
        capability=opt_str(device.get("capability")),
        uuid=opt_str(device.get("uuid")),
        pci_bus_id=opt_str(device.get("pci_bus_id")),
        memory_bytes=opt_int(device, "memory_bytes", low=0, high=MAX_COUNT),
        multiprocessors=opt_int(device, "multiprocessors", low=0, high=MAX_N),
        skipped={str(k)[:64]: str(v)[:500] for k, v in skipped.items()} if isinstance(skipped, dict) else {},
        phases=tuple(filled),
        memtest=memtest,
        child=outcome(run),
        notes=tuple(notes),
    )


def _notes(value: Any) -> List[str]:
    """A child's list of notes: its strings (at most 100, each cut to 500 characters)."""
    if not isinstance(value, list):
        return []
    return [n for n in (opt_str(x, max_chars=500) for x in value[:100]) if n]


def _with_intervals(p: Phase, its: List[Interval]) -> Phase:
    return replace(p, intervals=tuple(sorted(its, key=lambda i: i.start)))


def _missing(dtype: str, n: int, its: List[Interval], device: Dict[str, Any]) -> Phase:
    its = sorted(its, key=lambda i: i.start)
    bad = [b for i in its for b in i.bad_products]
    return Phase(
        dtype,
        n=n,
        status="missing",
        compare="bitwise" if device.get("kind") == "cuda" else "tolerance",
        products=sum(i.products for i in its),
        mismatches=sum(i.mismatches for i in its),
        bad_products=sum(i.bad_count for i in its),
        first_bad_product=bad[0] if bad else None,
        started=its[0].start,
        ended=its[-1].end,
        error="the child ended before this load finished",
        intervals=tuple(its),
    )


def run_failure(runs: Tuple[ChildRun, ...]) -> Optional[Dict[str, Any]]:
    """The failure every child gave when it is the target's (no torch, bad --device, no CUDA)."""
    kinds = [(r.failure or {}).get("kind") for r in runs]
    if runs and all(k in RUN_FAILURES for k in kinds) and len(set(kinds)) == 1:
        return runs[0].failure
    return None

"""The burn verdict: pure rules over a :class:`BurnResult` and the health tables -> findings per GPU.

A GPU is FAULTY when any of its findings is an error, OK otherwise; a CPU run gets no GPU-health
verdict ("NONE") unless its products were wrong. Every rule reads only the result and the tables
(:class:`envdoctor.table.health.Health`); :func:`judge` applies them all::

    >>> judged = judge(result, load_health())                     # doctest: +SKIP
    >>> judged.gpus[0].verdict, [f.code for f in judged.gpus[0].findings]   # doctest: +SKIP
    ('FAULTY', ['ED807'])
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from envdoctor import checks, codes
from envdoctor.burn.facts import BurnGpu, BurnResult, Phase
from envdoctor.codes import CODES
from envdoctor.findings import Finding, Severity, sort_findings
from envdoctor.table.health import Health

#: below this share of the model's expected sustained rate a GPU is FAULTY
EXPECTED_FACTOR = 0.9
#: --device all: a GPU this much below the median of the others is FAULTY
SIBLING_TOLERANCE = 0.05
#: fault clock-event reasons in more than this share of the samples under load (and in at least
#: FAULT_MIN_SAMPLES of them) make the GPU FAULTY
FAULT_SHARE = 0.05
FAULT_MIN_SAMPLES = 2
#: a temperature this close to the slowdown threshold is a warning
TEMPERATURE_MARGIN_C = 5
#: a dtype's load shorter than this gives no throughput verdict
MIN_JUDGED_S = 3.0
#: DCGM's pcie and nvlink thresholds (NVIDIA/DCGM nvvs/plugin_src/pcie/Pcie.cpp @72fa3fea)
NVLINK_CRC_LIMIT = 100
#: thermal violation time above this share of the load is a warning
THERMAL_SHARE = 0.01

CUBLAS_REPRO = "https://docs.nvidia.com/cuda/cublas/index.html#results-reproducibility"
XID_CATALOG = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
REMAP_DOC = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
REASONS_DOC = "https://docs.nvidia.com/deploy/nvml-api/api/group__nvmlClocksEventReasons.html"


def _finding(
    code: str,
    severity: Severity,
    title: str,
    evidence: Sequence[str] = (),
    fix: Sequence[str] = (),
    reference: Optional[str] = None,
) -> Finding:
    return Finding(code, severity, title, tuple(evidence), tuple(fix), reference, "burn", codes.meaning(code))


def _who(g: BurnGpu) -> str:
    return "CPU" if g.kind == "cpu" else f"GPU {g.index}"


# --- correctness -----------------------------------------------------------------------------


def miscompares(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    for p in g.phases:
        if p.mismatches:
            how = "bit for bit" if p.compare == "bitwise" else f"within the tolerance {p.tolerance}"
            first = f", the first at product {p.first_bad_product}" if p.first_bad_product else ""
            yield _finding(
                "ED800",
                "error",
                f"{_who(g)}: {p.bad_products} of {p.products} {p.dtype} products differed from the first",
                (f"{p.mismatches} elements differed{first}; compared {how}", f"n = {p.n}, the same inputs every time"),
                ("take the GPU out of service and rerun envdoctor burn",),
                CUBLAS_REPRO if p.compare == "bitwise" else None,
            )
        if p.status == "wrong":
            yield _finding(
                "ED801",
                "error",
                f"{_who(g)}: the first {p.dtype} product is wrong against float64",
                (p.error or "", f"bound {p.ref_bound:g}" if p.ref_bound else ""),
                ("rerun envdoctor burn; run envdoctor bench to see whether every size is wrong",),
            )


def memory_test(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    m = g.memtest
    if m is None:
        return
    if m.mismatches:
        first = next((p for p in m.passes if p.mismatches), None)
        where = (
            f"; first wrong word at byte {first.first_bad:#x} of the tested memory, pattern {first.pattern}"
            if first is not None and first.first_bad is not None
            else ""
        )
        yield _finding(
            "ED802",
            "error",
            f"{_who(g)}: {m.mismatches} words read back wrong in the memory test",
            (f"{len(m.passes)} passes over {m.bytes / 2**30:.1f} GiB{where}",),
            ("nvidia-smi -q -d ECC,ROW_REMAPPER", "reset the GPU (sudo nvidia-smi -r -i N) and rerun burn"),
        )
    elif m.status == "failed":
        yield (
            _out_of_memory(g, "the memory test", m.error)
            if _is_oom(m.error)
            else _finding("ED818", "error", f"{_who(g)}: the memory test failed", (m.error or "",))
        )
    elif m.status == "skipped" and m.error and "switched off" not in m.error:
        yield _finding(
            "ED819",
            "warning",
            f"{_who(g)}: the memory test did not run",
            (m.error,),
            ("nvidia-smi   # which processes hold GPU memory",),
        )


def load_errors(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    for p in g.phases:
        if p.status == "failed":
            if _is_oom(p.error):
                yield _out_of_memory(g, f"the {p.dtype} load", p.error)
            else:
                yield _finding(
                    "ED818",
                    "error",
                    f"{_who(g)}: the {p.dtype} load failed",
                    (p.error or "",),
                    ("sudo dmesg | grep -i xid", "rerun envdoctor burn"),
                )


def _is_oom(text: Optional[str]) -> bool:
    return bool(text) and "out of memory" in str(text).lower()


def _out_of_memory(g: BurnGpu, what: str, error: Optional[str]) -> Finding:
    return _finding(
        "ED819",
        "warning",
        f"{_who(g)}: {what} ran out of GPU memory",
        (error or "",),
        ("nvidia-smi   # which processes hold GPU memory",),
    )


# --- the child -------------------------------------------------------------------------------


def child_ended(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    c = g.child
    if c is None or c.state in ("ok", "stopped"):
        return
    where = f" during {c.stage}" if c.stage else ""
    if c.state == "hung":
        yield _finding(
            "ED816",
            "error",
            f"{_who(g)}: the burn process hung{where}",
            (c.message or "",),
            ("sudo dmesg | grep -i xid", "nvidia-smi", "reset the GPU (sudo nvidia-smi -r -i N) or reboot"),
        )
    else:
        yield _finding(
            "ED817",
            "error",
            f"{_who(g)}: the burn process died{where}",
            tuple(x for x in (c.message, _last_line(c.stderr)) if x),
            ("sudo dmesg | grep -i xid", "rerun envdoctor burn --device N for this GPU alone"),
        )


def _last_line(text: str) -> Optional[str]:
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    return f"stderr: {lines[-1][:200]}" if lines else None


# --- NVML counters and events ------------------------------------------------------------------


def ecc(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    d, end = g.counter_deltas, g.counters_end
    if d is not None and ((d.ecc_uncorrected or 0) > 0 or (d.remap_uncorrectable or 0) > 0):
        yield _finding(
            "ED803",
            "error",
            f"{_who(g)}: uncorrected ECC errors during the run",
            (
                f"volatile uncorrected ECC: +{d.ecc_uncorrected or 0}",
                f"rows remapped for uncorrectable errors: +{d.remap_uncorrectable or 0}",
            ),
            ("nvidia-smi -q -d ECC,ROW_REMAPPER", "drain the GPU, then: sudo nvidia-smi -r -i N"),
            REMAP_DOC,
        )
    elif end is not None and (end.ecc_uncorrected or 0) > 0:
        yield _finding(
            "ED804",
            "error",
            f"{_who(g)}: {end.ecc_uncorrected} uncorrected ECC errors since the driver loaded",
            ("nvidia-smi -q -d ECC: volatile uncorrected > 0 before the run",),
            ("nvidia-smi -q -d ECC,ROW_REMAPPER", "sudo nvidia-smi -r -i N   # then rerun burn"),
            REMAP_DOC,
        )
    if end is not None and (end.remap_pending or 0) > 0:
        yield _finding(
            "ED805",
            "error",
            f"{_who(g)}: a row remap is pending",
            ("remapped rows: pending = 1",),
            ("sudo nvidia-smi -r -i N   # applies the remap; then rerun burn",),
            REMAP_DOC,
        )
    if end is not None and (end.remap_failure or 0) > 0:
        yield _finding(
            "ED806",
            "error",
            f"{_who(g)}: a row remap failed",
            ("remapped rows: failure = 1",),
            ("nvidia-smi -q -d ROW_REMAPPER", "have the GPU serviced (RMA)"),
            REMAP_DOC,
        )
    if d is not None and (d.ecc_corrected or 0) > 0:
        yield _finding(
            "ED820",
            "warning",
            f"{_who(g)}: {d.ecc_corrected} corrected ECC errors during the run",
            (f"volatile corrected ECC: +{d.ecc_corrected}",),
            ("nvidia-smi -q -d ECC,ROW_REMAPPER",),
        )


def links(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    d = g.counter_deltas
    if d is None:
        return
    if (d.pcie_replay or 0) > 0:
        yield _finding(
            "ED821",
            "warning",
            f"{_who(g)}: {d.pcie_replay} PCIe replays during the run",
            (f"PCIe replay counter: +{d.pcie_replay}",),
            ("nvidia-smi -q -d PCIE",),
        )
    crc = (d.nvlink_crc_flit or 0) + (d.nvlink_crc_data or 0)
    if (d.nvlink_recovery or 0) > 0 or crc > NVLINK_CRC_LIMIT:
        yield _finding(
            "ED822",
            "warning",
            f"{_who(g)}: NVLink errors during the run",
            (
                f"recovery +{d.nvlink_recovery or 0}, CRC +{crc}, replay +{d.nvlink_replay or 0} "
                f"over {d.nvlink_active} active links",
            ),
            ("nvidia-smi nvlink -e",),
        )


def xids(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    seen: Dict[int, int] = {}
    for x in g.xids:
        seen[x.xid] = seen.get(x.xid, 0) + 1
    for code, times in sorted(seen.items()):
        x = next(e for e in g.xids if e.xid == code)
        count = f" ({times} times)" if times > 1 else ""
        meaning = x.meaning or "not in envdoctor's table: look it up in NVIDIA's Xid catalog"
        evidence = (f"Xid {code}{count}: {meaning}",) + ((f"NVIDIA: {x.mnemonic}",) if x.mnemonic else ())
        fix = (x.action,) if x.action else ("sudo dmesg | grep -i xid",)
        if x.severity == "critical":
            yield _finding("ED807", "error", f"{_who(g)}: Xid {code} during the run", evidence, fix, XID_CATALOG)
        else:
            yield _finding(
                "ED808",
                "info" if x.severity == "info" else "warning",
                f"{_who(g)}: Xid {code} during the run",
                evidence,
                fix,
                XID_CATALOG,
            )


# --- temperature and clocks ----------------------------------------------------------------------


def throttling(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    s = g.summary
    if s is None or s.fault_share is None or not s.samples:
        return
    faulty = {r: n for r, n in s.reasons.items() if r in _fault_names(health, s.reasons)}
    if s.fault_share > FAULT_SHARE and s.fault_samples >= FAULT_MIN_SAMPLES:
        shown = ", ".join(f"{r} in {n} of {s.samples} samples" for r, n in sorted(faulty.items()))
        known = [health.reason(r) for r in sorted(faulty)]
        meanings = [f"{r.name}: {r.meaning}" for r in known if r is not None]
        yield _finding(
            "ED812",
            "error",
            f"{_who(g)}: clocks held back ({', '.join(sorted(faulty))}) in "
            f"{100 * s.fault_share:.0f}% of the samples under load",
            (shown,) + tuple(meanings),
            ("nvidia-smi -q -d PERFORMANCE,TEMPERATURE", "check fans, airflow and power cables"),
            REASONS_DOC,
        )
    d = g.counter_deltas
    thermal_s = (d.thermal_violation_ns or 0) / 1e9 if d is not None else 0.0
    if s.load_s and thermal_s > THERMAL_SHARE * s.load_s:
        yield _finding(
            "ED823",
            "warning",
            f"{_who(g)}: {thermal_s:.1f} s of thermal violation during the run",
            (f"NVML thermal violation time +{thermal_s:.1f} s over a {s.load_s:.0f} s load",),
            ("nvidia-smi -q -d PERFORMANCE",),
        )


def _fault_names(health: Health, names: Iterable[str]) -> List[str]:
    benign = {r.name for r in health.reasons if r.kind == "benign"}
    return [n for n in names if n not in benign]


def temperature(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    s = g.summary
    if s is None:
        return
    if s.temperature_max_c is not None and g.slowdown_c:
        if s.temperature_max_c >= g.slowdown_c:
            yield _finding(
                "ED813",
                "error",
                f"{_who(g)}: {s.temperature_max_c} C, at the slowdown threshold ({g.slowdown_c} C)",
                (f"maximum {s.temperature_max_c} C under load",),
                ("check fans, airflow and heatsink contact",),
            )
        elif s.temperature_max_c >= g.slowdown_c - TEMPERATURE_MARGIN_C:
            yield _finding(
                "ED815",
                "warning",
                f"{_who(g)}: {s.temperature_max_c} C, within "
                f"{TEMPERATURE_MARGIN_C} C of the slowdown threshold ({g.slowdown_c} C)",
                (f"maximum {s.temperature_max_c} C under load",),
                ("check fans and airflow",),
            )
    if s.memory_temperature_max_c is not None and g.mem_max_c and s.memory_temperature_max_c >= g.mem_max_c:
        yield _finding(
            "ED814",
            "error",
            f"{_who(g)}: memory at {s.memory_temperature_max_c} C, its maximum ({g.mem_max_c} C)",
            (f"maximum memory temperature {s.memory_temperature_max_c} C",),
            ("check fans, airflow and heatsink contact",),
        )


# --- throughput ----------------------------------------------------------------------------------


def _judged(p: Phase) -> bool:
    if p.sustained_tflops is None or not p.intervals:
        return False
    return p.intervals[-1].end - p.intervals[0].start >= MIN_JUDGED_S


def expected_rate(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    if g.kind != "cuda":
        return
    for p in g.phases:
        if not p.expected_tflops or not _judged(p) or p.sustained_tflops is None:
            continue
        if p.sustained_tflops >= EXPECTED_FACTOR * p.expected_tflops:
            continue
        ratio = p.sustained_tflops / p.expected_tflops
        evidence = [
            f"{p.dtype} n={p.n}: {p.sustained_tflops:.1f} TFLOP/s sustained, {ratio:.2f}x the "
            f"{p.expected_tflops:g} recorded for {g.name} (data/health.toml: {p.expected_source})"
        ]
        if g.summary is not None and g.summary.sm_clock_median_mhz:
            evidence.append(
                f"SM clock median {g.summary.sm_clock_median_mhz:.0f} MHz"
                + (f" of {g.max_sm_clock_mhz}" if g.max_sm_clock_mhz else "")
                + (f", power median {g.summary.power_median_w:.0f} W" if g.summary.power_median_w else "")
                + (f" of {g.power_limit_w:.0f} W" if g.power_limit_w else "")
            )
        lower_limit = (
            p.expected_power_w is not None and g.power_limit_w is not None and g.power_limit_w < p.expected_power_w - 1
        )
        if p.expected_unconfirmed or lower_limit:
            why = (
                "the recorded figure is unconfirmed"
                if p.expected_unconfirmed
                else f"its power limit is {g.power_limit_w:.0f} W, the figure's {p.expected_power_w:.0f} W"
            )
            yield _finding(
                "ED810",
                "warning",
                f"{_who(g)}: {p.dtype} at {ratio:.2f}x the recorded figure ({why})",
                evidence,
                ("nvidia-smi -q -d POWER,CLOCK,PERFORMANCE",),
            )
        else:
            yield _finding(
                "ED809",
                "error",
                f"{_who(g)}: {p.dtype} sustained {p.sustained_tflops:.0f} TFLOP/s, "
                f"{ratio:.2f}x the {p.expected_tflops:g} expected",
                evidence,
                ("nvidia-smi -q -d POWER,CLOCK,PERFORMANCE", "nvidia-smi -q -d TEMPERATURE"),
            )


def siblings(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    if g.kind != "cuda":
        return
    for p in g.phases:
        if not _judged(p) or p.sustained_tflops is None:
            continue
        others = [
            q.sustained_tflops
            for o in result.gpus
            if o is not g and o.kind == "cuda"
            for q in o.phases
            if q.dtype == p.dtype and q.n == p.n and _judged(q) and q.sustained_tflops
        ]
        if not others:
            continue
        median = statistics.median(others)
        if p.sustained_tflops < (1 - SIBLING_TOLERANCE) * median:
            yield _finding(
                "ED811",
                "error",
                f"{_who(g)}: {p.dtype} {100 * (1 - p.sustained_tflops / median):.0f}% "
                "slower than the machine's other GPUs",
                (f"{p.sustained_tflops:.1f} TFLOP/s against a median of {median:.1f} over {len(others)} other GPU(s)",),
                ("nvidia-smi -q -d POWER,CLOCK,PERFORMANCE,TEMPERATURE",),
            )


def short_load(g: BurnGpu, result: BurnResult, health: Health) -> Iterable[Finding]:
    short = [p.dtype for p in g.phases if p.intervals and not _judged(p)]
    if short and g.kind == "cuda":
        yield _finding(
            "ED827",
            "info",
            f"{_who(g)}: {', '.join(short)} ran too briefly for a throughput verdict",
            (f"less than {MIN_JUDGED_S:g} s of load",),
            ("envdoctor burn --seconds 60",),
        )


Rule = Callable[[BurnGpu, BurnResult, Health], Iterable[Finding]]
RULES: Tuple[Rule, ...] = (
    miscompares,
    memory_test,
    load_errors,
    child_ended,
    ecc,
    links,
    xids,
    throttling,
    temperature,
    expected_rate,
    siblings,
    short_load,
)
#: the rules that still apply to a CPU run (correctness and the child)
CPU_RULES: Tuple[Rule, ...] = (miscompares, memory_test, load_errors, child_ended)


def _verdict(g: BurnGpu, found: Iterable[Finding]) -> str:
    if any(f.severity == "error" for f in found):
        return "FAULTY"
    return "NONE" if g.kind == "cpu" else "OK"


def judge(result: BurnResult, health: Health) -> BurnResult:
    """The result with every GPU's findings and verdict, and the run's own findings. A rule that
    raises is one ED900 naming it (:func:`envdoctor.checks.call`), the other rules still judge."""
    gpus = []
    for g in result.gpus:
        rules = CPU_RULES if g.kind == "cpu" else RULES
        found = sort_findings(f for rule in rules for f in checks.call(rule, g, result, health))
        gpus.append(replace(g, findings=found, verdict=_verdict(g, found)))
    out = replace(result, gpus=tuple(gpus))
    return replace(out, findings=sort_findings(tuple(result.findings) + tuple(run_findings(out))))


def suppressed(result: BurnResult, suppress: Iterable[str]) -> BurnResult:
    """``result`` without the findings whose codes ``--suppress`` names; each GPU's verdict again
    from the findings left (a suppressed error no longer makes a GPU FAULTY)."""
    gpus = []
    for g in result.gpus:
        found = checks.split(g.findings, suppress).shown
        gpus.append(replace(g, findings=found, verdict=_verdict(g, found)))
    return replace(result, gpus=tuple(gpus), findings=checks.split(result.findings, suppress).shown)


def run_findings(result: BurnResult) -> Iterable[Finding]:
    """Findings about the run as a whole: CPU run, stopped early, NVML or Xid watch missing."""
    measured = any(p.products or p.intervals for g in result.gpus for p in g.phases) or any(
        g.memtest is not None and g.memtest.bytes and g.memtest.status != "skipped" for g in result.gpus
    )
    explained = any(f.severity == "error" for g in result.gpus for f in g.findings)
    if result.gpus and not measured and not explained and not result.interrupted:
        yield _finding(
            "ED830",
            "error",
            CODES["ED830"].title,
            (
                f"{len(result.gpus)} device answer(s) in the burn child's form, with no product computed "
                "and no memory tested",
            )
            + tuple(
                f"{_who(g)}: {len(g.phases)} phase(s), memory test {g.memtest.status if g.memtest else 'none'}"
                for g in result.gpus[:4]
            ),
            (
                "envdoctor burn --json   # each device's answer and notes",
                "envdoctor check   # torch and CUDA in the target Python",
            ),
        )
        return
    if result.cpu_run:
        yield _finding(
            "ED828",
            "info",
            "CPU run: the load ran on the CPU; no GPU-health or Tensor Core verdict",
            ("torch sees no GPU and NVML reports none",),
        )
    if result.interrupted:
        yield _finding("ED826", "info", "The run was stopped before its time; the verdict covers what ran")
    cuda = [g for g in result.gpus if g.kind == "cuda"]
    if cuda and all(not g.samples for g in cuda) and result.sampling:
        yield _finding(
            "ED824",
            "warning",
            "NVML was not readable: temperatures, clocks, ECC and Xids not watched",
            (result.sampling,),
            ("envdoctor check",),
        )
    elif cuda and result.xid_watch and result.xid_watch.startswith("no Xid"):
        yield _finding("ED825", "info", CODES["ED825"].title, (result.xid_watch,), ("sudo dmesg | grep -i xid",))

"""Pure: each part's result -> diag tests (figure, threshold, source, status), then the verdicts.

A test FAILs on an error finding of its part or a figure under its ``fail_below`` threshold, WARNs on
a warning or a figure under ``warn_below``, is INFO where it measured a GPU that no table has a
threshold for, and SKIP where it could not run for a reason it names.

>>> from envdoctor.diag.facts import DiagTest
>>> node_verdict([DiagTest("check", "PASS"), DiagTest("burn", "FAIL", gpu=0)])
('FAIL', ('burn (GPU 0)',))
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from envdoctor import checks
from envdoctor.bench.facts import BenchResult
from envdoctor.burn.facts import BurnResult
from envdoctor.diag.analysis import hbm_figure, matmul_figure, power_figures
from envdoctor.diag.facts import DiagSummary, DiagTable, DiagTest, GpuVerdict
from envdoctor.facts.gpu_state import GpuStateFacts
from envdoctor.findings import Finding
from envdoctor.links.facts_comms import CommsResult
from envdoctor.rules.gpu_state import state_findings

#: the bench point diag judges the matmul by (compute-bound on every data-center GPU)
MATMUL = ("bf16", 8192)
#: the tiny op's fp32 bound against float64 (envdoctor bench's REF_BOUND for fp32)
CUDA_OP_BOUND = 1e-4
CUDA_OP_SOURCE = "envdoctor bench's fp32 bound against float64 (envdoctor/burn/target/burn.py REF_BOUND)"
SEVERITY_STATUS = {"error": "FAIL", "warning": "WARN", "info": "PASS"}
_RANK = {"FAIL": 3, "WARN": 2, "PASS": 1, "INFO": 1, "SKIP": 0}


def _worst(findings: Iterable[Finding]) -> str:
    statuses = [SEVERITY_STATUS[f.severity] for f in findings]
    return max(statuses, key=lambda s: _RANK[s], default="PASS")


def _codes(findings: Iterable[Finding], at_least: str = "warning") -> Tuple[str, ...]:
    keep = ("error",) if at_least == "error" else ("error", "warning")
    return tuple(dict.fromkeys(f.code for f in findings if f.severity in keep))


def _line(findings: Sequence[Finding]) -> str:
    bad = [f for f in findings if f.severity in ("error", "warning")]
    if not bad:
        return f"{len(findings)} note(s)" if findings else "nothing found"
    return "; ".join(f"{f.code} {f.title}" for f in bad[:3]) + (f" (+{len(bad) - 3} more)" if len(bad) > 3 else "")


def _judge(figure: Optional[float], fail: Optional[float], warn: Optional[float]) -> str:
    if figure is None:
        return "SKIP"
    if fail is None:
        return "INFO"
    if figure < fail:
        return "FAIL"
    if warn is not None and figure < warn:
        return "WARN"
    return "PASS"


# --- level 1 ----------------------------------------------------------------------------------


def _is_topo(code: str) -> bool:
    return 840 <= int(code[2:]) <= 859


def _is_fabric(code: str) -> bool:
    return 860 <= int(code[2:]) <= 869


def _is_state(code: str) -> bool:
    return 160 <= int(code[2:]) <= 169


def inspection_tests(
    findings: Sequence[Finding], state: GpuStateFacts, seconds: Optional[float] = None, suppress: Iterable[str] = ()
) -> List[DiagTest]:
    """check (driver, torch, container), topo (links), fabric (between nodes), state (per GPU, asked
    as a job would: a GPU in use is an error here). ``suppress``: the ``--suppress`` codes, which
    no test counts (``findings`` come suppressed already; the state's are found here)."""
    check = [f for f in findings if not (_is_topo(f.code) or _is_fabric(f.code) or _is_state(f.code))]
    topo = [f for f in findings if _is_topo(f.code)]
    fabric = [f for f in findings if _is_fabric(f.code)]
    out = [
        DiagTest(
            "check",
            _worst(check),
            1,
            detail=_line(check),
            codes=_codes(check),
            seconds=seconds,
            source="envdoctor check's findings (docs/check.md)",
        ),
        DiagTest(
            "topo",
            _worst(topo),
            1,
            detail=_line(topo),
            codes=_codes(topo),
            source="envdoctor topo's findings against data/links.toml",
        )
        if topo or state.gpus
        else DiagTest("topo", "SKIP", 1, detail="no GPU seen: no links to judge"),
        DiagTest(
            "fabric",
            _worst(fabric),
            1,
            detail=_line(fabric),
            codes=_codes(fabric),
            source="/sys/class/infiniband, /proc/modules, the NCCL variables (docs/diag.md)",
        ),
    ]
    if state.error is not None:
        out.append(DiagTest("state", "SKIP", 1, detail=f"live state unknown: {state.error.message}"))
    for g in state.gpus:
        found = checks.kept(state_findings(GpuStateFacts((g,)), wanted=True), suppress)
        procs = len(g.processes)
        out.append(
            DiagTest(
                "state",
                _worst(found),
                1,
                g.index,
                figure=float(procs),
                unit="processes",
                threshold=0.0,
                compare="==",
                source="NVML: processes, compute mode, limits, pending retirements (a job wants the GPU to itself)",
                detail=_line(found)
                if found
                else f"{procs} process(es), {g.utilization_pct}% busy, compute mode {g.compute_mode}",
                codes=_codes(found),
            )
        )
    return out


def cuda_op_tests(
    answer: Optional[Mapping[str, Any]], error: Optional[str], nvml_count: int, seconds: Optional[float] = None
) -> List[DiagTest]:
    """One tiny CUDA operation per GPU: a context, an fp32 product checked against float64."""
    if answer is None:
        return [DiagTest("cuda_op", "FAIL", 1, detail=error or "the target Python gave no answer", seconds=seconds)]
    devices = [d for d in answer.get("devices") or () if isinstance(d, dict)]
    if not devices:
        why = answer.get("cuda_error") or "torch sees no GPU"
        status = "FAIL" if nvml_count else "SKIP"
        return [
            DiagTest(
                "cuda_op",
                status,
                1,
                detail=f"{why}" + (f", but NVML sees {nvml_count} GPU(s)" if nvml_count else ""),
                seconds=seconds,
            )
        ]
    out = []
    for d in devices:
        err = d.get("rel_error")
        ok = bool(d.get("ok"))
        out.append(
            DiagTest(
                "cuda_op",
                "PASS" if ok else "FAIL",
                1,
                int(d.get("index", 0)),
                figure=float(err) if isinstance(err, (int, float)) else None,
                unit="relative error",
                threshold=CUDA_OP_BOUND,
                compare="<=",
                source=CUDA_OP_SOURCE,
                detail=(
                    f"context {d.get('init_ms')} ms, 256x256 fp32 product and a sum in {d.get('op_ms')} ms"
                    if ok
                    else str(d.get("error") or "failed")
                ),
                seconds=seconds,
            )
        )
    return out


# --- level 2 ----------------------------------------------------------------------------------


def bench_tests(bench: BenchResult, diag: DiagTable) -> List[DiagTest]:
    """matmul (bf16 n=8192) against data/diag.toml, HBM bandwidth against the datasheet."""
    if bench.error is not None and not bench.points:
        return [DiagTest("matmul", "FAIL", 2, detail=f"the bench could not run: {bench.error.message}")]
    out = []
    rule = diag.rule("memory_bandwidth")
    errors = [f for f in bench.findings if f.severity == "error"]
    for d in bench.devices:
        if d.kind != "cuda":
            continue
        gpu = d.nvml_index if d.nvml_index is not None else d.index
        rate = matmul_figure(bench, d.index, *MATMUL)
        t = diag.threshold(d.name, "matmul")
        status = _judge(rate, t.min if t else None, None)
        mine = [f for f in errors if any(e.startswith(f"GPU {d.index}") for e in f.evidence)]
        if mine:
            status = "FAIL"
        out.append(
            DiagTest(
                "matmul",
                status,
                2,
                gpu,
                rate,
                "TFLOP/s",
                t.min if t else None,
                compare=">=",
                source=t.source if t else None,
                codes=_codes(mine),
                detail=(
                    f"{MATMUL[0]} n={MATMUL[1]} median of the timed repeats"
                    + ("" if t else f"; no threshold for {d.name} in data/diag.toml")
                ),
            )
        )
        hbm = hbm_figure(bench, d.index)
        sheet = d.bandwidth_gbs
        fail = rule.fail_below * sheet if rule and sheet else None
        warn = rule.warn_below * sheet if rule and sheet else None
        out.append(
            DiagTest(
                "memory_bandwidth",
                _judge(hbm, fail, warn),
                2,
                gpu,
                hbm,
                "GB/s",
                round(fail, 1) if fail else None,
                round(warn, 1) if warn else None,
                ">=",
                (
                    f"{rule.fail_below:g}/{rule.warn_below:g} x the {sheet:g} GB/s datasheet "
                    f"({d.peaks_source or 'gpus.toml'}); {rule.source}"
                )
                if rule and sheet
                else None,
                detail="best copy/mul past the L2" + ("" if sheet else f"; no datasheet bandwidth for {d.name}"),
            )
        )
    if not out:
        out.append(DiagTest("matmul", "SKIP", 2, detail="no GPU was benchmarked"))
    return out


def burn_tests(burn: BurnResult, level: int, power_rule: Any = None, clock_rule: Any = None) -> List[DiagTest]:
    """burn (every product bitwise equal, rates, throttling, ECC, Xid), memtest, and at level 3
    targeted power (the power limit held under the Tensor Core load, with the clocks watched)."""
    if burn.error is not None:
        return [DiagTest("burn", "FAIL", level, detail=f"the burn could not run: {burn.error.message}")]
    out = []
    for g in burn.gpus:
        if g.kind != "cuda":
            continue
        gpu = g.nvml_index if g.nvml_index is not None else g.index
        bf16 = next((p for p in g.phases if p.dtype == "bf16"), g.phases[0] if g.phases else None)
        bad = [f for f in g.findings if f.severity in ("error", "warning")]
        status = "FAIL" if g.verdict == "FAULTY" else _worst(g.findings)
        expected = bf16.expected_tflops if bf16 else None
        mism = sum(p.mismatches for p in g.phases)
        out.append(
            DiagTest(
                "burn",
                status,
                level,
                gpu,
                bf16.sustained_tflops if bf16 else None,
                "TFLOP/s",
                round(0.9 * expected, 2) if expected else None,
                compare=">=",
                source=bf16.expected_source if bf16 and expected else None,
                detail=(
                    f"{burn.seconds:g} s, {sum(p.products for p in g.phases)} products, "
                    f"{mism} miscompares (bitwise); "
                    + (_line(bad) if bad else "OK")
                    + ("" if expected else f"; no expected rate for {g.name} in health.toml")
                ),
                codes=_codes(bad),
            )
        )
        m = g.memtest
        if m is not None:
            patterns = len({p.pattern for p in m.passes})
            cover = round(sum(p.bytes for p in m.passes) / m.free_bytes, 2) if m.free_bytes else None
            st = (
                "FAIL"
                if m.mismatches or m.status in ("mismatch", "failed")
                else ("SKIP" if m.status in ("skipped", "stopped") else "PASS")
            )
            if st == "PASS" and level >= 3 and patterns < 5:
                st = "WARN"
            out.append(
                DiagTest(
                    "memtest",
                    st,
                    level,
                    gpu,
                    float(m.mismatches),
                    "wrong 32-bit words",
                    0.0,
                    compare="==",
                    source="envdoctor burn's pattern test (every word read back equal)",
                    detail=f"{len(m.passes)} pass(es), {patterns} pattern(s), {m.bytes >> 30} GiB each"
                    + (f", {cover:g}x the free memory" if cover is not None else "")
                    + (f"; {m.error}" if m.error else ""),
                )
            )
        if level >= 3 and power_rule is not None:
            out.append(power_test(g, gpu, power_rule, clock_rule))
    return out


def power_test(g: Any, gpu: int, rule: Any, clock_rule: Any) -> DiagTest:
    f = power_figures(g)
    if not f.get("samples") or f.get("power_fraction") is None:
        return DiagTest("power", "SKIP", 3, gpu, detail="no power samples under load (NVML)")
    frac = f["power_fraction"]
    status = _judge(frac, rule.fail_below, rule.warn_below)
    clock = f.get("clock_fraction")
    detail = (
        f"median {f['power_median_w']:g} W of the {g.power_limit_w:g} W limit under the bf16 load, SM clock "
        f"{f.get('sm_clock_median_mhz')} MHz of {g.max_sm_clock_mhz}"
    )
    if status != "PASS" and clock is not None and clock_rule is not None:
        # below the power limit: the clock must be at the top, else something else holds it down
        cstat = _judge(clock, clock_rule.fail_below, clock_rule.warn_below)
        status = cstat if cstat != "PASS" else "PASS"
        detail += (
            "; below the limit at its top clock: the load draws less, nothing holds it back"
            if cstat == "PASS"
            else "; below the limit and below its top clock: held back"
        )
    return DiagTest(
        "power", status, 3, gpu, frac, "of the power limit", rule.fail_below, rule.warn_below, ">=", rule.source, detail
    )


def comms_tests(comms: CommsResult, findings: Sequence[Finding], diag: DiagTable, level: int) -> List[DiagTest]:
    """host_copy (pinned host <-> GPU vs the PCIe link), pairs (GPU -> GPU vs the path), collectives."""
    out = []
    if comms.error is not None and not (comms.points or comms.host_copies or comms.pairs):
        return [DiagTest("comms", "FAIL", level, detail=f"comms could not run: {comms.error.message}")]
    rule = diag.rule("host_copy")
    gpu = next((r.gpu for r in comms.ranks if r.gpu is not None), None)
    for c in comms.host_copies:
        fail = rule.fail_below * c.expected_gbps if rule and c.expected_gbps else None
        warn = rule.warn_below * c.expected_gbps if rule and c.expected_gbps else None
        out.append(
            DiagTest(
                "host_copy",
                _judge(c.gbps, fail, warn),
                level,
                gpu,
                c.gbps,
                "GB/s",
                round(fail, 2) if fail else None,
                round(warn, 2) if warn else None,
                ">=",
                (f"{rule.fail_below:g}/{rule.warn_below:g} x the PCIe link's {c.expected_gbps:g} GB/s; " + rule.source)
                if rule and c.expected_gbps
                else None,
                detail=f"{c.direction} pinned, {c.bytes >> 20} MiB x {c.iters}",
            )
        )
    for p in comms.pairs:
        fail = 0.5 * p.expected_gbps if p.expected_gbps else None
        st = "FAIL" if p.wrong else _judge(p.gbps, fail, 0.7 * p.expected_gbps if p.expected_gbps else None)
        out.append(
            DiagTest(
                "peer_copy",
                st,
                level,
                p.src,
                p.gbps,
                "GB/s",
                round(fail, 1) if fail else None,
                compare=">=",
                source="0.5 (fail) / 0.7 (warn) x the path's expected peak, data/links.toml",
                detail=f"GPU {p.src} -> GPU {p.dst} over {p.path or '?'}"
                + (f", {p.wrong} wrong elements" if p.wrong else ""),
            )
        )
    coll = [f for f in findings if f.code in ("ED870", "ED871", "ED872", "ED873", "ED874", "ED875", "ED879")]
    if comms.points and comms.world_size > 1:
        out.append(
            DiagTest(
                "collectives",
                _worst(coll),
                level,
                detail=_line(coll),
                codes=_codes(coll),
                source="envdoctor comms' findings against data/links.toml",
            )
        )
    if not out:
        out.append(DiagTest("host_copy", "SKIP", level, detail="nothing measured between host and GPU"))
    return out


# --- the verdicts -----------------------------------------------------------------------------


def _label(t: DiagTest) -> str:
    return f"{t.name} (GPU {t.gpu})" if t.gpu is not None else t.name


def node_verdict(tests: Sequence[DiagTest]) -> Tuple[str, Tuple[str, ...]]:
    """PASS, WARN or FAIL, and the tests that failed (or warned, when none failed)."""
    failed = tuple(dict.fromkeys(_label(t) for t in tests if t.status == "FAIL"))
    if failed:
        return "FAIL", failed
    warned = tuple(dict.fromkeys(_label(t) for t in tests if t.status == "WARN"))
    return ("WARN", warned) if warned else ("PASS", ())


def gpu_verdicts(tests: Sequence[DiagTest], gpus: Sequence[Mapping[str, Any]]) -> Tuple[GpuVerdict, ...]:
    """One verdict per GPU: its own tests; a node test that failed fails every GPU of the node too."""
    node_bad = [t for t in tests if t.gpu is None and t.status in ("FAIL", "WARN")]
    out = []
    for g in gpus:
        mine = [t for t in tests if t.gpu == g["index"]] + node_bad
        failed = tuple(dict.fromkeys(t.name for t in mine if t.status == "FAIL"))
        warned = tuple(dict.fromkeys(t.name for t in mine if t.status == "WARN"))
        out.append(
            GpuVerdict(
                int(g["index"]),
                g.get("name"),
                g.get("uuid"),
                g.get("bus_id"),
                "FAIL" if failed else ("WARN" if warned else "PASS"),
                failed,
                warned,
            )
        )
    return tuple(out)


def exit_status(verdict: str) -> int:
    """0 PASS or WARN, 1 FAIL, 2 could not start (NO_GPU, ERROR)."""
    return {"PASS": 0, "WARN": 0, "FAIL": 1}.get(verdict, 2)


def no_threshold(tests: Sequence[DiagTest]) -> Dict[str, int]:
    """Tests that measured but had no threshold for this GPU, by name."""
    out: Dict[str, int] = {}
    for t in tests:
        if t.status == "INFO":
            out[t.name] = out.get(t.name, 0) + 1
    return out


def summary(verdict: str, tests: Sequence[DiagTest]) -> DiagSummary:
    count = {s: sum(t.status == s for t in tests) for s in ("PASS", "WARN", "FAIL", "SKIP", "INFO")}
    return DiagSummary(
        verdict, exit_status(verdict), count["PASS"], count["WARN"], count["FAIL"], count["SKIP"], count["INFO"]
    )

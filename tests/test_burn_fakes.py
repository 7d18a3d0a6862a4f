"""Helpers for the burn tests (no tests here): the healthy H200 recording as envdoctor's own objects,
fake target interpreters that speak the child protocol, one scenario per GPU."""

from __future__ import annotations

import json
import stat
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.burn import analysis
from envdoctor.burn.facts import BurnGpu, BurnResult, ChildOutcome, Counters, Interval, MemPass, MemTest, Phase, Sample
from envdoctor.table.health import load_health

RECORDING = Path(__file__).parent / "fixtures" / "h200-burn" / "burn-bf16-8192-150s.jsonl"
#: The H200 fixture's NVML UUID (tests/fixtures/h200-driver580-cuda13/nvml.json); FakeNvml.recorded(gpus=N)
#: replaces its last two characters with the GPU's index.
H200_UUID = "GPU-c7d3a8fe-462a-58ba-1a7b-0c6231496ec4"


def recording() -> List[Dict[str, Any]]:
    return [json.loads(line) for line in RECORDING.read_text().splitlines() if line.strip()]


def h200_series() -> Tuple[List[Interval], List[Sample]]:
    """The recording's rates as intervals (each from its time to the next) and its NVML samples.

    The rates' times count from the start of the load; the samples carry time.time(). The load
    started right after the first sample (the idle one: 33 C, 80 W, no reason), so the intervals
    are placed 0.05 s after it.
    """
    lines = recording()
    h = load_health()
    samples = [
        analysis.sample(
            {
                "temperature_c": s["temp"],
                "memory_temperature_c": s["mem_temp"],
                "power_w": s["power"],
                "sm_clock_mhz": s["sm"],
                "mem_clock_mhz": s["memclk"],
                "reasons_mask": s["reasons"],
                "utilization_pct": s["util"],
                "energy_j": s["energy_j"],
            },
            s["t"],
            h.reason_names,
            h.fault_reasons,
        )
        for s in lines
        if s["kind"] == "sample"
    ]
    base = samples[0].t + 0.05
    rates = next(line for line in lines if line["kind"] == "burn")["rates"]
    intervals = []
    for i, (t, rate) in enumerate(rates):
        end = rates[i + 1][0] if i + 1 < len(rates) else t + 0.167
        intervals.append(
            Interval(
                "bf16", base + t, base + end, products=100, gemm_s=round(end - t, 6), tflops=rate, fastest_tflops=rate
            )
        )
    return intervals, samples


def h200_gpu(index: int = 0, **changes: Any) -> BurnGpu:
    """The recorded healthy H200 as burn's BurnGpu before the verdict (figures and summary filled)."""
    intervals, samples = h200_series()
    phase = Phase(
        "bf16",
        8192,
        products=89640,
        started=intervals[0].start,
        ended=intervals[-1].end,
        ref_error=0.0021,
        ref_bound=0.02,
        intervals=tuple(intervals),
        expected_tflops=660.0,
        expected_power_w=700.0,
        expected_source="data/health.toml",
    )
    zero = Counters(
        ecc_corrected=0,
        ecc_uncorrected=0,
        remap_correctable=0,
        remap_uncorrectable=0,
        remap_pending=0,
        remap_failure=0,
        pcie_replay=0,
        power_violation_ns=0,
        thermal_violation_ns=0,
    )
    gpu = BurnGpu(
        index=index,
        name="NVIDIA H200",
        capability="9.0",
        uuid=H200_UUID[:-2] + f"{index:02d}",
        nvml_index=index,
        power_limit_w=700.0,
        max_sm_clock_mhz=1980,
        max_mem_clock_mhz=3201,
        slowdown_c=89,
        shutdown_c=95,
        gpu_max_c=87,
        phases=(analysis.phase_figures(phase),),
        memtest=MemTest("ok", bytes=120 << 30, passes=(MemPass("address", 120 << 30, 0, 0.2),)),
        samples=tuple(samples),
        counters_start=zero,
        counters_end=zero,
        counter_deltas=analysis.delta(zero, zero),
        child=ChildOutcome("ok", seconds=160.0),
    )
    gpu = replace(gpu, **changes)
    return replace(gpu, summary=analysis.summarize(gpu))


def result_of(*gpus: BurnGpu, **changes: Any) -> BurnResult:
    return BurnResult(
        python="/opt/torch/.venv/bin/python3",
        torch_version="2.11.0+cu130",
        seconds=150.0,
        gpus=tuple(gpus),
        sampling="NVML: 75 samples",
        xid_watch="Xid events of 1 GPU(s) watched",
        **changes,
    )


# --- fake target interpreters ---------------------------------------------------------------------

#: What a fake child does, step by step: ("emit", kind, fields) prints a protocol line (fields may
#: use "$now" for time.time() and "$now+X"); ("intervals", dtype, rates, seconds_each) streams rates;
#: ("sleep", s); ("hang",); ("die", signal); ("result", fields); ("exit", code).
Step = Tuple[Any, ...]

_FAKE = r"""
import json, os, signal, sys, time
scenarios = json.load(open(%(path)r))
config = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
sys.stdin.read()
steps = scenarios.get(str(config.get("device")), scenarios.get("*", []))
stopped = []
signal.signal(signal.SIGTERM, lambda *a: stopped.append(1))
def line(kind, **fields):
    fields.update({"envdoctor_child": 2, "kind": kind, "t": time.time()})
    sys.stdout.write(json.dumps(fields) + "\n"); sys.stdout.flush()
def fill(v, now):
    if isinstance(v, str) and v.startswith("$now"):
        return now + float(v[4:] or 0)
    if isinstance(v, dict):
        return dict((k, fill(x, now)) for k, x in v.items())
    if isinstance(v, list):
        return [fill(x, now) for x in v]
    return v
for step in steps:
    op = step[0]
    if stopped and op not in ("result", "exit"):
        continue
    if op == "emit":
        line(step[1], **fill(step[2], time.time()))
    elif op == "intervals":
        dtype, rates, each = step[1], step[2], step[3]
        for r in rates:
            if stopped:
                break
            t0 = time.time(); time.sleep(each)
            line("interval", interval={"dtype": dtype, "start": t0, "end": time.time(), "products": 100,
                 "gemm_s": each, "tflops": r, "fastest_tflops": r, "mismatches": 0, "bad_products": [],
                 "bad_count": 0})
    elif op == "sleep":
        time.sleep(step[1])
    elif op == "hang":
        while True:
            time.sleep(3600)
    elif op == "die":
        os.kill(os.getpid(), step[1])
    elif op == "result":
        fields = fill(step[1], time.time())
        fields["stopped"] = bool(stopped)
        line("result", result=fields)
    elif op == "exit":
        sys.exit(step[1])
"""


def fake_target(tmp: Path, scenarios: Dict[str, Sequence[Step]], name: str = "python3") -> str:
    """An executable that answers like the burn child, per ``config["device"]`` ("*": any device)."""
    tmp.mkdir(parents=True, exist_ok=True)
    data = tmp / f"{name}.scenarios.json"
    data.write_text(json.dumps(scenarios))
    exe = tmp / name
    exe.write_text(f"#!{sys.executable}\n" + _FAKE % {"path": str(data)})
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(exe)


def healthy_steps(
    index: int,
    rates: Sequence[float] = (780.0, 676.6, 660.1, 659.4, 661.0, 658.2),
    each: float = 0.15,
    uuid: Optional[str] = None,
    extra: Sequence[Step] = (),
) -> List[Step]:
    """A healthy H200 child on torch device ``index``: device, plan, bf16 intervals, phase, memory test."""
    device = {
        "index": index,
        "kind": "cuda",
        "name": "NVIDIA H200",
        "capability": "9.0",
        "uuid": uuid or H200_UUID[:-2] + f"{index:02d}",
        "multiprocessors": 132,
        "memory_bytes": 150754820096,
        "skipped": {},
    }
    phase = {
        "dtype": "bf16",
        "n": 8192,
        "status": "ok",
        "compare": "bitwise",
        "products": 100 * len(rates),
        "mismatches": 0,
        "bad_products": 0,
        "ref_error": 0.0021,
        "ref_bound": 0.02,
        "started": "$now-1",
        "ended": "$now",
    }
    memtest = {
        "status": "ok",
        "bytes": 128 << 30,
        "passes": [{"pattern": "address", "bytes": 128 << 30, "mismatches": 0, "seconds": 0.2}],
        "mismatches": 0,
        "seconds": 0.2,
    }
    return (
        [
            ("emit", "stage", {"stage": "import torch"}),
            ("emit", "python", {"python_version": "3.12.3", "torch_version": "2.11.0+cu130", "torch_cuda": "13.0"}),
            ("emit", "device", {"device": device}),
            ("emit", "plan", {"dtypes": ["bf16"], "skipped": {}, "n": 8192, "seconds": 1.0, "notes": []}),
            ("emit", "stage", {"stage": "load bf16"}),
            ("intervals", "bf16", list(rates), each),
        ]
        + list(extra)
        + [
            ("emit", "phase", {"phase": phase}),
            ("emit", "stage", {"stage": "memory test"}),
            ("emit", "memtest", {"memtest": memtest}),
            (
                "result",
                {
                    "schema": "envdoctor.burn.child/1",
                    "device": device,
                    "phases": [phase],
                    "memtest": memtest,
                    "notes": [],
                },
            ),
            ("exit", 0),
        ]
    )


def miscompare_steps() -> list:
    """GPU 0's healthy steps with 7 wrong words in 2 products (the first at 133): a burn that miscompares."""
    steps = healthy_steps(0)
    for step in steps:
        if step[0] == "emit" and step[1] == "phase":
            step[2]["phase"].update(mismatches=7, bad_products=2, first_bad_product=133, status="miscompare")
        if step[0] == "result":
            step[1]["phases"][0].update(mismatches=7, bad_products=2, first_bad_product=133, status="miscompare")
    return steps

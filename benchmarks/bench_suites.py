"""envdoctor bench --suite all against the classic method, for the same points, in one run.

The classic method (mli/transformers-benchmarks' ``micro_bench.ipynb``) times each point with
``torch.utils.benchmark.Timer(stmt, globals).blocked_autorange(min_run_time=...)`` and takes the
median. This script runs, as separate processes of the interpreter that runs it (it must have
torch):

1. ``envdoctor bench --suite all --json`` (wall-clocked end to end: torch import, CUDA start,
   every suite), ``--ours-runs`` times;
2. the classic method for exactly the points the first run measured (``--classic`` re-runs this
   file): ``a @ b`` per dtype and n; ``torch.mul(a, 1.2, out=c)`` and ``c.copy_(a)`` per size; and
   each layer point's call (the same layer code, ``envdoctor/bench/target/models.py``, the same
   inputs and ``pass_fn``: no_grad for fwd, gradients set to None before each backward), with
   ``stmt="fn()"``, after ``WARM_CALLS`` calls and a synchronisation. Without them the Timer's
   block-size estimate, its only warm-up, sees the first call of a shape build its cuDNN
   attention graph (50 ms or more), stops at one call a block, and the point becomes the
   latency of one call on an empty queue with a synchronisation each: every SDPA point of the
   first H200 run. envdoctor's NVML sampler runs here meanwhile, for the clocks of its points;

then prints the three tables with the ratio per point, the bound envdoctor gave each layer
point, the Timer's calls a block and the SM clock of both methods while timing, the wall time of
each method and the issue 14 targets, and writes everything under ``--out`` (default ``$OUT``,
else ``./bench-out``). On the H200, from the repository root::

    PYTHONPATH=. python3 benchmarks/bench_suites.py --out "$OUT"

and on a CPU machine, tiny (a few layers of width 32, small vectors), to try it out::

    PYTHONPATH=. python3 benchmarks/bench_suites.py --tiny --out /tmp/bench-suites

With ``--default-run`` it first times the default ``envdoctor bench`` (matmul and memory,
``default.json``), about 15 s more.

``--quick`` (about two minutes on the H200; ``--quick --tiny`` on a CPU): the 12 bf16 layer
points of ``QUICK_LAYERS`` only (BERT b=4 s=128, launch-bound; GPT-2 b=16 s=1024; Llama b=2
s=2048; each eager and SDPA, fwd and fwd+bwd), with the per-point budget share of the full run,
in the order envdoctor, classic, classic cold (without the warm-up calls, as the first H200 run
had it), envdoctor again. It prints one table (``quick.txt``) and writes ``quick.json`` (every
document, the samples, the summary). No wall-time target there.

Files: ``ours-1.json`` (envdoctor's document, and the raw child output and NVML samples),
``plan.json`` (the points handed to the classic method), ``classic.json`` (with its samples),
``tables.txt`` (what is printed), ``summary.json`` (targets and wall times).

``--min-run-time`` is 1.5 s by default, not mli's 3 s: at 3 s the classic method alone would
take about six minutes for the 114 points of ``--suite all``. A shorter classic run only makes
the wall-time target harder for envdoctor.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
#: The width-32 layers and small sizes of --tiny (a CPU run of a few seconds a method).
TINY_DIMS = {
    "bert": {"h": 32, "heads": 4, "ffn": 64},
    "gpt2": {"h": 32, "heads": 4, "ffn": 64},
    "t5_encoder": {"h": 32, "heads": 4, "ffn": 64},
    "t5_decoder": {"h": 32, "heads": 4, "ffn": 64},
    "llama": {"h": 32, "heads": 4, "kv_heads": 2, "ffn": 48},
}
TINY: Dict[str, Any] = {
    "dtypes": ["fp32"],
    "sizes": [64, 128],
    "memory_sizes": [4096, 65536],
    "budget": 0.6,
    "suites": ["matmul", "memory", "layers"],
    "one_thread": True,
    "layers": {"dims": TINY_DIMS, "shapes": {k: [[2, 16]] for k in TINY_DIMS}},
}
#: Issue 14's targets.
WITHIN = 0.05  # memory points above 64 MiB and every layer point
WALL_RATIO = 0.2  # ours, end to end, against the classic method's wall time
HBM_SHARE = 0.90  # ours' best HBM figure against the classic method's best
BIG_BUFFER = 64 << 20
#: Calls of a layer point before the classic Timer (the first builds the attention graph).
WARM_CALLS = 3
#: --quick: bf16, one shape a layer, eager and SDPA, fwd and fwd+bwd: 12 points. BERT at b=4 s=128 is
#: launch-bound, GPT-2 at b=16 s=1024 has the memory-heavy eager softmax, Llama at b=2 s=2048 is the
#: most compute-dense (the power cap) and its SDPA points ran the classic Timer one call a block.
QUICK_LAYERS: Dict[str, Any] = {
    "names": ["bert", "gpt2", "llama"],
    "dtypes": ["bf16"],
    "shapes": {"bert": [[4, 128]], "gpt2": [[16, 1024]], "llama": [[2, 2048]]},
}
#: The full run's layer points (80) share the layers budget; --quick keeps that share per point.
FULL_LAYER_POINTS = 80


# --- the classic method (runs in a child with torch) ------------------------------------------


def _vs_classic() -> Any:
    """benchmarks/bench_vs_classic.py (the matmul comparison), loaded by path: its classic method
    and its timed run are this script's too."""
    spec = importlib.util.spec_from_file_location("bench_vs_classic", HERE / "bench_vs_classic.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _classic_matmul() -> Any:
    return _vs_classic().classic


def _models() -> Dict[str, Any]:
    """envdoctor's layer code, as the bench child has it (a part of the child: no imports of its own)."""
    text = (ROOT / "envdoctor" / "bench" / "target" / "models.py").read_text()
    space: Dict[str, Any] = {"first_line": lambda exc: f"{type(exc).__name__}: {exc}"}
    exec(compile(text, "bench/target/models.py", "exec"), space)
    return space


def classic(plan: Dict[str, Any], min_run_time: float) -> Dict[str, Any]:
    started = time.perf_counter()
    import torch
    import torch.utils.benchmark as benchmark

    imported = time.perf_counter() - started
    where = "cuda" if torch.cuda.is_available() else "cpu"
    out: Dict[str, Any] = {
        "import_s": imported,
        "torch": torch.__version__,
        "min_run_time": min_run_time,
        "device": torch.cuda.get_device_name(0) if where == "cuda" else "cpu",
        "suite_s": {},
    }
    t = time.perf_counter()
    pairs = plan["matmul"]
    mm = _classic_matmul()(sorted({d for d, _ in pairs}), sorted({n for _, n in pairs}), min_run_time)
    wanted = {(d, n) for d, n in pairs}
    out["matmul"] = [p for p in mm["points"] if (p["dtype"], p["n"]) in wanted]
    for p in out["matmul"]:
        times = sorted(p.pop("times"))
        p["blocks"] = len(times)
    out["suite_s"]["matmul"] = time.perf_counter() - t

    t = time.perf_counter()
    out["memory"] = []
    for n in plan["memory"]:
        a = torch.rand(n, device=where, dtype=torch.float32)
        c = torch.empty_like(a)
        for op, stmt in (("mul", "torch.mul(a, 1.2, out=c)"), ("copy", "c.copy_(a)")):
            t0 = time.perf_counter()
            m = benchmark.Timer(stmt=stmt, globals={"torch": torch, "a": a, "c": c}).blocked_autorange(
                min_run_time=min_run_time
            )
            out["memory"].append(
                {
                    "op": op,
                    "n": n,
                    "median_s": m.median,
                    "gbs": 8 * n / m.median / 1e9,
                    "blocks": len(m.times),
                    "seconds": time.perf_counter() - t0,
                }
            )
            print(f"classic memory {op:4} n={n:10} {out['memory'][-1]['gbs']:9.1f} GB/s", file=sys.stderr, flush=True)
        del a, c
        if where == "cuda":
            torch.cuda.empty_cache()
    out["suite_s"]["memory"] = time.perf_counter() - t

    t = time.perf_counter()
    out["layers"] = []
    models = _models()
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    built: Dict[Tuple[str, str], Any] = {}
    for q in plan["layers"]:
        key = (q["layer"], q["dtype"])
        if key not in built:
            built.clear()
            if where == "cuda":
                torch.cuda.empty_cache()
            built[key] = models["build_layer"](torch, q["layer"], plan["dims"][q["layer"]], dtypes[q["dtype"]], where)
        layer = built[key]
        b, s, mode = q["batch"], q["seq"], q["mode"]
        x, ctx = models["point_inputs"](torch, layer, b, s, where, mode == "fwd+bwd")
        dy = torch.randn(x.shape, device=where, dtype=x.dtype) if mode == "fwd+bwd" else None
        if q["attention"] == "sdpa":
            models["SDPA_OPTS"].update(plan.get("sdpa_opts") or {})
        fn = models["pass_fn"](torch, layer, q["attention"], mode, x, ctx, dy)
        flops = models["analytic_flops"](q["layer"], plan["dims"][q["layer"]], b, s) * (3 if mode == "fwd+bwd" else 1)
        t0 = time.perf_counter()
        started = time.time()
        probe: List[Dict[str, Any]] = []
        if plan.get("warm", True):
            # the first call of a shape builds (cuDNN: compiles) its attention graph: run it, and two
            # more, before the Timer, whose block-size estimate is also its only warm-up
            models["pass_fn"](torch, layer, q["attention"], mode, x, ctx, dy, probe)()
            for _ in range(WARM_CALLS - 1):
                fn()
            if where == "cuda":
                torch.cuda.synchronize()
        m = benchmark.Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=min_run_time)
        seen = probe[0] if probe else {}
        kernel = "eager" if q["attention"] == "eager" else seen.get("kernel") or seen.get("choice")
        out["layers"].append(
            dict(
                q,
                median_s=m.median,
                tflops=flops / m.median / 1e12,
                blocks=len(m.times),
                number_per_run=m.number_per_run,
                seconds=time.perf_counter() - t0,
                started=started,
                ended=time.time(),
                kernel=kernel,
            )
        )
        print(
            f"classic layers {q['layer']} {q['dtype']} {q['attention']} {mode} b={b} s={s} "
            f"{out['layers'][-1]['tflops']:.3g} TFLOP/s ({m.number_per_run} calls a block)",
            file=sys.stderr,
            flush=True,
        )
        del x, ctx, dy, fn
    built.clear()
    out["suite_s"]["layers"] = time.perf_counter() - t
    out["wall_s"] = time.perf_counter() - started
    return out


# --- ours --------------------------------------------------------------------------------------


def ours_api(config_path: str, raw_path: str) -> Dict[str, Any]:
    """One envdoctor run through its API, for what the CLI has no knob for (the layers' width,
    names and shapes): ``run_bench`` with the keywords in CONFIG (JSON)."""
    sys.path.insert(0, str(ROOT))
    from envdoctor.bench.host import run_bench
    from envdoctor.facts.serde import to_data

    kw = json.loads(Path(config_path).read_text())
    env = dict(os.environ, OMP_NUM_THREADS="1") if kw.pop("one_thread", False) else None
    raw: Dict[str, Any] = {}
    r = run_bench(sys.executable, raw=raw, env=env, **kw)
    Path(raw_path).write_text(json.dumps(raw))
    data: Dict[str, Any] = to_data(r)
    return data


def run_ours(out: Path, name: str, api: Optional[Dict[str, Any]] = None, suites: str = "all") -> Dict[str, Any]:
    """envdoctor bench --suite SUITES --json, wall-clocked end to end; with ``api`` (run_bench's
    keywords) the same run through the API instead."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    raw = out / f"{name}.raw.tmp"
    if api is not None:
        config = out / f"{name}.config.json"
        config.write_text(json.dumps(api))
        argv = [sys.executable, __file__, "--ours-api", str(config), str(raw)]
    else:
        argv = [
            sys.executable,
            "-m",
            "envdoctor",
            "bench",
            "--python",
            sys.executable,
            "--suite",
            suites,
            "--json",
            "--raw-out",
            str(raw),
        ]
    doc: Dict[str, Any] = _vs_classic().timed_run(argv, env, raw, out / f"{name}.json")
    return doc


def plan_of(doc: Dict[str, Any]) -> Dict[str, Any]:
    """The points of envdoctor's first run, for the classic method (GPU 0 only)."""
    r = doc.get("result") or {}
    dev = (r.get("devices") or [{}])[0]
    mine = [p for p in r.get("points") or [] if p.get("device", 0) == 0 and p.get("status") == "ok"]
    memory = sorted({p["n"] for p in r.get("memory_points") or [] if p.get("device", 0) == 0 and p["status"] == "ok"})
    keys = ("layer", "dtype", "attention", "mode", "batch", "seq")
    layers = [
        {k: p[k] for k in keys}
        for p in r.get("layer_points") or []
        if p.get("device", 0) == 0 and p.get("status") == "ok"
    ]
    sdpa = dev.get("sdpa") or {}
    return {
        "matmul": [[p["dtype"], p["n"]] for p in mine],
        "memory": memory,
        "layers": layers,
        "dims": dev.get("layer_dims") or {},
        "sdpa_opts": {"enable_gqa": bool(sdpa.get("enable_gqa"))},
    }


def run_classic(
    out: Path, plan: Dict[str, Any], min_run_time: float, tiny: bool, name: str = "classic"
) -> Dict[str, Any]:
    """The classic method in a child of this interpreter, with envdoctor's NVML sampler running
    here meanwhile (the clocks of its points, as envdoctor's own run has them)."""
    plan_path = out / ("plan.json" if name == "classic" else f"{name}.plan.json")
    plan_path.write_text(json.dumps(plan, indent=1))
    argv = [sys.executable, __file__, "--classic", str(plan_path), "--min-run-time", str(min_run_time)]
    env = dict(os.environ, OMP_NUM_THREADS="1") if tiny else None  # as the tiny envdoctor run
    sampler = _sampler()
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, env=env)
    wall = time.perf_counter() - t0
    doc: Dict[str, Any] = json.loads(proc.stdout)
    doc["process_wall_s"] = wall
    doc["samples"], doc["sampling"] = _stop(sampler)
    (out / f"{name}.json").write_text(json.dumps(doc, indent=1))
    return doc


def _sampler() -> Any:
    sys.path.insert(0, str(ROOT))
    from envdoctor.bench.host import Sampler

    sampler = Sampler()
    sampler.start()
    return sampler


def _stop(sampler: Any) -> Tuple[List[Dict[str, Any]], str]:
    from envdoctor.facts.serde import to_data

    sampler.stop()
    return [to_data(x) for x in sampler.samples], sampler.status


def window(
    samples: List[Dict[str, Any]], a: Optional[float], b: Optional[float]
) -> Tuple[Optional[int], Optional[float]]:
    """(median SM MHz, median W) of GPU 0's samples between times a and b."""
    if a is None or b is None:
        return None, None
    mine = [x for x in samples if x.get("gpu", 0) == 0 and a <= x["t"] <= b]
    mhz = [x["sm_clock_mhz"] for x in mine if x.get("sm_clock_mhz")]
    watts = [x["power_w"] for x in mine if x.get("power_w")]
    return (int(statistics.median(mhz)) if mhz else None), (round(statistics.median(watts)) if watts else None)


def timed_window(p: Dict[str, Any]) -> Tuple[Optional[float], Optional[float]]:
    """The time span of an envdoctor point's timed repeats (they end where the point ends)."""
    end, reps = p.get("ended"), p.get("repeats_ms")
    if end is None or not reps:
        return None, None
    return end - sum(reps) * int(p.get("launches") or 1) / 1000.0, end


# --- the tables ----------------------------------------------------------------------------------


def _fmt(rows: List[List[str]], head: List[str], left: int) -> List[str]:
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    return [
        "  ".join(x.ljust(w) if i < left else x.rjust(w) for i, (x, w) in enumerate(zip(r, widths))).rstrip()
        for r in [head] + rows
    ]


def _v(x: Optional[float]) -> str:
    """Three significant digits at most: 4232.7, 376.0, 47.3, 0.0213; None as '-'."""
    if not x:
        return "-"
    return f"{x:.1f}" if x >= 10 else f"{x:.3g}"


def _size(n_bytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n_bytes >= 1 << shift:
            return f"{n_bytes / (1 << shift):g} {unit}"
    return f"{n_bytes} B"


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a and b else None


def tables(ours: List[Dict[str, Any]], cls: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    lines: List[str] = []
    runs = [o.get("result") or {} for o in ours]
    names = [f"ours-{i + 1}" for i in range(len(ours))]
    summary: Dict[str, Any] = {"worst": {}, "targets": {}}

    def index(r: Dict[str, Any], key: str, fields: Tuple[str, ...]) -> Dict[Tuple[Any, ...], Dict[str, Any]]:
        return {tuple(p[f] for f in fields): p for p in r.get(key) or [] if p.get("device", 0) == 0}

    # matmul
    mine = [index(r, "points", ("dtype", "n")) for r in runs]
    rows = []
    for c in cls["matmul"]:
        key = (c["dtype"], c["n"])
        rates = [m.get(key, {}).get("tflops") for m in mine]
        rows.append(
            [c["dtype"], str(c["n"]), _v(c["tflops"])]
            + [_v(g) for g in rates]
            + [f"{_ratio(g, c['tflops']):.3f}" if g else "-" for g in rates]
        )
    lines.append("matmul TFLOP/s (ours: envdoctor's median; classic: blocked_autorange median)")
    lines += _fmt(rows, ["dtype", "n", "classic"] + names + [f"{n}/classic" for n in names], 1)

    # memory
    mine = [index(r, "memory_points", ("op", "n")) for r in runs]
    rows, off, best_ours, best_cls = [], [], 0.0, 0.0
    for c in cls["memory"]:
        key = (c["op"], c["n"])
        got = [m.get(key, {}) for m in mine]
        p = got[0]
        big = c["n"] * 4 > BIG_BUFFER
        where = "L2" if p.get("l2_resident") else ("HBM" if p.get("l2_resident") is False else "-")
        ratios = [_ratio(g.get("gbs"), c["gbs"]) for g in got]
        if big:
            off += [(abs(x - 1), f"{c['op']} n={c['n']} ({names[i]})") for i, x in enumerate(ratios) if x]
        if where == "HBM" or (where == "-" and big):
            best_cls = max(best_cls, c["gbs"])
            best_ours = max([best_ours] + [g.get("gbs") or 0.0 for g in got])
        rows.append(
            [c["op"], str(c["n"]), _size(c["n"] * 4), where, _v(c["gbs"])]
            + [_v(g.get("gbs")) for g in got]
            + [f"{x:.3f}" if x else "-" for x in ratios]
        )
    lines += ["", "memory GB/s (bytes read + written / median time)"]
    lines += _fmt(rows, ["op", "n", "buffer", "where", "classic"] + names + [f"{n}/classic" for n in names], 4)
    summary["worst"]["memory_above_64MiB"] = max(off) if off else None
    summary["hbm"] = {"ours_best_gbs": best_ours, "classic_best_gbs": best_cls}

    # layers
    fields = ("layer", "dtype", "attention", "mode", "batch", "seq")
    mine = [index(r, "layer_points", fields) for r in runs]
    raws = [index(o.get("raw", {}).get("result") or {}, "layer_points", fields) for o in ours]
    rows = []
    loff: List[Tuple[float, str]] = []
    launch_off: List[Tuple[float, str]] = []
    for c in cls["layers"]:
        key = tuple(c[f] for f in fields)
        got = [m.get(key, {}) for m in mine]
        ratios = [_ratio(g.get("tflops"), c["tflops"]) for g in got]
        bound = got[0].get("bound") or "-"
        into = launch_off if bound == "launch" else loff
        into += [(abs(x - 1), " ".join(str(k) for k in key) + f" ({names[i]})") for i, x in enumerate(ratios) if x]
        mhz = [window(cls.get("samples") or [], c.get("started"), c.get("ended"))[0]]
        mhz += [
            window(o.get("raw", {}).get("samples") or [], *timed_window(rw.get(key, {})))[0]
            for o, rw in zip(ours, raws)
        ]
        rows.append(
            [
                c["layer"],
                c["dtype"],
                c["attention"],
                c["mode"],
                str(c["batch"]),
                str(c["seq"]),
                got[0].get("kernel") or "-",
                bound,
                str(c.get("number_per_run") or "-"),
                _v(c["tflops"]),
            ]
            + [_v(g.get("tflops")) for g in got]
            + [f"{x:.3f}" if x else "-" for x in ratios]
            + [str(m) if m else "-" for m in mhz]
        )
    lines += [
        "",
        "layers TFLOP/s (analytic FLOPs / median time of one call; bound: envdoctor's; calls: the "
        "classic Timer's calls a block; MHz: median SM clock while timing)",
    ]
    lines += _fmt(
        rows,
        ["layer", "dtype", "attention", "mode", "b", "s", "kernel", "bound", "calls", "classic"]
        + names
        + [f"{n}/classic" for n in names]
        + ["MHz classic"]
        + [f"MHz {n}" for n in names],
        8,
    )
    summary["worst"]["layers"] = max(loff) if loff else None
    summary["worst"]["layers_launch_bound"] = max(launch_off) if launch_off else None

    # wall times
    lines.append("")
    cs = cls["suite_s"]
    lines.append(
        f"classic: {len(cls['matmul']) + len(cls['memory']) + len(cls['layers'])} points, "
        f"{cls['process_wall_s']:.1f} s wall (torch import {cls['import_s']:.1f} s; matmul "
        f"{cs['matmul']:.1f} s, memory {cs['memory']:.1f} s, layers {cs['layers']:.1f} s), "
        f"min_run_time {cls['min_run_time']:g} s, {cls['device']}, torch {cls['torch']}"
    )
    for name, o, r in zip(names, ours, runs):
        ss = r.get("suite_s") or {}
        lines.append(
            f"{name}: {o['wall_s']:.1f} s wall end to end (child: import {r.get('import_s')} s, CUDA start "
            f"{r.get('init_s')} s, measurement {r.get('measure_s')} s: "
            + ", ".join(f"{k} {ss[k]:.1f} s" for k in ("matmul", "memory", "layers") if k in ss)
            + f"), exit {o['returncode']}"
        )
        for v in r.get("verdicts") or []:
            lines.append(f"  {v['line']}")
    summary["ours_wall_s"] = [o["wall_s"] for o in ours]
    summary["classic_wall_s"] = cls["process_wall_s"]

    # targets
    t = summary["targets"]
    lines += ["", "targets (issue 14):"]
    for label, worst in (
        ("memory points above 64 MiB within 5% of classic", summary["worst"]["memory_above_64MiB"]),
        ("layer points not launch-bound within 5% of classic", summary["worst"]["layers"]),
    ):
        if worst is None:
            lines.append(f"  {label}: no point to compare")
            continue
        ok = worst[0] <= WITHIN
        t[label] = ok
        lines.append(f"  {label}: worst {worst[1]} off by {100 * worst[0]:.1f}% {'MET' if ok else 'MISSED'}")
    worst = summary["worst"]["layers_launch_bound"]
    if worst is not None:
        lines.append(
            f"  launch-bound layer points (they time the CPU issuing kernels; no target): worst {worst[1]} "
            f"off by {100 * worst[0]:.1f}%"
        )
    for name, o in zip(names, ours):
        ratio = o["wall_s"] / cls["process_wall_s"]
        ok = ratio <= WALL_RATIO
        t[f"{name} wall <= {WALL_RATIO}x classic"] = ok
        lines.append(
            f"  {name} --suite all wall {o['wall_s']:.1f} s = {ratio:.3f}x the classic "
            f"{cls['process_wall_s']:.1f} s {'MET' if ok else 'MISSED'}"
        )
    if best_cls:
        share = best_ours / best_cls
        t["HBM >= 90% of the best classic figure"] = share >= HBM_SHARE
        lines.append(
            f"  best HBM figure {best_ours:.1f} GB/s = {100 * share:.1f}% of the classic {best_cls:.1f} GB/s "
            f"{'MET' if share >= HBM_SHARE else 'MISSED'}"
        )
    return "\n".join(lines) + "\n", summary


def quick_tables(ours: List[Dict[str, Any]], cls: Dict[str, Any], cold: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """--quick: per layer point the classic method (warmed, and cold as recorded before), each
    envdoctor run, the clocks, the bound; the target for the points that are not launch-bound."""
    fields = ("layer", "dtype", "attention", "mode", "batch", "seq")
    names = [f"ours-{i + 1}" for i in range(len(ours))]

    def by_key(points: List[Dict[str, Any]]) -> Dict[Tuple[Any, ...], Dict[str, Any]]:
        return {tuple(p[f] for f in fields): p for p in points if p.get("device", 0) == 0}

    analysed = [by_key((o.get("result") or {}).get("layer_points") or []) for o in ours]
    raws = [by_key(((o.get("raw") or {}).get("result") or {}).get("layer_points") or []) for o in ours]
    colds = by_key(cold["layers"])
    rows: List[List[str]] = []
    off: List[Tuple[float, str]] = []
    launch_off: List[Tuple[float, str]] = []
    cold_off: List[Tuple[float, str]] = []
    for c in cls["layers"]:
        key = tuple(c[f] for f in fields)
        k = colds.get(key, {})
        got = [a.get(key, {}) for a in analysed]
        bound = got[0].get("bound") or "-"
        issue = got[0].get("issue_ms")
        ratios = [_ratio(g.get("tflops"), c["tflops"]) for g in got]
        into = launch_off if bound == "launch" else off
        into += [(abs(x - 1), " ".join(str(v) for v in key) + f" ({names[i]})") for i, x in enumerate(ratios) if x]
        cold_ratio = _ratio(k.get("tflops"), c["tflops"])
        if cold_ratio:
            cold_off.append((abs(cold_ratio - 1), " ".join(str(v) for v in key)))
        mhz_c = window(cls.get("samples") or [], c.get("started"), c.get("ended"))[0]
        mhz_k = window(cold.get("samples") or [], k.get("started"), k.get("ended"))[0]
        mhz_o = [
            window((o.get("raw") or {}).get("samples") or [], *timed_window(r.get(key, {})))[0]
            for o, r in zip(ours, raws)
        ]
        kernels = "/".join(dict.fromkeys(str(x) for x in (got[0].get("kernel"), c.get("kernel")) if x)) or "-"
        rows.append(
            [
                c["layer"],
                c["dtype"],
                c["attention"],
                c["mode"],
                str(c["batch"]),
                str(c["seq"]),
                kernels,
                bound,
                f"{issue / got[0]['ms']:.2f}" if issue and got[0].get("ms") else "-",
                str(c.get("number_per_run") or "-"),
                _v(c["tflops"]),
                str(mhz_c or "-"),
                str(k.get("number_per_run") or "-"),
                _v(k.get("tflops")),
                str(mhz_k or "-"),
                _v(got[0].get("burst_tflops")),
            ]
            + [x for g, m in zip(got, mhz_o) for x in (_v(g.get("tflops")), str(m or "-"))]
            + [f"{x:.3f}" if x else "-" for x in ratios]
            + [f"{cold_ratio:.3f}" if cold_ratio else "-"]
        )
    head = (
        [
            "layer",
            "dtype",
            "attention",
            "mode",
            "b",
            "s",
            "kernel",
            "bound",
            "issue",
            "calls",
            "classic",
            "MHz",
            "cold calls",
            "cold",
            "MHz",
            "burst",
        ]
        + [x for n in names for x in (n, "MHz")]
        + [f"{n}/classic" for n in names]
        + ["cold/classic"]
    )
    lines = [
        "layers TFLOP/s, --quick (classic: blocked_autorange after 3 warm-up calls; cold: without them, as "
        "recorded before; burst: ours before its heat; issue: the CPU's time to issue one call / the call's "
        "time; calls: the Timer's calls a block; MHz: median SM clock while timing)"
    ]
    lines += _fmt(rows, head, 8)
    summary: Dict[str, Any] = {
        "worst": {
            "layers": max(off) if off else None,
            "layers_launch_bound": max(launch_off) if launch_off else None,
            "cold_vs_warm_classic": max(cold_off) if cold_off else None,
        },
        "ours_wall_s": [o["wall_s"] for o in ours],
        "classic_wall_s": cls["process_wall_s"],
        "classic_cold_wall_s": cold["process_wall_s"],
    }
    lines.append("")
    for name, o in zip(names, ours):
        r = o.get("result") or {}
        setup = (((o.get("raw") or {}).get("result") or {}).get("devices") or [{}])[0].get("layers_setup_s")
        lines.append(
            f"{name}: {o['wall_s']:.1f} s wall (child: import {r.get('import_s')} s, CUDA start "
            f"{r.get('init_s')} s, measurement {r.get('measure_s')} s), exit {o['returncode']}; "
            f"layers set-up {json.dumps(setup)}"
        )
    lines.append(
        f"classic: {cls['process_wall_s']:.1f} s, cold: {cold['process_wall_s']:.1f} s (min_run_time "
        f"{cls['min_run_time']:g} s, {cls['device']}, torch {cls['torch']}; {cls.get('sampling')})"
    )
    worst = summary["worst"]["layers"]
    ok = worst is not None and worst[0] <= WITHIN
    summary["targets"] = {"layer points not launch-bound within 5% of classic": ok}
    verdict = f"worst {worst[1]} off by {100 * worst[0]:.1f}% {'MET' if ok else 'MISSED'}" if worst else "no point"
    lines += [
        "",
        "target (issue 14, the points that are not launch-bound):",
        f"  layer points within 5% of classic: {verdict}",
    ]
    for label, what in (
        ("launch-bound points (no target: they time the CPU)", "layers_launch_bound"),
        ("the classic method cold against warmed", "cold_vs_warm_classic"),
    ):
        w = summary["worst"][what]
        if w:
            lines.append(f"  {label}: worst {w[1]} off by {100 * w[0]:.1f}%")
    return "\n".join(lines) + "\n", summary


def quick(out: Path, min_run_time: float, ours_runs: int, tiny: bool = False) -> int:
    """envdoctor's layers suite and the classic method on the 12 points of QUICK_LAYERS (bf16):
    ours, classic warmed, classic cold, ours again (the GPU warm by then). With ``tiny``, the
    same on width-32 layers (a CPU try-out)."""
    layers: Dict[str, Any] = dict(QUICK_LAYERS, budget=round(suite_share() * 12, 3))
    api: Dict[str, Any] = {"dtypes": ["bf16"], "suites": ["layers"], "layers": layers}
    if tiny:
        layers.update(dims=TINY_DIMS, shapes={k: [[2, 16]] for k in QUICK_LAYERS["names"]}, budget=0.3)
        api.update(dtypes=["fp32"], one_thread=True)
    ours = [run_ours(out, "ours-1", api)]
    plan = plan_of(ours[0])
    cls = run_classic(out, dict(plan, warm=True), min_run_time, tiny, "classic")
    cold = run_classic(out, dict(plan, warm=False), min_run_time, tiny, "classic-cold")
    ours += [run_ours(out, f"ours-{i + 2}", api) for i in range(max(0, ours_runs - 1))]
    text, summary = quick_tables(ours, cls, cold)
    (out / "quick.txt").write_text(text)
    (out / "quick.json").write_text(json.dumps({"summary": summary, "ours": ours, "classic": cls, "cold": cold}))
    print(text)
    return 0


def suite_share() -> float:
    """Seconds of the layers budget per point in the default --suite all run."""
    sys.path.insert(0, str(ROOT))
    from envdoctor.bench.facts import SUITE_BUDGET

    return SUITE_BUDGET["layers"] / FULL_LAYER_POINTS


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "bench-out")
    ap.add_argument(
        "--min-run-time", type=float, default=None, help="classic blocked_autorange (default 1.5 s, 0.05 s with --tiny)"
    )
    ap.add_argument(
        "--ours-runs",
        type=int,
        default=None,
        help="envdoctor runs (default 1; 2 with --quick, the second after the classic ones)",
    )
    ap.add_argument("--tiny", action="store_true", help="tiny sizes and layers, for a CPU machine")
    ap.add_argument("--quick", action="store_true", help="12 layer points (bf16) only: about 2 minutes on the H200")
    ap.add_argument(
        "--default-run",
        action="store_true",
        help="first time the default run (matmul,memory), "
        "against the 11 s of the matmul-only default before the suites",
    )
    ap.add_argument("--classic", metavar="PLAN", help="(internal) run the classic method on PLAN, print JSON")
    ap.add_argument("--ours-api", nargs=2, metavar=("CONFIG", "RAW"), help="(internal) envdoctor through its API")
    args = ap.parse_args(argv)
    if args.classic:
        print(json.dumps(classic(json.loads(Path(args.classic).read_text()), args.min_run_time or 1.5)))
        return 0
    if args.ours_api:
        print(json.dumps(ours_api(*args.ours_api)))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mrt = args.min_run_time or (0.05 if args.tiny else 1.5)
    if args.quick:
        return quick(out, mrt, 2 if args.ours_runs is None else args.ours_runs, args.tiny)
    default = run_ours(out, "default", None, "matmul,memory") if args.default_run and not args.tiny else None
    ours = [run_ours(out, f"ours-{i + 1}", TINY if args.tiny else None) for i in range(max(1, args.ours_runs or 1))]
    cls = run_classic(out, plan_of(ours[0]), mrt, args.tiny)
    text, summary = tables(ours, cls)
    if default is not None:
        r = default.get("result") or {}
        text += (
            f"default run (matmul,memory): {default['wall_s']:.1f} s wall end to end, exit "
            f"{default['returncode']} (child: import {r.get('import_s')} s, measurement {r.get('measure_s')} s: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in (r.get("suite_s") or {}).items())
            + ")\n"
        )
        summary["default_run_wall_s"] = default["wall_s"]
    (out / "tables.txt").write_text(text)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

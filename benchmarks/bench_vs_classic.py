"""envdoctor bench against the classic method, on the same GPU, in one go.

The classic method times ``a @ b`` with ``torch.utils.benchmark.Timer(...).blocked_autorange(
min_run_time=3)`` per point and takes the median. This script runs, as separate processes of the
interpreter that runs it (which must have torch):

1. ``envdoctor bench --json`` (wall-clocked end to end: torch import and CUDA start included;
   since issue 14 the default run also has the memory suite, so the wall time includes it, and
   the tables compare the matmul points; ``bench_suites.py`` compares every suite);
2. the classic method for the same dtypes and sizes (``--classic`` re-runs this file);
3. ``envdoctor bench --json`` again, on the now warm GPU;

then prints both tables and the ratio per point, and writes them under ``--out`` (default
``$OUT``, else ``./bench-out``)::

    PYTHONPATH=. python3 benchmarks/bench_vs_classic.py --out "$OUT"

Files: ``ours-1.json``, ``ours-2.json`` (envdoctor's document plus the raw child output and NVML
samples), ``classic.json``, ``tables.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
DTYPES = ("fp32", "tf32", "fp16", "bf16")
SIZES = (128, 512, 2048, 8192)


# --- the classic method (runs in a child with torch) ------------------------------------------


def classic(dtypes: List[str], sizes: List[int], min_run_time: float) -> Dict[str, Any]:
    started = time.perf_counter()
    import torch
    import torch.utils.benchmark as benchmark

    imported = time.perf_counter() - started
    m = torch.backends.cuda.matmul
    new_api = hasattr(m, "fp32_precision")
    kinds = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    where = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU only to try this script out
    points = []
    for n in sizes:
        for d in dtypes:
            if new_api:
                m.fp32_precision = "tf32" if d == "tf32" else "ieee"
            else:
                m.allow_tf32 = d == "tf32"
            a = torch.randn(n, n, dtype=kinds[d], device=where)
            b = torch.randn(n, n, dtype=kinds[d], device=where)
            t0 = time.perf_counter()
            meas = benchmark.Timer(stmt="a @ b", globals={"a": a, "b": b}).blocked_autorange(min_run_time=min_run_time)
            spent = time.perf_counter() - t0
            points.append(
                {
                    "dtype": d,
                    "n": n,
                    "median_s": meas.median,
                    "tflops": 2 * n**3 / meas.median / 1e12,
                    "times": list(meas.times),
                    "number_per_run": meas.number_per_run,
                    "seconds": spent,
                }
            )
            print(f"classic {d:5} n={n:5} {points[-1]['tflops']:8.1f} TFLOP/s", file=sys.stderr, flush=True)
            del a, b
    return {
        "points": points,
        "import_s": imported,
        "wall_s": time.perf_counter() - started,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if where == "cuda" else "cpu",
    }


# --- the driver ----------------------------------------------------------------------------------


def run_ours(out: Path, name: str, extra: List[str]) -> Dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    raw = out / f"{name}.raw.tmp"
    argv = [
        sys.executable,
        "-m",
        "envdoctor",
        "bench",
        "--python",
        sys.executable,
        "--json",
        "--raw-out",
        str(raw),
    ] + extra
    return timed_run(argv, env, raw, out / f"{name}.json")


def timed_run(argv: List[str], env: Dict[str, str], raw: Path, record: Path) -> Dict[str, Any]:
    """Run ``argv`` (an envdoctor bench that prints JSON and writes ``raw``), wall-clocked end to
    end; its result, raw child output and exit status are written to ``record`` and returned."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, env=env, cwd=str(ROOT))
    wall = time.perf_counter() - t0
    doc: Dict[str, Any] = {"argv": argv, "wall_s": wall, "returncode": proc.returncode}
    try:
        doc["result"] = json.loads(proc.stdout)
    except ValueError:
        doc["stdout"] = proc.stdout.decode(errors="replace")
    if raw.exists():
        doc["raw"] = json.loads(raw.read_text())
        raw.unlink()
    record.write_text(json.dumps(doc))
    return doc


def run_classic(out: Path, dtypes: List[str], sizes: List[int], min_run_time: float) -> Dict[str, Any]:
    argv = [
        sys.executable,
        __file__,
        "--classic",
        "--dtype",
        ",".join(dtypes),
        "--size",
        ",".join(map(str, sizes)),
        "--min-run-time",
        str(min_run_time),
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.PIPE)
    wall = time.perf_counter() - t0
    doc = json.loads(proc.stdout)
    doc["process_wall_s"] = wall
    for p in doc["points"]:  # the per-block times are thousands of numbers: keep their spread
        times = sorted(p.pop("times"))
        p["blocks"] = len(times)
        p["block_s_min_max"] = [times[0], times[-1]] if times else []
    (out / "classic.json").write_text(json.dumps(doc, indent=1))
    return doc


def _ours_points(doc: Dict[str, Any]) -> Dict[Tuple[str, int], Dict[str, Any]]:
    pts = (doc.get("result") or {}).get("points") or []
    return {(p["dtype"], p["n"]): p for p in pts if p.get("device", 0) == 0}


def tables(ours: List[Dict[str, Any]], cls: Dict[str, Any]) -> str:
    lines = []
    c = {(p["dtype"], p["n"]): p for p in cls["points"]}
    mine = [_ours_points(o) for o in ours]
    head = (
        ["dtype", "n", "classic"]
        + [f"ours-{i + 1}" for i in range(len(ours))]
        + [f"ours-{i + 1}/classic" for i in range(len(ours))]
        + ["burst-1", "bound-1", "MHz-1", "W-1"]
    )
    rows = []
    for key in sorted(c, key=lambda k: (DTYPES.index(k[0]), k[1])):
        row = [key[0], str(key[1]), f"{c[key]['tflops']:.1f}"]
        for m in mine:
            p = m.get(key)
            row.append(f"{p['tflops']:.1f}" if p and p.get("tflops") else "-")
        for m in mine:
            p = m.get(key)
            row.append(f"{p['tflops'] / c[key]['tflops']:.3f}" if p and p.get("tflops") else "-")
        p = mine[0].get(key) or {}
        row += [
            f"{p['burst_tflops']:.1f}" if p.get("burst_tflops") else "-",
            p.get("bound") or "-",
            str(p.get("sm_clock_mhz") or "-"),
            f"{p['power_w']:.0f}" if p.get("power_w") else "-",
        ]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    fmt = lambda r: "  ".join(x.rjust(w) if i > 0 else x.ljust(w) for i, (x, w) in enumerate(zip(r, widths)))
    lines.append("TFLOP/s per point (ours = envdoctor bench median; classic = blocked_autorange median)")
    lines.append(fmt(head))
    lines.extend(fmt(r) for r in rows)
    lines.append("")
    lines.append(
        f"classic: {len(c)} points, {cls['process_wall_s']:.1f} s wall "
        f"(torch import {cls['import_s']:.1f} s), {cls['device']}, torch {cls['torch']}"
    )
    for i, o in enumerate(ours):
        r = o.get("result") or {}
        lines.append(
            f"ours-{i + 1}: {len(_ours_points(o))} points, {o['wall_s']:.1f} s wall end to end "
            f"(child: import {r.get('import_s')} s, CUDA start {r.get('init_s')} s, "
            f"measurement {r.get('measure_s')} s), exit {o['returncode']}"
        )
        for v in r.get("verdicts") or []:
            lines.append(f"  {v['line']}")
    lines.append("")
    lines.append("targets:")
    lines.append(
        "  wall <= 15 s: "
        + ", ".join(
            f"ours-{i + 1} {o['wall_s']:.1f} s {'MET' if o['wall_s'] <= 15 else 'MISSED'}" for i, o in enumerate(ours)
        )
    )
    for i, m in enumerate(mine):
        off = []
        for key, p in m.items():
            if key[1] >= 2048 and key in c and p.get("tflops"):
                off.append((abs(p["tflops"] / c[key]["tflops"] - 1), key))
        worst = max(off) if off else (None, None)
        if worst[0] is not None:
            lines.append(
                f"  ours-{i + 1} within 5% of classic at n>=2048: worst {worst[1][0]} "
                f"n={worst[1][1]} off by {100 * worst[0]:.1f}% "
                f"{'MET' if worst[0] <= 0.05 else 'MISSED'}"
            )
        for d in ("fp16", "bf16"):
            p = m.get((d, 8192))
            if p and p.get("tflops"):
                lines.append(
                    f"  ours-{i + 1} {d} n=8192 >= 600 TFLOP/s: {p['tflops']:.1f} "
                    f"{'MET' if p['tflops'] >= 600 else 'MISSED'}"
                )
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "bench-out")
    ap.add_argument("--dtype", default=",".join(DTYPES))
    ap.add_argument("--size", default=",".join(map(str, SIZES)))
    ap.add_argument("--min-run-time", type=float, default=3.0)
    ap.add_argument("--classic", action="store_true", help="(internal) run the classic method, print JSON")
    args = ap.parse_args(argv)
    dtypes = args.dtype.split(",")
    sizes = [int(s) for s in args.size.split(",")]
    if args.classic:
        print(json.dumps(classic(dtypes, sizes, args.min_run_time)))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = ["--dtype", args.dtype, "--size", args.size]
    first = run_ours(out, "ours-1", extra)
    cls = run_classic(out, dtypes, sizes, args.min_run_time)
    second = run_ours(out, "ours-2", extra)
    text = tables([first, second], cls)
    (out / "tables.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

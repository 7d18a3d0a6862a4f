"""Run ``envdoctor burn`` N times back to back: wall time, sustained rates and their spread, verdicts.

    python benchmarks/bench_burn.py --runs 5 --seconds 60 --python /opt/torch/.venv/bin/python3 --out $OUT/burn

Each run is the real command (``python -m envdoctor burn --json``) in a fresh process, timed from
start to exit. Targets (issue 15): every run ends within --seconds + 15 s; the sustained figure of
each GPU and dtype varies by at most 2% over the runs ((max - min) / median); no FAULTY verdict on
a healthy machine (exit 0 every time). Five 60 s runs take about 6 minutes on one H200; use
``--runs 2 --seconds 20`` for a quick look. On a machine without a GPU it burns the CPU (tiny
products, ``--seconds 5``) and says so: the figures then only show that the script works.

``--out DIR`` keeps each run's JSON document (``run-1.json``, ...) and the summary (``summary.txt``,
``summary.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
#: what issue 15 allows beyond --seconds for start-up and the memory test
ALLOWANCE_S = 15.0
SPREAD = 0.02


def one_run(
    envdoctor: List[str], python: str, seconds: float, device: str, extra: List[str], env: Dict[str, str]
) -> Tuple[float, int, Optional[Dict[str, Any]], str]:
    argv = envdoctor + ["burn", "--python", python, "--seconds", f"{seconds:g}", "--device", device, "--json"] + extra
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, text=True)
    wall = time.perf_counter() - started
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        doc = None
    return wall, proc.returncode, doc, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""


def figures(doc: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Per device ("GPU 0", "CPU"): verdict, error codes, and per dtype the sustained and burst rates."""
    out: Dict[str, Dict[str, Any]] = {}
    for g in doc.get("gpus") or []:
        key = "CPU" if g.get("kind") == "cpu" else f"GPU {g.get('index')}"
        s = g.get("summary") or {}
        out[key] = {
            "verdict": g.get("verdict"),
            "codes": sorted({f["code"] for f in g.get("findings") or [] if f.get("severity") == "error"}),
            "warnings": sorted({f["code"] for f in g.get("findings") or [] if f.get("severity") != "error"}),
            "sustained": {p["dtype"]: p.get("sustained_tflops") for p in g.get("phases") or []},
            "burst": {p["dtype"]: p.get("burst_tflops") for p in g.get("phases") or []},
            "products": {p["dtype"]: p.get("products") for p in g.get("phases") or []},
            "max_c": s.get("temperature_max_c"),
            "power_w": s.get("power_median_w"),
            "sm_mhz": s.get("sm_clock_median_mhz"),
            "memtest_gib": round(((g.get("memtest") or {}).get("bytes") or 0) / 2**30, 1),
            "memtest_passes": len((g.get("memtest") or {}).get("passes") or []),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=60.0, help="envdoctor burn --seconds (at least 5)")
    parser.add_argument("--device", default="all")
    parser.add_argument(
        "--python", default=shutil.which("python3") or sys.executable, help="the target interpreter, with torch"
    )
    parser.add_argument(
        "--envdoctor",
        default=None,
        help="command that runs envdoctor (default: this interpreter -m envdoctor, from this checkout)",
    )
    parser.add_argument("--out", default=None, help="folder for each run's JSON and the summary")
    parser.add_argument("extra", nargs="*", help="more options for envdoctor burn, after --")
    args = parser.parse_args()

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    envdoctor = args.envdoctor.split() if args.envdoctor else [sys.executable, "-m", "envdoctor"]
    check = subprocess.run(envdoctor + ["--version"], capture_output=True, env=env, text=True)
    if check.returncode != 0:  # envdoctor's own dependencies (click, packaging, nvidia-ml-py) missing
        print(f"{' '.join(envdoctor)} does not run: {check.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    runs: List[Dict[str, Any]] = []
    for n in range(1, args.runs + 1):
        wall, rc, doc, last = one_run(envdoctor, args.python, args.seconds, args.device, args.extra, env)
        run: Dict[str, Any] = {
            "run": n,
            "wall_s": round(wall, 2),
            "exit": rc,
            "stderr_last": last,
            "devices": figures(doc) if doc else {},
            "cpu_run": bool(doc and doc.get("cpu_run")),
            "child_wall_s": doc.get("wall_s") if doc else None,
        }
        runs.append(run)
        if out is not None and doc is not None:
            (out / f"run-{n}.json").write_text(json.dumps(doc, indent=1))
        shown = "; ".join(
            f"{k} {v['verdict']} " + " ".join(f"{d} {r}" for d, r in v["sustained"].items())
            for k, v in run["devices"].items()
        )
        print(f"run {n}: {wall:.1f} s, exit {rc}: {shown or last}", flush=True)

    lines = summarize(runs, args.seconds)
    text = "\n".join(lines)
    print(text)
    if out is not None:
        (out / "summary.txt").write_text(text + "\n")
        (out / "summary.json").write_text(json.dumps({"seconds": args.seconds, "runs": runs}, indent=1))
    return 0


def summarize(runs: List[Dict[str, Any]], seconds: float) -> List[str]:
    lines = ["", f"envdoctor burn --seconds {seconds:g}, {len(runs)} runs"]
    if any(r["cpu_run"] for r in runs):
        lines.append("CPU run (no GPU here): the figures only show that the benchmark works")
    walls = [r["wall_s"] for r in runs]
    limit = seconds + ALLOWANCE_S
    lines.append(
        f"wall time: {', '.join(f'{w:.1f}' for w in walls)} s; max {max(walls):.1f} s "
        f"(target <= {limit:g} s: {'met' if max(walls) <= limit else 'MISSED'})"
    )
    devices = sorted({k for r in runs for k in r["devices"]})
    for dev in devices:
        dtypes = sorted({d for r in runs for d in r["devices"].get(dev, {}).get("sustained", {})})
        for d in dtypes:
            values = [r["devices"][dev]["sustained"].get(d) for r in runs if dev in r["devices"]]
            values = [v for v in values if v]
            if not values:
                continue
            med = statistics.median(values)
            spread = (max(values) - min(values)) / med if med else 0.0
            bursts = [r["devices"][dev]["burst"].get(d) for r in runs if dev in r["devices"]]
            lines.append(
                f"{dev} {d}: sustained {', '.join(f'{v:g}' for v in values)} TFLOP/s, median {med:g}, "
                f"spread {100 * spread:.2f}% (target <= {100 * SPREAD:g}%: "
                f"{'met' if spread <= SPREAD else 'MISSED'}); burst {', '.join(str(b) for b in bursts)}"
            )
        temps = [r["devices"][dev]["max_c"] for r in runs if dev in r["devices"]]
        power = [r["devices"][dev]["power_w"] for r in runs if dev in r["devices"]]
        lines.append(
            f"{dev}: max temperature {temps} C, median power {power} W, memory test "
            f"{[r['devices'][dev]['memtest_gib'] for r in runs if dev in r['devices']]} GiB in "
            f"{[r['devices'][dev]['memtest_passes'] for r in runs if dev in r['devices']]} passes"
        )
    verdicts = [
        (r["run"], dev, v["verdict"], v["codes"], v["warnings"]) for r in runs for dev, v in r["devices"].items()
    ]
    faulty = [v for v in verdicts if v[2] == "FAULTY"]
    exits = [r["exit"] for r in runs]
    lines.append(
        f"verdicts: {sum(1 for v in verdicts if v[2] != 'FAULTY')} of {len(verdicts)} not FAULTY; "
        f"exit codes {exits}" + ("" if not faulty else f"; FAULTY: {faulty}")
    )
    warned = sorted({c for v in verdicts for c in v[4]})
    if warned:
        lines.append(f"warnings and notes seen: {', '.join(warned)}")
    return lines


if __name__ == "__main__":
    sys.exit(main())

"""``envdoctor comms`` against nccl-tests' ``all_reduce_perf`` on the same sizes, and the wall time
of a default run.

    python benchmarks/bench_comms.py --python /path/to/venv/bin/python3 \
        [--nccl-tests /path/to/all_reduce_perf] [--sizes 1G..4G] [--out DIR]

1. The default run (``envdoctor comms --json``, every collective, 1M..4G, GPU pairs): its wall
   time (target: <= 20 s on an 8-GPU node) and what it found.
2. all_reduce over ``--sizes`` (default 1G..4G, x2) through envdoctor, and, where
   ``--nccl-tests`` names an ``all_reduce_perf`` binary, the same sizes through it
   (``-b FROM -e TO -f 2 -g <GPUs> -w 5 -n 20``, one process driving every GPU); per size the
   ratio of envdoctor's busbw to all_reduce_perf's in-place busbw (target: within +-5% at >= 1 GiB).
   With one GPU busbw is 0 on both sides, so the algbw ratio is printed instead, and the default
   run shows host <-> GPU copy bandwidth.

Prints a table and writes ``comms-default.json``, ``comms-allreduce.json``, ``all_reduce_perf.txt``
and ``bench-comms.json`` into ``--out`` (default: the current folder). The environment passes
through unchanged (NCCL_NVLS_ENABLE and the other switches as the machine sets them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+"
    r"([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)"
)


def parse_all_reduce_perf(text: str) -> Dict[int, Dict[str, float]]:
    """Rows of all_reduce_perf: size -> out-of-place and in-place time (us), algbw, busbw (GB/s)."""
    out: Dict[int, Dict[str, float]] = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            g = m.groups()
            out[int(g[0])] = {
                "oop_time_us": float(g[5]),
                "oop_algbw": float(g[6]),
                "oop_busbw": float(g[7]),
                "ip_time_us": float(g[9]),
                "ip_algbw": float(g[10]),
                "ip_busbw": float(g[11]),
            }
    return out


def run_envdoctor(
    envdoctor: List[str], python: str, extra: List[str], env: Dict[str, str]
) -> Tuple[Dict[str, Any], float]:
    started = time.perf_counter()
    proc = subprocess.run(
        envdoctor + ["comms", "--python", python, "--json"] + extra, env=env, capture_output=True, text=True
    )
    took = time.perf_counter() - started
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise SystemExit(f"envdoctor comms {' '.join(extra)} exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout), took


def size_args(sizes: str) -> Tuple[str, str]:
    lo, _, hi = sizes.partition("..")
    return lo, hi or lo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--python", default=shutil.which("python3") or sys.executable, help="the interpreter whose torch runs the ranks"
    )
    parser.add_argument("--envdoctor", default=None, help="command that runs envdoctor (default: -m envdoctor)")
    parser.add_argument("--nccl-tests", dest="nccl_tests", default=None, help="path of all_reduce_perf")
    parser.add_argument("--sizes", default="1G..4G", help="FROM..TO, doubling (as all_reduce_perf -b/-e -f 2)")
    parser.add_argument("--skip-default", action="store_true", help="only the all_reduce comparison")
    parser.add_argument("--out", default=".", help="folder for the JSON and text outputs")
    args = parser.parse_args()

    env = dict(os.environ)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    envdoctor = args.envdoctor.split() if args.envdoctor else [sys.executable, "-m", "envdoctor"]
    report: Dict[str, Any] = {
        "nvls_env": {
            k: env.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
        }
    }
    if not args.skip_default:
        doc, took = run_envdoctor(envdoctor, args.python, [], env)
        (out / "comms-default.json").write_text(json.dumps(doc, indent=1))
        report["default"] = {
            "wall_s": round(took, 2),
            "child_wall_s": doc.get("wall_s"),
            "world_size": doc.get("world_size"),
            "findings": [f["code"] for f in doc["findings"]],
            "host_copies": doc.get("host_copies"),
        }
        print(
            f"default run: {took:.1f} s wall (children {doc.get('wall_s')} s), {doc.get('world_size')} rank(s), "
            f"findings {report['default']['findings'] or 'none'} (target <= 20 s on 8 GPUs)"
        )
        for c in doc.get("host_copies") or []:
            print(f"  host copy {c['direction']}: {c['gbps']} GB/s (PCIe link {c['expected_gbps']} GB/s)")
    lo, hi = size_args(args.sizes)
    doc, took = run_envdoctor(
        envdoctor,
        args.python,
        ["--collective", "all_reduce", "--sizes", args.sizes, "--factor", "2", "--no-pairs"],
        env,
    )
    (out / "comms-allreduce.json").write_text(json.dumps(doc, indent=1))
    world = int(doc.get("world_size") or 1)
    ours = {p["bytes"]: p for p in doc["points"] if p["status"] == "ok"}
    theirs: Dict[int, Dict[str, float]] = {}
    if args.nccl_tests:
        argv = [args.nccl_tests, "-b", lo, "-e", hi, "-f", "2", "-g", str(world), "-w", "5", "-n", "20"]
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        (out / "all_reduce_perf.txt").write_text("$ " + " ".join(argv) + "\n" + proc.stdout)
        if proc.returncode != 0:
            print(f"all_reduce_perf exited with {proc.returncode}; see {out / 'all_reduce_perf.txt'}")
        theirs = parse_all_reduce_perf(proc.stdout)
        version = re.search(r"NCCL version (\S+)", proc.stdout)
        report["nccl_tests"] = {"argv": argv, "nccl_version": version.group(1) if version else None}
    key = "ip_busbw" if world > 1 else "ip_algbw"
    ours_key = "busbw_gbps" if world > 1 else "algbw_gbps"
    rows = []
    print(
        f"\nall_reduce, {world} rank(s), NCCL {doc.get('nccl_version')} "
        f"({'busbw' if world > 1 else 'algbw: busbw is 0 with one GPU'})"
    )
    print(f"{'size':>12}  {'envdoctor':>10}  {'all_reduce_perf':>15}  {'ratio':>6}  algo")
    for size in sorted(set(ours) | set(theirs)):
        mine: Optional[float] = ours[size][ours_key] if size in ours else None
        other: Optional[float] = theirs[size][key] if size in theirs else None
        ratio = round(mine / other, 3) if mine and other else None
        algo = f"{ours[size].get('algo')}/{ours[size].get('proto')}" if size in ours else "-"
        rows.append({"bytes": size, "envdoctor": mine, "all_reduce_perf": other, "ratio": ratio, "algo": algo})
        print(
            f"{size:>12}  {mine if mine is not None else '-':>10}  {other if other is not None else '-':>15}  "
            f"{ratio if ratio is not None else '-':>6}  {algo}"
        )
    report.update(
        allreduce=rows,
        allreduce_wall_s=round(took, 2),
        world_size=world,
        within_5pct=all(r["ratio"] is not None and abs(r["ratio"] - 1) <= 0.05 for r in rows if r["bytes"] >= 1 << 30)
        if theirs
        else None,
    )
    (out / "bench-comms.json").write_text(json.dumps(report, indent=1))
    print(f"\nwritten: {out / 'bench-comms.json'}")


if __name__ == "__main__":
    main()

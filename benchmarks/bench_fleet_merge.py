"""Time ``envdoctor fleet`` merging many generated node reports on one core (issue 17).

The reports are made from the recorded ones (tests/fixtures/h200-driver580-cuda13/envdoctor-check.json,
the H200, widened to 8 GPUs with new UUIDs; docs/examples/cpu-ci/check.json, the CPU box) with the
drift a fleet gets, at fixed rates from a seeded generator: 3% of the nodes kept driver
570.133.20, 1% lost a GPU, 2% have torch 2.10.0+cu128, 1% another power limit on one GPU, 0.5%
are CPU boxes; with ``--bench`` each node also has the two-H200 bench document
(tests/fixtures/h200x2-bench) with its bf16 rates jittered by 1%, and 1% of the nodes have a GPU
12% slower. Each report is written to its own folder (``<dir>/gpu-0001/check.json``) and the
whole merge is timed as ``envdoctor fleet DIR --json`` does it: find the files, read and check
each, extract, name, compare, render (JSON, text and HTML timed apart).

    python benchmarks/bench_fleet_merge.py --nodes 1000 [--bench] [--repeat 3] [--json OUT]

Target: 1,000 reports in at most 2 s on one core (the process is pinned to one CPU).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envdoctor.documents import dumps  # noqa: E402
from envdoctor.fleet.merge import merge_files  # noqa: E402
from envdoctor.fleet.render import fleet_document, render_html, render_text  # noqa: E402
from envdoctor.table import load_table  # noqa: E402


def _recorded(path: Path) -> Dict[str, Any]:
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith("$ "):
        lines = lines[1:]
    if lines and lines[-1].startswith("[rc="):
        lines = lines[:-1]
    return json.loads("\n".join(lines))


def _eight(doc: Dict[str, Any], n: int, node: int) -> Dict[str, Any]:
    first = doc["facts"]["driver"]["gpus"][0]
    gpus = []
    for i in range(n):
        g = dict(
            first,
            index=i,
            uuid=f"GPU-{node:08x}-0000-0000-0000-{i:012x}",
            serial=f"{node:09d}{i:04d}",
            pci_bus_id=f"00000000:{i:02X}:00.0",
        )
        gpus.append(g)
    doc["facts"]["driver"]["gpus"] = gpus
    doc["facts"]["driver"]["smi_gpus"] = [dict(g, source="nvidia-smi") for g in gpus]
    return doc


def generate(out: Path, nodes: int, with_bench: bool, seed: int = 17) -> Dict[str, int]:
    rng = random.Random(seed)
    h200 = json.loads((ROOT / "tests/fixtures/h200-driver580-cuda13/envdoctor-check.json").read_text())
    cpu = _recorded(ROOT / "docs/examples/cpu-ci/check.json")
    bench = json.loads((ROOT / "tests/fixtures/h200x2-bench/bench-fp16-bf16-8192.json").read_text())
    counts = {"driver": 0, "gpu": 0, "torch": 0, "power": 0, "cpu": 0, "slow": 0}
    for k in range(nodes):
        name = f"gpu-{k + 1:04d}"
        roll = rng.random()
        if roll < 0.005:
            doc = copy.deepcopy(cpu)
            counts["cpu"] += 1
        else:
            doc = _eight(copy.deepcopy(h200), 7 if 0.005 <= roll < 0.015 else 8, k)
            counts["gpu"] += 0.005 <= roll < 0.015
            d, t = doc["facts"]["driver"], doc["facts"]["torch"]
            if 0.015 <= roll < 0.045:
                d["driver_version"] = d["userspace_version"] = d["kernel_module_version"] = "570.133.20"
                d["driver_cuda"] = "12.8"
                counts["driver"] += 1
            elif 0.045 <= roll < 0.065:
                t.update(version="2.10.0+cu128", cuda="12.8", cudnn_version="9.10.2", nccl_version="2.27.3")
                counts["torch"] += 1
            elif 0.065 <= roll < 0.075:
                d["gpus"][3]["power_limit_w"] = 500.0
                counts["power"] += 1
        doc["facts"]["system"]["hostname"] = name
        folder = out / name
        folder.mkdir(parents=True)
        (folder / "check.json").write_text(dumps(doc))
        if with_bench and roll >= 0.005:
            b = copy.deepcopy(bench)
            slow = rng.random() < 0.01
            counts["slow"] += slow
            for i, dev in enumerate(b["devices"]):
                dev["uuid"] = f"GPU-{k:08x}-0000-0000-0000-{i:012x}"
            for p in b["points"]:
                p["tflops"] *= rng.uniform(0.99, 1.01) * (0.88 if slow and p["device"] == 1 else 1.0)
            (folder / "bench.json").write_text(dumps(b))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--bench", action="store_true", help="a bench document per node too")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    table = load_table()
    with tempfile.TemporaryDirectory(prefix="envdoctor-fleet-bench-") as tmp:
        counts = generate(Path(tmp), args.nodes, args.bench)
        size = sum(f.stat().st_size for f in Path(tmp).rglob("*.json"))
        merge_files([tmp], table=table)  # warm-up: page cache, imports
        times: Dict[str, List[float]] = {"merge": [], "json": [], "text": [], "html": []}
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fleet, _ = merge_files([tmp], table=table)
            t1 = time.perf_counter()
            dumps(fleet_document(fleet))
            t2 = time.perf_counter()
            render_text(fleet)
            t3 = time.perf_counter()
            render_html(fleet)
            t4 = time.perf_counter()
            for key, value in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                times[key].append(value)
    med = {k: statistics.median(v) for k, v in times.items()}
    d = fleet.drift
    result = {
        "nodes": args.nodes,
        "bench": args.bench,
        "files_mib": round(size / 2**20, 1),
        "generated": counts,
        "deviating": sum(v.verdict == "deviates" for v in d.verdicts),
        "findings": len(d.findings),
        "median_s": {k: round(v, 3) for k, v in med.items()},
        "merge_and_json_s": round(med["merge"] + med["json"], 3),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus_used": 1,
    }
    print(json.dumps(result, indent=2))
    target = 2.0 * args.nodes / 1000
    print(
        f"merge + JSON of {args.nodes} reports: {result['merge_and_json_s']} s on one core "
        f"(target <= {target:g} s): {'met' if result['merge_and_json_s'] <= target else 'NOT met'}"
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

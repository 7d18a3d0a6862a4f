"""Time ``envdoctor fleet --gather`` with N ranks on one machine (gloo) against the floor: N ranks
that only import torch and join a gloo process group (issue 17).

Both start N processes at once with the variables a launcher sets (``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR=127.0.0.1``, ``MASTER_PORT``), as torchrun's workers see them, and the wall time runs
from the first start to the last exit. The floor's ranks run::

    import torch.distributed as dist; dist.init_process_group("gloo", init_method="env://", ...); dist.barrier()
    os._exit(0)          # no interpreter teardown, as envdoctor's child ends

The gather's ranks run ``python -m envdoctor fleet --gather --json`` with each rank's report taken
from a recorded one (``ENVDOCTOR_FLEET_REPORT``, the three recorded machines in turn), so what is
timed is the gather itself (envdoctor's start, the child, the store, the process group, the
payloads, rank 0's merge and render), not the inspection, which is ``check``'s and is timed by
bench_check.py. ``--inspect`` times the gather with the real inspection instead (each rank runs
check's probes, the torch probe included: a second torch import per rank).

Floor and gather runs alternate, ``--repeat`` times each; the medians and their ratio are printed.

    nice python benchmarks/bench_fleet_gather.py --ranks 16 [--repeat 3] [--inspect] [--json OUT]

Target: the gather within 1.2x the floor at 64 ranks.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parent.parent

#: The floor ends with os._exit(0), as envdoctor's child does (_prelude.py): torch's interpreter
#: teardown (about half a second of CPU a rank here) is no part of importing and joining.
FLOOR = (
    "import os, torch.distributed as dist; "
    "dist.init_process_group('gloo', init_method='env://', rank=int(os.environ['RANK']), "
    "world_size=int(os.environ['WORLD_SIZE'])); dist.barrier(); os._exit(0)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reports(folder: Path, ranks: int) -> str:
    """One recorded report per rank (``folder/<rank>.json``), the three recorded machines in turn."""
    sources = [
        ROOT / "tests/fixtures/h200-driver580-cuda13/envdoctor-check.json",
        ROOT / "tests/fixtures/snapshots/h200-580.json",
    ]
    lines = (ROOT / "docs/examples/cpu-ci/check.json").read_text().splitlines()
    texts = [p.read_text() for p in sources] + ["\n".join(lines[1:-1])]
    for rank in range(ranks):
        (folder / f"{rank}.json").write_text(texts[rank % len(texts)])
    return str(folder / "{rank}.json")


def launch(argv: List[str], ranks: int, env: Dict[str, str], timeout: float) -> float:
    port = free_port()
    started = time.perf_counter()
    procs = []
    for rank in range(ranks):
        e = dict(
            env,
            RANK=str(rank),
            WORLD_SIZE=str(ranks),
            LOCAL_RANK=str(rank),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
        )
        procs.append(
            subprocess.Popen(
                argv, env=e, stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        )
    out = procs[0].communicate(timeout=timeout)[0]
    codes = [procs[0].returncode] + [p.wait(timeout=timeout) for p in procs[1:]]
    took = time.perf_counter() - started
    if any(c not in (0, 1) for c in codes):
        raise SystemExit(f"{argv[:4]}: exit codes {sorted(set(codes))}")
    if out and b'"schema": "envdoctor.fleet/1"' in out:
        doc = json.loads(out)
        if doc["summary"]["nodes"] != ranks or doc["gather"]["missing"]:
            raise SystemExit(f"the gather lost ranks: {doc['gather']}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--inspect", action="store_true", help="each rank inspects the machine (check's probes)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter with torch")
    parser.add_argument("--timeout", type=float, default=1200.0)
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory(prefix="envdoctor-gather-bench-") as tmp:
        if not args.inspect:
            env["ENVDOCTOR_FLEET_REPORT"] = reports(Path(tmp), args.ranks)
        floor = [args.python, "-c", FLOOR]
        gather = [
            args.python,
            "-m",
            "envdoctor",
            "fleet",
            "--gather",
            "--json",
            "--join-timeout",
            str(args.timeout / 2),
            "--python",
            args.python,
        ]
        launch(floor, min(args.ranks, 4), env, args.timeout)  # warm-up: page cache, .pyc files
        times: Dict[str, List[float]] = {"floor": [], "gather": []}
        for _ in range(args.repeat):
            times["floor"].append(launch(floor, args.ranks, env, args.timeout))
            times["gather"].append(launch(gather, args.ranks, env, args.timeout))
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "ranks": args.ranks,
        "inspect": args.inspect,
        "runs_s": {k: [round(x, 2) for x in v] for k, v in times.items()},
        "median_s": {k: round(v, 2) for k, v in med.items()},
        "ratio": round(med["gather"] / med["floor"], 3),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    print(json.dumps(result, indent=2))
    print(
        f"{args.ranks} ranks: gather {med['gather']:.1f} s, floor {med['floor']:.1f} s, ratio {result['ratio']} "
        f"(target <= 1.2): {'met' if result['ratio'] <= 1.2 else 'NOT met'}"
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

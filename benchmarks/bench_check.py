"""Time ``envdoctor check`` against ``python -m torch.utils.collect_env`` on the same machine.

Runs alternate (collect_env, check, collect_env, check, ...) so drift in the machine's state hits
both alike, and reports the median wall time of each and the ratio. Two envdoctor variants:
``--skip torch`` (part 1 of the check: no torch child) and the full check (torch probe included).

    python benchmarks/bench_check.py --rounds 5 [--python /path/to/python-with-torch]

Targets (issues 2 and 3): check without torch <= 0.1x collect_env; full check <= 0.8x.
The ``python`` whose torch is inspected also runs collect_env, so both read the same torch.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from typing import Dict, List


def timed(argv: List[str], env: Dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    took = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited with {proc.returncode}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python", default=shutil.which("python3") or sys.executable,
                        help="interpreter with torch (runs collect_env; envdoctor inspects it)")
    parser.add_argument("--envdoctor", default=None,
                        help="command that runs envdoctor (default: this interpreter -m envdoctor)")
    parser.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
    args = parser.parse_args()

    env = dict(os.environ)
    envdoctor = args.envdoctor.split() if args.envdoctor else [sys.executable, "-m", "envdoctor"]
    commands = {
        "collect_env": [args.python, "-m", "torch.utils.collect_env"],
        "check --skip torch": envdoctor + ["check", "--python", args.python, "--skip", "torch"],
        "check (full)": envdoctor + ["check", "--python", args.python],
    }
    for argv in commands.values():  # one warm-up each: page cache, .pyc files
        timed(argv, env)
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for _ in range(args.rounds):
        for name, argv in commands.items():
            times[name].append(timed(argv, env))
    med = {name: statistics.median(v) for name, v in times.items()}
    base = med["collect_env"]
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"target python: {args.python}; rounds: {args.rounds} (alternating), median wall seconds")
    print(f"{'command':<22}{'median s':>10}{'min s':>9}{'max s':>9}{'x collect_env':>15}")
    for name, values in times.items():
        print(f"{name:<22}{med[name]:>10.3f}{min(values):>9.3f}{max(values):>9.3f}{med[name] / base:>15.3f}")
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump({"times": times, "median": med, "python": args.python}, fh, indent=1)


if __name__ == "__main__":
    main()

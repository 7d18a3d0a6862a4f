"""What a source checkout costs ``check --skip torch``: the same trees with and without bytecode.

An installed wheel has its ``.pyc`` files (pip compiles them); a fresh checkout, or any tree run
under ``PYTHONDONTWRITEBYTECODE=1`` (set on the CPU box of docs/benchmarks.md), compiles every
envdoctor module from source on every run. Each TREE (``git archive <commit> envdoctor data |
tar -x -C TREE``) is copied once and compiled (``compileall``), and the two copies are timed in
alternation with the others, all under ``PYTHONDONTWRITEBYTECODE=1``; wall and CPU time (of
envdoctor and its children) are reported per variant.

    python benchmarks/bench_check_bytecode.py --rounds 10 /tmp/before /tmp/after
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    variants: Dict[str, Path] = {}
    for tree in args.trees:
        compiled = tree.with_name(tree.name + "-pyc")
        if not compiled.exists():
            shutil.copytree(tree, compiled)
            compileall.compile_dir(str(compiled / "envdoctor"), quiet=1)
        variants[f"{tree.name} (bytecode)"] = compiled
        variants[f"{tree.name} (source)"] = tree
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    wall: Dict[str, List[float]] = {k: [] for k in variants}
    cpu: Dict[str, List[float]] = {k: [] for k in variants}
    for _ in range(args.rounds):
        for name, cwd in variants.items():
            before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(
                [args.python, "-m", "envdoctor", "check", "--skip", "torch"],
                cwd=cwd,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            wall[name].append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    for name in variants:
        w, c = wall[name], cpu[name]
        print(
            f"{name:28s} wall median {statistics.median(w):.3f} s ({min(w):.3f}-{max(w):.3f})   "
            f"CPU median {statistics.median(c):.3f} s ({min(c):.3f}-{max(c):.3f})   {args.rounds} rounds"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

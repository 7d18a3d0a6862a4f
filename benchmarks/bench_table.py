"""Time loading the compatibility table in a fresh interpreter: import + ``load_table()``.

Three cases, each in its own subprocess, ``--rounds`` times (median and best reported):

- ``parse``: ``build(data_directory())``, the TOML parse every run did before the cache;
- ``cold``: ``load_table()`` with an empty cache folder (parse, then write the entry);
- ``warm``: ``load_table()`` with the entry in place (what every run after the first does).

    python benchmarks/bench_table.py --rounds 15

A tree without envdoctor/table/cache.py (before the cache) only has ``parse``. Run it with the
interpreter and ``PYTHONPATH`` of the tree to measure; it prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CASES = {
    "parse": "from envdoctor.table import build, data_directory; build(data_directory())",
    "cold": "from envdoctor.table import load_table; load_table()",
    "warm": "from envdoctor.table import load_table; load_table()",
}
TIMED = "import time; t0 = time.perf_counter(); {code}; print(time.perf_counter() - t0)"


def run(code: str, env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, "-c", TIMED.format(code=code)], capture_output=True, text=True, env=env, check=True
    )
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("ENVDOCTOR_DATA", None)
    has_cache = (
        subprocess.run([sys.executable, "-c", "import envdoctor.table.cache"], env=env, capture_output=True).returncode
        == 0
    )
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            times.setdefault("parse", []).append(run(CASES["parse"], env))
            if has_cache:
                cold = dict(env, ENVDOCTOR_CACHE_DIR=tempfile.mkdtemp(dir=tmp))
                times.setdefault("cold", []).append(run(CASES["cold"], cold))
                times.setdefault("warm", []).append(run(CASES["warm"], cold))
    print(
        json.dumps(
            {
                name: {"median_s": round(statistics.median(t), 4), "best_s": round(min(t), 4), "rounds": len(t)}
                for name, t in times.items()
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()

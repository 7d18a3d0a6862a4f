"""Time the torch child (``envdoctor/child/torch_probe.py``) of two commits, in alternation.

The child of issue 12 reads the versions of numpy, triton, nvidia-* ... for a bug report in one pass
over the dist-info folder names of sys.path; the one before asked importlib.metadata for torch,
torchvision, torchaudio and pip one at a time. This measures what that costs: each commit's program
(``_prelude.py`` + ``torch_probe.py`` as ``git show REV:...`` gives them, assembled as run_child does)
runs in the target Python, alternating, with ``--site`` extra dist-info folders on PYTHONPATH (a large
venv: the H200's has about 150 distributions; 400 by default, a quarter of them nvidia-*).

    python benchmarks/bench_torch_child.py --rev c1fc89b --rev HEAD --rounds 15            # Python part only
    python benchmarks/bench_torch_child.py --rev c1fc89b --rev HEAD --rounds 7 --with-torch  # import torch too
    python benchmarks/bench_torch_child.py --python /opt/torch/.venv/bin/python --rev c1fc89b --rev HEAD --site 0

Prints, per commit, the median and minimum wall time of one child run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def program(rev: str) -> str:
    def show(name: str) -> str:
        return subprocess.run(
            ["git", "show", f"{rev}:envdoctor/child/{name}"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout

    return show("_prelude.py") + "\n" + show("torch_probe.py") + "\n_envdoctor_run(main)\n"


def fake_site(folder: Path, count: int) -> None:
    for i in range(count):
        name = f"nvidia_lib{i:03d}_cu12" if i % 4 == 0 else f"pkg_{i:03d}"
        info = folder / f"{name}-1.{i}.0.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.{i}.0\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", action="append", required=True, help="a commit whose child to time (repeat)")
    ap.add_argument("--python", default=sys.executable, help="the target interpreter")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--site", type=int, default=400, help="extra dist-info folders on PYTHONPATH")
    ap.add_argument("--with-torch", action="store_true", help="import torch too (the full check)")
    args = ap.parse_args()
    config = json.dumps({"torch": args.with_torch})
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        fake_site(site, args.site)
        env = dict(os.environ)
        if args.site:
            env["PYTHONPATH"] = str(site) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        programs = {rev: program(rev) for rev in args.rev}
        times: dict[str, list[float]] = {rev: [] for rev in args.rev}
        for text in programs.values():  # one warm-up each
            subprocess.run([args.python, "-", config], input=text, text=True, capture_output=True, env=env, check=True)
        for _ in range(args.rounds):
            for rev, text in programs.items():
                started = time.perf_counter()
                subprocess.run(
                    [args.python, "-", config], input=text, text=True, capture_output=True, env=env, check=True
                )
                times[rev].append(time.perf_counter() - started)
    print(
        f"python: {args.python}  extra dist-infos: {args.site}  torch imported: {args.with_torch}  "
        f"rounds: {args.rounds}"
    )
    for rev, values in times.items():
        print(f"{rev:>12}  median {statistics.median(values) * 1000:7.1f} ms  min {min(values) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()

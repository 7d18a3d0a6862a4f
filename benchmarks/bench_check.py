"""Time ``envdoctor check`` against ``python -m torch.utils.collect_env`` on the same machine.

Runs alternate (collect_env, check, collect_env, check, ...) so drift in the machine's state hits
all commands alike, and reports the median wall time of each and the ratio. Two envdoctor
variants: ``--skip torch`` (part 1 of the check: no torch child) and the full check (torch probe
included).

    python benchmarks/bench_check.py --rounds 5 [--python /path/to/python-with-torch]

Targets (issues 2 and 3): check without torch <= 0.1x collect_env; full check <= 0.8x.
The ``python`` whose torch is inspected also runs collect_env, so both read the same torch.

``--skip-torch-only`` times ``check --skip torch`` alone (issue 11: at most 0.25 s on the H200),
``--baseline DIR`` times a second checkout of envdoctor (``git archive <commit> | tar -x -C DIR``)
in alternation with this one, and ``--breakdown`` adds where the time of ``check --skip torch``
goes: the interpreter's start, envdoctor's imports, the probes, table and checks as
``check -v`` reports them, and the CPU time of check's own process (all its threads share one
interpreter lock: CPU close to the wall time says the process, not what it waits on, is the limit).

    python benchmarks/bench_check.py --skip-torch-only --rounds 20 --breakdown --baseline /tmp/base

``--baseline-full`` (with ``--baseline``, without ``--skip-torch-only``) adds the baseline's full
check, so a change to the torch probe (the libraries above torch) is timed against it too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent.parent

Command = Tuple[List[str], Optional[str]]  # argv, working directory


def timed(argv: List[str], env: Dict[str, str], cwd: Optional[str] = None) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    took = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited with {proc.returncode}")
    return took


def median_of(argv: List[str], env: Dict[str, str], rounds: int, cwd: Optional[str] = None) -> float:
    return statistics.median(timed(argv, env, cwd) for _ in range(rounds))


def breakdown(envdoctor: List[str], python: str, env: Dict[str, str], rounds: int, cwd: Optional[str]) -> List[str]:
    """Where the time of ``check --skip torch`` goes (medians over ``rounds``)."""
    start = median_of([sys.executable, "-c", "pass"], env, rounds, cwd)
    imports = median_of([sys.executable, "-c", "import envdoctor.cli, envdoctor.cli.check"], env, rounds, cwd)
    steps: Dict[str, List[float]] = {}
    for _ in range(rounds):
        out = subprocess.run(
            envdoctor + ["check", "--python", python, "--skip", "torch", "-v"],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
        ).stdout
        section = out.split("Sources and timings", 1)[-1].split("\n\n", 1)[0]
        for name, seconds in re.findall(r"^  (\w+)\s+(\d+\.\d+) s", section, re.M):
            steps.setdefault(name, []).append(float(seconds))
    lines = [f"{'python -c pass':<34}{start:>8.3f} s", f"{'+ import envdoctor.cli.check':<34}{imports - start:>8.3f} s"]
    lines += [f"{'  ' + name:<34}{statistics.median(v):>8.3f} s" for name, v in steps.items()]
    cpu = own_cpu(python, env, rounds, cwd)
    lines.append(
        f"{'CPU of the check process':<34}{statistics.median(cpu[0]):>8.3f} s "
        f"(all its threads, not the programs it ran; {statistics.median(cpu[1]):.3f} s wall "
        "with the interpreter's teardown)"
    )
    return lines


#: check in a process that says, at its end, how much CPU it used (all its threads; the programs
#: it ran are not counted): main(argv) ends through atexit, so the handler runs.
_OWN_CPU = (
    "import atexit, os, sys, time\n"
    "atexit.register(lambda: os.write(2, b'\\nenvdoctor-cpu %.4f\\n' % time.process_time()))\n"
    "from envdoctor.cli import main\n"
    "main(sys.argv[1:])\n"
)


def own_cpu(python: str, env: Dict[str, str], rounds: int, cwd: Optional[str]) -> Tuple[List[float], List[float]]:
    """(CPU seconds, wall seconds) of ``check --skip torch``'s own process, ``rounds`` times."""
    cpu, wall = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        ran = subprocess.run(
            [sys.executable, "-c", _OWN_CPU, "check", "--python", python, "--skip", "torch"],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
        )
        wall.append(time.perf_counter() - started)
        found = re.findall(r"^envdoctor-cpu (\d+\.\d+)$", ran.stderr, re.M)
        if not found:
            raise SystemExit(f"check did not say its CPU time (exit {ran.returncode}): {ran.stderr[-500:]}")
        cpu.append(float(found[-1]))
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--python",
        default=shutil.which("python3") or sys.executable,
        help="interpreter with torch (runs collect_env; envdoctor inspects it)",
    )
    parser.add_argument(
        "--envdoctor", default=None, help="command that runs envdoctor (default: this interpreter -m envdoctor)"
    )
    parser.add_argument(
        "--skip-torch-only", action="store_true", help="time only check --skip torch (no collect_env, no full check)"
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        default=None,
        help="also time python -m envdoctor run from this checkout (alternating)",
    )
    parser.add_argument(
        "--baseline-full",
        action="store_true",
        help="with --baseline: also time the baseline's full check (the torch probe)",
    )
    parser.add_argument("--breakdown", action="store_true", help="also say where check --skip torch spends its time")
    parser.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
    args = parser.parse_args()

    env = dict(os.environ)
    envdoctor = args.envdoctor.split() if args.envdoctor else [sys.executable, "-m", "envdoctor"]
    here = None if args.envdoctor else str(HERE)  # -m envdoctor: this checkout's package first
    skip_torch = ["check", "--python", args.python, "--skip", "torch"]
    commands: Dict[str, Command] = {}
    if not args.skip_torch_only:
        commands["collect_env"] = ([args.python, "-m", "torch.utils.collect_env"], None)
    commands["check --skip torch"] = (envdoctor + skip_torch, here)
    if args.baseline:
        commands["baseline --skip torch"] = ([sys.executable, "-m", "envdoctor"] + skip_torch, args.baseline)
    if not args.skip_torch_only:
        commands["check (full)"] = (envdoctor + ["check", "--python", args.python], here)
        if args.baseline and args.baseline_full:
            commands["baseline (full)"] = (
                [sys.executable, "-m", "envdoctor", "check", "--python", args.python],
                args.baseline,
            )
    for argv, cwd in commands.values():  # one warm-up each: page cache, .pyc files
        timed(argv, env, cwd)
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for _ in range(args.rounds):
        for name, (argv, cwd) in commands.items():
            times[name].append(timed(argv, env, cwd))
    med = {name: statistics.median(v) for name, v in times.items()}
    base = med.get("collect_env") or med.get("baseline --skip torch")
    versus = "x collect_env" if "collect_env" in med else ("x baseline" if base else "")
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"target python: {args.python}; rounds: {args.rounds} (alternating), median wall seconds")
    print(f"{'command':<24}{'median s':>10}{'min s':>9}{'max s':>9}{versus:>15}")
    for name, values in times.items():
        ratio = f"{med[name] / base:>15.3f}" if base else ""
        print(f"{name:<24}{med[name]:>10.3f}{min(values):>9.3f}{max(values):>9.3f}{ratio}")
    if args.breakdown:
        print("\nwhere check --skip torch spends its time (medians; the steps under the imports overlap):")
        print("\n".join(breakdown(envdoctor, args.python, env, args.rounds, here)))
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump({"times": times, "median": med, "python": args.python}, fh, indent=1)


if __name__ == "__main__":
    main()

"""Time ``envdoctor index --all`` against the local index server with latency injected.

Not a test. The server (``tests/indexserver.py``, run in its own process so that its work does
not compete with the client for one interpreter lock) delays every answer by ``--latency``
seconds (default 0.2). The index tree is the fixture's, widened so that every variant envdoctor asks
about exists (each variant's torch page is the cu121 fixture page renamed), so every variant
costs one request, as on the real index. Measured:

1. one request (one variant, fresh client, no cache): the unit;
2. ``index --all`` cold (empty cache), in process (``CliRunner``) and as a subprocess;
3. the same list of variants with a sequential client (``max_workers=1``): N x the unit;
4. ``index --all`` repeated with a warm cache, in process and as a subprocess; a subprocess
   running ``python -c pass`` and one importing the modules envdoctor needs give the floor.

Run::

    .venv/bin/python benchmarks/bench_index.py [--latency 0.2] [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, List, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from envdoctor.cli import cli  # noqa: E402
from envdoctor.wheels import IndexClient, Target  # noqa: E402
from tests.indexserver import FIXTURE_ROOT  # noqa: E402

TARGET = ["--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"]


def known_variants() -> List[str]:
    try:
        from envdoctor.table import load_table

        return [v.name for v in load_table().variants]
    except Exception:  # noqa: BLE001 - the table may not exist yet
        return sorted(p.name for p in (FIXTURE_ROOT / "whl").iterdir() if p.is_dir())


def widened_tree(names: Sequence[str], into: Path) -> Path:
    """The fixture tree plus, for every missing variant, a copy of cu121 renamed."""
    shutil.copytree(FIXTURE_ROOT / "whl", into / "whl")
    template = (FIXTURE_ROOT / "whl" / "cu121" / "torch" / "index.html").read_text()
    root = (FIXTURE_ROOT / "whl" / "cu121" / "index.html").read_text()
    for name in names:
        folder = into / "whl" / name
        if folder.exists():
            continue
        (folder / "torch").mkdir(parents=True)
        (folder / "index.html").write_text(root)
        (folder / "torch" / "index.html").write_text(template.replace("cu121", name))
    return into


@contextlib.contextmanager
def served(root: Path, latency: float) -> Iterator[str]:
    """The index server in a child process; yields its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.indexserver", "--root", str(root), "--latency", str(latency)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/whl"
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def timed(fn: Callable[[], object], repeat: int) -> List[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def show(label: str, seconds: List[float], unit: float) -> None:
    med = statistics.median(seconds)
    print(
        f"{label:<58} median {med * 1000:7.1f} ms  min {min(seconds) * 1000:7.1f} ms  "
        f"= {med / unit:5.2f} x one request   (n={len(seconds)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    names = known_variants()
    target = Target.for_python("3.12", platform="manylinux_2_28_x86_64")
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as tmp, served(widened_tree(names, Path(tmp) / "tree"), args.latency) as base:
        cmd = ["index", "--all", *TARGET, "--index-url", base]
        print(
            f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; "
            f"{len(names)} variants + the root page; latency {args.latency * 1000:.0f} ms/request"
        )
        print(f"command: envdoctor {' '.join(cmd)}\n")

        single = timed(lambda: IndexClient(base, cache=False).variant("cu128", "torch", target), args.repeat)
        unit = statistics.median(single)
        show("one request (cu128, fresh client, no cache)", single, unit)

        def cold_cli() -> None:
            cache = tempfile.mkdtemp(dir=tmp)
            result = runner.invoke(cli, cmd, env={"ENVDOCTOR_CACHE_DIR": cache})
            assert result.exit_code == 0, result.output

        show("index --all, cold cache, in process", timed(cold_cli, args.repeat), unit)

        env = dict(os.environ, PYTHONPATH=str(ROOT))

        def cold_sub() -> None:
            cache = tempfile.mkdtemp(dir=tmp)
            subprocess.run(
                [sys.executable, "-m", "envdoctor", *cmd],
                check=True,
                env=dict(env, ENVDOCTOR_CACHE_DIR=cache),
                stdout=subprocess.DEVNULL,
            )

        show("index --all, cold cache, subprocess (interpreter start incl.)", timed(cold_sub, args.repeat), unit)

        sequential = timed(
            lambda: IndexClient(base, cache=False, max_workers=1).all_variants(names, "torch", target), 1
        )
        show("same variants, sequential client (max_workers=1)", sequential, unit)

        warm = tempfile.mkdtemp(dir=tmp)
        runner.invoke(cli, cmd, env={"ENVDOCTOR_CACHE_DIR": warm})
        before = len(list(Path(warm).rglob("*.json")))

        def warm_cli() -> None:
            result = runner.invoke(cli, cmd, env={"ENVDOCTOR_CACHE_DIR": warm})
            assert result.exit_code == 0, result.output

        show("index --all, warm cache, in process", timed(warm_cli, args.repeat), unit)
        show(
            "index --all, warm cache, subprocess",
            timed(
                lambda: subprocess.run(
                    [sys.executable, "-m", "envdoctor", *cmd],
                    check=True,
                    env=dict(env, ENVDOCTOR_CACHE_DIR=warm),
                    stdout=subprocess.DEVNULL,
                ),
                args.repeat,
            ),
            unit,
        )
        show(
            "  floor: python -c pass",
            timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), args.repeat),
            unit,
        )
        show(
            "  floor: python importing click+packaging+envdoctor.cli",
            timed(
                lambda: subprocess.run([sys.executable, "-c", "import envdoctor.cli.index"], check=True, env=env),
                args.repeat,
            ),
            unit,
        )
        after = len(list(Path(warm).rglob("*.json")))
        print(f"\ncache entries after the warm runs: {after} (before: {before})")


if __name__ == "__main__":
    main()

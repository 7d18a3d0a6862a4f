"""One answer for one situation (qa2, after issues 25/26): on a machine without a GPU, every command
that measures a GPU is a run that could not start: exit 2, the last line of stderr naming the missing
GPU and what to do, and with --json still its document, whose summary carries the 2. ``burn`` said
"verdict: CPU run ... no GPU verdict" and exited 0, ``bench`` measured the CPU and exited 0, ``topo``
exited 1 ("a problem found"), ``comms --json`` printed no document. A CPU run is still there, asked
for by name (``--cpu``; ``comms --backend gloo``), and labelled.

``profile`` is the one measurement that does not stop: it times the person's own script, which
runs where that script puts it; its report says "CPU only" (checked here too).

The target is the real CPU torch of the test environment, in real processes; this walk is for a
machine without a GPU (CI's), and skips where NVML sees one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.documents import validate_written
from tests.test_bench_child import needs_torch

ROOT = Path(__file__).parent.parent


def _nvml_sees_a_gpu() -> bool:
    from envdoctor.nvml import Session

    s = Session()
    try:
        return s.error is None and s.count > 0
    finally:
        s.close()


pytestmark = [needs_torch, pytest.mark.skipif(_nvml_sees_a_gpu(), reason="NVML sees a GPU on this machine")]

#: every command that measures or reads a GPU, with the words of its what-to-do
COMMANDS = [
    (["bench", "--size", "64", "--budget", "0.1"], "add --cpu to measure the CPU"),
    (["burn", "--seconds", "5"], "add --cpu to try the load on the CPU"),
    (["comms"], "--backend gloo --nproc 2"),
    (["topo"], "run topo on a node with an NVIDIA GPU"),
    (["fit", "Llama-3.2-1B", "--measure"], "add --cpu to measure a tiny config on the CPU"),
    (["diag"], "run diag on a node with an NVIDIA GPU"),
]


def _run(args, *extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="", HOME=os.environ.get("HOME", "/tmp"))
    python = [] if args[0] == "topo" else ["--python", sys.executable]
    return subprocess.run(
        [sys.executable, "-m", "envdoctor", *args, *python, *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.parametrize("args, todo", COMMANDS, ids=lambda a: a[0] if isinstance(a, list) else "")
def test_no_gpu_is_exit_2_with_one_line_in_every_measuring_command(args, todo):
    r = _run(args)
    assert r.returncode == 2, (r.returncode, r.stdout[-800:], r.stderr[-800:])
    assert "Traceback" not in r.stderr + r.stdout
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"envdoctor {args[0]}: ") and "GPU" in last and todo in last, last


@pytest.mark.parametrize("args, todo", COMMANDS, ids=lambda a: a[0] if isinstance(a, list) else "")
def test_no_gpu_with_json_still_prints_the_document_with_its_exit_code(args, todo):
    r = _run(args, "--json")
    assert r.returncode == 2, (r.returncode, r.stdout[-800:], r.stderr[-800:])
    doc = json.loads(r.stdout)
    assert list(doc)[:3] == ["schema", "envdoctor_version", "created_at"] and doc["summary"]["exit_code"] == 2
    assert doc["schema"] == f"envdoctor.{args[0]}/1"
    assert todo in r.stderr.strip().splitlines()[-1]
    if args[0] in ("bench", "burn", "diag", "fit"):
        validate_written(doc, args[0], 2)
    if args[0] == "fit":  # the estimate stands; the measurement says why it did not run
        assert doc["peak_bytes"] > 0 and doc["measurement"]["status"] == "no_gpu", doc.get("measurement")


#: topo and comms exit 2 when nothing can run (README's table): their documents say so and validate
@pytest.mark.parametrize("command", ["topo", "comms"])
def test_the_no_gpu_documents_of_topo_and_comms_validate(command):
    r = _run([command], "--json")
    validate_written(json.loads(r.stdout), command, 2)


def test_the_cpu_runs_asked_for_by_name_still_run_and_say_so():
    burn = _run(["burn", "--seconds", "5", "--cpu"], "--json")
    assert burn.returncode == 0, burn.stderr[-800:]
    assert json.loads(burn.stdout)["cpu_run"] is True
    bench = _run(["bench", "--size", "64", "--budget", "0.1", "--suite", "matmul", "--cpu"])
    assert bench.returncode == 0, bench.stderr[-800:]
    assert "No GPU: fp32 measured on the CPU; no Tensor Core verdict" in bench.stdout


def test_profile_times_the_script_where_it_runs_and_says_cpu_only():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "envdoctor",
            "profile",
            "--python",
            sys.executable,
            "--steps",
            "2",
            "--",
            sys.executable,
            str(ROOT / "tests" / "fixtures" / "profile" / "fp32_matmul.py"),
        ],
        env=dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES=""),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr[-800:]
    assert "CPU only" in r.stdout

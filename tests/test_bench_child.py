"""The measurement child for real, on the CPU torch of the test environment (tiny sizes and
budget), and the target-interpreter failures: no torch, a wrong result."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from envdoctor.bench.host import SCRIPT, run_bench
from envdoctor.child import _resource, run_child
from envdoctor.cli.bench import exit_code
from tests.test_bench_fakes import FakeNvml

HAS_TORCH = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed in the test interpreter")


@needs_torch
def test_child_times_fp32_on_the_cpu_and_checks_the_result():
    cfg = {"dtypes": ["fp32", "fp16"], "sizes": [32, 96], "budget": 0.2, "device": "0"}
    child = run_child(SCRIPT, cfg, python=sys.executable, timeout=120)
    doc = child.result
    assert child.ok and child.returncode == 0 and doc["error"] is None and doc["torch_version"]
    (dev,) = doc["devices"]
    assert dev["kind"] == "cpu" and dev["skipped"] == {"fp16": "the CPU run measures fp32 only"}
    assert dev["launch_us"] > 0
    assert [(p["dtype"], p["n"], p["status"]) for p in doc["points"]] == [("fp32", 32, "ok"), ("fp32", 96, "ok")]
    for p in doc["points"]:
        assert p["rel_error"] < 1e-5 and p["tflops"] > 0 and 5 <= len(p["repeats_ms"]) <= 40
        assert p["started"] < p["ended"] and p["launches"] >= 1
    assert [e["kind"] for e in child.events] == ["plan", "point", "point"] and child.events[0]["points"] == 2


@needs_torch
def test_run_bench_on_cpu_torch_gives_no_tensor_core_verdict():
    r = run_bench(sys.executable, sizes=(32,), budget=0.1, nvml=FakeNvml(gpus=0))
    assert r.error is None and r.devices[0].kind == "cpu"
    assert r.verdicts[0].line == "No GPU: fp32 measured on the CPU; no Tensor Core verdict"
    assert "no GPU usable by torch: fp32 measured on the CPU" in r.notes
    assert exit_code(r) == 0


@needs_torch
def test_cpu_only_torch_on_a_gpu_machine_is_not_delivering():
    r = run_bench(sys.executable, sizes=(32,), budget=0.1, nvml=FakeNvml(gpus=1))
    v = r.verdicts[0]
    if "+cpu" in (r.torch_version or ""):
        assert "is a CPU-only build" in v.line
    assert v.state == "not_delivering" and exit_code(r) == 1


@needs_torch
def test_wrong_result_fails_the_point(tmp_path):
    # A torch whose matmul adds 1 to every element: fast, and wrong.
    (tmp_path / "sitecustomize.py").write_text(
        "import torch\n"
        "_matmul = torch.matmul\n"
        "def matmul(a, b, out=None):\n"
        "    r = _matmul(a, b) if out is None else _matmul(a, b, out=out)\n"
        "    return r.add_(1.0)\n"
        "torch.matmul = matmul\n"
    )
    env = dict(__import__("os").environ, PYTHONPATH=str(tmp_path))
    r = run_bench(sys.executable, sizes=(48,), budget=0.1, env=env, nvml=FakeNvml(gpus=0))
    (p,) = r.points
    assert p.status == "wrong" and p.tflops > 0
    assert p.error.startswith("relative error") and "exceeds 1e-04 against float64" in p.error
    assert exit_code(r) == 1


def test_python_without_torch(tmp_path):
    # the interpreter with its site-packages switched off: no torch there
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    r = run_bench(str(wrapper), nvml=FakeNvml(gpus=0))
    assert r.error.kind == "not_found" and r.error.message == f"torch is not installed in {wrapper}"
    assert r.points == () and exit_code(r) == 1


def test_child_refuses_a_gpu_that_does_not_exist_on_a_cpu_torch_by_running_on_the_cpu():
    # Without CUDA the device option is moot: the child runs on the CPU (no error).
    if not HAS_TORCH:
        pytest.skip("no torch")
    cfg = {"dtypes": ["fp32"], "sizes": [16], "budget": 0.05, "device": "3"}
    child = run_child(SCRIPT, cfg, python=sys.executable, timeout=120)
    assert child.result["devices"][0]["kind"] == "cpu"


@pytest.mark.parametrize("name", ["_prelude.py", SCRIPT, "plot.py", "torch_probe.py"])
def test_child_source_stays_python38_and_torch_free_at_import(name):
    src = _resource(name)
    ast.parse(src, feature_version=(3, 8))       # a SyntaxError here breaks old target Pythons
    assert "\nimport torch" not in src and "from __future__" not in src

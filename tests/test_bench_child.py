"""The measurement child for real, on the CPU torch of the test environment (tiny sizes and
budget), and the target-interpreter failures: no torch, a wrong result."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from envdoctor.bench.command import exit_code
from envdoctor.bench.host import SCRIPT, run_bench
from envdoctor.child import _resource, run_child
from tests.test_bench_fakes import FakeNvml

# One thread: on the shared two-core CI machine contended threads make a tiny product 100x slower now
# and then, and the budget rule then skips the next size.
ONE_THREAD = dict(os.environ, OMP_NUM_THREADS="1")
HAS_TORCH = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed in the test interpreter")


@needs_torch
def test_child_times_fp32_on_the_cpu_and_checks_the_result():
    cfg = {"dtypes": ["fp32", "fp16"], "sizes": [32, 96], "budget": 0.2, "device": "0"}
    child = run_child(SCRIPT, cfg, python=sys.executable, timeout=120, env=ONE_THREAD)
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
    assert r.points == () and exit_code(r) == 2  # a run that could not start


def test_child_refuses_a_gpu_that_does_not_exist_on_a_cpu_torch_by_running_on_the_cpu():
    # Without CUDA the device option is moot: the child runs on the CPU (no error).
    if not HAS_TORCH:
        pytest.skip("no torch")
    cfg = {"dtypes": ["fp32"], "sizes": [16], "budget": 0.05, "device": "3"}
    child = run_child(SCRIPT, cfg, python=sys.executable, timeout=120, env=ONE_THREAD)
    assert child.result["devices"][0]["kind"] == "cpu"


@pytest.mark.parametrize(
    "name",
    [
        "_prelude.py",
        SCRIPT,
        "plot.py",
        "torch_probe.py",
        "_torch_common.py",
        "bench/target/matmul.py",
        "bench/target/memory.py",
        "bench/target/models.py",
        "bench/target/layers.py",
    ],
)
def test_child_source_stays_python38_and_torch_free_at_import(name):
    src = _resource(name)
    ast.parse(src, feature_version=(3, 8))  # a SyntaxError here breaks old target Pythons
    assert "\nimport torch" not in src and "from __future__" not in src


class _WallClock:
    """A stand-in for the child's Clock that claims a GPU (cuda=True) and times with perf_counter,
    so that the GPU-only branches of time_repeats run on the CPU."""

    cuda = True

    def mark(self):
        import time

        return time.perf_counter()

    def sync(self):
        pass

    def ms(self, a, b):
        return (b - a) * 1000.0


def _timing_part():
    space = {}
    exec(compile(_resource("_torch_common.py"), "_torch_common.py", "exec"), space)
    return space


def test_time_repeats_heats_without_a_gap_reads_the_issue_time_and_keeps_the_collector_off():
    import gc
    import time

    seen = []

    def fn():  # 0.2 ms of CPU work: on this fake GPU, issue time = call time
        seen.append(gc.isenabled())
        end = time.perf_counter() + 0.0002
        while time.perf_counter() < end:
            pass

    extra = {}
    times, launches, warm = _timing_part()["time_repeats"](_WallClock(), fn, 0.02, lambda per_ms: 0.01, extra)
    assert gc.isenabled() and not any(seen)  # off while timing, back on after
    # the fastest issue of one call is at least the 0.2 ms of work (timings on a loaded box vary up)
    assert extra["issue_ms"] >= 0.2 and extra["burst_ms"] >= 0.2
    # 10 ms of heat: as many calls as fit at the calibrated ms per call, run before the repeats
    heat_calls = int(10.0 / extra["burst_ms"])
    assert heat_calls >= 1 and extra["heat_ms"] == pytest.approx(heat_calls * extra["burst_ms"])
    assert len(seen) == warm - 1 + len(times) * launches  # warm counts one call more than it ran (as before)
    assert warm - 1 >= heat_calls + 1


def test_time_repeats_on_the_cpu_has_no_issue_time_and_no_heat_unless_asked():
    extra = {}

    class Cpu(_WallClock):
        cuda = False

    _timing_part()["time_repeats"](Cpu(), lambda: sum(range(200)), 0.005, None, extra)
    assert "issue_ms" not in extra and extra["heat_ms"] == 0.0


@needs_torch
def test_fwd_bwd_gradients_are_fresh_each_call_not_accumulated():
    # A training step's backward runs after zero_grad(set_to_none=True): each timed call must
    # write its gradients afresh, not add them to the last call's (an extra pass over every weight).
    import torch

    space = {"first_line": str}
    exec(compile(_resource("bench/target/models.py"), "bench/target/models.py", "exec"), space)
    layer = space["build_layer"](torch, "gpt2", {"h": 16, "heads": 2, "ffn": 32}, torch.float64, "cpu")
    x, ctx = space["point_inputs"](torch, layer, 1, 8, "cpu", True)
    dy = torch.randn(x.shape, dtype=x.dtype)
    fn = space["pass_fn"](torch, layer, "eager", "fwd+bwd", x, ctx, dy)
    fn()
    once = (x.grad.clone(), layer["params"]["w1"].grad.clone())
    fn()
    assert torch.equal(x.grad, once[0]) and torch.equal(layer["params"]["w1"].grad, once[1])


@needs_torch
def test_the_counting_mode_does_not_import_dynamo():
    # FlopCounterMode's mode imported torch._dynamo on its first call (805 modules, 3 s here),
    # once per child; the layers' counting mode must not.
    script = (
        "import sys, torch\n"
        "space = {'first_line': str}\n"
        "for name in ('envdoctor/bench/target/models.py', 'envdoctor/bench/target/layers.py'):\n"
        "    exec(compile(open(name).read(), name, 'exec'), space)\n"
        "layer = space['build_layer'](torch, 'bert', {'h': 16, 'heads': 2, 'ffn': 32}, torch.float32, 'cpu')\n"
        "x, ctx = space['point_inputs'](torch, layer, 1, 8, 'cpu', False)\n"
        "fn = space['pass_fn'](torch, layer, 'eager', 'fwd', x, ctx, None)\n"
        "stats = space['op_profile'](torch, fn, space['flop_formulas'](torch))\n"
        "print(stats['counted_flops'], space['analytic_flops']('bert', layer['dims'], 1, 8), "
        "'torch._dynamo' in sys.modules)\n"
    )
    import envdoctor

    folder = os.path.dirname(os.path.dirname(envdoctor.__file__))  # the names are paths from here
    out = subprocess.run([sys.executable, "-c", script], cwd=folder, capture_output=True, text=True, env=ONE_THREAD)
    assert out.returncode == 0, out.stderr
    # 8Th^2 + 4bs^2h + 4Thf at h=16, f=32, b=1, s=8 (T=8): 16384 + 4096 + 16384
    assert out.stdout.split() == ["36864.0", "36864.0", "False"]


def test_disturbed_matmul_repeats_do_not_drive_the_would_take_skips():
    """Issue 26: a median of 0.00026 TFLOP/s beside a best of 0.12 made every layer "would take 65 s"."""
    space: dict = {"first_line": str}
    for part in ("bench/target/models.py", "bench/target/layers.py"):
        exec(compile(_resource(part), part, "exec"), space)
    disturbed = {"dtype": "fp32", "n": 512, "status": "ok", "tflops": 0.00026, "best_tflops": 0.12}
    fastest = space["fastest_rates"]([disturbed, dict(disturbed, n=128, best_tflops=9.0)], 256)
    assert fastest == {"fp32": 0.12}
    flops = 3 * 2.7e9  # a small layer's fwd+bwd on the CPU
    assert space["call_estimate_s"](flops, 0.00026) > space["MAX_ONE_PASS_S"]  # the median: skipped
    assert space["call_estimate_s"](flops, fastest["fp32"]) < space["MAX_ONE_PASS_S"]

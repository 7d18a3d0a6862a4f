"""The burn child for real, on the test interpreter's CPU torch (tiny products, a few seconds each):
the load and its compare, the memory test, a target whose products sometimes differ, a stop."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading

import pytest

from envdoctor.burn.host import run_burn
from tests.fakenvml import FakeNvml

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (CPU is enough)")

#: NVML as on a machine without the driver: libnvidia-ml.so.1 not found (code 12)
NO_NVML = 12


def no_nvml():
    return FakeNvml.recorded("h200-driver580-cuda13", init_error=NO_NVML)


def test_cpu_burn_loads_bf16_and_fp32_and_every_product_agrees():
    r = run_burn(sys.executable, seconds=2.0, memtest_s=0.5, nvml=no_nvml(), env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert r.error is None and r.cpu_run and len(r.gpus) == 1
    g = r.gpus[0]
    assert g.kind == "cpu" and g.verdict == "NONE" and g.child.state == "ok"
    assert [p.dtype for p in g.phases] == ["bf16", "fp32"]
    for p in g.phases:
        assert p.status == "ok" and p.compare == "tolerance" and p.n == 256 and p.products > 1
        assert p.mismatches == 0 and p.ref_error < p.ref_bound and p.sustained_tflops > 0
    assert g.memtest.status == "ok" and g.memtest.bytes == 64 << 20 and g.memtest.passes
    assert g.memtest.passes[0].pattern == "address" and g.memtest.mismatches == 0
    assert [f.code for f in r.findings] == ["ED828"]
    assert r.torch_version.startswith("2.") and "no NVML samples" in r.sampling


SOMETIMES_WRONG = """
import torch
_real = torch.matmul
_calls = [0]
def matmul(*args, **kw):
    _calls[0] += 1
    result = _real(*args, **kw)
    if _calls[0] == 6 and kw.get("out") is not None:
        kw["out"].view(-1)[7] += 1.0     # one element of the fifth product after the first
    return result
torch.matmul = matmul
"""


def test_a_target_whose_products_sometimes_differ_is_faulty(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(SOMETIMES_WRONG)
    r = run_burn(
        sys.executable,
        seconds=1.5,
        dtypes=("fp32",),
        memtest_s=0,
        nvml=no_nvml(),
        env=dict(os.environ, PYTHONPATH=str(tmp_path), OMP_NUM_THREADS="1"),
    )
    g = r.gpus[0]
    p = g.phases[0]
    assert (p.status, p.mismatches, p.bad_products, p.first_bad_product) == ("miscompare", 1, 1, 5)
    assert g.verdict == "FAULTY" and [f.code for f in g.findings] == ["ED800"]


def test_a_stop_ends_the_load_and_the_child_still_answers():
    stop = threading.Event()
    timers = []

    def on_event(job, event):  # about a second after the load has begun (import torch may take long)
        if event.get("kind") == "interval" and not timers:
            timers.append(threading.Timer(1.0, stop.set))
            timers[0].start()

    try:
        r = run_burn(
            sys.executable,
            seconds=60.0,
            dtypes=("fp32",),
            nvml=no_nvml(),
            stop=stop,
            env=dict(os.environ, OMP_NUM_THREADS="1"),
            on_event=on_event,
        )
    finally:
        for t in timers:
            t.cancel()
    g = r.gpus[0]
    assert r.interrupted and g.child.state == "stopped" and r.wall_s < 40
    assert g.phases and g.phases[0].status == "stopped" and g.phases[0].products > 0
    assert g.memtest.status == "stopped"
    assert "ED826" in [f.code for f in r.findings]


def test_gpu_3_on_a_machine_without_gpus_is_a_usage_error():
    r = run_burn(sys.executable, seconds=5.0, device="3", nvml=no_nvml())
    assert r.gpus == () and r.error.command == "--device" and "GPU 3 does not exist" in r.error.message


def test_a_target_without_torch_says_so(tmp_path):
    (tmp_path / "torch.py").write_text("raise ImportError(\"No module named 'torch'\", name='torch')\n")
    r = run_burn(sys.executable, seconds=5.0, nvml=no_nvml(), env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert r.error.kind == "not_found" and r.error.message == f"torch is not installed in {sys.executable}"

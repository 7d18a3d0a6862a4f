"""The host side on recorded H200 output (tests/fixtures/h200-bench): parsing, NVML attribution,
bound, verdict, rendering, JSON round trip, and failure paths through fake target interpreters."""

from __future__ import annotations

import copy
import json
import signal
import time

import pytest

from envdoctor.bench.command import exit_code
from envdoctor.bench.facts import SCHEMA, BenchResult
from envdoctor.bench.host import Sampler, build_result, run_bench
from envdoctor.bench.render import render_bench_text
from envdoctor.facts.serde import from_data, to_data
from tests.test_bench_fakes import H200_MODEL, FakeNvml, child_doc, fake_python, recorded_run, replay, samples


def analysed(name: str, lookup=lambda name: H200_MODEL) -> BenchResult:
    raw = recorded_run(name)
    return build_result(
        child_doc(raw),
        samples=samples(raw),
        gpus=raw["gpus"],
        sampling=raw["sampling"],
        lookup=lookup,
        python="/opt/torch/.venv/bin/python3",
    )


def point(result: BenchResult, dtype: str, n: int):
    return next(p for p in result.points if p.dtype == dtype and p.n == n)


def test_default_run_on_the_h200():
    r = analysed("default")
    assert r.torch_version == "2.11.0+cu130" and len(r.points) == 16
    assert all(p.status == "ok" for p in r.points)
    fp16 = point(r, "fp16", 8192)
    assert fp16.tflops == pytest.approx(633.6, abs=0.1) and fp16.bound == "compute"
    assert fp16.efficiency == pytest.approx(633.6 / 989, abs=1e-3)
    assert fp16.power_w > 650 and fp16.sm_clock_mhz < 1980 and "sw_power_cap" in fp16.reasons
    assert point(r, "fp16", 128).bound == "launch"
    assert point(r, "fp32", 8192).tf32 is False and point(r, "tf32", 8192).tf32 is True
    assert [v.line for v in r.verdicts] == ["Tensor Cores confirmed: fp16 runs 12.4x fp32"]
    assert exit_code(r) == 0


def test_h200_device_is_matched_to_nvml_by_uuid():
    d = analysed("default").devices[0]
    assert (d.nvml_index, d.max_sm_clock_mhz, d.power_limit_w, d.launch_us) == (0, 1980, 700.0, 13.052)
    assert d.uuid == "GPU-f07bb63c-cd2e-fe8d-534a-d4b919fe9734" and d.model == "NVIDIA H200"


def test_burst_then_power_cap_is_explained():
    r = analysed("long-burst")
    fp16 = point(r, "fp16", 8192)
    assert fp16.burst_tflops == pytest.approx(707.3, abs=0.1) and fp16.tflops < 650
    assert any("first repeat ran at 707 TFLOP/s" in n and "700 W limit" in n for n in r.notes)
    assert any("the power cap, not the chip" in n for n in r.notes)


def test_torch_without_a_visible_gpu_while_nvml_sees_one():
    r = analysed("nocuda")
    assert r.devices[0].kind == "cpu" and r.nvml_gpus == 1
    v = r.verdicts[0]
    assert v.state == "not_delivering"
    assert "torch 2.11.0+cu130 cannot use the GPU (RuntimeError: No CUDA GPUs are available)" in v.line
    assert exit_code(r) == 1


def test_tf32_override_is_noted_and_fp32_stayed_exact():
    r = analysed("tf32-override")
    assert any("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1" in n for n in r.notes)  # recorded child note
    assert point(r, "fp32", 2048).status == "ok"


def test_a_wrong_result_fails_the_point_whatever_its_speed():
    raw = recorded_run("default")
    doc = child_doc(raw)
    bad = next(p for p in doc["points"] if p["dtype"] == "fp16" and p["n"] == 8192)
    bad.update(status="wrong", rel_error=0.71, error="relative error 0.71 exceeds 5e-03 against float64")
    r = build_result(doc, lookup=lambda name: H200_MODEL)
    assert [p.n for p in r.failed_points] == [8192] and exit_code(r) == 1
    assert "fp16 n=8192 WRONG: relative error 0.71" in render_bench_text(r)


def test_text_report_has_table_chart_and_verdict():
    text = render_bench_text(analysed("default"))
    assert "GPU 0, NVIDIA H200 (compute capability 9.0), torch 2.11.0+cu130" in text
    assert "datasheet: NVIDIA H200, dense TFLOP/s fp32 67, tf32 494.5, fp16 989, bf16 989, 4800 GB/s" in text
    row = next(line for line in text.splitlines() if line.startswith("fp16   8192"))
    assert row.split()[2:7] == ["633.6", "703.0", "989", "64%", "compute"]
    assert "n=8192  fp32" in text and "Tensor Cores confirmed: fp16 runs 12.4x fp32" in text
    assert "NVML: 218 samples of 1 GPU(s) every 50 ms (instant power)" in text


def test_json_round_trip_through_serde():
    r = analysed("default")
    data = json.loads(json.dumps(to_data(r)))
    assert data["schema"] == SCHEMA == "envdoctor.bench/1"
    assert from_data(BenchResult, data) == r


def test_real_table_knows_the_h200():
    from envdoctor.bench.host import lookup_model

    model = lookup_model("NVIDIA H200")
    if model is None:
        pytest.skip("envdoctor.table has no H200 row")
    r = analysed("default", lookup=lookup_model)
    assert r.devices[0].peaks["fp32"] > 0 and r.verdicts[0].state == "confirmed"


def test_siblings_flag_a_slow_second_gpu():
    raw = recorded_run("default")
    doc = child_doc(raw)
    slow = copy.deepcopy(doc["points"])
    for p in slow:
        p["device"] = 1
        p["tflops"] *= 0.8
    second = dict(doc["devices"][0], index=1, uuid="GPU-other")
    doc.update(points=doc["points"] + slow, devices=doc["devices"] + [second])
    r = build_result(doc, lookup=lambda name: H200_MODEL)
    assert len(r.verdicts) == 2 and r.outliers
    assert r.outliers[0].startswith("GPU 1 (NVIDIA H200): fp16 n=8192")
    assert exit_code(r) == 1


# --- through run_bench, with fake target interpreters ---------------------------------------


def test_run_bench_replays_the_h200_child_with_fake_nvml(tmp_path):
    python = replay(tmp_path, recorded_run("default"))
    seen = []
    r = run_bench(python, nvml=FakeNvml(), sample_interval=0.01, lookup=lambda name: H200_MODEL, progress=seen.append)
    assert r.error is None and len(r.points) == 16
    assert seen[-1].done == seen[-1].total == 16 and seen[-1].point.dtype == "bf16"
    assert r.sampling.startswith("NVML:") and "instant power" in r.sampling
    assert r.devices[0].nvml_index is None or r.devices[0].nvml_index == 0


def test_hung_child_is_killed_and_keeps_finished_points(tmp_path):
    raw = recorded_run("default")
    python = fake_python(tmp_path, events=raw["events"][:3], hang=True)
    started = time.monotonic()
    r = run_bench(python, timeout=2, nvml=FakeNvml(fail="NVML Shared Library Not Found"))
    assert time.monotonic() - started < 15
    assert r.error.kind == "timeout" and "last finished: tf32 n=128" in r.error.message
    assert [p.dtype for p in r.points] == ["fp32", "tf32"] and exit_code(r) == 1
    assert r.sampling == "no NVML samples: NVML did not start (NVML: NVML Shared Library Not Found)"


def test_crashed_child_says_which_signal(tmp_path):
    raw = recorded_run("default")
    python = fake_python(tmp_path, events=raw["events"][:2], signal=signal.SIGSEGV)
    r = run_bench(python, nvml=FakeNvml(gpus=0))
    assert r.error.kind == "crashed" and r.error.message == f"{python} was killed by SIGSEGV"
    assert len(r.points) == 1 and r.sampling == "no NVML samples: NVML sees no GPU"


def test_child_that_prints_garbage_is_the_targets_failure_exit_1(tmp_path):
    """Issue 12: was exit 3 ("a bug"); bench's docs promise 1 for a run that failed in the target."""
    r = run_bench(fake_python(tmp_path, stdout="hello\n"), nvml=FakeNvml(gpus=0))
    assert r.error.kind == "unparseable" and exit_code(r) == 1


def test_child_exit_status_gives_its_last_line(tmp_path):
    python = fake_python(tmp_path, stderr='  File "child.py", line 1\nSyntaxError: invalid syntax\n', rc=1)
    r = run_bench(python, nvml=FakeNvml(gpus=0))
    assert r.error.kind == "exit_status" and "SyntaxError: invalid syntax" in r.error.message
    assert r.error.message.endswith("is probably too old for envdoctor's bench/target/bench.py)")


def test_child_reports_no_torch(tmp_path):
    doc = {"schema": "envdoctor.bench.child/1", "error": {"kind": "no_torch", "message": "x"}}
    r = run_bench(fake_python(tmp_path, result=doc), nvml=FakeNvml(gpus=0))
    assert r.error.kind == "not_found" and r.error.message.startswith("torch is not installed in ")


def test_sampler_without_pynvml_says_so(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pynvml(name, *a, **kw):
        if name == "pynvml":
            raise ImportError("No module named 'pynvml'")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    s = Sampler()
    assert s.start() is False
    assert s.status == "no NVML samples: the NVML binding (nvidia-ml-py) is not installed"


def test_sampler_falls_back_to_averaged_power():
    nv = FakeNvml()
    nv.set(0, "nvmlDeviceGetFieldValues:186", {"error": 3})  # a GPU without instant power
    s = Sampler(0.01, nv)
    assert s.start()
    time.sleep(0.03)
    s.stop()
    assert s.samples[-1].power_w == 699.0 and "power averaged by the driver" in s.status
    assert s.samples[-1].reasons == ("sw_power_cap",)

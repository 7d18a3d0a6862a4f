"""``fit --measure``'s host side on child documents (synthetic ones, tests/fixtures/fit-measure/README.md):
the context and peak arithmetic, the comparison, the MFU, the findings, the time bound.

Expected values are worked out by hand from the documents' numbers (written next to each).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from envdoctor.child import ChildRun
from envdoctor.facts.base import ProbeError
from envdoctor.fit.analysis import compare
from envdoctor.fit.config import spec_from_config
from envdoctor.fit.constants import load_constants
from envdoctor.fit.estimate import estimate
from envdoctor.fit.facts import Measurement, MeasurementError, measurement_from_child
from envdoctor.fit.host import cpu_problem, measure_timeout, measurement_of
from envdoctor.fit.models import bundled_models
from envdoctor.fit.rules import measure_findings
from envdoctor.fit.workload import Workload
from envdoctor.nvml import NvmlGpu

FIX = Path(__file__).parent / "fixtures" / "fit-measure"
H200_FREE_BEFORE = 150_100_000_000


def doc(name: str) -> dict:
    return json.loads((FIX / name).read_text())


def est_of(name: str, w: Workload):
    return estimate(bundled_models().find(name).spec, w, load_constants())


LLAMA8B_TRAIN = Workload(mode="train", batch=1, seq=4096, dtype="bf16", loop="trainer")


def test_context_is_nvml_free_before_minus_cuda_free_at_the_end_minus_reserved():
    m = measurement_from_child(doc("h200-train-synthetic.json"), nvml_free_before=H200_FREE_BEFORE)
    assert m.status == "measured" and m.builder == "transformers" and m.device_name == "NVIDIA H200"
    assert m.context_bytes == 150_100_000_000 - 65_300_000_000 - 84_000_000_000 == 800_000_000
    assert m.max_reserved == 84_000_000_000 and m.max_allocated == 80_000_000_000  # the build is left out
    assert m.peak_bytes == 84_000_000_000 + 800_000_000
    assert m.context_init_bytes == 150_100_000_000 - 149_545_000_000 - 2_097_152
    assert m.other_bytes == 150_754_820_096 - 150_100_000_000
    assert m.term("allocator_reserve") == 4_000_000_000
    assert m.step_s == 1.1 and m.tokens_per_s == pytest.approx(4096 / 1.1)
    assert m.versions == (("peft", "0.21.2"), ("transformers", "5.24.0"))


def test_without_nvml_the_context_is_cudas_total_minus_free_and_says_so():
    m = measurement_from_child(doc("h200-train-synthetic.json"), nvml_free_before=None)
    assert m.context_bytes == 150_754_820_096 - 65_300_000_000 - 84_000_000_000
    assert "no NVML" in (m.context_how or "") and m.other_bytes is None


def test_the_estimate_beside_the_measurement_with_its_error():
    est = est_of("Llama-3.1-8B", LLAMA8B_TRAIN)
    # docs/fit.md's worked example: allocated 80,944,340,992 + context 751,828,992 + the allocator model's
    # reserve (fifth round) 60 MiB + 0.12 x the transient 32,762,773,504 + 0.2 x the loss's second fp32
    # gradient block 4096 x 128,256 x 4 + 0.2 x the optimizer states 32,121,044,992
    reserve = int(60 * 2**20 + 0.12 * 32_762_773_504 + 0.2 * 4096 * 128_256 * 4 + 0.2 * 32_121_044_992)
    assert reserve == 10_838_925_639
    assert est.peak_bytes == 80_944_340_992 + 751_828_992 + reserve == 92_535_095_623
    m = measurement_from_child(doc("h200-train-synthetic.json"), nvml_free_before=H200_FREE_BEFORE)
    c = compare(est, m)
    assert c.error == pytest.approx((92_535_095_623 - 84_800_000_000) / 84_800_000_000, abs=1e-6)
    # +9.1% over this synthetic measurement: within the target (-5%..+10%) with the fifth round's constants
    assert c.within_target is True and c.estimate_fits_device is True
    rows = {r.name: r for r in c.rows}
    assert rows["weights"].estimate == rows["weights"].measured == 8_030_261_248 * 2
    assert rows["optimizer"].error == 0.0
    assert rows["context"].estimate == (529 + 188) * 2**20 and rows["context"].measured == 800_000_000
    assert rows["activations"].estimate == 26_458_734_592 + 4096 * 128_256 * 4  # + the fp32 log-softmax
    phases = {r.name: r for r in c.phases}
    assert phases["backward"].measured == 80_000_000_000
    assert phases["optimizer step"].estimate == 8_030_261_248 * 8  # weights + grads + states, bf16
    # within the target: no ED630 (the out-of-target finding; the other tests of this file raise it)
    assert "ED630" not in [f.code for f in measure_findings(est, m, c)]


def test_mfu_by_hand_over_the_datasheet_and_the_measured_matmul():
    est = est_of("Llama-3.1-8B", LLAMA8B_TRAIN)
    m = measurement_from_child(doc("h200-train-synthetic.json"), nvml_free_before=H200_FREE_BEFORE)
    sheet = SimpleNamespace(bf16_tflops=989.0, source="datasheet", unconfirmed=False, unconfirmed_fields=())
    mfu = compare(est, m, sheet).mfu
    # PaLM: 6N + 12*L*H*Q*T per token, N = 7,504,658,432 matmul parameters, L 32, H*Q 4096, T 4096
    per_token = 6 * 7_504_658_432 + 12 * 32 * 4096 * 4096
    per_token_causal = 6 * 7_504_658_432 + 6 * 32 * 4096 * 4096
    tflops = per_token * 4096 / 1.1 / 1e12
    assert mfu is not None and mfu.dtype == "bf16"
    assert mfu.achieved_tflops == pytest.approx(tflops, rel=1e-6)
    assert mfu.mfu_datasheet == pytest.approx(tflops / 989.0, rel=1e-5)
    assert mfu.mfu_matmul == pytest.approx(tflops / 650.0, rel=1e-5)
    assert mfu.mfu_matmul_causal == pytest.approx(per_token_causal * 4096 / 1.1 / 1e12 / 650.0, rel=1e-5)
    assert "6N + 12*L*H*Q*T" in mfu.convention


def test_an_oom_where_the_estimate_fits_is_an_error_and_where_it_does_not_is_confirmed():
    m = measurement_from_child(doc("oom-synthetic.json"), nvml_free_before=25_000_000_000)
    assert m.status == "oom" and m.oom_phase == "step 2: backward"
    assert m.max_allocated == 23_800_000_000 and m.max_reserved == 24_500_000_000
    assert m.context_bytes == 25_000_000_000 - 100_000_000 - 24_500_000_000
    small = est_of("Llama-3.2-1B", Workload(mode="train", batch=1, seq=512, dtype="bf16"))
    assert small.peak_bytes < 25_386_352_640
    found = measure_findings(small, m, compare(small, m))
    assert [(f.code, f.severity) for f in found] == [("ED631", "error")]
    assert "out of memory during step 2: backward" in found[0].evidence[0]
    big = est_of("Llama-3.1-8B", LLAMA8B_TRAIN)
    assert [f.code for f in measure_findings(big, m, compare(big, m))] == ["ED632"]


def test_a_miss_beyond_the_target_is_ed630_with_the_terms_that_differ_most():
    est = est_of("Llama-3.1-8B", LLAMA8B_TRAIN)
    d = doc("h200-train-synthetic.json")
    d["memory"]["reserved_end"] = 100_000_000_000  # measured peak 100 GB + context: estimate 14% under
    d["memory"]["cuda_free_end"] = 49_300_000_000
    for p in d["phases"][1:]:
        p["peak_reserved"] = 100_000_000_000
    m = measurement_from_child(d, nvml_free_before=H200_FREE_BEFORE)
    c = compare(est, m)
    assert m.peak_bytes == 100_800_000_000 and c.within_target is False
    (f,) = measure_findings(est, m, c)
    assert f.code == "ED630" and "the target is -5% to +10%" in f.evidence[0]
    assert "allocator reserve" in " ".join(f.evidence[1:])  # 20 GB measured against 4.9 GB estimated


def test_unavailable_stopped_and_cpu_findings():
    assert [f.code for f in measure_findings(None, Measurement("unavailable", "peft is not installed"), None)] == [
        "ED634"
    ]
    assert [f.code for f in measure_findings(None, Measurement("stopped", "stopped"), None)] == ["ED638"]
    assert [f.code for f in measure_findings(None, Measurement("failed", "hung"), None)] == ["ED635"]
    other = Measurement("measured", device_kind="cuda", other_bytes=3 * 2**30)
    assert [f.code for f in measure_findings(None, other, None)] == ["ED637"]


def test_a_child_that_did_not_answer_is_a_failed_measurement_naming_the_step():
    run = ChildRun(
        "fit/target/measure.py",
        "/usr/bin/python3",
        stage="step 2: backward",
        error=ProbeError(
            "timeout", "/usr/bin/python3 did not finish the fit measurement in 30 s during step 2: backward"
        ),
    )
    m = measurement_of(run, False, {}, (), None)
    assert m.status == "failed" and "did not finish" in (m.message or "") and "step 2: backward" in m.message
    no_torch = ChildRun(
        "fit/target/measure.py",
        "/usr/bin/python3",
        failure={"kind": "no_torch"},
        error=ProbeError("unavailable", "ModuleNotFoundError: No module named 'torch'"),
    )
    assert "torch is not installed in /usr/bin/python3" in (measurement_of(no_torch, False, {}, (), None).message or "")
    stopped = ChildRun("fit/target/measure.py", "p", error=ProbeError("interrupted", "stopped"), stage="CUDA init")
    assert measurement_of(stopped, False, {}, (), None).status == "stopped"


def test_the_gpu_is_matched_to_nvml_by_uuid():
    run = ChildRun("fit/target/measure.py", "p", result=doc("h200-train-synthetic.json"))
    gpus = (NvmlGpu(0, "GPU-0"), NvmlGpu(1, "GPU-5f1c0a2e-0000-0000-0000-000000000000"))
    assert measurement_of(run, False, {0: 1, 1: H200_FREE_BEFORE}, gpus, None).context_bytes == 800_000_000
    assert (
        measurement_of(run, False, {0: 5, 1: 6}, (NvmlGpu(0, "GPU-a"), NvmlGpu(1, "GPU-b")), None).context_bytes
        == 150_754_820_096 - 65_300_000_000 - 84_000_000_000
    )  # no match: CUDA's total


@pytest.mark.parametrize(
    "change,message",
    [
        ({"schema": "envdoctor.bench.child/1"}, "is not envdoctor.fit.child/1"),
        ({"status": "exploded"}, "unknown status"),
        ({"phases": [{"name": 3}]}, "phases[0]"),
    ],
)
def test_a_foreign_document_is_refused(change, message):
    d = dict(doc("h200-train-synthetic.json"), **change)
    with pytest.raises(MeasurementError, match=message.replace("[", r"\[")):
        measurement_from_child(d)


def test_the_time_bound_grows_with_the_model_and_its_flops():
    small = est_of("Llama-3.2-1B", Workload(mode="train", batch=1, seq=512, dtype="bf16"))
    big = est_of("Llama-3.1-8B", LLAMA8B_TRAIN)
    # 150 s + 10 s per billion params + 5 steps x FLOPs / 2 TFLOP/s
    assert measure_timeout(big) == pytest.approx(150 + 10 * 8.030261248 + 5 * big.flops.per_step / 2e12, abs=0.1)
    assert measure_timeout(small) < measure_timeout(big)
    gen = est_of("gpt2", Workload(mode="infer", batch=1, seq=128, new_tokens=100, dtype="fp32"))
    assert measure_timeout(gen) >= 150 + 102 * 0.25


def test_cpu_takes_tiny_configs_only():
    assert "tiny configs only" in (cpu_problem(est_of("Llama-3.1-8B", LLAMA8B_TRAIN)) or "")
    tiny = spec_from_config(
        {
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": 64,
            "intermediate_size": 160,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "vocab_size": 1000,
        },
        "tiny",
    )
    assert cpu_problem(estimate(tiny, Workload(mode="train", seq=64, dtype="fp32"), load_constants())) is None

"""The memory and layers suites' host side on the H200 recording (tests/fixtures/h200-bench-suites:
the real matmul run plus SYNTHETIC memory and layers points, its README says which figures from
where): L2 labels, the bandwidth verdict, the layers' shares and explanations, the FLOP check,
the findings, rendering, JSON, and a child that dies half-way."""

from __future__ import annotations

import copy
import json
import signal
from pathlib import Path
from typing import Any, Dict

import pytest

from envdoctor.bench.host import build_result, plot_spec, run_bench
from envdoctor.cli.bench import bench, exit_code
from envdoctor.facts.bench import BenchResult, NvmlSample
from envdoctor.facts.serde import from_data, to_data
from envdoctor.render.bench import render_bench_text
from tests.fakes import cli_runner
from tests.test_bench_fakes import H200_MODEL, FakeNvml, fake_python

SUITES = Path(__file__).parent / "fixtures" / "h200-bench-suites"


def recording() -> Dict[str, Any]:
    return json.loads((SUITES / "synthetic-all.json").read_text())


def analysed(doc=None, lookup=lambda name: H200_MODEL) -> BenchResult:
    raw = recording()
    return build_result(doc or raw["result"], samples=[from_data(NvmlSample, s) for s in raw["samples"]],
                        gpus=raw["gpus"], sampling=raw["sampling"], lookup=lookup,
                        python="/opt/torch/.venv/bin/python3")


def memory(r: BenchResult, op: str, n: int):
    return next(p for p in r.memory_points if p.op == op and p.n == n)


def layer(r: BenchResult, name: str, dtype: str, attention: str, mode: str, b: int):
    want = (name, dtype, attention, mode, b)
    return next(p for p in r.layer_points if (p.layer, p.dtype, p.attention, p.mode, p.batch) == want)


def verdict(r: BenchResult, suite: str):
    return next(v for v in r.verdicts if v.suite == suite)


def test_sizes_whose_two_buffers_fit_the_l2_are_marked_and_do_not_judge_the_hbm():
    r = analysed()
    assert r.suites == ("matmul", "memory", "layers") and len(r.memory_points) == 18
    # 4Mi fp32 elements: two 16 MiB buffers fit the 50 MiB L2; 16Mi (two of 64 MiB) do not
    assert memory(r, "mul", 1 << 22).l2_resident is True and memory(r, "mul", 1 << 24).l2_resident is False
    assert memory(r, "copy", 1 << 22).gbs == 4698.3 > 4276.5          # the L2 beats the HBM
    v = verdict(r, "memory")
    assert v.state == "confirmed" and v.code is None
    assert v.line == "HBM delivers 4.3 TB/s, 89% of the 4.8 TB/s datasheet (c.copy_(a), 1 GiB buffers)"
    assert ("sizes whose two buffers fit in the 50 MiB L2 are served from it: up to 4.7 TB/s at 16 MiB buffers, "
            "above the 4.3 TB/s measured past it") in r.notes
    big = memory(r, "copy", 1 << 28)
    assert big.efficiency == pytest.approx(4276.5 / 4800) and big.mem_clock_mhz == 3201 and big.samples >= 2


@pytest.mark.parametrize("scale, state, code, severity, exit", [
    (0.75, "below", "ED606", "warning", 0),             # 3207 GB/s: 67% of 4800
    (0.5, "not_delivering", "ED605", "error", 1),       # 2138 GB/s: 45%
])
def test_bandwidth_below_the_datasheet(scale, state, code, severity, exit):
    doc = recording()["result"]
    for p in doc["memory_points"]:
        p["gbs"] *= scale
    r = analysed(doc)
    v = verdict(r, "memory")
    assert (v.state, v.code) == (state, code)
    assert v.line.endswith("% of the 4.8 TB/s datasheet (c.copy_(a), 1 GiB buffers)")
    assert [(f.code, f.severity) for f in r.findings] == [(code, severity)]
    assert exit_code(r) == exit


def test_gpu_not_in_the_table_gets_the_figure_without_a_verdict():
    r = analysed(lookup=lambda name: None)
    v = verdict(r, "memory")
    assert v.state == "none" and v.line == ("HBM delivers 4.3 TB/s (c.copy_(a), 1 GiB buffers); this GPU's "
                                            "datasheet bandwidth is not in envdoctor's table")
    assert memory(r, "copy", 1 << 28).efficiency is None


def test_layer_points_against_the_matmul_rate_of_the_same_run():
    r = analysed()
    p = layer(r, "gpt2", "bf16", "sdpa", "fwd+bwd", 16)
    assert p.tflops == 376.0 and p.matmul_tflops == 659.4 and p.kernel == "flash"
    assert p.of_matmul == pytest.approx(376.0 / 659.4) and p.efficiency == pytest.approx(376.0 / 989)
    # the products alone at 659.4 TFLOP/s would take 57% of the call; bound: compute
    assert p.matmul_share == pytest.approx(376.0 / 659.4) and p.bound == "compute"
    assert p.sm_clock_mhz == 1755 and p.power_w == 690.0 and "sw_power_cap" in p.reasons
    small = layer(r, "bert", "bf16", "sdpa", "fwd+bwd", 4)
    assert small.bound == "launch" and small.launch_share > 0.8      # 84 kernels x 13.05 us against 0.35 ms


def test_explanation_per_layer_names_the_eager_softmax_and_the_small_batch():
    v = verdict(analysed(), "layers")
    assert v.state == "none"
    assert v.line == ("Layers: up to 522 TFLOP/s (llama bf16 sdpa fwd b=2 s=2048), 79% of the matmul rate "
                      "measured in this run (bf16 659, fp16 634 TFLOP/s)")
    gpt2 = next(w for w in v.why if w.startswith("GPT-2-medium block"))
    assert gpt2.startswith("GPT-2-medium block, bf16 b=16 s=1024: SDPA (flash) fwd+bwd 376 TFLOP/s, 57% of the "
                           "matmul rate")
    assert "eager attention reaches 268 (41%): its softmax over the 16x16x1024x1024 scores moves" in gpt2
    assert "at b=4 s=512 228 TFLOP/s (35%): launch-bound" in gpt2


def test_flop_counter_lines_eager_agrees_and_sdpa_recompute_is_shown_apart():
    v = verdict(analysed(), "layers")
    assert ("FLOP count: FlopCounterMode agrees with the analytic count for the 5 eager layers within 0.00% "
            "(fwd and fwd+bwd)") in v.why
    sdpa = next(w for w in v.why if w.startswith("FLOP count, SDPA"))
    # gpt2 at b=4 s=512: F = 55.84 GFLOP, attention 4.29: (3F + 0.5 x 4.29) / 3F = 1.0128
    assert "gpt2 +1.3%" in sdpa and sdpa.startswith("FLOP count, SDPA (flash) fwd+bwd: FlopCounterMode counts more")


def test_layers_without_the_matmul_suite_say_where_their_rate_comes_from():
    doc = recording()["result"]
    ref = dict(doc["points"][-1], reference=True)               # bf16 n=8192, 658.5 TFLOP/s
    doc.update(suites=["layers"], points=[], reference_points=[ref])
    v = verdict(analysed(doc), "layers")
    assert ("the bf16 matmul rate (658 TFLOP/s) comes from one short product at n=8192 run for the layers: "
            "the matmul suite was not asked for") in v.why
    assert [x.suite for x in analysed(doc).verdicts] == ["layers"]


def test_flop_counter_blind_to_a_kernel_is_said_so():
    doc = recording()["result"]
    for c in doc["flop_checks"]:
        if c["attention"] == "sdpa":
            c["counted_fwd"] = c["analytic_fwd"] - c["attention_fwd"]
            c["counted_fwd_bwd"] = 3 * c["counted_fwd"]
    v = verdict(analysed(doc), "layers")
    line = next(w for w in v.why if w.startswith("FLOP count, SDPA"))
    assert "has no formula for this kernel" in line and line.endswith("(bert, gpt2, t5_encoder, t5_decoder, llama)")


def test_sdpa_falling_back_to_math_is_a_warning():
    doc = recording()["result"]
    for p in doc["layer_points"]:
        if p["attention"] == "sdpa" and p["layer"] == "gpt2":
            p.update(kernel="math", kernel_how="autograd node BmmBackward0")
    r = analysed(doc)
    (f,) = r.findings
    assert (f.code, f.severity) == ("ED610", "warning") and exit_code(r) == 0
    assert f.evidence[0] == "GPU 0 gpt2 bf16 sdpa fwd b=4 s=512: autograd node BmmBackward0"


def test_nan_from_a_layer_is_an_error_and_out_of_memory_only_a_skipped_point():
    doc = recording()["result"]
    nan = next(p for p in doc["layer_points"] if p["layer"] == "t5_decoder" and p["mode"] == "fwd+bwd")
    nan.update(status="wrong", error="the output (or the input's gradient) holds NaN or Inf")
    oom = next(p for p in doc["layer_points"]
               if p["layer"] == "llama" and p["batch"] == 2 and p["attention"] == "eager")
    oom.update(status="skipped", tflops=None, ms=None,
               error="out of memory: OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB")
    r = analysed(doc)
    assert [(f.code, f.severity) for f in r.findings] == [("ED611", "error"), ("ED612", "info")]
    assert verdict(r, "layers").state == "not_delivering" and exit_code(r) == 1
    text = render_bench_text(r)
    assert "llama bf16 eager fwd b=2 s=2048 SKIPPED: out of memory: OutOfMemoryError" in text
    del nan["status"], nan["error"]
    r = analysed(doc)
    assert [f.code for f in r.findings] == ["ED612"] and exit_code(r) == 0   # a skipped point alone: exit 0


def test_text_report_has_the_three_sections():
    text = render_bench_text(analysed())
    assert "Tensor Cores confirmed: fp16 runs 12.4x fp32" in text
    assert ("memory bandwidth (fp32 vectors; GB/s = bytes read + written / time; L2: both buffers fit in the "
            "50 MiB L2)") in text
    row = next(line for line in text.splitlines() if line.startswith("256Mi"))
    assert row.split() == ["256Mi", "1", "GiB", "HBM", "4233", "4276", "4800", "89%", "1980", "3201", "490"]
    assert next(line for line in text.splitlines() if line.startswith("4Mi")).split()[3] == "L2"
    assert "GB/s, log scale" in text and "TF32 matmul off" in text
    row = next(line for line in text.splitlines() if line.startswith("gpt2    bf16   sdpa") and " 16 " in line)
    assert row.split()[3:11] == ["flash", "16", "1024", "424.0", "64%", "376.0", "57%", "38%"]
    assert "time: torch import 3.1 s, CUDA start 0.6 s, measurement 16.2 s (matmul 6.5 s, memory 2.1 s" in text


def test_json_keeps_the_old_keys_adds_the_new_and_reloads():
    r = analysed()
    data = json.loads(json.dumps(to_data(r)))
    assert data["schema"] == "envdoctor.bench/1" and len(data["points"]) == 16
    for key in ("suites", "memory_points", "layer_points", "flop_checks", "reference_points", "findings", "suite_s"):
        assert key in data
    assert data["layer_points"][0]["kernel"] == "eager" and data["devices"][0]["l2_bytes"] == 52428800
    assert from_data(BenchResult, data) == r


def test_a_matmul_only_document_of_before_the_suites_still_loads():
    old = json.loads((Path(__file__).parent / "fixtures" / "h200-bench" / "default.json").read_text())
    r = build_result(json.loads(old["stdout"]), lookup=lambda name: H200_MODEL)
    assert r.suites == ("matmul",) and r.memory_points == () and [v.suite for v in r.verdicts] == ["matmul"]


def test_plot_spec_has_a_panel_per_suite():
    spec = plot_spec(analysed(), "/tmp/x.png")
    assert [p["title"] for p in spec["panels"]] == ["matmul", "memory (fp32 vectors)",
                                                    "transformer layers (bf16, analytic FLOPs)"]
    mem = spec["panels"][1]
    assert mem["hlines"] == {"datasheet": 4800.0} and mem["xmax_shade"] == 52428800 / 8
    bars = spec["panels"][2]
    assert bars["categories"][:2] == ["bert eager b=32 s=512", "bert sdpa b=32 s=512"]
    assert bars["series"]["fwd+bwd"][1] == 371.0 and bars["vline"] == 659.4


def _replay(tmp: Path, raw: Dict[str, Any], events=None, **kw: Any) -> str:
    return fake_python(tmp, events=raw["events"] if events is None else events,
                       result=raw["result"] if events is None else None, stderr="", **kw)


def test_cli_on_the_replay_shows_progress_per_suite_and_exits_0(tmp_path):
    r = cli_runner().invoke(bench, ["--python", _replay(tmp_path, recording()), "--suite", "all"])
    assert r.exit_code == 0, r.output
    assert "bench: [34/114] memory copy n=268435456: 4.3 TB/s" in r.stderr
    assert "bench: [114/114] layers llama fp16 sdpa fwd+bwd b=2 s=2048: 487.9 TFLOP/s" in r.stderr
    assert "HBM delivers 4.3 TB/s" in r.stdout and "Layers: up to 522 TFLOP/s" in r.stdout


def test_child_killed_in_the_layers_keeps_the_finished_points(tmp_path):
    raw = recording()
    cut = next(i for i, e in enumerate(raw["events"]) if e.get("suite") == "layers") + 3
    python = _replay(tmp_path, raw, events=copy.deepcopy(raw["events"][:cut]), signal=signal.SIGKILL)
    r = run_bench(python, suites=("matmul", "memory", "layers"), nvml=FakeNvml(gpus=0), lookup=lambda n: H200_MODEL)
    assert r.error.kind == "crashed" and r.error.message == f"{python} was killed by SIGKILL"
    assert (len(r.points), len(r.memory_points), len(r.layer_points)) == (16, 18, 3)
    assert len(r.flop_checks) == 2 and r.verdicts == () and exit_code(r) == 1
    assert "memory bandwidth" in render_bench_text(r)

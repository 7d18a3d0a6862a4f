"""The pure half of bench: reasons, bound, efficiency, verdict, siblings, regressions, chart.

Expected answers are written by hand from the datasheet numbers in each test, never computed
from the table.
"""

from __future__ import annotations

import types

import pytest

from envdoctor.bench import analysis
from envdoctor.bench.chart import chart, format_rate
from envdoctor.bench.facts import BenchDevice, BenchPoint, BenchResult, NvmlSample

H200 = BenchDevice(
    0,
    name="NVIDIA H200",
    capability="9.0",
    multiprocessors=132,
    launch_us=10.0,
    peaks={"fp32": 67.0, "tf32": 494.5, "fp16": 989.0, "bf16": 989.0},
    bandwidth_gbs=4800.0,
    nvml_index=0,
    max_sm_clock_mhz=1980,
    power_limit_w=700.0,
)


def pt(dtype: str, n: int, tflops: float, **kw) -> BenchPoint:
    ms = 2 * n**3 / (tflops * 1e12) * 1e3
    return BenchPoint(0, dtype, n, tflops=tflops, ms=ms, **kw)


def test_decode_reasons_names_each_bit_and_keeps_unknown_ones():
    assert analysis.decode_reasons(0x44) == ("sw_power_cap", "hw_thermal")
    assert analysis.decode_reasons(0x1) == ("gpu_idle",)
    assert analysis.decode_reasons(0x200) == ("bit_0x200",)
    assert analysis.decode_reasons(0) == () and analysis.decode_reasons(None) == ()


def test_launch_bound_when_a_product_costs_about_one_launch():
    # n=128 fp16: 4.19 MFLOP at 0.3 TFLOP/s = 14.0 us per product, one launch 10 us (< 1.5x)
    b, why = analysis.bound(pt("fp16", 128, 0.3), H200)
    assert b == "launch" and "10.00 us" in why


def test_memory_bound_by_the_roofline_on_a_fast_launcher():
    dev = BenchDevice(0, capability="9.0", launch_us=1.0, peaks={"fp16": 989.0}, bandwidth_gbs=4800.0)
    # n=512 fp16: 1.57 MB / 4800 GB/s = 0.33 us > 268 MFLOP / 989 TFLOP/s = 0.27 us
    b, why = analysis.bound(pt("fp16", 512, 20.0), dev)
    assert b == "memory" and "1.6 MB" in why


def test_compute_bound_and_too_small_to_fill_the_gpu():
    b, why = analysis.bound(pt("fp32", 512, 12.0), H200)  # 22 us per product, 4 us of FLOPs
    assert b == "compute" and "16 output tiles" in why
    b, why = analysis.bound(pt("fp16", 8192, 640.0), H200)
    assert b == "compute" and "tiles" not in why and "1.11 ms of arithmetic" in why


def test_no_bound_without_datasheet_rates():
    dev = BenchDevice(0, capability="9.0", launch_us=10.0)
    assert analysis.bound(pt("fp16", 8192, 640.0), dev) == (None, "no datasheet rates for this device")


def test_efficiency_and_samples_attributed_by_time_window():
    p = pt("fp16", 8192, 640.0, started=100.0, ended=101.0)
    samples = [
        NvmlSample(99.5, 0, 1980, 120.0, 40, ("gpu_idle",)),
        NvmlSample(100.2, 0, 1425, 699.0, 60, ("sw_power_cap",)),
        NvmlSample(100.7, 0, 1395, 701.0, 61, ("sw_power_cap",)),
        NvmlSample(100.5, 1, 1980, 80.0, 30, ()),
    ]  # another GPU
    q = analysis.analyze_point(p, H200, samples)
    assert q.peak_tflops == 989.0 and q.efficiency == pytest.approx(640 / 989)
    assert (q.sm_clock_mhz, q.power_w, q.temperature_c, q.samples) == (1410, 700.0, 60, 2)
    assert q.reasons == ("sw_power_cap",)


def test_tensor_cores_confirmed_against_the_fp32_datasheet_peak():
    v = analysis.verdict(H200, [pt("fp32", 8192, 51.2), pt("fp16", 8192, 633.6)])
    assert v.state == "confirmed"
    assert v.line == "Tensor Cores confirmed: fp16 runs 12.4x fp32"
    assert "1.5x the 67 TFLOP/s" in v.why[0]


def test_fp16_alone_is_compared_with_the_datasheet_fp32():
    v = analysis.verdict(H200, [pt("fp16", 8192, 633.6)])
    assert v.line == "Tensor Cores confirmed: fp16 runs 9.5x the fp32 datasheet peak"


def test_not_delivering_explains_throttling():
    points = [pt("fp32", 8192, 40.0), pt("fp16", 8192, 90.0, reasons=("hw_thermal",), sm_clock_mhz=600)]
    v = analysis.verdict(H200, points)
    assert v.state == "not_delivering" and "fp16 runs 2.2x fp32" in v.line
    assert any("hw_thermal" in w for w in v.why)
    assert any("600 MHz of 1980" in w for w in v.why)


def test_not_delivering_without_throttling_points_at_the_software():
    v = analysis.verdict(H200, [pt("fp32", 8192, 50.0), pt("fp16", 8192, 60.0)])
    assert v.state == "not_delivering" and "may not use the Tensor Cores" in v.why[0]


def test_unknown_gpu_is_judged_by_the_measured_ratio():
    dev = BenchDevice(0, name="NVIDIA Future", capability="12.0", launch_us=5.0)
    assert analysis.verdict(dev, [pt("fp32", 4096, 30.0), pt("fp16", 4096, 75.0)]).state == "confirmed"
    assert analysis.verdict(dev, [pt("fp32", 4096, 30.0), pt("fp16", 4096, 45.0)]).state == "not_delivering"
    assert analysis.verdict(dev, [pt("fp16", 4096, 45.0)]).state == "none"


def test_pascal_has_no_tensor_cores():
    dev = BenchDevice(0, name="Tesla P100", capability="6.0")
    v = analysis.verdict(dev, [pt("fp32", 4096, 9.0), pt("fp16", 4096, 18.0)])
    assert v.state == "absent" and "compute capability 6.0" in v.line


def test_no_verdict_on_the_cpu_unless_nvml_sees_a_gpu():
    cpu = BenchDevice(0, kind="cpu", name="x86_64")
    assert analysis.verdict(cpu, [pt("fp32", 512, 0.3)]).line.startswith("No GPU")
    v = analysis.verdict(cpu, [pt("fp32", 512, 0.3)], torch_version="2.13.0+cpu", nvml_gpus=1)
    assert v.state == "not_delivering" and "torch 2.13.0+cpu is a CPU-only build" in v.line


def test_launch_bound_fp16_gives_no_verdict():
    v = analysis.verdict(H200, [pt("fp32", 128, 0.2, bound="launch"), pt("fp16", 128, 0.3, bound="launch")])
    assert v.state == "none" and "launch-bound" in v.line


def test_failed_fp16_is_not_delivering():
    bad = BenchPoint(0, "fp16", 8192, status="failed", error="OutOfMemoryError: CUDA out of memory.")
    v = analysis.verdict(H200, [pt("fp32", 8192, 50.0), bad])
    assert v.state == "not_delivering" and "out of memory" in v.line


def test_slow_sibling_is_flagged():
    devices = tuple(BenchDevice(i, name="NVIDIA H200", capability="9.0") for i in range(4))
    points = tuple(BenchPoint(i, "fp16", 8192, tflops=t) for i, t in enumerate((640, 635, 560, 645)))
    flagged = analysis.siblings(devices, points)
    assert len(flagged) == 1 and flagged[0].startswith("GPU 2 (NVIDIA H200): fp16 n=8192 runs 560.0")
    assert "12% below" in flagged[0]


def test_compare_bench_lists_slower_and_failed_points_with_context():
    base = BenchResult(
        devices=(H200,),
        points=(
            pt("fp16", 8192, 640.0, sm_clock_mhz=1410, power_w=699.0),
            pt("fp32", 8192, 51.0),
            pt("bf16", 8192, 650.0),
        ),
    )
    now = BenchResult(
        devices=(H200,),
        points=(
            pt("fp16", 8192, 540.0, sm_clock_mhz=1100, power_w=699.0, reasons=("hw_slowdown",)),
            pt("fp32", 8192, 50.0),
            BenchPoint(0, "bf16", 8192, status="wrong", error="relative error 0.5 exceeds 2e-02"),
        ),
    )
    regs = analysis.compare_bench(base, now, tolerance_pct=5)
    assert [(r.dtype, r.current_tflops) for r in regs] == [("fp16", 540.0), ("bf16", None)]
    fp16 = regs[0]
    assert fp16.change_pct == pytest.approx(-15.6)
    assert "SM clock 1410 -> 1100 MHz (max 1980)" in fp16.context
    assert "throttled now, not before: hw_slowdown" in fp16.context
    assert regs[1].context[0].startswith("wrong: relative error")


def test_datasheet_marks_unconfirmed_fields():
    model = types.SimpleNamespace(
        name="GeForce X",
        fp32_tflops=80.0,
        tf32_tflops=None,
        fp16_tflops=160.0,
        bf16_tflops=160.0,
        bandwidth_gbs=1000.0,
        unconfirmed=False,
        unconfirmed_fields=("fp16_tflops",),
        source="x",
    )
    ds = analysis.datasheet(model)
    assert ds["peaks"] == {"fp32": 80.0, "fp16": 160.0, "bf16": 160.0} and ds["peaks_unconfirmed"]
    assert analysis.datasheet(None) == {}


def test_chart_groups_sizes_on_a_log_scale():
    lines = chart(
        [pt("fp32", 128, 0.226), pt("fp16", 128, 0.232), pt("fp32", 8192, 51.2), pt("fp16", 8192, 633.6)], width=40
    )
    assert lines[0].split() == ["TFLOP/s,", "log", "scale", "0.1", "1", "10", "100", "1000"]
    assert lines[1].startswith("n=128   fp32") and lines[1].endswith("0.226")
    assert lines[3].startswith("n=8192  fp32") and lines[4].endswith("633.6")
    assert len(lines[4].split()[1]) > len(lines[3].split()[2])  # fp16 bar longer than fp32
    assert "#" in chart([pt("fp16", 8192, 633.6)], ascii_only=True)[1]
    assert chart([]) == []


def test_format_rate_keeps_three_significant_digits():
    assert [format_rate(x) for x in (633.64, 51.23, 1.234, 0.1053, None)] == ["633.6", "51.2", "1.23", "0.105", "-"]


def test_two_real_h200s_are_siblings_and_a_slow_one_is_flagged():
    """`bench --device all` on two H200s (tests/fixtures/h200x2-bench): 641/644 fp16, 660/673 bf16."""
    import dataclasses
    import json
    from pathlib import Path

    from envdoctor.bench.analysis import siblings
    from envdoctor.bench.facts import BenchResult
    from envdoctor.facts.serde import from_data

    doc = json.loads((Path(__file__).parent / "fixtures/h200x2-bench/bench-fp16-bf16-8192.json").read_text())
    result = from_data(BenchResult, {k: v for k, v in doc.items() if k != "schema"})
    assert len(result.devices) == 2 and siblings(result.devices, result.points) == ()
    slow = tuple(dataclasses.replace(p, tflops=p.tflops * 0.85) if p.device == 1 else p for p in result.points)
    flagged = siblings(result.devices, slow)
    assert len(flagged) == 2 and all(f.startswith("GPU 1 (NVIDIA H200)") for f in flagged)
    assert "below its siblings' median" in flagged[0]


def test_bench_matches_torch_device_to_nvml_by_bus_id_whatever_the_domain_width():
    from envdoctor.bench.host import build_result

    gpus = [{"uuid": "GPU-AA", "pci_bus_id": "00000000:00:06.0"}, {"uuid": "GPU-BB", "pci_bus_id": "00000000:1A:00.0"}]

    def matched(**device):
        doc = {"schema": "envdoctor.bench.child/1", "devices": [{"index": 0, "kind": "cuda", **device}]}
        return build_result(doc, gpus=gpus, lookup=lambda name: None).devices[0].nvml_index

    # the child prints the bus id as torch's "%08X:%02X:%02X.0"; NVML may give four domain digits
    assert matched(pci_bus_id="0000:1a:00.0") == 1
    assert matched(uuid="GPU-AA", pci_bus_id="0000:1a:00.0") == 0  # UUID first
    assert matched(pci_bus_id="garbage") is None


# --- issue 26: repeats disturbed by other load, a layer "above 100%" of the matmul rate ---------------

CPU = BenchDevice(0, kind="cpu", name="CPU", matmul_rates={"fp32": 0.00026})


def test_repeats_disturbed_by_other_load_are_flagged():
    """0.00026 TFLOP/s median beside a fastest repeat of 0.12: other load, said so (ED613)."""
    from envdoctor.bench.rules import bench_findings

    calm = BenchPoint(0, "fp32", 256, tflops=0.11, best_tflops=0.12, ms=0.30, repeats_ms=(0.28, 0.29, 0.30, 0.31, 0.33))
    hit = BenchPoint(
        0, "fp32", 512, tflops=0.00026, best_tflops=0.12, ms=1032.0, repeats_ms=(2.2, 950.0, 1032.0, 1100.0, 1210.0)
    )
    found = bench_findings(BenchResult(devices=(CPU,), points=(calm, hit)))
    (f,) = [f for f in found if f.code == "ED613"]
    assert f.severity == "warning"
    assert f.evidence == (
        "CPU fp32 n=512: repeats from 2.2 to 1210 ms a call (550x apart): another program "
        "used the device meanwhile; its median 0.00026 TFLOP/s is not the device's",
    )
    assert "ED613" not in {g.code for g in bench_findings(BenchResult(devices=(CPU,), points=(calm,)))}


def test_a_layer_above_100_percent_of_the_matmul_rate_gets_a_caveat():
    from envdoctor.bench.facts import LayerPoint
    from envdoctor.bench.layers import layers_verdict

    p = LayerPoint(
        0, "bert", "fp32", "eager", "fwd", 1, 128, status="ok", flops=1e9, ms=5.0, tflops=0.002, of_matmul=7.62
    )
    v = layers_verdict(CPU, [p], [])
    assert "762% of the matmul rate measured in this run" in v.line
    assert (
        "above 100%: the matmul rate of this run is lower than the device reaches (other load while it "
        "ran, or products too small to fill it), not a layer faster than its own products"
    ) in v.line

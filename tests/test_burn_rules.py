"""The burn verdict against the healthy H200's recorded 150 s series, and one fault at a time
written into a copy of it. Each test is named after the fault it must catch (or must not flag)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.burn import analysis
from envdoctor.burn.facts import ChildOutcome, Counters, Interval, MemPass, MemTest, Phase, XidSeen
from envdoctor.burn.rules import judge
from envdoctor.codes import CODES
from envdoctor.table.health import load_health
from tests.test_burn_fakes import h200_gpu, result_of

H = load_health()


def verdict(*gpus, **changes):
    return judge(result_of(*gpus, **changes), H)


def codes(gpu):
    return [f.code for f in gpu.findings]


def with_samples(gpu, change):
    """The GPU with ``change(i, sample)`` applied to every sample, figures recomputed."""
    samples = tuple(change(i, s) for i, s in enumerate(gpu.samples))
    g = replace(gpu, samples=samples)
    return replace(g, summary=analysis.summarize(g))


def reasons(mask):
    return dict(reasons_mask=mask, reasons=H.reason_names(mask), fault=bool(H.fault_reasons(mask)))


def test_healthy_h200_150s_recording_is_ok_with_no_finding():
    r = verdict(h200_gpu())
    g = r.gpus[0]
    assert g.verdict == "OK" and g.findings == () and r.faulty == ()
    assert g.phases[0].sustained_tflops == 659.4 and g.phases[0].burst_tflops == 779.9
    s = g.summary
    assert (s.temperature_max_c, s.power_max_w, s.sm_clock_min_mhz, s.sm_clock_max_mhz) == (60, 697.0, 1410, 1515)
    assert s.reasons == {"sw_power_cap": 74} and s.fault_share == 0.0


def test_every_burn_code_has_a_title_and_an_explanation_in_range():
    burn = [c for c in CODES.values() if c.area == "burn"]
    assert len(burn) == 31 and all(800 <= int(c.code[2:]) <= 839 and c.title and len(c.meaning) > 40 for c in burn)


def test_miscompare_is_faulty():
    g = h200_gpu()
    p = replace(g.phases[0], mismatches=3, bad_products=1, first_bad_product=51234, status="miscompare")
    r = verdict(replace(g, phases=(p,)))
    assert r.gpus[0].verdict == "FAULTY" and codes(r.gpus[0]) == ["ED800"]
    assert "1 of 89640 bf16 products differed" in r.gpus[0].findings[0].title
    assert "the first at product 51234" in r.gpus[0].findings[0].evidence[0]


def test_wrong_first_product_against_float64_is_faulty():
    g = h200_gpu()
    p = replace(g.phases[0], status="wrong", ref_error=0.4, error="the first product is off by 0.4 against float64")
    assert codes(verdict(replace(g, phases=(p,))).gpus[0]) == ["ED801"]


def test_memory_pattern_mismatch_is_faulty():
    m = MemTest(
        "mismatch",
        bytes=120 << 30,
        passes=(MemPass("address", 120 << 30, 0, 0.2), MemPass("random", 120 << 30, 2, 0.3, first_bad=0x1F4000)),
        mismatches=2,
    )
    g = verdict(h200_gpu(memtest=m)).gpus[0]
    assert g.verdict == "FAULTY" and codes(g) == ["ED802"] and "0x1f4000" in g.findings[0].evidence[0]


def test_uncorrected_ecc_during_the_run_is_faulty():
    g = h200_gpu()
    end = replace(g.counters_end, ecc_uncorrected=2)
    g = replace(g, counters_end=end, counter_deltas=analysis.delta(g.counters_start, end))
    assert codes(verdict(g).gpus[0]) == ["ED803"]


def test_uncorrected_ecc_from_before_the_run_is_faulty():
    g = h200_gpu()
    start, end = replace(g.counters_start, ecc_uncorrected=1), replace(g.counters_end, ecc_uncorrected=1)
    g = replace(g, counters_start=start, counters_end=end, counter_deltas=analysis.delta(start, end))
    assert codes(verdict(g).gpus[0]) == ["ED804"]


@pytest.mark.parametrize("field,code", [("remap_pending", "ED805"), ("remap_failure", "ED806")])
def test_pending_remap_or_remap_failure_at_the_end_is_faulty(field, code):
    g = h200_gpu()
    g = replace(g, counters_end=replace(g.counters_end, **{field: 1}))
    assert codes(verdict(g).gpus[0]) == [code] and verdict(g).gpus[0].verdict == "FAULTY"


def test_critical_xid_79_fallen_off_the_bus_is_faulty():
    g = verdict(h200_gpu(xids=(XidSeen(1.0, 79, "critical", "GPU has fallen off the bus", "Reboot"),))).gpus[0]
    assert g.verdict == "FAULTY" and codes(g) == ["ED807"] and "Xid 79" in g.findings[0].title


def test_application_xid_13_is_a_warning_not_faulty():
    g = verdict(h200_gpu(xids=(XidSeen(1.0, 13, "app", "Graphics engine exception"),) * 2)).gpus[0]
    assert g.verdict == "OK" and codes(g) == ["ED808"] and "(2 times)" in g.findings[0].evidence[0]


def slower(gpu, factor):
    p = gpu.phases[0]
    its = tuple(replace(i, tflops=i.tflops * factor, fastest_tflops=i.tflops * factor) for i in p.intervals)
    return replace(gpu, phases=(analysis.phase_figures(replace(p, intervals=its)),))


def test_sustained_below_090_of_the_h200_figure_is_faulty():
    g = verdict(slower(h200_gpu(), 0.85)).gpus[0]  # 659.4 * 0.85 = 560.5 < 594
    assert g.verdict == "FAULTY" and codes(g) == ["ED809"] and "0.85x" in g.findings[0].title


def test_sustained_at_091_of_the_figure_is_ok():
    assert verdict(slower(h200_gpu(), 0.91)).gpus[0].verdict == "OK"  # 600.1 >= 594


def test_slow_gpu_with_a_lower_power_limit_is_only_a_warning():
    g = verdict(slower(h200_gpu(power_limit_w=500.0), 0.8)).gpus[0]
    assert g.verdict == "OK" and codes(g) == ["ED810"] and "power limit is 500 W" in g.findings[0].title


def test_slow_against_an_unconfirmed_figure_is_only_a_warning():
    g = slower(h200_gpu(), 0.8)
    g = replace(g, phases=(replace(g.phases[0], expected_unconfirmed=True),))
    assert codes(verdict(g).gpus[0]) == ["ED810"]


def test_gpu_6_percent_slower_than_its_sibling_is_faulty():
    r = verdict(h200_gpu(0), slower(h200_gpu(1), 0.94))
    assert [g.verdict for g in r.gpus] == ["OK", "FAULTY"] and codes(r.gpus[1]) == ["ED811"]
    assert "6% slower" in r.gpus[1].findings[0].title


def test_gpu_4_percent_slower_than_its_siblings_is_ok():
    r = verdict(h200_gpu(0), h200_gpu(1), slower(h200_gpu(2), 0.96))
    assert [g.verdict for g in r.gpus] == ["OK", "OK", "OK"]


def test_thermal_slowdown_in_8_percent_of_the_samples_is_faulty():
    g = with_samples(h200_gpu(), lambda i, s: replace(s, **reasons(0x24)) if i in range(10, 16) else s)
    j = verdict(g).gpus[0]
    assert j.verdict == "FAULTY" and codes(j) == ["ED812"]  # 6 of 74 samples under load
    assert "sw_thermal in 6 of 74 samples" in j.findings[0].evidence[0]


def test_power_brake_in_many_samples_is_faulty():
    g = with_samples(h200_gpu(), lambda i, s: replace(s, **reasons(0x84)) if i % 3 == 0 else s)
    assert codes(verdict(g).gpus[0]) == ["ED812"]


def test_one_hw_slowdown_sample_during_a_clock_change_is_not_faulty():
    g = with_samples(h200_gpu(), lambda i, s: replace(s, **reasons(0x0C)) if i == 30 else s)
    assert verdict(g).gpus[0].verdict == "OK"


def test_temperature_at_the_slowdown_threshold_is_faulty():
    g = with_samples(h200_gpu(), lambda i, s: replace(s, temperature_c=89) if i == 40 else s)
    j = verdict(g).gpus[0]
    assert j.verdict == "FAULTY" and codes(j) == ["ED813"]


def test_temperature_within_5_c_of_slowdown_is_a_warning():
    g = with_samples(h200_gpu(), lambda i, s: replace(s, temperature_c=85) if i == 40 else s)
    j = verdict(g).gpus[0]
    assert j.verdict == "OK" and codes(j) == ["ED815"]


def test_memory_temperature_at_its_maximum_is_faulty():
    g = with_samples(h200_gpu(mem_max_c=95), lambda i, s: replace(s, memory_temperature_c=95 if i == 50 else 70))
    assert codes(verdict(g).gpus[0]) == ["ED814"]


def test_hung_child_is_faulty_with_the_stage():
    g = verdict(
        h200_gpu(child=ChildOutcome("hung", "python3 printed nothing for 60 s and was stopped", "load bf16"))
    ).gpus[0]
    assert g.verdict == "FAULTY" and codes(g) == ["ED816"] and g.findings[0].title.endswith("during load bf16")


def test_child_killed_by_a_signal_is_faulty():
    g = verdict(h200_gpu(child=ChildOutcome("died", "python3 was killed by SIGKILL", "memory test"))).gpus[0]
    assert codes(g) == ["ED817"] and "SIGKILL" in g.findings[0].evidence[0]


def test_cuda_error_during_the_load_is_faulty_but_out_of_memory_is_a_warning():
    g = h200_gpu()
    failed = replace(g.phases[0], status="failed", error="RuntimeError: CUDA error: an illegal memory access")
    assert codes(verdict(replace(g, phases=(failed,))).gpus[0]) == ["ED818"]
    oom = replace(g.phases[0], status="failed", error="OutOfMemoryError: CUDA out of memory. Tried to allocate")
    assert verdict(replace(g, phases=(oom,))).gpus[0].verdict == "OK"
    assert codes(verdict(replace(g, phases=(oom,))).gpus[0]) == ["ED819"]


@pytest.mark.parametrize(
    "delta,code",
    [
        (Counters(ecc_corrected=4), "ED820"),
        (Counters(pcie_replay=12), "ED821"),
        (Counters(nvlink_recovery=1, nvlink_active=18), "ED822"),
        (Counters(nvlink_crc_flit=101, nvlink_active=18), "ED822"),
    ],
)
def test_corrected_ecc_pcie_replays_and_nvlink_errors_are_warnings(delta, code):
    g = verdict(h200_gpu(counter_deltas=delta)).gpus[0]
    assert g.verdict == "OK" and codes(g) == [code]


def test_nvlink_crc_errors_within_dcgms_limit_are_not_reported():
    assert verdict(h200_gpu(counter_deltas=Counters(nvlink_crc_data=100, nvlink_active=18))).gpus[0].findings == ()


def test_thermal_violation_time_is_a_warning():
    g = verdict(h200_gpu(counter_deltas=Counters(thermal_violation_ns=5 * 10**9))).gpus[0]
    assert codes(g) == ["ED823"] and g.verdict == "OK"


def test_a_3_s_load_gets_no_throughput_verdict():
    g = h200_gpu()
    p = g.phases[0]
    short = tuple(i for i in p.intervals if i.end <= p.intervals[0].start + 2.5)
    g = replace(g, phases=(analysis.phase_figures(replace(p, intervals=short)),))
    j = verdict(slower(g, 0.5)).gpus[0]
    assert codes(j) == ["ED827"] and j.verdict == "OK"


def test_cpu_run_gets_no_gpu_verdict_but_a_miscompare_is_still_faulty():
    cpu = replace(
        h200_gpu(),
        kind="cpu",
        name="x86_64",
        samples=(),
        summary=None,
        nvml_index=None,
        phases=(
            Phase(
                "fp32", 256, compare="tolerance", products=900, intervals=(Interval("fp32", 0.0, 0.5, 900, 0.4, 0.15),)
            ),
        ),
    )
    r = verdict(cpu, cpu_run=True)
    assert r.gpus[0].verdict == "NONE" and [f.code for f in r.findings] == ["ED828"]
    bad = replace(cpu, phases=(replace(cpu.phases[0], mismatches=1, bad_products=1),))
    assert verdict(bad, cpu_run=True).gpus[0].verdict == "FAULTY"


def test_stopped_run_says_so():
    r = verdict(h200_gpu(child=ChildOutcome("stopped")), interrupted=True)
    assert r.gpus[0].verdict == "OK" and [f.code for f in r.findings] == ["ED826"]


def test_suppress_hides_a_finding_and_the_verdict_follows_and_a_crashing_rule_is_one_ed900(monkeypatch):
    """burn had no --suppress, and one raising rule ended the whole burn with exit 3."""
    from envdoctor.burn import rules
    from envdoctor.burn.rules import suppressed

    g = h200_gpu()
    p = replace(g.phases[0], mismatches=3, bad_products=1, first_bad_product=51234, status="miscompare")
    r = verdict(replace(g, phases=(p,)))
    hidden = suppressed(r, ["ed800"])
    assert hidden.gpus[0].verdict == "OK" and codes(hidden.gpus[0]) == [] and not hidden.faulty

    def broken(gpu, result, health):
        raise ZeroDivisionError("no samples")

    monkeypatch.setattr(rules, "RULES", (broken,) + rules.RULES)
    g = verdict(h200_gpu()).gpus[0]
    assert codes(g) == ["ED900"] and "broken: ZeroDivisionError: no samples" in g.findings[0].title

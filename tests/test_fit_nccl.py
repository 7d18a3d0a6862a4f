"""NCCL's own memory in multi-GPU estimates, and the tight "fits" (docs/fit.md, "NCCL's own memory")."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.fit.analysis import compare
from envdoctor.fit.constants import MIB, load_constants
from envdoctor.fit.estimate import estimate
from envdoctor.fit.facts import measurement_from_child
from envdoctor.fit.models import bundled_models
from envdoctor.fit.page import fit_page
from envdoctor.fit.verdict import TIGHT_SHARE, Gpu, fit_report, tight_note
from envdoctor.fit.workload import Workload

C = load_constants()
#: the same constants with NCCL's memory zeroed: what the estimate was before the term
NO_NCCL = replace(
    C,
    nccl_comm_bytes=0,
    nccl_comm_low_bytes=0,
    nccl_comm_high_bytes=0,
    nccl_tp_high_bytes=0,
    nccl_nvls_bytes=0,
    nccl_p2p_peer_bytes=0,
)
H200 = int(139.8 * 2**30)


def spec(name: str):
    return bundled_models().find(name).spec


def test_the_bundled_constants_are_the_documented_figures():
    assert (C.nccl_comm_bytes, C.nccl_comm_low_bytes, C.nccl_comm_high_bytes) == (656 * MIB, 225 * MIB, 1024 * MIB)
    assert (C.nccl_tp_high_bytes, C.nccl_nvls_bytes, C.nccl_p2p_peer_bytes) == (1833 * MIB, 1126 * MIB, 320 * MIB)


def test_tensor_parallel_70b_on_two_h200s_carries_the_nccl_term_with_its_upper_edge_and_source():
    s = spec("Llama-3.1-70B")
    w = Workload(mode="infer", seq=4096, new_tokens=256, tp=2, gpus=2)
    e, before = estimate(s, w, C), estimate(s, w, NO_NCCL)
    t = e.term("nccl")
    inputs = dict(t.inputs)
    assert t.bytes == C.nccl_comm_bytes and inputs["communicators"] == 1 and inputs["nvls_bytes"] == 0  # 2 GPUs
    assert "vllm-project/vllm/pull/10511" in inputs["source"] and "NVIDIA/nccl/issues/964" in inputs["source"]
    assert e.peak_bytes - before.peak_bytes == C.nccl_comm_bytes
    assert e.peak_high_bytes - before.peak_high_bytes == C.nccl_tp_high_bytes  # vLLM's 1.79 GiB
    assert e.peak_low_bytes - before.peak_low_bytes == C.nccl_comm_low_bytes
    # persistent, in every phase, and outside torch's allocator: the reserve does not change
    assert all(any(x.name == "nccl" for x in p.terms) for p in e.phases)
    assert e.term("allocator_reserve") == before.term("allocator_reserve")
    assert not any("not counted" in n for n in e.notes)
    r = fit_report(s, w, [Gpu("NVIDIA H200", H200, "table", "9.0")], (), C)
    assert r.verdicts[0].fits and r.verdicts[0].spare_bytes == H200 - e.peak_high_bytes
    # at 8 GPUs NVLS's buffers join the upper edge
    eight = estimate(s, w.with_(tp=8, gpus=8), C)
    assert dict(eight.term("nccl").inputs)["nvls_bytes"] == C.nccl_nvls_bytes
    base8 = estimate(s, w.with_(tp=8, gpus=8), NO_NCCL)
    assert eight.peak_high_bytes - base8.peak_high_bytes == C.nccl_tp_high_bytes + C.nccl_nvls_bytes


def test_a_pipeline_counts_its_send_recv_peer():
    s = spec("Llama-3.1-8B")
    w = Workload(mode="train", seq=2048, pp=2, gpus=2)
    e, before = estimate(s, w, C), estimate(s, w, NO_NCCL)
    inputs = dict(e.term("nccl").inputs)
    assert inputs["communicators"] == 1 and inputs["p2p_peers"] == 1
    assert e.term("nccl").bytes == C.nccl_comm_bytes + C.nccl_p2p_peer_bytes
    assert e.peak_high_bytes - before.peak_high_bytes == C.nccl_comm_high_bytes + C.nccl_p2p_peer_bytes
    four = estimate(s, w.with_(pp=4, gpus=4), C)
    assert four.peak_high_bytes - estimate(s, w.with_(pp=4, gpus=4), NO_NCCL).peak_high_bytes == (
        C.nccl_comm_high_bytes + C.nccl_p2p_peer_bytes + C.nccl_nvls_bytes
    )


def test_ddp_and_zero_hold_one_communicator():
    s = spec("Qwen2.5-0.5B")
    for w in (
        Workload(mode="train", seq=1024, ddp=True, gpus=2),
        Workload(mode="train", seq=1024, zero=3, gpus=2),
        Workload(mode="train", seq=1024, zero=1, gpus=2),
    ):
        e, before = estimate(s, w, C), estimate(s, w, NO_NCCL)
        assert dict(e.term("nccl").inputs)["communicators"] == 1, w
        assert e.peak_bytes - before.peak_bytes == C.nccl_comm_bytes
        assert e.peak_high_bytes - before.peak_high_bytes == C.nccl_comm_high_bytes
    eight = Workload(mode="train", seq=1024, zero=3, gpus=8)
    assert estimate(s, eight, C).peak_high_bytes - estimate(s, eight, NO_NCCL).peak_high_bytes == (
        C.nccl_comm_high_bytes + C.nccl_nvls_bytes
    )


def test_no_nccl_term_for_device_map_or_one_gpu():
    s = spec("Llama-3.1-8B")
    for w in (
        Workload(mode="infer", seq=2048, device_map=True, gpus=2),
        Workload(mode="infer", seq=2048),
        Workload(mode="train", seq=2048),
    ):
        e = estimate(s, w, C)
        assert all(t.name != "nccl" for p in e.phases for t in p.terms), w
        before = estimate(s, w, NO_NCCL)
        assert (e.peak_bytes, e.peak_low_bytes, e.peak_high_bytes) == (
            before.peak_bytes,
            before.peak_low_bytes,
            before.peak_high_bytes,
        )


def test_a_gpu_without_multicast_is_judged_without_nvls():
    s = spec("Llama-3.1-8B")
    w = Workload(mode="train", seq=2048, zero=3, gpus=8)
    mem = 40 * 2**30
    hopper, ada = Gpu("hopper", mem, "given", "9.0"), Gpu("ada", mem, "given", "8.9")
    r = fit_report(s, w, [hopper, ada], (), C)
    assert r.verdicts[1].spare_bytes - r.verdicts[0].spare_bytes == C.nccl_nvls_bytes
    assert "no NVLS" in (r.verdicts[1].note or "") and r.verdicts[0].note is None


def test_tight_at_four_percent_spare_and_not_at_six():
    assert TIGHT_SHARE == 0.05
    usable = 100 * 2**30
    four = tight_note(True, int(0.04 * usable), usable)
    assert four and "4.0%" in four and "held-out" in four and "fragmentation" in four
    assert tight_note(True, int(0.06 * usable), usable) is None
    assert tight_note(False, -(2**30), usable) is None
    s = spec("Qwen2.5-0.5B")
    w = Workload(mode="infer", seq=2048)
    need = estimate(s, w, C).peak_high_bytes
    at4, at6 = Gpu("4%", int(need / 0.96), "given"), Gpu("6%", int(need / 0.94), "given")
    r = fit_report(s, w, [at4, at6], (), C)
    assert r.verdicts[0].fits and r.verdicts[0].tight and r.verdicts[1].fits and r.verdicts[1].tight is None


def test_a_tight_fit_is_said_in_text_json_and_html_and_exits_0():
    s = spec("Qwen2.5-0.5B")
    need = estimate(s, Workload(mode="infer", seq=2048, new_tokens=256), C).peak_high_bytes
    args = ["fit", "Qwen2.5-0.5B", "--seq", "2048", "--new-tokens", "256", "--memory", f"{int(need / 0.97)}B"]
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert ", tight" in text.output and "tight: 3.0% of the usable memory spare" in text.output
    js = CliRunner().invoke(cli, [*args, "--json"])
    assert js.exit_code == 0
    doc = json.loads(js.output)
    assert doc["gpus"][0]["fits"] and doc["gpus"][0]["tight"].startswith("tight: 3.0%")
    assert "yes, tight" in fit_page(doc)
    roomy = json.loads(CliRunner().invoke(cli, [*args[:-1], f"{int(need / 0.9)}B", "--json"]).output)
    assert roomy["gpus"][0]["tight"] is None and "yes, tight" not in fit_page(roomy)


def test_the_measure_comparison_leaves_out_what_a_one_gpu_child_cannot_see():
    fixture = Path(__file__).parent / "fixtures" / "fit-measure" / "h200-train-synthetic.json"
    m = measurement_from_child(json.loads(fixture.read_text()), nvml_free_before=150_100_000_000)
    s = spec("Llama-3.1-8B")
    w = Workload(mode="train", batch=1, seq=4096, dtype="bf16", loop="trainer")
    one, ddp = compare(estimate(s, w, C), m), compare(estimate(s, w.with_(ddp=True, gpus=2), NO_NCCL), m)
    with_nccl = compare(estimate(s, w.with_(ddp=True, gpus=2), C), m)
    assert with_nccl.peak.estimate == ddp.peak.estimate != one.peak.estimate  # DDP's buckets, not NCCL's
    assert {r.name: r.estimate for r in with_nccl.rows}["allocated"] == {r.name: r.estimate for r in ddp.rows}[
        "allocated"
    ]

"""envdoctor profile's pure parts: the breakdown of a trace, the findings, the step times.

The GPU traces here are built event by event in kineto's format (the keys torch.profiler writes:
``cat`` kernel/gpu_memcpy/cuda_runtime/cpu_op/user_annotation, ``args["External id"]``,
``args.device``), with hand-counted answers; the CPU trace comes from a real CPU torch run in
tests/test_profile_cli.py.
"""

from __future__ import annotations

import pytest

from envdoctor.profile.analysis import breakdown, comm_kind, kernel_category, runs_without_tensor_cores, union
from envdoctor.profile.facts import StepTimes, SyncSite
from envdoctor.profile.host import step_times, sync_sites
from envdoctor.profile.rules import rules


def x(cat, name, ts, dur, **args):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0,
        "tid": args.pop("tid", 1),
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def trace(*events):
    return {"traceEvents": list(events)}


def two_steps(kernels, extra=()):
    """Two 1000 us steps on the CPU; the GPU events given (ts in us)."""
    return trace(
        x("user_annotation", "ProfilerStep#7", 0, 1000),
        x("user_annotation", "ProfilerStep#8", 1000, 1000),
        *kernels,
        *extra,
    )


def test_a_gpu_window_splits_into_busy_and_idle_and_categories_by_the_launching_op():
    ops = [
        x("cpu_op", "aten::mm", 10, 5, **{"External id": 1, "Input type": ["c10::BFloat16", "c10::BFloat16"]}),
        x("cpu_op", "aten::add", 20, 5, **{"External id": 2, "Input type": ["float", "float"]}),
    ]
    kernels = [
        x("kernel", "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", 100, 600, device=0, **{"External id": 1}),
        x("kernel", "void at::native::vectorized_elementwise_kernel<4>", 800, 200, device=0, **{"External id": 2}),
        x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 1500, 100, device=0),
        x("kernel", "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", 1700, 400, device=0, **{"External id": 1}),
    ]
    b = breakdown(two_steps(kernels, ops), tf32=False, cc="9.0")
    # the GPU's window: 100 .. 2100 us = 2000 us for 2 steps; busy 600 + 200 + 100 + 400 = 1300 us
    assert b.device == "cuda"
    assert b.step_s == pytest.approx(1000e-6)
    assert b.busy_s == pytest.approx(650e-6) and b.idle_s == pytest.approx(350e-6)
    shares = {s.name: s.seconds for s in b.compute}
    assert shares == {"matmul": pytest.approx(500e-6), "elementwise/norm": pytest.approx(100e-6)}
    assert {s.name: s.seconds for s in b.copies} == {"H2D": pytest.approx(50e-6)}
    assert b.matmul_fp32_s == 0 and b.matmul_dtype == "bf16"
    assert b.kernels_per_step == 1.5 and b.median_kernel_us == 400  # of 200, 400, 600 us (copies are not kernels)


def test_fp32_matmuls_without_tf32_are_named_and_earn_ed942():
    ops = [x("cpu_op", "aten::mm", 10, 5, **{"External id": 1, "Input type": ["float", "float"]})]
    kernels = [
        x(
            "kernel",
            "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8",
            100,
            1800,
            device=0,
            **{"External id": 1},
        )
    ]
    b = breakdown(two_steps(kernels, ops), tf32=False, cc="9.0")
    assert b.matmul_fp32_s == pytest.approx(900e-6) and b.matmul_dtype == "fp32"
    assert [f.code for f in rules(b, cc="9.0", tf32=False)] == ["ED942"]
    # with TF32 on, the same fp32 inputs run on the Tensor Cores
    assert breakdown(two_steps(kernels, ops), tf32=True, cc="9.0").matmul_fp32_s == 0


def test_nccl_kernels_are_communication_and_their_overlap_with_compute_is_measured():
    kernels = [
        x(
            "kernel",
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            100,
            1000,
            device=0,
            tid=20,
        ),
        x("kernel", "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", 100, 200, device=0),
        x("kernel", "ncclDevKernel_AllGather_RING_LL", 1300, 800, device=0, tid=20),
    ]
    b = breakdown(two_steps(kernels))
    # window 100..2100: comm 1800 us of it, 200 us of that under the gemm
    assert b.comm_s == pytest.approx(900e-6)
    assert b.comm_overlap == pytest.approx(200 / 1800)
    assert {s.name for s in b.comms} == {"AllReduce", "AllGather"}
    assert "ED944" in [f.code for f in rules(b)]


def test_many_short_kernels_with_the_gpu_idle_are_launch_bound():
    kernels = [
        x("kernel", "void at::native::vectorized_elementwise_kernel<4>", 100 + 20 * i, 5, device=0) for i in range(100)
    ]
    runtime = [x("cuda_runtime", "cudaLaunchKernel", 90 + 20 * i, 4) for i in range(100)]
    b = breakdown(two_steps(kernels, runtime))
    assert b.launches_per_step == 50 and b.median_kernel_us == 5
    assert [f.code for f in rules(b)] == ["ED945"]


def test_an_input_bound_step_and_a_sync_at_the_users_line():
    kernels = [
        x("kernel", "nvjet_tst_128x256", 900, 100, device=0),
        x("kernel", "nvjet_tst_128x256", 1900, 100, device=0),
    ]
    loader = [
        x("user_annotation", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 800),
        x("user_annotation", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 1000, 800),
    ]
    b = breakdown(two_steps(kernels, loader))
    assert b.dataloader_s == pytest.approx(800e-6 / 2 * 2)  # 1600 us over 2 steps
    syncs = (SyncSite(".item()", "train.py:41", "train_step", 1.0, 100e-6),)
    codes = [f.code for f in rules(b, syncs)]
    assert codes[:2] == ["ED940", "ED941"]
    ed941 = next(f for f in rules(b, syncs) if f.code == "ED941")
    assert ed941.severity == "warning" and "train.py:41" in ed941.title


def test_a_trace_without_profiled_steps_has_no_breakdown():
    assert breakdown(trace(x("cpu_op", "aten::mm", 0, 10))) is None
    assert breakdown({"traceEvents": "garbage"}) is None
    assert breakdown({}) is None


def test_hostile_events_are_skipped_not_raised():
    events = [
        {"ph": "X", "name": 5, "ts": 1, "dur": 1},
        {"ph": "X", "name": "a", "ts": "1", "dur": 2},
        {"ph": "X", "name": "b", "ts": True, "dur": 2},
        {"ph": "X", "name": "c", "ts": 1, "dur": -5},
        7,
        None,
        x("user_annotation", "ProfilerStep#1", 0, 100),
    ]
    b = breakdown(trace(*events))
    assert b is not None and b.device == "cpu" and b.step_s == pytest.approx(100e-6)


def test_the_small_helpers():
    assert union([]) == 0 and union([(0, 1), (0, 1)]) == 1
    assert comm_kind("gloo:all_reduce") == "AllReduce" and comm_kind("ncclKernel_ReduceScatter_RING") == "ReduceScatter"
    assert kernel_category("flash_fwd_kernel<Flash_fwd_kernel_traits<128>>", None, ()) == "attention"
    assert kernel_category("whatever", "aten::_scaled_dot_product_flash_attention", ()) == "attention"
    assert runs_without_tensor_cores(["float"], "volta_sgemm_128x64_nn", True, "7.0")  # TF32 needs sm80
    assert not runs_without_tensor_cores(["c10::Half"], "volta_h884gemm", False, "7.0")


def test_step_times_overhead_and_sync_sites():
    t = step_times({"profiled_s": [0.2, 0.2], "baseline_s": [0.1]})
    assert t == StepTimes(0.2, 0.0, 0.1, pytest.approx(1.0))
    assert step_times({"profiled_s": []}) is None
    assert step_times({"profiled_s": ["x", -1]}) is None
    sites = sync_sites(
        {
            "syncs": [
                {"op": ".item()", "where": "t.py:3", "function": "f", "count": 10, "seconds": 0.5},
                {"count": "x"},
                5,
            ]
        },
        5,
    )
    assert sites == (SyncSite(".item()", "t.py:3", "f", 2.0, 0.1),)
    b = breakdown(two_steps([x("kernel", "k", 100, 1000, device=0)]))
    assert "ED948" in [f.code for f in rules(b, times=t)]

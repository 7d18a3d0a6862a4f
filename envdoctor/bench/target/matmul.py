"""Time ``a @ b`` in the target interpreter: the matmul suite, a part of ``bench.py`` (envdoctor.child).

Standard library and torch only, Python 3.8+, never imported by envdoctor itself. ``bench.py``
runs :func:`bench_device` per device; it emits one ``point`` event per point (``"suite":
"matmul"``), for the host's progress display and so that a child killed half-way still leaves the
points it finished::

    {"envdoctor_child": 2, "kind": "point", "suite": "matmul", "point": {"device": 0, "dtype": "fp16", ...}}

Method, per point: fresh random inputs; one product into a NaN-filled output, checked against
float64 on a slice; a short calibration that also warms up; then back-to-back repeats of K
products ``a @ b`` each, timed with CUDA events and the queue kept full (no synchronisation
between repeats: ``_torch_common.time_repeats``); then one more checked product while the GPU is
hot. ``tflops`` is from the median repeat after the first quarter of them (the warm-up);
``burst_tflops`` from the first repeat.
"""

import math
import time

if False:  # for readers and linters: these come from _prelude.py and _torch_common.py, sent first
    from envdoctor.child._prelude import emit, first_line
    from envdoctor.child._torch_common import (
        MIN_REPEATS,
        Clock,
        Tf32,
        rel_error,
        settled_median,
        time_batch,
        time_repeats,
        torch_dtype,
    )

ITEMSIZE = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
# ||c - ref|| / ||ref|| allowed per dtype, ref computed in float64 from the same (rounded) inputs.
# fp32 is strict enough that TF32 rounding (about 3e-4) fails it.
ERROR_BOUND = {"fp32": 1e-4, "tf32": 4e-3, "fp16": 5e-3, "bf16": 2e-2}
MAX_ONE_PRODUCT_S = 3.0  # a size whose one product would take longer is skipped


def weight(n):
    """Share of the budget for size n: 1 for 128, 3 for 512, 5 for 2048, 7 for 8192."""
    return max(1.0, math.log2(max(n, 2)) - 6.0)


def checked_product(torch, clock, a, b):
    """One product into a NaN-filled output (an unwritten element shows), checked in float64."""
    n = a.shape[0]
    c = torch.full((n, n), float("nan"), device=a.device, dtype=a.dtype)
    torch.matmul(a, b, out=c)
    clock.sync()
    return rel_error(torch, a, b, c)


def launch_cost_us(torch, device, clock):
    """Time per product of a 16 x 16 fp32 ``a @ b`` with the queue full: the launch floor."""
    a = torch.randn(16, 16, device=device)
    b = torch.randn(16, 16, device=device)

    def fn():
        return a @ b

    time_batch(clock, fn, 20)
    runs = sorted(time_batch(clock, fn, 200) for _ in range(5))
    return runs[len(runs) // 2] * 1000.0


def measure(torch, device, clock, tf32, dtype, n, budget_s):
    """One point: see the module docstring for the method."""
    point = {
        "device": device.index or 0,
        "dtype": dtype,
        "n": n,
        "status": "ok",
        "error_bound": ERROR_BOUND[dtype],
        "started": time.time(),
    }
    tdtype = torch_dtype(torch, dtype)
    try:
        if dtype in ("fp32", "tf32") and clock.cuda:
            tf32.set(dtype == "tf32")
            point["tf32"] = tf32.get()
        a = torch.randn(n, n, device=device, dtype=tdtype)
        b = torch.randn(n, n, device=device, dtype=tdtype)

        def fn():
            return a @ b  # as people write it; the output comes from the caching allocator

        err = checked_product(torch, clock, a, b)
        times, launches, warm = time_repeats(clock, fn, budget_s)
        if err is not None:  # again at once, while the GPU is hot
            again = checked_product(torch, clock, a, b)
            err = None if again is None else max(err, again)
        med = settled_median(times)
        flops = 2.0 * n**3
        point.update(
            ms=med,
            tflops=flops / (med / 1000.0) / 1e12,
            burst_tflops=flops / (times[0] / 1000.0) / 1e12,
            best_tflops=flops / (min(times) / 1000.0) / 1e12,
            repeats_ms=[round(t, 6) for t in times],
            launches=launches,
            warmup=warm,
            rel_error=err,
        )
        if err is None:
            point.update(status="wrong", error="the result holds NaN or Inf")
        elif err > ERROR_BOUND[dtype]:
            point.update(
                status="wrong", error="relative error %.2g exceeds %.0e against float64" % (err, ERROR_BOUND[dtype])
            )
    except Exception as exc:  # CUDA out of memory, an illegal address, a missing kernel
        point.update(status="failed", error=first_line(exc))
        if clock.cuda:
            try:
                torch.cuda.empty_cache()
            except Exception:
                pass
    point["ended"] = time.time()
    return point


def plan_device(info, dtypes, cuda):
    """Which dtypes this device measures, and why the others are skipped."""
    skipped, todo = {}, []
    cc = tuple(int(x) for x in info["capability"].split(".")) if info.get("capability") else None
    for d in dtypes:
        if not cuda and d != "fp32":
            skipped[d] = "the CPU run measures fp32 only"
        elif cuda and d in ("bf16", "tf32") and cc is not None and cc < (8, 0):
            skipped[d] = "%s needs compute capability 8.0 or later; this GPU is %s" % (d, info["capability"])
        else:
            todo.append(d)
    return todo, skipped


def bench_device(torch, device, info, dtypes, sizes, budget, out_points):
    """The matmul suite on one device (``info["launch_us"]`` is measured by bench.py first)."""
    clock = Clock(torch, device)
    tf32 = Tf32(torch)
    todo, skipped = plan_device(info, dtypes, clock.cuda)
    info["skipped"] = skipped
    total_w = sum(weight(n) for n in sizes) * max(1, len(todo))
    rate = {}  # dtype -> last measured TFLOP/s, to skip sizes far too slow for the budget
    for n in sorted(sizes):
        for d in todo:
            share = budget * weight(n) / total_w
            if d in rate and rate[d]:
                one = 2.0 * n**3 / (rate[d] * 1e12)
                # a point takes the check, the warm-up and MIN_REPEATS products at the least
                if one > MAX_ONE_PRODUCT_S or one * (MIN_REPEATS + 2) > 2 * share:
                    skipped["%s n=%d" % (d, n)] = "one product would take about %.2g s on this device" % one
                    continue
            point = measure(torch, device, clock, tf32, d, n, share)
            if point.get("tflops"):
                rate[d] = point["tflops"]
            out_points.append(point)
            emit("point", suite="matmul", point=point)

"""Memory bandwidth in the target interpreter: the memory suite, a part of ``bench.py`` (envdoctor.child).

Standard library and torch only, Python 3.8+, never imported by envdoctor itself. Two operations
per size n, on fp32 vectors (one buffer of 4n bytes read, one of 4n bytes written):

    "mul"   torch.mul(a, 1.2, out=c)   mli's ``a * 1.2``, into a preallocated output (no allocator in the loop)
    "copy"  c.copy_(a)                 a device-to-device copy

GB/s = (bytes read + bytes written) / time = 8n / t. Timed as every suite is
(``_torch_common.time_repeats``). The output starts NaN-filled and is checked after the first
call on three slices (start, middle, end), so an operation that wrote nothing cannot pass.
A size whose two buffers do not fit in the free memory, or that runs out of memory, is a skipped
point with the reason. One ``point`` event per point (``"suite": "memory"``).
"""

import time

if False:  # for readers and linters: these come from _prelude.py and _torch_common.py, sent first
    from envdoctor.child._prelude import emit
    from envdoctor.child._torch_common import Clock, free_bytes, point_failure, release, settled_median, time_repeats

MEMORY_OPS = ("mul", "copy")
ITEM_BYTES = 4  # fp32
MEMORY_SIZES = [1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 25, 1 << 26, 1 << 27, 1 << 28]
CPU_MAX_ELEMENTS = 1 << 26  # 256 MiB a buffer: past every CPU cache, and kind to small machines
HEADROOM = 512 << 20  # bytes left free on the GPU beside the two buffers
CHECK_ELEMENTS = 4096  # elements compared at each of three places


def memory_plan(sizes, cuda, free):
    """(sizes to measure, {"n=...": why not}) for one device; ``free`` is its free memory in bytes."""
    todo, skipped = [], {}
    for n in sorted(set(int(x) for x in sizes)):
        need = 2 * n * ITEM_BYTES
        if not cuda and n > CPU_MAX_ELEMENTS:
            skipped["n=%d" % n] = "the CPU run stops at %d elements (256 MiB a buffer)" % CPU_MAX_ELEMENTS
        elif cuda and free is not None and need + HEADROOM > free:
            skipped["n=%d" % n] = "two buffers of %.2f GiB do not fit in the %.2f GiB free" % (
                need / 2.0 / 2**30,
                free / 2.0**30,
            )
        else:
            todo.append(n)
    return todo, skipped


def _slices(n):
    k = min(CHECK_ELEMENTS, n)
    mid = max(0, n // 2 - k // 2)
    return [(0, k), (mid, mid + k), (n - k, n)]


def check_output(torch, op, a, c):
    """None when the output is right on three slices, else what is wrong."""
    for lo, hi in _slices(a.shape[0]):
        got = c[lo:hi]
        ok = torch.allclose(got, a[lo:hi] * 1.2, rtol=1e-6, atol=0.0) if op == "mul" else torch.equal(got, a[lo:hi])
        if not bool(ok):
            return "the output differs from %s at elements %d..%d" % ("a * 1.2" if op == "mul" else "the input", lo, hi)
    return None


def memory_point(torch, device, clock, op, n, a, c, share):
    point = {
        "device": device.index or 0,
        "op": op,
        "n": n,
        "bytes": n * ITEM_BYTES,
        "moved_bytes": 2 * n * ITEM_BYTES,
        "status": "ok",
        "started": time.time(),
    }
    try:
        if op == "mul":

            def fn():
                return torch.mul(a, 1.2, out=c)
        else:

            def fn():
                return c.copy_(a)

        c.fill_(float("nan"))
        fn()
        clock.sync()
        wrong = check_output(torch, op, a, c)
        times, launches, warm = time_repeats(clock, fn, share)
        med = settled_median(times)
        moved = 2.0 * n * ITEM_BYTES
        point.update(
            ms=med,
            gbs=moved / (med / 1000.0) / 1e9,
            burst_gbs=moved / (times[0] / 1000.0) / 1e9,
            best_gbs=moved / (min(times) / 1000.0) / 1e9,
            repeats_ms=[round(t, 6) for t in times],
            launches=launches,
            warmup=warm,
        )
        if wrong:
            point.update(status="wrong", error=wrong)
    except Exception as exc:
        point_failure(point, exc)
    point["ended"] = time.time()
    if point["status"] in ("skipped", "failed"):
        release(torch, clock.cuda)
    return point


def memory_device(torch, device, info, cfg, out_points):
    """The memory suite on one device: ``cfg`` holds "sizes" (elements) and "budget" (seconds)."""
    clock = Clock(torch, device)
    sizes = cfg.get("sizes") or MEMORY_SIZES
    todo, skipped = memory_plan(sizes, clock.cuda, free_bytes(torch, device))
    info["memory_skipped"] = skipped
    budget = float(cfg.get("budget") or 2.0)
    share = budget / max(1, len(todo) * len(MEMORY_OPS))
    for n in todo:
        a = c = None
        failure = None
        try:
            a = torch.rand(n, device=device, dtype=torch.float32)
            c = torch.empty_like(a)
        except Exception as exc:
            failure = {}
            point_failure(failure, exc)
        if failure is not None:
            a = c = None
            release(torch, clock.cuda)
            for op in MEMORY_OPS:
                point = {
                    "device": device.index or 0,
                    "op": op,
                    "n": n,
                    "bytes": n * ITEM_BYTES,
                    "moved_bytes": 2 * n * ITEM_BYTES,
                    "started": time.time(),
                    "ended": time.time(),
                }
                point.update(failure)
                out_points.append(point)
                emit("point", suite="memory", point=point)
            continue
        for op in MEMORY_OPS:
            point = memory_point(torch, device, clock, op, n, a, c, share)
            out_points.append(point)
            emit("point", suite="memory", point=point)
        del a, c
    release(torch, clock.cuda)


def memory_count(cfg, cuda, free):
    """Points the memory suite plans on one device (for the plan event)."""
    todo, _ = memory_plan(cfg.get("sizes") or MEMORY_SIZES, cuda, free)
    return len(todo) * len(MEMORY_OPS)

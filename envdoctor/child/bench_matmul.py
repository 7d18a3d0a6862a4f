"""Time ``a @ b`` in the target interpreter (run by envdoctor.child for ``envdoctor bench``).

Standard library and torch only, Python 3.8+, never imported by envdoctor itself. Config, e.g.::

    {"dtypes": ["fp32", "tf32", "fp16", "bf16"], "sizes": [128, 512, 2048, 8192],
     "budget": 6.0, "device": "0"}

While it runs it emits a ``plan`` event, then one ``point`` event per point, for the host's
progress display and so that a child killed half-way still leaves the points it finished::

    {"envdoctor_child": 2, "kind": "plan", "points": 16, "devices": [...], "t": 1764412345.12}
    {"envdoctor_child": 2, "kind": "point", "point": {"device": 0, "dtype": "fp16", "n": 8192, ...}}

Method, per point: fresh random inputs; one product into a NaN-filled output, checked against
float64 on a slice; a short calibration that also warms up; then back-to-back repeats of K
products ``a @ b`` each, timed with CUDA events and the queue kept full (no synchronisation
between repeats); then one more checked product while the GPU is hot. ``tflops`` is from the
median repeat after the first quarter of them (the warm-up); ``burst_tflops`` from the first repeat.
"""

import math
import os
import sys
import time

if False:  # for readers and linters: these come from _prelude.py, which envdoctor sends first
    from envdoctor.child._prelude import emit, first_line

CHILD_SCHEMA = "envdoctor.bench.child/1"

ITEMSIZE = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
# ||c - ref|| / ||ref|| allowed per dtype, ref computed in float64 from the same (rounded) inputs.
# fp32 is strict enough that TF32 rounding (about 3e-4) fails it.
ERROR_BOUND = {"fp32": 1e-4, "tf32": 4e-3, "fp16": 5e-3, "bf16": 2e-2}
CHECK_SLICE = 64          # rows of a and columns of b compared with the reference
REPEATS = 40              # timed repeats per point, at most
MIN_REPEATS = 5
SETTLE_FRACTION = 0.25    # leading repeats treated as warm-up for the median
CALIBRATE_S = 0.002       # calibration grows its batch until it takes this long
MAX_ONE_PRODUCT_S = 3.0   # a size whose one product would take longer is skipped


def finite(x):
    return x if (x is not None and math.isfinite(x)) else None


def weight(n):
    """Share of the budget for size n: 1 for 128, 3 for 512, 5 for 2048, 7 for 8192."""
    return max(1.0, math.log2(max(n, 2)) - 6.0)


class Tf32:
    """Switch TF32 for float32 matmul through whichever API this torch has, and read it back."""

    def __init__(self, torch):
        self.m = torch.backends.cuda.matmul
        self.api = "fp32_precision" if hasattr(self.m, "fp32_precision") else "allow_tf32"

    def set(self, on):
        if self.api == "fp32_precision":
            self.m.fp32_precision = "tf32" if on else "ieee"
        else:
            self.m.allow_tf32 = bool(on)

    def get(self):
        try:
            if self.api == "fp32_precision":
                return self.m.fp32_precision == "tf32"
            return bool(self.m.allow_tf32)
        except Exception:
            return None


class Clock:
    """Device-side timing: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.type == "cuda"

    def mark(self):
        if self.cuda:
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def ms(self, a, b):
        if self.cuda:
            return a.elapsed_time(b)
        return (b - a) * 1000.0


def rel_error(torch, a, b, c):
    s = min(CHECK_SLICE, a.shape[0])
    ref = a[:s].double() @ b[:, :s].double()
    got = c[:s, :s].double()
    den = float(torch.linalg.norm(ref))
    num = float(torch.linalg.norm(got - ref))
    if not math.isfinite(num) or not math.isfinite(den):
        return float("nan")
    return num / den if den > 0 else num


def checked_product(torch, clock, a, b):
    """One product into a NaN-filled output (an unwritten element shows), checked in float64."""
    n = a.shape[0]
    c = torch.full((n, n), float("nan"), device=a.device, dtype=a.dtype)
    torch.matmul(a, b, out=c)
    clock.sync()
    return rel_error(torch, a, b, c)


def time_batch(torch, clock, fn, k):
    start = clock.mark()
    for _ in range(k):
        fn()
    end = clock.mark()
    clock.sync()
    return clock.ms(start, end) / k


def launch_cost_us(torch, device, clock):
    """Time per product of a 16 x 16 fp32 ``a @ b`` with the queue full: the launch floor."""
    a = torch.randn(16, 16, device=device)
    b = torch.randn(16, 16, device=device)

    def fn():
        return a @ b

    time_batch(torch, clock, fn, 20)
    runs = sorted(time_batch(torch, clock, fn, 200) for _ in range(5))
    return runs[len(runs) // 2] * 1000.0


def measure(torch, device, clock, tf32, dtype, n, budget_s):
    """One point: see the module docstring for the method."""
    point = {"device": device.index or 0, "dtype": dtype, "n": n, "status": "ok",
             "error_bound": ERROR_BOUND[dtype], "started": time.time()}
    tdtype = {"fp32": torch.float32, "tf32": torch.float32,
              "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    try:
        if dtype in ("fp32", "tf32") and clock.cuda:
            tf32.set(dtype == "tf32")
            point["tf32"] = tf32.get()
        a = torch.randn(n, n, device=device, dtype=tdtype)
        b = torch.randn(n, n, device=device, dtype=tdtype)

        def fn():
            return a @ b   # as people write it; the output comes from the caching allocator

        err = checked_product(torch, clock, a, b)
        # Calibrate (and warm up): grow the batch until it takes CALIBRATE_S.
        k, warm = 1, 1
        per = time_batch(torch, clock, fn, k)
        warm += k
        while per * k < CALIBRATE_S * 1000.0 and k < 100000:
            k *= 4
            per = time_batch(torch, clock, fn, k)
            warm += k
        per_s = max(per / 1000.0, 1e-9)
        repeats = int(max(MIN_REPEATS, min(REPEATS, budget_s / per_s)))
        launches = int(max(1, budget_s / repeats / per_s))
        marks = [clock.mark()]
        for _ in range(repeats):
            for _ in range(launches):
                fn()
            marks.append(clock.mark())
        clock.sync()
        times = [max(clock.ms(marks[i], marks[i + 1]) / launches, 1e-9) for i in range(repeats)]
        if math.isfinite(err):   # again at once, while the GPU is hot
            err = max(err, checked_product(torch, clock, a, b))
        settled = sorted(times[int(len(times) * SETTLE_FRACTION):])
        med = settled[len(settled) // 2] if len(settled) % 2 else \
            0.5 * (settled[len(settled) // 2 - 1] + settled[len(settled) // 2])
        flops = 2.0 * n ** 3
        point.update(
            ms=med,
            tflops=flops / (med / 1000.0) / 1e12,
            burst_tflops=flops / (times[0] / 1000.0) / 1e12,
            best_tflops=flops / (min(times) / 1000.0) / 1e12,
            repeats_ms=[round(t, 6) for t in times],
            launches=launches,
            warmup=warm,
            rel_error=finite(err),
        )
        if not math.isfinite(err):
            point.update(status="wrong", error="the result holds NaN or Inf")
        elif err > ERROR_BOUND[dtype]:
            point.update(status="wrong", error="relative error %.2g exceeds %.0e against float64"
                         % (err, ERROR_BOUND[dtype]))
    except Exception as exc:   # CUDA out of memory, an illegal address, a missing kernel
        point.update(status="failed", error=first_line(exc))
        if clock.cuda:
            try:
                torch.cuda.empty_cache()
            except Exception:
                pass
    point["ended"] = time.time()
    return point


def device_info(torch, index):
    p = torch.cuda.get_device_properties(index)
    info = {"index": index, "kind": "cuda", "name": p.name,
            "capability": "%d.%d" % (p.major, p.minor),
            "multiprocessors": p.multi_processor_count, "memory_bytes": p.total_memory}
    uuid = getattr(p, "uuid", None)
    if uuid is not None:
        text = str(uuid)
        info["uuid"] = text if text.startswith(("GPU-", "MIG-")) else "GPU-" + text
    if hasattr(p, "pci_bus_id") and hasattr(p, "pci_domain_id"):
        info["pci_bus_id"] = "%08X:%02X:%02X.0" % (p.pci_domain_id, p.pci_bus_id,
                                                   getattr(p, "pci_device_id", 0))
    return info


def plan_device(info, dtypes, cuda):
    """Which dtypes this device measures, and why the others are skipped."""
    skipped, todo = {}, []
    cc = tuple(int(x) for x in info["capability"].split(".")) if info.get("capability") else None
    for d in dtypes:
        if not cuda and d != "fp32":
            skipped[d] = "the CPU run measures fp32 only"
        elif cuda and d in ("bf16", "tf32") and cc is not None and cc < (8, 0):
            skipped[d] = "%s needs compute capability 8.0 or later; this GPU is %s" % (
                d, info["capability"])
        else:
            todo.append(d)
    return todo, skipped


def bench_device(torch, device, info, dtypes, sizes, budget, out_points):
    clock = Clock(torch, device)
    tf32 = Tf32(torch)
    todo, skipped = plan_device(info, dtypes, clock.cuda)
    info["skipped"] = skipped
    try:
        info["launch_us"] = round(launch_cost_us(torch, device, clock), 3)
    except Exception as exc:
        info["error"] = first_line(exc)
        return
    total_w = sum(weight(n) for n in sizes) * max(1, len(todo))
    rate = {}   # dtype -> last measured TFLOP/s, to skip sizes far too slow for the budget
    for n in sorted(sizes):
        for d in todo:
            share = budget * weight(n) / total_w
            if d in rate and rate[d]:
                one = 2.0 * n ** 3 / (rate[d] * 1e12)
                # a point takes the check, the warm-up and MIN_REPEATS products at the least
                if one > MAX_ONE_PRODUCT_S or one * (MIN_REPEATS + 2) > 2 * share:
                    skipped["%s n=%d" % (d, n)] = (
                        "one product would take about %.0f s on this device" % one)
                    continue
            point = measure(torch, device, clock, tf32, d, n, share)
            if point.get("tflops"):
                rate[d] = point["tflops"]
            out_points.append(point)
            emit("point", point=point)


def main(cfg):
    started = time.time()
    out = {"schema": CHILD_SCHEMA, "python": sys.executable,
           "python_version": "%d.%d.%d" % sys.version_info[:3], "points": [], "devices": [],
           "notes": [], "error": None}
    dtypes = cfg.get("dtypes") or ["fp32", "tf32", "fp16", "bf16"]
    sizes = cfg.get("sizes") or [128, 512, 2048, 8192]
    budget = float(cfg.get("budget") or 6.0)
    want = str(cfg.get("device", "0"))
    if sys.version_info < (3, 8):
        out["error"] = {"kind": "python_too_old", "message": "Python %s is older than 3.8"
                        % out["python_version"]}
        return out
    t0 = time.perf_counter()
    try:
        import torch
    except ImportError as exc:
        kind = "no_torch" if getattr(exc, "name", None) == "torch" else "import_failed"
        out["error"] = {"kind": kind, "message": first_line(exc)}
        return out
    except Exception as exc:   # a broken install raises anything: OSError for a missing .so
        out["error"] = {"kind": "import_failed", "message": first_line(exc)}
        return out
    out["import_s"] = round(time.perf_counter() - t0, 3)
    out["torch_version"] = torch.__version__
    out["torch_cuda"] = getattr(torch.version, "cuda", None)
    if os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1":
        out["notes"].append("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 is set: some torch versions then use "
                            "TF32 for fp32 products whatever the setting (the fp32 check shows it)")
    t1 = time.perf_counter()
    cuda = False
    try:
        cuda = bool(torch.cuda.is_available())
        if not cuda and out["torch_cuda"]:
            try:
                torch.zeros(1, device="cuda")
            except Exception as exc:
                out["cuda_error"] = first_line(exc)
    except Exception as exc:
        out["cuda_error"] = first_line(exc)
    targets = []
    if cuda:
        count = torch.cuda.device_count()
        if want == "all":
            indices = list(range(count))
        else:
            try:
                indices = [int(want)]
            except ValueError:
                indices = [-1]
            if not 0 <= indices[0] < count:
                out["error"] = {"kind": "bad_device", "message": "GPU %s does not exist: torch sees %d"
                                % (want, count)}
                return out
        for i in indices:
            try:
                info = device_info(torch, i)
                dev = torch.device("cuda", i)
                torch.cuda.set_device(dev)
                for td in (torch.float32, torch.float16):
                    x = torch.randn(64, 64, device=dev, dtype=td)
                    torch.mm(x, x)   # creates the cuBLAS handle and workspace
                torch.cuda.synchronize(dev)
            except Exception as exc:
                info = {"index": i, "kind": "cuda", "error": first_line(exc)}
                dev = None
            targets.append((dev, info))
    else:
        import platform
        targets.append((torch.device("cpu"), {
            "index": 0, "kind": "cpu", "name": platform.processor() or platform.machine() or "CPU",
            "multiprocessors": torch.get_num_threads()}))
    out["init_s"] = round(time.perf_counter() - t1, 3)
    plan = 0
    for dev, info in targets:
        if dev is not None:
            todo, _ = plan_device(info, dtypes, cuda)
            plan += len(todo) * len(sizes)
    emit("plan", points=plan, devices=[info for _, info in targets])
    t2 = time.perf_counter()
    for dev, info in targets:
        if dev is not None:
            if cuda:
                torch.cuda.set_device(dev)
            bench_device(torch, dev, info, dtypes, sizes, budget, out["points"])
        out["devices"].append(info)
    out["measure_s"] = round(time.perf_counter() - t2, 3)
    out["started"] = started
    out["ended"] = time.time()
    return out

"""What the bench suites share in the target interpreter: a part of ``bench.py`` (envdoctor.child),
whose TF32 switch (:class:`Tf32`), device record (:func:`device_info`) and timing ``burn.py`` and
``fit/target/measure.py`` use too.

Standard library and torch only, Python 3.8+, never imported by envdoctor itself. Each script
that needs it names this file on its ``# envdoctor child uses:`` line, so it is sent before it.

Timing, for every suite: a short calibration that also warms up (the batch of calls grows until
it takes ``CALIBRATE_S``), then back-to-back repeats of K calls each, timed with CUDA events and
the queue kept full (no synchronisation between repeats), or ``perf_counter`` on the CPU. The
figure of a point is the median repeat after the first quarter of them (the warm-up). Python's
garbage collector is off meanwhile, as timeit has it.

Two more things, for the suites that ask (the layers): the calibration also reads how long the
CPU takes to issue one call onto an idle queue (``issue_ms``: the call is launch-bound when that
is about its whole time), and a *heat*, calls run back to back and untimed right before the
repeats, with no gap, so that a power-capped GPU has set its clocks before anything is timed (on
the H200 a compute-dense call runs 5-12% faster for its first 50-100 ms after a pause).
"""

import gc
import math
import time

if False:  # for readers and linters: these come from _prelude.py, which envdoctor sends first
    from envdoctor.child._prelude import Failure, first_line, stage

REPEATS = 40  # timed repeats per point, at most
MIN_REPEATS = 5
SETTLE_FRACTION = 0.25  # leading repeats treated as warm-up for the median
CALIBRATE_S = 0.002  # calibration grows its batch until it takes this long


#: envdoctor's dtype names -> torch's (tf32 is float32 with TF32 switched on: :class:`Tf32`).
DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}
#: rows of a and columns of b that rel_error compares with the float64 product
CHECK_SLICE = 64


def torch_dtype(torch, name):
    """torch's dtype of one of :data:`DTYPES`' names."""
    return getattr(torch, DTYPES[name])


def rel_error(torch, a, b, c, rows=CHECK_SLICE):
    """||c - a @ b|| / ||a @ b|| over the first ``rows`` rows and columns, a @ b in float64; None
    where a norm is not finite (NaN or Inf in the product; JSON carries no NaN)."""
    s = min(rows, a.shape[0])
    ref = a[:s].double() @ b[:, :s].double()
    got = c[:s, :s].double()
    den = float(torch.linalg.norm(ref))
    num = float(torch.linalg.norm(got - ref))
    if not (math.isfinite(num) and math.isfinite(den)):
        return None
    return num / den if den > 0 else num


def import_torch(out):
    """``import torch`` as the scripts do it: the stage named, the seconds, torch's version and CUDA
    build written into ``out``; ``Failure("no_torch")`` where torch is not installed,
    ``Failure("import_failed")`` for a broken install (which raises anything: OSError for a missing .so)."""
    stage("import torch")
    t0 = time.perf_counter()
    try:
        import torch
    except Exception as exc:
        missing = isinstance(exc, ImportError) and getattr(exc, "name", None) == "torch"
        raise Failure("no_torch" if missing else "import_failed", first_line(exc)) from None
    out["import_s"] = round(time.perf_counter() - t0, 3)
    out["torch_version"] = torch.__version__
    out["torch_cuda"] = getattr(torch.version, "cuda", None)
    return torch


def finite(x):
    return x if (x is not None and math.isfinite(x)) else None


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

    def save(self):
        """The setting as the user's torch had it, for :meth:`restore` after the matmul suite."""
        try:
            return getattr(self.m, self.api)
        except Exception:
            return None

    def restore(self, value):
        if value is not None:
            try:
                setattr(self.m, self.api, value)
            except Exception:
                pass


class Clock:
    """Device-side timing: CUDA events on a GPU, perf_counter on the CPU (``device``: a torch.device
    or its name)."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = str(device).startswith("cuda")

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

    def seconds(self, a, b):
        return self.ms(a, b) / 1000.0


def time_batch(clock, fn, k, issue=None):
    """ms per call of a batch of k calls; ``issue`` (a list) receives the CPU's ms per call to
    issue them, which on a GPU is the launch cost alone while the queue has room."""
    start = clock.mark()
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    if issue is not None:
        issue.append((time.perf_counter() - t0) * 1000.0 / k)
    end = clock.mark()
    clock.sync()
    return clock.ms(start, end) / k


def time_repeats(clock, fn, budget_s, heat=None, extra=None):
    """(times per call in ms of each repeat, calls per repeat, calls run before timing).

    ``heat(per_ms)`` -> seconds to run ``fn`` back to back between the calibration and the
    repeats, given the calibrated ms per call (0: none). ``extra`` (a dict) receives
    ``burst_ms`` (per call in the calibration's last batch, before any heat), ``heat_ms`` (the
    heat's GPU time, about) and, on a GPU, ``issue_ms`` (the fastest CPU time to issue one call
    seen in the calibration, whose batches start on an idle queue).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _time_repeats(clock, fn, budget_s, heat, extra if extra is not None else {})
    finally:
        if enabled:
            gc.enable()


def _time_repeats(clock, fn, budget_s, heat, extra):
    k, warm, issue = 1, 1, []
    per = time_batch(clock, fn, k, issue)
    warm += k
    while per * k < CALIBRATE_S * 1000.0 and k < 100000:
        k *= 4
        per = time_batch(clock, fn, k, issue)
        warm += k
    extra["burst_ms"] = per
    if clock.cuda:
        extra["issue_ms"] = min(issue)
    per_s = max(per / 1000.0, 1e-9)
    heat_s = float(heat(per) or 0.0) if heat is not None else 0.0
    heat_calls = int(min(heat_s / per_s, 100000)) if heat_s > 0 else 0
    for _ in range(heat_calls):  # no synchronisation after it: the repeats follow with no gap
        fn()
    warm += heat_calls
    extra["heat_ms"] = heat_calls * per
    repeats = int(max(MIN_REPEATS, min(REPEATS, budget_s / per_s)))
    launches = int(max(1, budget_s / repeats / per_s))
    marks = [clock.mark()]
    for _ in range(repeats):
        for _ in range(launches):
            fn()
        marks.append(clock.mark())
    clock.sync()
    times = [max(clock.ms(marks[i], marks[i + 1]) / launches, 1e-9) for i in range(repeats)]
    return times, launches, warm


def settled_median(times):
    """The median of the repeats after the first quarter (the warm-up)."""
    settled = sorted(times[int(len(times) * SETTLE_FRACTION) :])
    mid = len(settled) // 2
    return settled[mid] if len(settled) % 2 else 0.5 * (settled[mid - 1] + settled[mid])


def is_oom(exc):
    """torch.cuda.OutOfMemoryError (torch 1.13+), or the RuntimeError older torches raise."""
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def release(torch, cuda):
    """Give cached blocks back after a suite or a failed point, so the next one starts clean."""
    if cuda:
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception:
            pass


def point_failure(point, exc):
    """A point that raised: out of memory is "skipped" (the size does not fit), anything else "failed".

    Call :func:`release` after the ``except`` block, not in it: until it ends, the traceback
    keeps the point's tensors alive.
    """
    if is_oom(exc):
        point.update(status="skipped", error="out of memory: " + first_line(exc))
    else:
        point.update(status="failed", error=first_line(exc))


def device_info(torch, index):
    p = torch.cuda.get_device_properties(index)
    info = {
        "index": index,
        "kind": "cuda",
        "name": p.name,
        "capability": "%d.%d" % (p.major, p.minor),
        "multiprocessors": p.multi_processor_count,
        "memory_bytes": p.total_memory,
    }
    l2 = getattr(p, "L2_cache_size", None)
    if isinstance(l2, int) and l2 > 0:
        info["l2_bytes"] = l2
    uuid = getattr(p, "uuid", None)
    if uuid is not None:
        text = str(uuid)
        info["uuid"] = text if text.startswith(("GPU-", "MIG-")) else "GPU-" + text
    if hasattr(p, "pci_bus_id") and hasattr(p, "pci_domain_id"):
        info["pci_bus_id"] = "%08X:%02X:%02X.0" % (p.pci_domain_id, p.pci_bus_id, getattr(p, "pci_device_id", 0))
    return info


def free_bytes(torch, device):
    """Free device memory now (cudaMemGetInfo), or None on the CPU or an old torch."""
    if not str(device).startswith("cuda"):
        return None
    try:
        return int(torch.cuda.mem_get_info(device)[0])
    except Exception:
        return None

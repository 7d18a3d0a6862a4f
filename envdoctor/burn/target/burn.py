"""Sustained load on one device, every result checked (run by envdoctor.child for ``envdoctor burn``).

Standard library and torch only, Python 3.8+, never imported by envdoctor itself. One child per
GPU; the host samples NVML meanwhile. Config, e.g.::

    {"device": 0, "seconds": 60, "dtypes": null, "fp64_ccs": ["8.0", "9.0", "10.0", "10.3"],
     "n": 8192, "cpu_n": 256, "interval": 0.5, "memtest_seconds": 6, "memtest_fraction": 0.9,
     "cpu_memtest_bytes": 67108864, "require_cuda": true, "require_gpu": true}

``device``: a torch CUDA index, or "auto" (the first GPU, else the CPU where ``require_gpu`` is
false: ``burn --cpu``). ``dtypes`` null means
bf16 and fp32, plus fp64 on a GPU whose compute capability is in ``fp64_ccs`` (the host takes
them from data/architectures.toml: Tensor Cores that take fp64), fp16 instead of bf16 below 8.0.

The load, per dtype, for ``seconds`` / (number of dtypes): fixed random n x n inputs a, b; the
first product c0 = a @ b is checked once against float64 on a slice; then products into one
output buffer, back to back, each compared with c0 as it comes (on a GPU bit for bit: the same
inputs and the same cuBLAS call on one stream give the same bits, so any difference is a fault;
on the CPU within the bound of floating-point summation in another order, since BLAS libraries
do not promise bitwise equal results from run to run). CUDA events around each product time the
products alone, not the compares between them. One ``interval`` event about every ``interval``
seconds::

    {"envdoctor_child": 2, "kind": "interval", "interval": {"dtype": "bf16", "products": 300,
     "gemm_s": 0.502, "tflops": 657.1, "fastest_tflops": 662.0, "mismatches": 0, ...}}

Then a memory pattern test over ``memtest_fraction`` of the free GPU memory (``cpu_memtest_bytes``
on the CPU), for at most ``memtest_seconds``: every 32-bit word written with a pattern (its own
address, its inverse, 0x55555555, 0xAAAAAAAA, seeded random words), then all read back and
counted where they differ. SIGTERM (the prelude's STOP) ends the load and skips the test; the
child still answers with what it did.
"""
# envdoctor child uses: _torch_common.py

import sys
import time

if False:  # for readers and linters: these come from the files sent before this one
    from envdoctor.child._prelude import STOP, Failure, emit, first_line, stage
    from envdoctor.child._torch_common import Tf32, device_info, import_torch, rel_error, torch_dtype

CHILD_SCHEMA = "envdoctor.burn.child/1"
# ||c0 - ref|| / ||ref|| allowed against float64 from the same inputs (envdoctor bench's bounds).
REF_BOUND = {"fp32": 1e-4, "tf32": 4e-3, "fp16": 5e-3, "bf16": 2e-2, "fp64": 1e-10}
# unit roundoff of the accumulation (fp32 for the 16-bit types) and of the stored output
U_ACC = {"fp64": 2.0**-53, "fp32": 2.0**-24, "tf32": 2.0**-24, "bf16": 2.0**-24, "fp16": 2.0**-24}
U_OUT = {"fp64": 2.0**-53, "fp32": 2.0**-24, "tf32": 2.0**-24, "bf16": 2.0**-8, "fp16": 2.0**-11}
BAD_KEPT = 20  # product numbers of miscompares kept per interval
CHUNK_BYTES = 256 << 20  # memory test: one tensor per 256 MiB
CPU_CHUNK_BYTES = 16 << 20
HEADROOM_BYTES = 1 << 30  # left free on a GPU for the compare temporaries and other processes
PATTERNS = ("address", "inverse address", "0x55555555", "0xaaaaaaaa", "random")


def int_view(torch, name):
    """The integer type of the same width, for a bitwise compare."""
    return {"bf16": torch.int16, "fp16": torch.int16, "tf32": torch.int32, "fp32": torch.int32, "fp64": torch.int64}[
        name
    ]


def plan(info, wanted, fp64_ccs, cuda):
    """(dtypes to run, {dtype: why skipped}, notes)."""
    cc = info.get("capability")
    major = float(cc) if cc else 0.0
    skipped, notes = {}, []
    if wanted:
        todo = list(wanted)
    elif not cuda:
        todo = ["bf16", "fp32"]
    else:
        todo = ["bf16" if major >= 8.0 else "fp16", "fp32"]
        if major < 8.0:
            notes.append("bf16 needs compute capability 8.0; fp16 runs instead")
        if cc in fp64_ccs:
            todo.append("fp64")
        else:
            notes.append("no fp64 load: compute capability %s has no fp64 Tensor Cores (see --dtype fp64)" % cc)
    out = []
    for d in todo:
        if cuda and d in ("bf16", "tf32") and major < 8.0:
            skipped[d] = "%s needs compute capability 8.0 or later; this GPU is %s" % (d, cc)
        elif not cuda and d == "tf32":
            skipped[d] = "tf32 exists on NVIDIA GPUs only"
        else:
            out.append(d)
    return out, skipped, notes


def tolerance(torch, a, b, ref, name):
    """Per element: 2 gamma_n (|a| @ |b|) + 2 u_out |c0|, gamma_n = n u / (1 - n u).

    Two sums of the same n products in different orders each lie within gamma_n sum|a_k b_k| of
    the exact value (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., section 3.1),
    so they differ by at most twice that, plus one rounding of each stored result.
    """
    n = a.shape[1]
    u = U_ACC[name]
    gamma = n * u / (1.0 - n * u)
    bound = (a.abs().double() @ b.abs().double()).mul_(2.0 * gamma)
    bound.add_(ref.double().abs().mul_(2.0 * U_OUT[name]))
    return bound.float()


class Phase(object):
    def __init__(self, name, n, cuda):
        self.d = {
            "dtype": name,
            "n": n,
            "status": "ok",
            "compare": "bitwise" if cuda else "tolerance",
            "products": 0,
            "mismatches": 0,
            "bad_products": 0,
            "first_bad_product": None,
            "bitwise_differences": 0,
            "ref_error": None,
            "ref_bound": REF_BOUND[name],
            "started": time.time(),
            "ended": None,
            "error": None,
        }
        if not cuda:
            self.d["tolerance"] = (
                "|c - c0| <= 2 gamma_n (|a| @ |b|) + 2 u |c0| per element (summation in another order)"
            )

    def add(self, interval):
        d = self.d
        d["products"] += interval["products"]
        d["mismatches"] += interval["mismatches"]
        d["bad_products"] += interval["bad_count"]
        d["bitwise_differences"] += interval.get("bitwise_differences", 0)
        if interval["bad_products"] and d["first_bad_product"] is None:
            d["first_bad_product"] = interval["bad_products"][0]


def run_phase(torch, dev, cuda, name, n, deadline, interval_s, seed):
    """Products of one dtype until ``deadline`` (time.time()) or STOP; emits interval events."""
    ph = Phase(name, n, cuda)
    flops = 2.0 * n**3
    td = torch_dtype(torch, name)
    try:
        if cuda and name in ("fp32", "tf32"):
            tf32 = Tf32(torch)
            tf32.set(name == "tf32")
            ph.d["tf32"] = tf32.get()
        g = torch.Generator(device=dev).manual_seed(seed)
        a = torch.randn(n, n, generator=g, device=dev, dtype=td)
        b = torch.randn(n, n, generator=g, device=dev, dtype=td)
        ref = torch.empty(n, n, device=dev, dtype=td)
        c = torch.empty_like(ref)
        torch.matmul(a, b, out=ref)
        if cuda:
            torch.cuda.synchronize(dev)
        ph.d["ref_error"] = err = rel_error(torch, a, b, ref)
        if err is None or err > REF_BOUND[name]:
            ph.d["status"] = "wrong"
            ph.d["error"] = (
                "the first product holds NaN or Inf"
                if err is None
                else "the first product is off by %.2g against float64 (bound %.0e)" % (err, REF_BOUND[name])
            )
        it = int_view(torch, name)
        if cuda:
            mask = torch.empty(n, n, device=dev, dtype=torch.bool)
            body = GpuLoop(torch, dev, a, b, c, ref, it, mask)
        else:
            body = CpuLoop(torch, a, b, c, ref, it, tolerance(torch, a, b, ref, name))
        k, per, done = 1, None, 0  # the first interval is one product: it sizes the next ones
        while not STOP.is_set():
            left = deadline - time.time()
            if left <= 0 or (per is not None and left < 0.5 * per):
                break
            if per is not None:
                k = max(1, min(k, int(left / per)))
            t0 = time.time()
            out = body.run(k, done, deadline)
            t1 = time.time()
            k = out["products"]
            done += k
            interval = {
                "dtype": name,
                "start": t0,
                "end": t1,
                "products": k,
                "gemm_s": round(out["gemm_s"], 6),
                "tflops": flops * k / out["gemm_s"] / 1e12 if out["gemm_s"] > 0 else None,
                "fastest_tflops": flops / out["fastest_s"] / 1e12 if out["fastest_s"] > 0 else None,
                "mismatches": out["mismatches"],
                "bad_products": out["bad"][:BAD_KEPT],
                "bad_count": len(out["bad"]),
            }
            if not cuda:
                interval["bitwise_differences"] = out["bitwise"]
            ph.add(interval)
            emit("interval", interval=interval)
            per = max(t1 - t0, 1e-6) / k
            k = max(1, int(interval_s / per))
        if STOP.is_set() and time.time() < deadline:
            ph.d["status"] = "stopped" if ph.d["status"] == "ok" else ph.d["status"]
    except Exception as exc:  # CUDA out of memory, an illegal address, an ECC error, a missing kernel
        ph.d["status"] = "failed"
        ph.d["error"] = first_line(exc)
    if ph.d["mismatches"] and ph.d["status"] in ("ok", "stopped"):
        ph.d["status"] = "miscompare"
    ph.d["ended"] = time.time()
    emit("phase", phase=ph.d)
    return ph.d


class GpuLoop(object):
    """Products on a GPU, each timed by CUDA events and compared bit for bit with c0."""

    def __init__(self, torch, dev, a, b, c, ref, it, mask):
        self.torch, self.dev, self.a, self.b, self.c, self.mask = torch, dev, a, b, c, mask
        self.cv, self.rv = c.view(it), ref.view(it)
        self.events = []

    def run(self, k, first, deadline):
        torch = self.torch
        while len(self.events) < 2 * k:
            self.events.append(torch.cuda.Event(enable_timing=True))
        ev = self.events
        counts = torch.zeros(k, dtype=torch.int64, device=self.dev)
        for j in range(k):
            ev[2 * j].record()
            torch.matmul(self.a, self.b, out=self.c)
            ev[2 * j + 1].record()
            torch.ne(self.cv, self.rv, out=self.mask)
            counts[j] = self.mask.sum()
        torch.cuda.synchronize(self.dev)
        times = [ev[2 * j].elapsed_time(ev[2 * j + 1]) / 1000.0 for j in range(k)]
        per = counts.tolist()
        bad = [first + j + 1 for j in range(k) if per[j]]
        return {"products": k, "gemm_s": sum(times), "fastest_s": min(times), "mismatches": int(sum(per)), "bad": bad}


class CpuLoop(object):
    """Products on the CPU, timed by the clock, compared with c0 within the summation bound."""

    def __init__(self, torch, a, b, c, ref, it, tol):
        self.torch, self.a, self.b, self.c, self.tol = torch, a, b, c, tol
        self.ref32 = ref.float()
        self.cv, self.rv = c.view(it), ref.view(it)

    def run(self, k, first, deadline):
        """Up to ``k`` products; fewer when the deadline comes first (a CPU shared with others)."""
        torch = self.torch
        total, fastest, mism, bits, bad = 0.0, float("inf"), 0, 0, []
        done = 0
        for j in range(k):
            if j and (time.time() >= deadline or STOP.is_set()):
                break
            done += 1
            t0 = time.perf_counter()
            torch.matmul(self.a, self.b, out=self.c)
            dt = time.perf_counter() - t0
            total += dt
            fastest = min(fastest, dt)
            wrong = int(((self.c.float() - self.ref32).abs_() > self.tol).sum())
            if wrong:
                mism += wrong
                bad.append(first + j + 1)
            elif not torch.equal(self.cv, self.rv):
                bits += 1
        return {
            "products": done,
            "gemm_s": total,
            "fastest_s": fastest,
            "mismatches": mism,
            "bad": bad,
            "bitwise": bits,
        }


def pattern_fill(torch, buf, pattern, ci, seed, gen_device):
    """Write ``pattern`` into chunk ``ci`` (an int32 tensor)."""
    n = buf.numel()
    if pattern in ("address", "inverse address"):
        torch.arange(n, dtype=torch.int32, device=buf.device, out=buf)
        salt = (ci * 0x9E3779B1) & 0xFFFFFFFF
        buf.bitwise_xor_(salt - (1 << 32) if salt >= 1 << 31 else salt)
        if pattern == "inverse address":
            buf.bitwise_not_()
    elif pattern == "0x55555555":
        buf.fill_(0x55555555)
    elif pattern == "0xaaaaaaaa":
        buf.fill_(0xAAAAAAAA - (1 << 32))
    else:
        g = torch.Generator(device=gen_device).manual_seed(seed + ci)
        try:
            buf.random_(-(1 << 31), 1 << 31, generator=g)
        except (RuntimeError, TypeError):  # a torch whose random_ refuses the full int32 range
            buf.random_(generator=g)


def memtest(torch, dev, cuda, budget_s, fraction, cpu_bytes, seed):
    """The pattern test; emits one ``mempass`` event per pass and returns the summary."""
    out = {"status": "ok", "bytes": 0, "passes": [], "mismatches": 0, "seconds": 0.0, "error": None}
    started = time.time()
    chunks, tmp, mask = [], None, None
    try:
        chunk = CHUNK_BYTES if cuda else CPU_CHUNK_BYTES
        if cuda:
            torch.cuda.empty_cache()
            free, total = torch.cuda.mem_get_info(dev)
            out["free_bytes"], out["total_bytes"] = int(free), int(total)
            target = int(free * fraction) - HEADROOM_BYTES - 2 * chunk
        else:
            target = int(cpu_bytes)
        elems = chunk // 4
        if target < (16 << 20):
            out["status"] = "skipped"
            out["error"] = (
                "only %d MiB of %d MiB GPU memory is free" % (free >> 20, total >> 20)
                if cuda
                else "%d MiB is too little to test" % (target >> 20)
            )
            return out
        if target < chunk:
            chunk = target - target % 4096
            elems = chunk // 4
        tmp = torch.empty(elems, dtype=torch.int32, device=dev)
        mask = torch.empty(elems, dtype=torch.bool, device=dev)
        while (len(chunks) + 1) * chunk <= max(target, chunk):
            try:
                chunks.append(torch.empty(elems, dtype=torch.int32, device=dev))
            except RuntimeError:  # out of memory: another process took some; test what we have
                out["note"] = "stopped allocating at %d MiB: out of memory" % (len(chunks) * chunk >> 20)
                if cuda:
                    torch.cuda.empty_cache()
                break
        out["bytes"] = len(chunks) * chunk
        if not chunks:
            out["status"] = "skipped"
            out["error"] = "no memory could be allocated for the test"
            return out
        gen_device = dev if cuda else "cpu"
        deadline = started + budget_s
        last = 0.0
        p = 0
        while not STOP.is_set():
            now = time.time()
            if p and now + last > deadline:
                break
            pattern = PATTERNS[p % len(PATTERNS)]
            pseed = seed + 7919 * p
            t0 = time.time()
            for ci, buf in enumerate(chunks):
                pattern_fill(torch, buf, pattern, ci, pseed, gen_device)
                if STOP.is_set():
                    break
            if STOP.is_set():
                break
            counts = torch.zeros(len(chunks), dtype=torch.int64, device=dev)
            for ci, buf in enumerate(chunks):
                pattern_fill(torch, tmp, pattern, ci, pseed, gen_device)
                torch.ne(buf, tmp, out=mask)
                counts[ci] = mask.sum()
            per = counts.tolist()
            bad = int(sum(per))
            entry = {"pattern": pattern, "bytes": out["bytes"], "mismatches": bad, "first_bad": None}
            if bad:
                ci = next(i for i, v in enumerate(per) if v)
                pattern_fill(torch, tmp, pattern, ci, pseed, gen_device)
                where = torch.nonzero(torch.ne(chunks[ci], tmp))
                if where.numel():
                    entry["first_bad"] = ci * chunk + 4 * int(where[0][0])
            last = time.time() - t0
            entry["seconds"] = round(last, 4)
            out["passes"].append(entry)
            out["mismatches"] += bad
            emit("mempass", mempass=entry)
            p += 1
        if STOP.is_set() and not out["passes"]:
            out["status"] = "stopped"
        if out["mismatches"]:
            out["status"] = "mismatch"
    except Exception as exc:
        out["status"] = "failed"
        out["error"] = first_line(exc)
    finally:
        del chunks[:]
        tmp = mask = None
        if cuda:
            try:
                torch.cuda.empty_cache()
            except Exception:
                pass
    out["seconds"] = round(time.time() - started, 3)
    return out


def no_cuda_reason(torch):
    if not getattr(torch.version, "cuda", None):
        return "torch %s is a CPU-only build" % torch.__version__
    try:
        torch.zeros(1, device="cuda")
    except Exception as exc:
        return "torch %s cannot use CUDA: %s" % (torch.__version__, first_line(exc))
    return "torch %s sees no GPU" % torch.__version__


def main(cfg):
    out = {
        "schema": CHILD_SCHEMA,
        "python": sys.executable,
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "phases": [],
        "memtest": None,
        "notes": [],
        "stopped": False,
    }
    if sys.version_info < (3, 8):
        raise Failure("python_too_old", "Python %s is older than 3.8" % out["python_version"])
    seconds = float(cfg.get("seconds") or 60.0)
    interval_s = float(cfg.get("interval") or 0.5)
    seed = int(cfg.get("seed") or 20261201)
    torch = import_torch(out)
    emit(
        "python", python_version=out["python_version"], torch_version=out["torch_version"], torch_cuda=out["torch_cuda"]
    )
    stage("CUDA start")
    t1 = time.perf_counter()
    cuda = bool(torch.cuda.is_available())
    want = cfg.get("device", "auto")
    if not cuda and cfg.get("require_cuda"):
        raise Failure("no_cuda", no_cuda_reason(torch))
    if not cuda and cfg.get("require_gpu"):
        raise Failure("no_gpu", no_cuda_reason(torch))
    if cuda:
        count = torch.cuda.device_count()
        index = 0 if want == "auto" else int(want)
        if not 0 <= index < count:
            raise Failure("bad_device", "GPU %s does not exist: torch sees %d" % (want, count))
        dev = torch.device("cuda", index)
        torch.cuda.set_device(dev)
        info = device_info(torch, index)
        x = torch.randn(64, 64, device=dev)
        torch.mm(x, x)  # creates the cuBLAS handle and workspace
        torch.cuda.synchronize(dev)
        if want == "auto" and count > 1:
            out["notes"].append("torch sees %d GPUs; this run loaded GPU 0 only" % count)
        n = int(cfg.get("n") or 8192)
    else:
        if want not in ("auto", 0, "0"):
            raise Failure("bad_device", "GPU %s does not exist: torch %s sees no GPU" % (want, torch.__version__))
        import platform

        dev = torch.device("cpu")
        info = {
            "index": 0,
            "kind": "cpu",
            "name": platform.processor() or platform.machine() or "CPU",
            "multiprocessors": torch.get_num_threads(),
        }
        n = int(cfg.get("cpu_n") or 256)
    out["init_s"] = round(time.perf_counter() - t1, 3)
    todo, skipped, notes = plan(info, cfg.get("dtypes"), cfg.get("fp64_ccs") or [], cuda)
    info["skipped"] = skipped
    out["device"] = info
    out["notes"].extend(notes)
    emit("device", device=info)
    emit("plan", dtypes=todo, skipped=skipped, n=n, seconds=seconds, notes=notes)
    load_start = time.time()
    for i, name in enumerate(todo):
        if STOP.is_set():
            break
        stage("load %s" % name)
        deadline = load_start + seconds * (i + 1) / len(todo)
        out["phases"].append(run_phase(torch, dev, cuda, name, n, deadline, interval_s, seed + i))
    out["load_s"] = round(time.time() - load_start, 3)
    if STOP.is_set():
        out["stopped"] = True
        out["memtest"] = {
            "status": "stopped",
            "bytes": 0,
            "passes": [],
            "mismatches": 0,
            "seconds": 0.0,
            "error": "stopped before the memory test",
        }
    elif float(cfg.get("memtest_seconds", 6.0)) <= 0:
        out["memtest"] = {
            "status": "skipped",
            "bytes": 0,
            "passes": [],
            "mismatches": 0,
            "seconds": 0.0,
            "error": "the memory test was switched off",
        }
    else:
        stage("memory test")
        budget = float(cfg.get("memtest_seconds", 6.0))
        if not cuda:
            budget = min(budget, float(cfg.get("cpu_memtest_seconds") or 1.0))
        out["memtest"] = memtest(
            torch,
            dev,
            cuda,
            budget,
            float(cfg.get("memtest_fraction") or 0.9),
            int(cfg.get("cpu_memtest_bytes") or (64 << 20)),
            seed,
        )
        out["stopped"] = STOP.is_set()
    emit("memtest", memtest=out["memtest"])
    return out

"""The bench child: torch, its devices, then the asked suites in order (run by envdoctor.child).

Standard library and torch only, Python 3.8+, never imported by envdoctor itself. Config, e.g.::

    {"suites": ["matmul", "memory"], "dtypes": ["fp32", "tf32", "fp16", "bf16"],
     "sizes": [128, 512, 2048, 8192], "budget": 6.0, "device": "0",
     "memory": {"sizes": [65536, 262144], "budget": 2.0},
     "layers": {"budget": 5.0, "dtypes": ["fp16", "bf16"], "names": ["bert", "llama"]}}

``gpu_required`` (``bench`` without ``--cpu``): a torch that sees no GPU is the error ``no_gpu`` at
once, before anything is measured; without it the suites run on the CPU (``check --bench``).

One child runs every suite asked for, one device after the other: torch is imported and CUDA
started once (3 to 5 s on the H200, more than the memory suite takes), and the layers suite
compares with the matmul rates measured just before. Events: ``plan`` (the devices, and the
points per suite), then one ``point`` per point with its ``suite`` ("matmul", "memory",
"layers", or "reference": the short product the layers suite runs for its peak when the matmul
suite did not run), and one ``flop_check`` per layer and attention. The result (schema
``envdoctor.bench.child/1``) holds them all again: ``points`` (matmul), ``memory_points``,
``layer_points``, ``reference_points``, ``flop_checks``.
"""
# envdoctor child uses: _torch_common.py bench/target/matmul.py bench/target/memory.py
# envdoctor child uses: bench/target/models.py bench/target/layers.py

import os
import sys
import time

if False:  # for readers and linters: these come from the files sent before this one
    from envdoctor.bench.target.layers import layers_count, layers_device
    from envdoctor.bench.target.matmul import bench_device, launch_cost_us, plan_device
    from envdoctor.bench.target.memory import memory_count, memory_device
    from envdoctor.child._prelude import emit, first_line
    from envdoctor.child._torch_common import Clock, Tf32, device_info, free_bytes, release

CHILD_SCHEMA = "envdoctor.bench.child/1"
SUITES = ("matmul", "memory", "layers")


def planned(torch, dev, info, cfg, suites, cuda):
    """Points per suite this device will measure (for the plan event and the progress display)."""
    counts = {}
    if "matmul" in suites:
        todo, _ = plan_device(info, cfg["dtypes"], cuda)
        counts["matmul"] = len(todo) * len(cfg["sizes"])
    if "memory" in suites:
        counts["memory"] = memory_count(cfg["memory"], cuda, free_bytes(torch, dev))
    if "layers" in suites:
        counts["layers"] = layers_count(info, cfg["layers"], cuda)
    return counts


def run_suites(torch, dev, info, cfg, suites, out):
    """Every asked suite on one device, in order; seconds per suite added to ``out["suite_s"]``."""
    cuda = dev.type == "cuda"
    clock = Clock(torch, dev)
    try:
        info["launch_us"] = round(launch_cost_us(torch, dev, clock), 3)
    except Exception as exc:
        info["error"] = first_line(exc)
        return
    tf32 = Tf32(torch)
    saved = tf32.save()
    if cuda:
        info["tf32_default"] = tf32.get()
    mine = []
    for suite in suites:
        t = time.perf_counter()
        if suite == "matmul":
            bench_device(torch, dev, info, cfg["dtypes"], cfg["sizes"], cfg["budget"], mine)
            out["points"].extend(mine)
            tf32.restore(saved)  # the layers run with the user's own TF32 setting
            release(torch, cuda)
        elif suite == "memory":
            memory_device(torch, dev, info, cfg["memory"], out["memory_points"])
        elif suite == "layers":
            layers_device(torch, dev, info, cfg["layers"], mine, out)
            tf32.restore(saved)
        out["suite_s"][suite] = round(out["suite_s"].get(suite, 0.0) + time.perf_counter() - t, 3)


def main(cfg):
    started = time.time()
    suites = [s for s in SUITES if s in (cfg.get("suites") or ["matmul"])]
    out = {
        "schema": CHILD_SCHEMA,
        "python": sys.executable,
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "suites": suites,
        "points": [],
        "memory_points": [],
        "layer_points": [],
        "reference_points": [],
        "flop_checks": [],
        "suite_s": {},
        "devices": [],
        "notes": [],
        "error": None,
    }
    cfg = dict(cfg)
    cfg["dtypes"] = cfg.get("dtypes") or ["fp32", "tf32", "fp16", "bf16"]
    cfg["sizes"] = cfg.get("sizes") or [128, 512, 2048, 8192]
    cfg["budget"] = float(cfg.get("budget") or 6.0)
    cfg["memory"] = dict(cfg.get("memory") or {})
    cfg["layers"] = dict(cfg.get("layers") or {})
    cfg["layers"].setdefault("dtypes", cfg["dtypes"])
    want = str(cfg.get("device", "0"))
    if sys.version_info < (3, 8):
        out["error"] = {"kind": "python_too_old", "message": "Python %s is older than 3.8" % out["python_version"]}
        return out
    t0 = time.perf_counter()
    try:
        import torch
    except ImportError as exc:
        kind = "no_torch" if getattr(exc, "name", None) == "torch" else "import_failed"
        out["error"] = {"kind": kind, "message": first_line(exc)}
        return out
    except Exception as exc:  # a broken install raises anything: OSError for a missing .so
        out["error"] = {"kind": "import_failed", "message": first_line(exc)}
        return out
    out["import_s"] = round(time.perf_counter() - t0, 3)
    out["torch_version"] = torch.__version__
    out["torch_cuda"] = getattr(torch.version, "cuda", None)
    if os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1":
        out["notes"].append(
            "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 is set: some torch versions then use "
            "TF32 for fp32 products whatever the setting (the fp32 check shows it)"
        )
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
    if not cuda and cfg.get("device_required") and want != "all":
        out["error"] = {
            "kind": "bad_device",
            "message": "--device %s: torch %s sees no GPU" % (want, out["torch_version"])
            + (" (%s)" % out["cuda_error"] if out.get("cuda_error") else ""),
        }
        return out
    if not cuda and cfg.get("gpu_required"):
        build = "is a CPU-only build" if not out["torch_cuda"] else "sees no GPU"
        out["error"] = {
            "kind": "no_gpu",
            "message": "torch %s %s" % (out["torch_version"], build)
            + (" (%s)" % out["cuda_error"] if out.get("cuda_error") else ""),
        }
        return out
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
                out["error"] = {"kind": "bad_device", "message": "GPU %s does not exist: torch sees %d" % (want, count)}
                return out
        for i in indices:
            try:
                info = device_info(torch, i)
                dev = torch.device("cuda", i)
                torch.cuda.set_device(dev)
                for td in (torch.float32, torch.float16):
                    x = torch.randn(64, 64, device=dev, dtype=td)
                    torch.mm(x, x)  # creates the cuBLAS handle and workspace
                torch.cuda.synchronize(dev)
            except Exception as exc:
                info = {"index": i, "kind": "cuda", "error": first_line(exc)}
                dev = None
            targets.append((dev, info))
    else:
        import platform

        targets.append(
            (
                torch.device("cpu"),
                {
                    "index": 0,
                    "kind": "cpu",
                    "name": platform.processor() or platform.machine() or "CPU",
                    "multiprocessors": torch.get_num_threads(),
                },
            )
        )
    out["init_s"] = round(time.perf_counter() - t1, 3)
    counts = {}
    for dev, info in targets:
        if dev is not None:
            for suite, n in planned(torch, dev, info, cfg, suites, cuda).items():
                counts[suite] = counts.get(suite, 0) + n
    emit("plan", points=sum(counts.values()), suites=counts, devices=[info for _, info in targets])
    t2 = time.perf_counter()
    for dev, info in targets:
        if dev is not None:
            if cuda:
                torch.cuda.set_device(dev)
            run_suites(torch, dev, info, cfg, suites, out)
        out["devices"].append(info)
    out["measure_s"] = round(time.perf_counter() - t2, 3)
    out["started"] = started
    out["ended"] = time.time()
    return out

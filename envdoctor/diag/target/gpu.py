"""envdoctor diag's tiny CUDA operation on every GPU the target's torch sees (level 1).

Config: {"n": 256, "device": "all" or an index}. Per GPU: a context, a seeded n x n fp32 product
compared with float64 on the CPU (TF32 off), and ``(ones(8) * 2).sum() == 16``. The answer::

    {"torch_version": "2.11.0+cu130", "torch_cuda": "13.0", "count": 1,
     "devices": [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-c7d3...", "ok": true,
                  "rel_error": 1.1e-07, "init_ms": 402.1, "op_ms": 3.2, "error": null}]}

A torch without CUDA answers ``{"count": 0, "cuda_error": "..."}``; no torch is the error no_torch.
"""
# envdoctor child uses: _torch_common.py

import time

if False:  # for readers and linters: these come from the files sent before this one
    from envdoctor.child._prelude import Failure, emit, first_line, stage
    from envdoctor.child._torch_common import device_info

BOUND = 1e-4  # ||c - ref|| / ||ref|| for fp32 against float64 (envdoctor bench's bound)


def one(torch, index, n):
    out = {"index": index, "ok": False, "rel_error": None, "init_ms": None, "op_ms": None, "error": None}
    try:
        out.update(device_info(torch, index))
        t0 = time.time()
        dev = torch.device("cuda", index)
        torch.ones(1, device=dev)
        torch.cuda.synchronize(index)
        out["init_ms"] = round((time.time() - t0) * 1000.0, 3)
        gen = torch.Generator().manual_seed(1234 + index)
        a = torch.randn(n, n, generator=gen)
        b = torch.randn(n, n, generator=gen)
        t1 = time.time()
        c = (a.to(dev) @ b.to(dev)).cpu()
        s = (torch.ones(8, device=dev) * 2).sum().item()
        torch.cuda.synchronize(index)
        out["op_ms"] = round((time.time() - t1) * 1000.0, 3)
        ref = a.double() @ b.double()
        err = float((c.double() - ref).norm() / ref.norm())
        out["rel_error"] = err
        if s != 16:
            out["error"] = "(ones(8) * 2).sum() gave %r instead of 16" % (s,)
        elif not err <= BOUND:
            out["error"] = "fp32 product off by %.3g (bound %.0e) against float64" % (err, BOUND)
        else:
            out["ok"] = True
    except Exception as exc:
        out["error"] = first_line(exc)
    return out


def main(cfg):
    stage("import torch")
    try:
        import torch
    except ImportError as exc:
        raise Failure("no_torch", "torch is not installed in this Python (%s)" % first_line(exc)) from None
    except Exception as exc:
        raise Failure("import_failed", first_line(exc)) from None
    answer = {
        "torch_version": str(torch.__version__),
        "torch_cuda": getattr(torch.version, "cuda", None),
        "count": 0,
        "devices": [],
    }
    stage("CUDA start")
    try:
        available = torch.cuda.is_available()
        count = torch.cuda.device_count() if available else 0
    except Exception as exc:
        answer["cuda_error"] = first_line(exc)
        return answer
    if not count:
        answer["cuda_error"] = (
            "torch was built without CUDA" if not answer["torch_cuda"] else "torch.cuda.is_available() is False"
        )
        return answer
    answer["count"] = count
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
    except Exception:
        pass
    want = cfg.get("device", "all")
    indices = list(range(count)) if want == "all" else [int(want)]
    n = int(cfg.get("n") or 256)
    for i in indices:
        if i >= count:
            answer["devices"].append({"index": i, "ok": False, "error": "torch sees %d GPU(s)" % count})
            continue
        stage("tiny CUDA op on cuda:%d" % i)
        d = one(torch, i, n)
        emit("device", device=d)
        answer["devices"].append(d)
    return answer

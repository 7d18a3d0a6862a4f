"""What one process can allocate on GPU 0, against what the driver and NVML report (issue 28 §1).

Run on a GPU machine, in a fresh process (the target's python3, which holds torch)::

    python3 benchmarks/usable_memory.py > $OUT/usable.json

Reads cudaMemGetInfo (``torch.cuda.mem_get_info``) right after CUDA starts, NVML's memory
(total, used, free; ``reserved`` where the driver's v2 structure has it) and ECC mode for the same
GPU, then allocates 1 GiB, then 64 MiB, then 2 MiB blocks until each size fails (plain
cudaMalloc through torch's caching allocator; ``expandable_segments`` off unless the environment
sets it), and prints one JSON object. The allocatable total is what a job's
``max_memory_reserved`` can reach; what envdoctor fit judges a GPU against.
"""

import json
import os
import sys
import time


def nvml_reading(index):
    try:
        import pynvml
    except ImportError as exc:
        return {"error": f"no pynvml: {exc}"}
    out = {}
    try:
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        m = pynvml.nvmlDeviceGetMemoryInfo(h)
        out.update(total=int(m.total), used=int(m.used), free=int(m.free))
        try:
            m2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
            out.update(v2_total=int(m2.total), v2_reserved=int(m2.reserved), v2_used=int(m2.used), v2_free=int(m2.free))
        except Exception as exc:  # an older driver or pynvml
            out["v2_error"] = str(exc)
        try:
            current, pending = pynvml.nvmlDeviceGetEccMode(h)
            out.update(ecc_current=int(current), ecc_pending=int(pending))
        except Exception as exc:
            out["ecc_error"] = str(exc)
        name = pynvml.nvmlDeviceGetName(h)
        out["name"] = name.decode() if isinstance(name, bytes) else str(name)
        out["uuid"] = str(pynvml.nvmlDeviceGetUUID(h))
    except Exception as exc:
        out["error"] = str(exc)
    return out


def main():
    import torch

    t0 = time.time()
    out = {"torch": torch.__version__, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF")}
    out["nvml_before"] = nvml_reading(0)
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    out.update(cuda_free_init=int(free), cuda_total=int(total), device=torch.cuda.get_device_name(0))
    out["nvml_after_init"] = nvml_reading(0)
    blocks, sizes = [], {}
    for size in (1 << 30, 1 << 26, 1 << 21):
        n = 0
        while True:
            try:
                blocks.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
                n += 1
            except torch.cuda.OutOfMemoryError:
                break
        sizes[str(size)] = n
    torch.cuda.synchronize()
    free_end, _ = torch.cuda.mem_get_info()
    out.update(
        blocks=sizes,
        allocatable=sum(b.numel() for b in blocks),
        reserved=int(torch.cuda.memory_reserved()),
        cuda_free_full=int(free_end),
        seconds=round(time.time() - t0, 2),
    )
    out["nvml_full"] = nvml_reading(0)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

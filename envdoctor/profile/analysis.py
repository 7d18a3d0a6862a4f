"""Pure: the Chrome trace torch.profiler wrote -> where each profiled step's time went.

The trace is kineto's JSON (``{"traceEvents": [...]}``); what is read of it:

- ``user_annotation`` spans ``ProfilerStep#N``: the profiled steps (their count and wall time),
  ``enumerate(DataLoader)#...``: waiting for the next batch, ``Optimizer.step#AdamW.step``;
- ``kernel``, ``gpu_memcpy``, ``gpu_memset`` (the GPU's timeline, ``args.device``): busy is the union
  of them on the busiest device, idle the rest of the window; each kernel is put in a category by
  the operator that launched it (``args["External id"]`` -> the ``cpu_op``, with its input dtypes)
  or, failing that, by its name;
- ``cuda_runtime`` launches (``cudaLaunchKernel``...): the launch rate;
- on a CPU-only torch the top-level ``cpu_op`` of each thread stand for the busy time.

>>> union([(0, 10), (5, 20), (30, 40)])
30.0
>>> kernel_category("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", None, ())
'matmul'
>>> kernel_category("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", None, ())
'comms'
"""

from __future__ import annotations

import re
import statistics
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from envdoctor.profile.facts import Breakdown, Share

Interval = Tuple[float, float]

MATMUL_OPS = frozenset(
    {
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::matmul",
        "aten::linear",
        "aten::_scaled_mm",
        "aten::addmv",
        "aten::mv",
        "aten::dot",
        "aten::addbmm",
        "aten::_addmm_activation",
    }
)
ATTENTION_OPS = (
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product",
    "aten::_flash_attention",
    "aten::_efficient_attention",
    "aten::_cudnn_attention",
)
CONV_OPS = (
    "aten::conv",
    "aten::_convolution",
    "aten::cudnn_convolution",
    "aten::convolution",
    "aten::mkldnn_convolution",
    "aten::miopen_convolution",
)
COMM_NAME = re.compile(r"^(?:gloo|nccl|mpi|ucc):|^c10d::|^record_param_comms$|^nccl:")
#: dtypes whose matmuls run on Tensor Cores (as torch names them in "Input type")
TENSOR_CORE_DTYPES = ("c10::BFloat16", "c10::Half", "c10::Float8", "BFloat16", "Half")
LAUNCHES = (
    "cudaLaunchKernel",
    "cuLaunchKernel",
    "cudaLaunchKernelExC",
    "cudaGraphLaunch",
    "cudaLaunchCooperativeKernel",
)
_NCCL_KIND = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)")
_KIND_NAMES = {
    "allreduce": "AllReduce",
    "allgather": "AllGather",
    "reducescatter": "ReduceScatter",
    "broadcast": "Broadcast",
    "reduce": "Reduce",
    "sendrecv": "SendRecv",
    "send": "Send",
    "recv": "Recv",
    "alltoall": "AllToAll",
    "barrier": "Barrier",
    "allgatherbase": "AllGather",
    "reducescatterbase": "ReduceScatter",
    "alltoallbase": "AllToAll",
}


def union(intervals: Iterable[Interval]) -> float:
    """Total length covered by the intervals (overlaps counted once)."""
    total, end = 0.0, None
    start = 0.0
    for a, b in sorted(intervals):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        elif b > end:
            end = b
    if end is not None:
        total += end - start
    return total


def merged(intervals: Iterable[Interval]) -> List[Interval]:
    out: List[Interval] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def overlap(a: Sequence[Interval], b: Sequence[Interval]) -> float:
    """Length of the intersection of two merged, sorted interval lists.

    >>> overlap([(0, 10)], [(5, 20)])
    5.0
    """
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def comm_kind(name: str) -> str:
    """``ncclDevKernel_AllGather_RING_LL`` -> ``AllGather``; ``gloo:all_reduce`` -> ``AllReduce``."""
    m = _NCCL_KIND.search(name)
    raw = m.group(1) if m else name.split(":", 1)[-1].split("(")[0]
    key = raw.replace("_", "").lower()
    return _KIND_NAMES.get(key, raw)


def _op_category(op: str) -> Optional[str]:
    if op in MATMUL_OPS:
        return "matmul"
    if op.startswith(ATTENTION_OPS):
        return "attention"
    if op.startswith(CONV_OPS):
        return "conv"
    if COMM_NAME.search(op):
        return "comms"
    return None


def kernel_category(name: str, op: Optional[str], input_types: Sequence[str]) -> str:
    """The category of one GPU kernel: by the operator that launched it, else by its name."""
    low = name.lower()
    if "nccl" in low:
        return "comms"
    if op is not None:
        by_op = _op_category(op)
        if by_op is not None:
            return by_op
    if any(w in low for w in ("flash", "fmha", "attention", "sdpa", "_mha", "mha_")):
        return "attention"
    if any(w in low for w in ("conv", "fprop", "dgrad", "wgrad")):
        return "conv"
    if any(w in low for w in ("gemm", "nvjet", "cutlass", "cublas", "wgmma", "xmma", "gemv", "matmul")):
        return "matmul"
    return "elementwise/norm"


def runs_without_tensor_cores(input_types: Sequence[str], kernel: str, tf32: bool, cc: Optional[str]) -> bool:
    """A matmul that runs on the CUDA cores: fp32 inputs with TF32 off (or before Ampere).

    >>> runs_without_tensor_cores(["float", "float"], "ampere_sgemm_128x64_nn", False, "8.0")
    True
    >>> runs_without_tensor_cores(["c10::BFloat16", "c10::BFloat16"], "nvjet_tst_64x8", False, "9.0")
    False
    """
    types = [t for t in input_types if t]
    if any(t.startswith(TENSOR_CORE_DTYPES) for t in types):
        return False
    low = kernel.lower()
    if "tf32" in low or "16816" in low or "1688" in low or "884" in low or "hmma" in low or "wgmma" in low:
        return False
    if types and all(t in ("float", "double") for t in types):
        major = int(cc.split(".")[0]) if cc and cc.split(".")[0].isdigit() else 0
        return not (tf32 and major >= 8) or "double" in types
    return "sgemm" in low or "gemmsn" in low or "gemv" in low


def _x_events(trace: Mapping[str, Any]) -> List[Dict[str, Any]]:
    raw = trace.get("traceEvents")
    if not isinstance(raw, list):
        return []
    out = []
    for e in raw:
        if (
            isinstance(e, dict)
            and e.get("ph") == "X"
            and isinstance(e.get("name"), str)
            and isinstance(e.get("ts"), (int, float))
            and isinstance(e.get("dur"), (int, float))
            and not isinstance(e.get("ts"), bool)
            and e["dur"] >= 0
        ):
            out.append(e)
    return out


def _span(e: Mapping[str, Any]) -> Interval:
    return (float(e["ts"]), float(e["ts"]) + float(e["dur"]))


def _args(e: Mapping[str, Any]) -> Mapping[str, Any]:
    a = e.get("args")
    return a if isinstance(a, dict) else {}


def _types(e: Optional[Mapping[str, Any]]) -> Tuple[str, ...]:
    if e is None:
        return ()
    t = _args(e).get("Input type")
    return tuple(x for x in t if isinstance(x, str)) if isinstance(t, list) else ()


def _inside(spans: Sequence[Interval], window: Interval) -> List[Interval]:
    lo, hi = window
    return [(max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi]


def _top_level(ops: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """cpu_op events not nested in another cpu_op of the same thread."""
    out: List[Dict[str, Any]] = []
    ends: Dict[Any, float] = {}
    for e in sorted(ops, key=lambda e: (str(e.get("tid")), e["ts"], -e["dur"])):
        tid = str(e.get("tid"))
        a, b = _span(e)
        if a >= ends.get(tid, float("-inf")):
            out.append(e)
            ends[tid] = b
    return out


def _shares(seconds: Mapping[str, float], steps: int, step_s: float) -> Tuple[Share, ...]:
    rows = [Share(name, s / steps, (s / steps) / step_s if step_s > 0 else 0.0) for name, s in seconds.items() if s > 0]
    return tuple(sorted(rows, key=lambda r: -r.seconds))


def breakdown(
    trace: Mapping[str, Any], *, tf32: bool = False, cc: Optional[str] = None, dtypes: Sequence[str] = ()
) -> Optional[Breakdown]:
    """The breakdown of the profiled steps; None when the trace holds no ``ProfilerStep#`` span.
    ``dtypes`` stands for a matmul's input types where the trace recorded none (no shapes)."""
    events = _x_events(trace)
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    if not steps:
        return None
    n = len(steps)
    window = (min(_span(e)[0] for e in steps), max(_span(e)[1] for e in steps))
    annotations = [e for e in events if e.get("cat") in ("user_annotation", "cpu_op")]
    loading = merged(_inside([_span(e) for e in annotations if e["name"].startswith("enumerate(DataLoader)")], window))
    dataloader = sum(b - a for a, b in loading)
    optimizer = union(_inside([_span(e) for e in annotations if e["name"].startswith("Optimizer.step#")], window))
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    cpu_ops = [e for e in events if e.get("cat") == "cpu_op"]
    comm_cpu = [e for e in events if e.get("cat") in ("cpu_op", "user_annotation") and COMM_NAME.search(e["name"])]
    if gpu:
        return _gpu(events, gpu, cpu_ops, n, window, dataloader, optimizer, tf32, cc, tuple(dtypes))
    return _cpu(cpu_ops, comm_cpu, n, window, loading, optimizer)


def _device(e: Mapping[str, Any]) -> str:
    d = _args(e).get("device")
    return str(d if d is not None else e.get("pid"))


def _gpu(
    events: List[Dict[str, Any]],
    gpu: List[Dict[str, Any]],
    cpu_ops: List[Dict[str, Any]],
    n: int,
    window: Interval,
    dataloader: float,
    optimizer: float,
    tf32: bool,
    cc: Optional[str],
    dtypes: Tuple[str, ...] = (),
) -> Breakdown:
    per_device: Dict[str, float] = {}
    for e in gpu:
        per_device[_device(e)] = per_device.get(_device(e), 0.0) + float(e["dur"])
    main = max(per_device, key=lambda d: per_device[d])
    mine = [e for e in gpu if _device(e) == main]
    # the GPU's window runs from its first to its last activity of the profiled steps (as
    # HolisticTraceAnalysis counts it), so busy + idle is that window
    lo = min(_span(e)[0] for e in mine)
    hi = max(_span(e)[1] for e in mine)
    wall = (hi - lo) / 1e6
    step_s = wall / n
    busy_spans = merged(_span(e) for e in mine)
    busy = sum(b - a for a, b in busy_spans) / 1e6
    by_ext = {_args(e).get("External id"): e for e in cpu_ops if _args(e).get("External id") is not None}
    compute: Dict[str, List[Interval]] = {}
    copies: Dict[str, float] = {}
    comms: Dict[str, float] = {}
    comm_spans: List[Interval] = []
    compute_spans: List[Interval] = []
    matmul = fp32 = 0.0
    by_dtype: Dict[str, float] = {}
    kernels = [e for e in mine if e.get("cat") == "kernel"]
    for e in mine:
        secs = float(e["dur"]) / 1e6
        if e.get("cat") == "gpu_memcpy":
            kind = _copy_kind(e["name"])
            copies[kind] = copies.get(kind, 0.0) + secs
            continue
        if e.get("cat") == "gpu_memset":
            copies["memset"] = copies.get("memset", 0.0) + secs
            continue
        op_event = by_ext.get(_args(e).get("External id"))
        op = op_event["name"] if op_event is not None else None
        cat = kernel_category(e["name"], op, _types(op_event))
        if cat == "comms":
            kind = comm_kind(e["name"])
            comms[kind] = comms.get(kind, 0.0) + secs
            comm_spans.append(_span(e))
            continue
        if cat in ("matmul", "conv"):
            matmul += secs
            types = _types(op_event) or dtypes
            slow = runs_without_tensor_cores(types, e["name"], tf32, cc)
            dtype = _dtype(types, slow)
            by_dtype[dtype] = by_dtype.get(dtype, 0.0) + secs
            if slow:
                fp32 += secs
                cat = "matmul (fp32, no Tensor Cores)" if cat == "matmul" else "conv (fp32, no Tensor Cores)"
        compute.setdefault(cat, []).append(_span(e))
        compute_spans.append(_span(e))
    comm_m, compute_m = merged(comm_spans), merged(compute_spans)
    comm_total = sum(b - a for a, b in comm_m) / 1e6
    launches = sum(1 for e in events if e.get("cat") == "cuda_runtime" and e["name"].startswith(LAUNCHES))
    durations = sorted(float(e["dur"]) for e in kernels)
    return Breakdown(
        device="cuda",
        step_s=step_s,
        busy_s=busy / n,
        idle_s=max(0.0, wall - busy) / n,
        compute=_shares({k: union(v) / 1e6 for k, v in compute.items()}, n, step_s),
        copies=_shares(copies, n, step_s),
        comms=_shares(comms, n, step_s),
        comm_s=comm_total / n,
        comm_overlap=(overlap(comm_m, compute_m) / 1e6 / comm_total) if comm_total > 0 else None,
        dataloader_s=dataloader / 1e6 / n,
        optimizer_s=optimizer / 1e6 / n,
        matmul_fp32_s=fp32 / n,
        matmul_s=matmul / n,
        kernels_per_step=len(kernels) / n,
        launches_per_step=launches / n,
        median_kernel_us=statistics.median(durations) if durations else None,
        matmul_dtype=max(by_dtype, key=lambda k: by_dtype[k]) if by_dtype else None,
    )


def _dtype(types: Sequence[str], slow: bool) -> str:
    """The datasheet column a matmul's inputs run at: ``c10::BFloat16`` -> bf16."""
    joined = " ".join(types)
    if "BFloat16" in joined:
        return "bf16"
    if "Half" in joined:
        return "fp16"
    return "fp32" if slow else "tf32"


def _copy_kind(name: str) -> str:
    """``Memcpy HtoD (Pageable -> Device)`` -> ``H2D``."""
    for key, kind in (("HtoD", "H2D"), ("DtoH", "D2H"), ("DtoD", "D2D"), ("PtoP", "P2P"), ("HtoH", "H2H")):
        if key in name:
            return kind
    return "copy"


def _attributed(ops: List[Dict[str, Any]], window: Interval, loading: Sequence[Interval]) -> Dict[str, float]:
    """Each CPU operator's own time (less its children's), put in the category of the nearest
    operator at or above it that has one (``aten::mm`` under an autograd node counts as matmul,
    ``aten::t`` under ``aten::linear`` too); operators inside a batch's loading are left out."""
    out: Dict[str, float] = {}
    by_tid: Dict[str, List[Dict[str, Any]]] = {}
    for e in ops:
        if e["ts"] < window[1] and e["ts"] + e["dur"] > window[0]:
            by_tid.setdefault(str(e.get("tid")), []).append(e)
    for events in by_tid.values():
        events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: List[List[Any]] = []  # [end, category, own seconds] of the open operators

        for e in events:
            a, b = _span(e)
            _close(stack, a, out)
            if overlap([(a, b)], list(loading)):
                continue
            inherited = next((item[1] for item in reversed(stack) if item[1] != "elementwise/other"), None)
            cat = _op_category(e["name"]) or inherited or "elementwise/other"
            if cat == "comms":
                continue
            if stack:
                stack[-1][2] -= (b - a) / 1e6
            stack.append([b, cat, (b - a) / 1e6])
        _close(stack, float("inf"), out)
    return out


def _close(stack: List[List[Any]], until: float, out: Dict[str, float]) -> None:
    while stack and stack[-1][0] <= until:
        _, cat, own = stack.pop()
        out[cat] = out.get(cat, 0.0) + max(own, 0.0)


def _cpu(
    cpu_ops: List[Dict[str, Any]],
    comm_cpu: List[Dict[str, Any]],
    n: int,
    window: Interval,
    loading: List[Interval],
    optimizer: float,
) -> Breakdown:
    wall = (window[1] - window[0]) / 1e6
    step_s = wall / n
    dataloader = sum(b - a for a, b in loading)
    seconds = _attributed(cpu_ops, window, loading)
    top = [
        e
        for e in _top_level(cpu_ops)
        if e["ts"] < window[1]
        and e["ts"] + e["dur"] > window[0]
        and not overlap([_span(e)], loading)
        and _op_category(e["name"]) != "comms"
    ]
    compute_spans = _inside([_span(e) for e in top], window)
    matmul = seconds.get("matmul", 0.0)
    comm_spans = _inside([_span(e) for e in comm_cpu], window)
    comms: Dict[str, float] = {}
    for e in comm_cpu:
        kind = comm_kind(str(_args(e).get("Collective name") or e["name"]))
        comms[kind] = comms.get(kind, 0.0) + union(_inside([_span(e)], window)) / 1e6
    comm_m = merged(comm_spans)
    comm_total = sum(b - a for a, b in comm_m) / 1e6
    return Breakdown(
        device="cpu",
        step_s=step_s,
        busy_s=None,
        idle_s=None,
        compute=_shares(seconds, n, step_s),
        copies=(),
        comms=_shares({k: min(v, comm_total) for k, v in comms.items()}, n, step_s),
        comm_s=comm_total / n,
        comm_overlap=(overlap(comm_m, merged(compute_spans)) / 1e6 / comm_total) if comm_total > 0 else None,
        dataloader_s=dataloader / 1e6 / n,
        optimizer_s=optimizer / 1e6 / n,
        matmul_fp32_s=matmul / n,
        matmul_s=matmul / n,
        kernels_per_step=None,
        launches_per_step=None,
        median_kernel_us=None,
    )

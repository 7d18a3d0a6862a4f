"""One rank of ``envdoctor comms``: collectives, GPU pairs and host copies, in the target interpreter.

Run by envdoctor.child (one process per rank, started by envdoctor or by torchrun/srun); standard
library and torch only, Python 3.8+. The rank, world size and rendezvous come from the environment
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, as ``init_method="env://"`` reads them).
Config, e.g.::

    {"backend": "nccl", "device_index": 0, "collectives": ["all_reduce", "all_gather"],
     "sizes": [1048576, 1073741824], "warmup": 5, "iters": 20, "point_budget_s": 0.5,
     "timeout_s": 30, "pairs": true, "pair_bytes": 268435456, "host_copies": false}

Method, per collective and size, after nccl-tests' all_reduce_perf (src/common.cu): float32
buffers; S is what nccl-tests calls the size (all_reduce: the buffer; all_gather: the output,
n x the input; reduce_scatter: the input, n x the output; all_to_all: one rank's send buffer).
Warm-up iterations, then ``iters`` calls issued back to back (as nccl-tests does without -z) between
two CUDA events on the current stream (perf_counter on the CPU), time = elapsed / iters; the time
is averaged over ranks (nccl-tests' default -a 1) and its maximum kept. The rank's events are:
``plan``, one ``point`` per collective and size, one ``pair`` per ordered GPU pair. A slow size
runs fewer iterations so that each point stays near ``point_budget_s``.

Correctness, after the timing, on refilled buffers: every rank puts known values in each chunk of
its input (small integers, exact in float32), runs the collective once more, and compares every
chunk of the output with the expected sum or concatenation (min and max of the chunk, then the
count of wrong elements where they differ); the counts are summed over ranks.

``inject`` (for envdoctor's own tests) makes one rank hang, die or corrupt its output at a point:
``{"rank": 1, "kind": "hang", "collective": "all_reduce", "size_index": 0}``.

The timing, the checks and the ``Rank`` helper are in ``links/target/common.py`` (shared with
``fleet/target/gather.py``), sent before this script.
"""
# envdoctor child uses: _torch_common.py links/target/common.py

import datetime
import inspect
import os
import socket
import sys
import time

if False:  # for readers and linters: these come from _prelude.py and links/target/common.py, sent first
    from envdoctor.child._prelude import STOP, Failure, emit, first_line, stage
    from envdoctor.child._torch_common import Clock, device_info
    from envdoctor.links.target.common import ELEMENT, Rank, check, env_int, one_point

CHILD_SCHEMA = "envdoctor.comms.child/1"
#: Reported as the rank saw them (envdoctor passes them through and never sets them).
REPORTED_ENV = (
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
)


def mover(r, buf, src, dst):
    """One copy of ``buf`` from rank src to rank dst, for the two ranks concerned. Batched P2P ops
    reuse the group's NCCL communicator; plain send/recv would create one per pair of ranks
    (H-Huang in pytorch/pytorch#160342), a second or so each on 8 GPUs."""
    d = r.dist

    def move():
        if r.rank == src:
            ops = [d.P2POp(d.isend, buf, dst)]
        elif r.rank == dst:
            ops = [d.P2POp(d.irecv, buf, src)]
        else:
            return
        for req in d.batch_isend_irecv(ops):
            req.wait()

    return move


def pair_matrix(cfg, r, nbytes):
    """One-way copy bandwidth from every rank to every other (send/recv), one pair at a time."""
    torch, n = r.torch, r.n
    count = max(1, nbytes // ELEMENT)
    buf = torch.zeros(count, dtype=torch.float32, device=r.device)
    budget = float(cfg.get("pair_budget_s", 0.1))
    out = []
    for src in range(n):
        for dst in range(n):
            if src == dst or STOP.is_set():
                continue
            me = r.rank in (src, dst)
            move = mover(r, buf, src, dst)
            if r.rank == src:
                buf.fill_(float(src + 1))
            r.agree([0.0])
            if me:
                r.timed(move, 1)
            one = r.agree([r.timed(move, 1) if me else 0.0])[0]
            iters = max(2, min(20, int(budget / one))) if one > 0 else 2
            r.agree([0.0])
            t = r.timed(move, iters) if me else 0.0
            slowest = r.agree([t])[0]
            wrong = 0
            if r.rank == dst:
                wrong = check(buf, [float(src + 1)])
            wrong = int(r.agree([wrong], "sum")[0])
            pair = {"src": src, "dst": dst, "bytes": count * ELEMENT, "iters": iters, "time_s": slowest, "wrong": wrong}
            emit("pair", pair=pair)
            out.append(pair)
    del buf
    return out


def host_copies(torch, cuda, device, cfg):
    """Pinned host <-> GPU copy bandwidth, both ways (what a single GPU can still be asked)."""
    if not cuda:
        return {"status": "no_gpu", "message": "no GPU: nothing to measure between host and GPU"}
    nbytes = int(cfg.get("host_bytes", 256 << 20))
    clock = Clock(torch, device)
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    out = {"status": "ok", "bytes": nbytes, "pinned": True, "directions": []}
    for name, fn in (
        ("h2d", lambda: dev.copy_(host, non_blocking=True)),
        ("d2h", lambda: host.copy_(dev, non_blocking=True)),
    ):
        fn()
        clock.sync()
        start = clock.mark()
        fn()
        end = clock.mark()
        clock.sync()
        one = clock.seconds(start, end)
        iters = max(3, min(20, int(0.3 / one))) if one > 0 else 3
        clock.sync()
        start = clock.mark()
        for _ in range(iters):
            fn()
        end = clock.mark()
        clock.sync()
        out["directions"].append({"direction": name, "iters": iters, "time_s": clock.seconds(start, end) / iters})
    return out


def main(cfg):
    started = time.time()
    rank = env_int("RANK", 0)
    n = env_int("WORLD_SIZE", 1)
    local = env_int("LOCAL_RANK", 0)
    backend = cfg.get("backend", "nccl")
    out = {
        "schema": CHILD_SCHEMA,
        "rank": rank,
        "world_size": n,
        "local_rank": local,
        "backend": backend,
        "host": socket.gethostname(),
        "python_version": ".".join(map(str, sys.version_info[:3])),
        "points": [],
        "pairs": [],
        "host_copies": None,
        "notes": [],
        "env": dict((k, os.environ[k]) for k in REPORTED_ENV if k in os.environ),
    }
    stage("import torch")
    t0 = time.perf_counter()
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        if getattr(exc, "name", None) == "torch":
            raise Failure("no_torch", f"torch is not installed in {sys.executable}") from None
        raise Failure("import_failed", f"import torch fails in {sys.executable}: {first_line(exc)}") from None
    out["import_s"] = round(time.perf_counter() - t0, 3)
    out["torch_version"] = torch.__version__
    out["torch_cuda"] = getattr(torch.version, "cuda", None)
    cuda = False
    try:
        cuda = bool(torch.cuda.is_available())
    except Exception as exc:
        out["notes"].append("torch.cuda.is_available() failed: " + first_line(exc))
    if backend == "nccl":
        if not cuda:
            raise Failure(
                "no_cuda",
                f"torch {torch.__version__} in {sys.executable} sees no CUDA GPU, so NCCL "
                "cannot run; --backend gloo measures collectives between CPU processes",
            )
        index = int(cfg.get("device_index", local))
        count = torch.cuda.device_count()
        if not 0 <= index < count:
            raise Failure("bad_device", f"rank {rank} was given GPU {index}; torch sees {count}")
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
        out["device"] = device_info(torch, index)
        try:
            out["nccl_version"] = ".".join(str(x) for x in torch.cuda.nccl.version())
        except Exception as exc:
            out["notes"].append("NCCL version unknown: " + first_line(exc))
    else:
        device = torch.device("cpu")
        out["device"] = {"index": None, "name": "CPU"}
    timeout = datetime.timedelta(seconds=float(cfg.get("timeout_s", 30)))
    stage("init_process_group", backend=backend, world_size=n)
    t1 = time.perf_counter()
    extra = {}
    if backend == "nccl" and "device_id" in inspect.signature(dist.init_process_group).parameters:
        extra["device_id"] = device  # eager init: NCCL's communicator is made here, once
    try:
        dist.init_process_group(
            backend=backend, init_method="env://", rank=rank, world_size=n, timeout=timeout, **extra
        )
    except Exception as exc:
        where = f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
        raise Failure(
            "init_failed", f"rank {rank} of {n} could not join the group at {where}: {first_line(exc)}"
        ) from None
    r = Rank(torch, dist, device, cuda and backend == "nccl", rank, n)
    stage("first collective")
    try:
        r.agree([0.0])
    except Exception as exc:
        raise Failure("init_failed", f"rank {rank}: the first collective failed: {first_line(exc)}") from None
    out["init_s"] = round(time.perf_counter() - t1, 3)
    me = {"rank": rank, "local_rank": local, "host": out["host"], "device": out["device"]}
    try:
        out["ranks"] = r.gather_json(me)
    except Exception as exc:
        out["ranks"] = [me]
        out["notes"].append("the ranks' devices could not be gathered: " + first_line(exc))
    collectives = list(cfg.get("collectives") or [])
    sizes = [int(s) for s in cfg.get("sizes") or []]
    emit(
        "plan",
        points=len(collectives) * len(sizes),
        world_size=n,
        rank=rank,
        device=out["device"],
        nccl_version=out.get("nccl_version"),
        torch_version=out["torch_version"],
    )
    for collective in collectives:
        for index, size in enumerate(sizes):
            if STOP.is_set():
                out["notes"].append(f"stopped before {collective} {size} bytes")
                break
            stage(f"{collective} {size} bytes", collective=collective, bytes=size)
            try:
                point = one_point(cfg, r, collective, size, index)
            except Exception as exc:
                raise Failure(
                    "collective_failed",
                    f"rank {rank}: {collective} of {size} bytes failed: {first_line(exc)}",
                    collective=collective,
                    bytes=size,
                ) from None
            emit("point", point=point)
            out["points"].append(point)
    if cfg.get("pairs") and n > 1 and not STOP.is_set():
        stage("GPU pairs")
        try:
            out["pairs"] = pair_matrix(cfg, r, int(cfg.get("pair_bytes", 256 << 20)))
        except Exception as exc:
            raise Failure(
                "collective_failed", f"rank {rank}: the pair test failed: {first_line(exc)}", collective="send/recv"
            ) from None
    if cfg.get("host_copies"):
        stage("host copies")
        gpu = device if device.type == "cuda" else (torch.device("cuda", 0) if cuda else None)
        out["host_copies"] = host_copies(torch, gpu is not None, gpu, cfg)
    out["seconds"] = round(time.time() - started, 3)
    return out

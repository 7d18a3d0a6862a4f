"""Shared by ``comms.py`` and ``fleet/target/gather.py``: how a collective is timed and checked in the target.

Sent after ``_prelude.py`` and before the script that names it on its ``# envdoctor child uses:``
line. The method is nccl-tests' (all_reduce_perf, src/common.cu), as ``comms.py``'s docstring
describes it: float32 buffers, warm-up calls, ``iters`` calls back to back between two CUDA events
(``perf_counter`` on the CPU), the time averaged over the ranks and its maximum kept, then one more
call on refilled buffers whose every chunk is compared with the expected value. :class:`Rank` works
on the default process group or, with ``group``, on a subgroup (``rank`` and ``n`` are then the
rank within it and its size), e.g. the two-rank groups of ``fleet --comms``' pairwise pass.
Standard library and torch only.
"""

import json
import os
import sys
import time

if False:  # for readers and linters: these come from _torch_common.py, sent before this part
    from envdoctor.child._torch_common import Clock, free_bytes

ELEMENT = 4  # float32
COMPARE_CHUNK = 1 << 24  # elements compared at once when counting wrong ones


def env_int(name, default=None):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return default


def shape(collective, size, n):
    """(input elements, output elements, S in bytes) for a requested size, as nccl-tests counts it."""
    if collective == "all_reduce":
        count = max(1, size // ELEMENT)
        return count, count, count * ELEMENT
    per = max(1, size // ELEMENT // n)
    if collective == "all_gather":
        return per, per * n, per * n * ELEMENT
    if collective == "reduce_scatter":
        return per * n, per, per * n * ELEMENT
    return per * n, per * n, per * n * ELEMENT  # all_to_all


def needed_bytes(collective, size, n):
    inp, out, _ = shape(collective, size, n)
    return (inp if collective == "all_reduce" else inp + out) * ELEMENT


def fill(collective, rank, n, inp):
    """Known input per rank and chunk (small integers, exact in float32)."""
    if collective in ("all_reduce", "all_gather"):
        inp.fill_(float(rank % 7 + 1))
        return
    chunks = inp.view(n, -1)
    for j in range(n):
        if collective == "reduce_scatter":
            chunks[j].fill_(float((rank + j) % 5 + 1))
        else:
            chunks[j].fill_(float((rank * n + j) % 1000 + 1))


def expected(collective, rank, n):
    """The value every element of each output chunk must hold."""
    if collective == "all_reduce":
        return [float(sum(r % 7 + 1 for r in range(n)))]
    if collective == "all_gather":
        return [float(j % 7 + 1) for j in range(n)]
    if collective == "reduce_scatter":
        return [float(sum((r + rank) % 5 + 1 for r in range(n)))]
    return [float((j * n + rank) % 1000 + 1) for j in range(n)]  # chunk j came from rank j


def count_wrong(chunk, value):
    wrong = 0
    for start in range(0, chunk.numel(), COMPARE_CHUNK):
        part = chunk[start : start + COMPARE_CHUNK]
        wrong += int((part != value).sum().item())
    return wrong


def check(result, values):
    wrong = 0
    chunks = result.view(len(values), -1)
    for j, value in enumerate(values):
        c = chunks[j]
        if float(c.min().item()) != value or float(c.max().item()) != value:
            wrong += count_wrong(c, value)
    return wrong


class Rank:
    def __init__(self, torch, dist, device, cuda, rank, n, group=None):
        self.torch, self.dist, self.device, self.cuda = torch, dist, device, cuda
        self.rank, self.n = rank, n
        # the subgroup's collectives name it; the default group's name none (as before)
        self.on = {"group": group} if group is not None else {}
        self.clock = Clock(torch, device if cuda else "cpu")

    def agree(self, values, op="max"):
        """A few numbers combined over all ranks (max or sum); also a barrier."""
        t = self.torch.tensor([float(v) for v in values], dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX if op == "max" else self.dist.ReduceOp.SUM, **self.on)
        return [float(x) for x in t.tolist()]

    def gather_json(self, obj):
        """Every rank's small JSON object, in rank order (all_gather_object needs numpy in torch 2.13)."""
        torch = self.torch
        data = json.dumps(obj, sort_keys=True).encode("utf-8")
        length = int(self.agree([len(data)])[0])
        mine = torch.zeros(length, dtype=torch.uint8, device=self.device)
        mine[: len(data)] = torch.tensor(list(data), dtype=torch.uint8)
        every = torch.zeros(length * self.n, dtype=torch.uint8, device=self.device)
        self.operation("all_gather", mine, every)()
        raw = bytes(every.cpu().tolist())
        return [json.loads(raw[i * length : (i + 1) * length].rstrip(b"\0").decode("utf-8")) for i in range(self.n)]

    def timed(self, fn, iters):
        self.clock.sync()
        start = self.clock.mark()
        for _ in range(iters):
            fn()
        end = self.clock.mark()
        self.clock.sync()
        return self.clock.seconds(start, end) / iters

    def operation(self, collective, inp, out):
        d, on = self.dist, self.on
        if collective == "all_reduce":
            return lambda: d.all_reduce(inp, **on)
        if collective == "all_gather":  # all_gather_single: the name torch 2.13 prefers
            gather = getattr(d, "all_gather_single", None) or d.all_gather_into_tensor
            return lambda: gather(out, inp, **on)
        if collective == "reduce_scatter":
            scatter = getattr(d, "reduce_scatter_single", None) or d.reduce_scatter_tensor
            return lambda: scatter(out, inp, **on)
        return lambda: d.all_to_all_single(out, inp, **on)

    def free_bytes(self):
        return free_bytes(self.torch, self.device) if self.cuda else None


def injected(cfg, rank, where):
    fault = cfg.get("inject") or {}
    if fault.get("rank") != rank:
        return None
    if all(fault.get(k) == v for k, v in where.items() if k in fault):
        return fault.get("kind")
    return None


def hang_here():
    while True:  # envdoctor's idle timeout ends this process
        time.sleep(0.5)


def one_point(cfg, r, collective, size, index):
    n, torch = r.n, r.torch
    inp_count, out_count, s_bytes = shape(collective, size, n)
    point = {
        "collective": collective,
        "requested_bytes": size,
        "bytes": s_bytes,
        "count": inp_count,
        "dtype": "float32",
        "status": "ok",
    }
    free = r.free_bytes()
    need = needed_bytes(collective, size, n)
    short = 1.0 if free is not None and need > 0.9 * free else 0.0
    if r.agree([short])[0]:
        point.update(status="skipped", reason=f"needs {need / 2.0**30:.1f} GiB per GPU; one GPU has less free")
        return point
    fault = injected(cfg, r.rank, {"collective": collective, "size_index": index})
    if fault == "hang":
        hang_here()
    if fault == "die":
        sys.stderr.write(f"envdoctor comms: rank {r.rank} dies here (injected)\n")
        sys.stderr.flush()
        os._exit(17)
    inp = torch.zeros(inp_count, dtype=torch.float32, device=r.device)
    out = inp if collective == "all_reduce" else torch.zeros(out_count, dtype=torch.float32, device=r.device)
    op = r.operation(collective, inp, out)
    warmup = max(1, int(cfg.get("warmup", 5)))
    most = max(1, int(cfg.get("iters", 20)))
    budget = float(cfg.get("point_budget_s", 0.5))
    r.timed(op, 1)  # the first call of a size sets things up
    one = r.agree([r.timed(op, 1)])[0]
    extra = max(0, min(warmup - 2, int(0.25 * budget / one) if one > 0 else warmup))
    if extra:
        r.timed(op, extra)
    iters = max(min(most, 3), min(most, int(budget / one))) if one > 0 else most
    r.agree([0.0])  # start together
    t = r.timed(op, iters)
    total, slowest = r.agree([t], "sum")[0], r.agree([t])[0]
    fill(collective, r.rank, n, inp)
    if collective != "all_reduce":
        out.fill_(-1.0)
    op()
    r.clock.sync()
    if fault == "wrong":
        out.view(-1)[0] += 1.0
    wrong = check(out, expected(collective, r.rank, n))
    point.update(
        warmup=2 + extra, iters=iters, time_s=total / n, time_max_s=slowest, wrong=int(r.agree([wrong], "sum")[0])
    )
    del inp, out
    return point

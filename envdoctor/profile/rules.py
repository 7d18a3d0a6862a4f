"""Pure: a profiled step's breakdown -> findings with fixes (ED940-ED969).

Thresholds (shares of the step's wall time), chosen to name only what dominates a step:
input-bound when waiting for batches takes >= 20%; host syncs when a call at the user's line
waits >= 5% of the step on a GPU (on a CPU-only torch a sync every step is only noted); fp32
matmuls when >= 50% of the matmul time runs without Tensor Cores on a GPU that has them (cc >= 8.0
for TF32); an unfused optimizer when its step takes >= 10%; communication-bound when the
collectives take >= 30% and under half of them overlap computation; launch-bound when the GPU is
idle >= 30% with a median kernel under 20 us; idle without a named cause when the GPU is idle >= 40%.

>>> [f.code for f in rules(_example())]
['ED940']
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple

from envdoctor.findings import Finding
from envdoctor.profile.facts import Breakdown, Share, StepTimes, SyncSite

INPUT_BOUND = 0.20
SYNC_SHARE = 0.05
FP32_MATMUL = 0.50
OPTIMIZER_SHARE = 0.10
COMM_BOUND = 0.30
COMM_OVERLAP = 0.50
LAUNCH_IDLE = 0.30
LAUNCH_KERNEL_US = 20.0
IDLE_SHARE = 0.40
OVERHEAD = 0.10

from envdoctor.codes import PT_CUDA_GRAPHS as CUDA_GRAPHS  # noqa: E402 - the registry's URLs
from envdoctor.codes import PT_DATALOADER as DATALOADER_DOCS  # noqa: E402
from envdoctor.codes import PT_DDP as DDP_DOCS  # noqa: E402
from envdoctor.codes import PT_OPTIM as OPTIM_DOCS  # noqa: E402
from envdoctor.codes import PT_PROFILER as TORCH_PROFILER  # noqa: E402
from envdoctor.codes import PT_SYNC_DEBUG as SYNC_DOCS  # noqa: E402
from envdoctor.codes import PT_TF32 as TF32_DOCS  # noqa: E402


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _share(b: Breakdown, seconds: float) -> float:
    return seconds / b.step_s if b.step_s > 0 else 0.0


def rules(
    b: Breakdown,
    syncs: Sequence[SyncSite] = (),
    optimizer: Optional[dict] = None,
    cc: Optional[str] = None,
    tf32: bool = False,
    times: Optional[StepTimes] = None,
) -> Tuple[Finding, ...]:
    """Every finding the breakdown earns, the most costly first."""
    out: List[Finding] = []
    out += _input_bound(b)
    out += _syncs(b, syncs)
    out += _fp32(b, cc, tf32)
    out += _optimizer(b, optimizer)
    out += _comms(b)
    out += _launch_or_idle(b, bool(out))
    if times is not None and times.overhead is not None and times.overhead > OVERHEAD:
        out.append(
            Finding(
                "ED948",
                "info",
                f"The profiler slowed the profiled steps by {_pct(times.overhead)}",
                (f"steps without the profiler {times.baseline_s:.4g} s, with it {times.mean_s:.4g} s",),
                (
                    "read the shares rather than the absolute times: the step's own time is the baseline's above",
                    "envdoctor profile ... without --shapes (the default: recording shapes slows every operator)",
                ),
                reference=TORCH_PROFILER,
                area="profile",
                explanation="The shares are still indicative; the absolute step time is the baseline's.",
            )
        )
    return tuple(out)


def _input_bound(b: Breakdown) -> Iterable[Finding]:
    share = _share(b, b.dataloader_s)
    if share < INPUT_BOUND:
        return
    yield Finding(
        "ED940",
        "warning",
        f"Input-bound: {_pct(share)} of each step waits for the next batch",
        (f"DataLoader's __next__ takes {b.dataloader_s * 1e3:.1f} ms of a {b.step_s * 1e3:.1f} ms step",),
        (
            "DataLoader(dataset, batch_size=..., num_workers=8, pin_memory=True, persistent_workers=True, "
            "prefetch_factor=4)  # num_workers up to the CPU cores per GPU",
            "move per-sample work (decoding, augmentation) out of __getitem__ or onto the GPU",
        ),
        reference=DATALOADER_DOCS,
        area="profile",
    )


def _syncs(b: Breakdown, syncs: Sequence[SyncSite]) -> Iterable[Finding]:
    every = [s for s in syncs if s.per_step >= 1]
    if not every:
        return
    worst = max(every, key=lambda s: s.seconds_per_step)
    share = _share(b, sum(s.seconds_per_step for s in every))
    lines = tuple(
        f"{s.where} ({s.function}): {s.op} {s.per_step:g} per step, {s.seconds_per_step * 1e3:.2f} ms per step waiting"
        for s in every[:5]
    )
    if b.device == "cuda" and share >= SYNC_SHARE:
        yield Finding(
            "ED941",
            "warning",
            f"Host syncs in the loop: the CPU waits for the GPU {_pct(share)} of each step, worst at {worst.where}",
            lines,
            (
                f"at {worst.where}: keep the value on the GPU (accumulate losses in a tensor, call .item() "
                "every N steps or only when logging)",
                "find every sync: torch.cuda.set_sync_debug_mode('warn')",
            ),
            reference=SYNC_DOCS,
            area="profile",
        )
    elif b.device == "cpu":
        yield Finding(
            "ED941",
            "info",
            f"A host sync runs every step at {worst.where}: harmless on the CPU, a wait on a GPU",
            lines,
            (f"at {worst.where}: on a GPU keep the value there and call {worst.op} only when logging",),
            reference=SYNC_DOCS,
            area="profile",
        )


def _fp32(b: Breakdown, cc: Optional[str], tf32: bool) -> Iterable[Finding]:
    if b.device != "cuda" or b.matmul_s <= 0 or b.matmul_fp32_s / b.matmul_s < FP32_MATMUL:
        return
    share = _share(b, b.matmul_fp32_s)
    major = int(cc.split(".")[0]) if cc and cc.split(".")[0].isdigit() else 0
    fix = (
        (
            "torch.backends.cuda.matmul.allow_tf32 = True  # or torch.set_float32_matmul_precision('high')",
            "with torch.autocast('cuda', dtype=torch.bfloat16): loss = model(batch)  # bf16 Tensor Cores",
        )
        if major >= 8
        else ("with torch.autocast('cuda', dtype=torch.float16): ...  # with torch.amp.GradScaler",)
    )
    yield Finding(
        "ED942",
        "warning",
        f"fp32 matmuls without Tensor Cores: {_pct(share)} of each step",
        (
            f"{b.matmul_fp32_s * 1e3:.1f} ms of {b.matmul_s * 1e3:.1f} ms of matmul per step ran in fp32 on the CUDA "
            f"cores (TF32 {'on' if tf32 else 'off'}, compute capability {cc or 'unknown'})",
        ),
        fix,
        reference=TF32_DOCS,
        area="profile",
    )


def _optimizer(b: Breakdown, optimizer: Optional[dict]) -> Iterable[Finding]:
    if not optimizer or b.device != "cuda" or optimizer.get("fused"):
        return
    name = str(optimizer.get("class") or "the optimizer")
    share = _share(b, b.optimizer_s)
    if share < OPTIMIZER_SHARE or name not in ("Adam", "AdamW", "SGD", "Adagrad"):
        return
    yield Finding(
        "ED943",
        "warning",
        f"{name}.step takes {_pct(share)} of each step without fused=True",
        (
            f"{name}(fused={optimizer.get('fused')}, foreach={optimizer.get('foreach')}): "
            f"{b.optimizer_s * 1e3:.1f} ms per step",
        ),
        (f"torch.optim.{name}(model.parameters(), ..., fused=True)",),
        reference=OPTIM_DOCS,
        area="profile",
    )


def _comms(b: Breakdown) -> Iterable[Finding]:
    share = _share(b, b.comm_s)
    if share < COMM_BOUND or (b.comm_overlap is not None and b.comm_overlap >= COMM_OVERLAP):
        return
    kinds = ", ".join(f"{c.name} {_pct(c.share)}" for c in b.comms[:4])
    overlap = "unknown" if b.comm_overlap is None else _pct(b.comm_overlap)
    yield Finding(
        "ED944",
        "warning",
        f"Communication-bound: collectives take {_pct(share)} of each step, {overlap} of it overlapped",
        (f"by kind: {kinds}",),
        (
            "DDP: a larger bucket_cap_mb (e.g. 100) and gradient accumulation with no_sync() between optimizer steps",
            "FSDP/ZeRO-3 on PCIe GPUs: a lower ZeRO stage or hybrid sharding within the node "
            "(see envdoctor topo for the links these ranks use)",
            "NCCL_DEBUG=INFO to see the algorithm and transport NCCL picked",
        ),
        reference=DDP_DOCS,
        area="profile",
    )


def _launch_or_idle(b: Breakdown, explained: bool) -> Iterable[Finding]:
    if b.device != "cuda" or b.idle_s is None:
        return
    idle = _share(b, b.idle_s)
    if idle >= LAUNCH_IDLE and b.median_kernel_us is not None and b.median_kernel_us < LAUNCH_KERNEL_US:
        yield Finding(
            "ED945",
            "warning",
            f"Launch-bound: the GPU is idle {_pct(idle)} of each step between short kernels",
            (
                f"median kernel {b.median_kernel_us:.1f} us, {b.kernels_per_step or 0:.0f} kernels and "
                f"{b.launches_per_step or 0:.0f} launches per step",
            ),
            (
                "model = torch.compile(model)  # fuses the small kernels",
                "torch.compile(model, mode='reduce-overhead')  # CUDA graphs: one launch per step",
                "a larger batch per step, so each kernel does more work",
            ),
            reference=CUDA_GRAPHS,
            area="profile",
        )
    elif idle >= IDLE_SHARE and not explained:
        yield Finding(
            "ED946",
            "info",
            f"The GPU is idle {_pct(idle)} of each step, with no cause envdoctor can name",
            (f"busy {b.busy_s or 0:.4g} s of a {b.step_s:.4g} s step",),
            ("envdoctor profile --trace DIR ... and open the trace in https://ui.perfetto.dev to see the gaps",),
            reference=TORCH_PROFILER,
            area="profile",
        )


def _example() -> Breakdown:
    return Breakdown(
        "cpu",
        0.1,
        None,
        None,
        (Share("matmul", 0.02, 0.2),),
        (),
        (),
        0.0,
        None,
        0.05,
        0.01,
        0.02,
        0.02,
        None,
        None,
        None,
    )

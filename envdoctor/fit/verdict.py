"""Verdicts per GPU, the ways out when it does not fit, and the largest batch and context that fit.

Pure: GPUs come in as ``(name, total bytes)`` values (:class:`Gpu`), whatever found them (the
table by ``--gpu``, ``--memory``, or the machine's probes), and every number is a call of
:func:`envdoctor.fit.estimate.estimate`.

>>> from envdoctor.fit.models import bundled_models
>>> from envdoctor.fit.constants import load_constants
>>> spec = bundled_models().find("Qwen2.5-0.5B").spec
>>> r = fit_report(spec, Workload(mode="infer", batch=1, seq=4096), [Gpu("24 GiB", 24 * 2**30, "--memory")],
...                (), load_constants())
>>> r.verdicts[0].fits
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable

from envdoctor.fit.constants import Constants
from envdoctor.fit.estimate import Estimate, estimate
from envdoctor.fit.spec import ModelSpec
from envdoctor.fit.workload import MAX_BATCH, MAX_SEQ, Workload

GIB = 2**30


#: compute capability from which bf16 runs natively (Ampere, sm_80)
BF16_MIN_CC = (8, 0)


@dataclass(frozen=True)
class Gpu:
    """One GPU's name and the memory a process can allocate on it; ``source`` says where the figure
    came from (envdoctor/fit/usable.py); ``cc`` its compute capability where known."""

    name: str
    total_bytes: int
    source: str  # "usable with ECC on (data/fit.toml): ...", "--memory", "this machine, NVML free: ..."
    cc: str | None = None


@dataclass(frozen=True)
class Verdict:
    gpu: Gpu
    fits: bool
    spare_bytes: int  # negative: short by that much
    problem: str | None = None  # the GPU cannot run the workload whatever its memory (bf16 below sm_80)


def dtype_problem(gpu: Gpu, dtype: str, amp: str | None) -> str | None:
    """Why ``gpu`` cannot run the compute dtype (bf16 below sm_80), or None (also when its cc is unknown).

    >>> dtype_problem(Gpu("Tesla T4", 1, "table", "7.5"), "bf16", None)[:44]
    'bf16 needs compute capability 8.0 (Ampere) o'
    >>> dtype_problem(Gpu("Tesla T4", 1, "table", "7.5"), "fp32", "fp16") is None
    True
    """
    want = amp or dtype
    if want != "bf16" or not gpu.cc:
        return None
    try:
        major, minor = (int(x) for x in gpu.cc.split(".")[:2])
    except ValueError:
        return None
    if (major, minor) >= BF16_MIN_CC:
        return None
    return (
        f"bf16 needs compute capability 8.0 (Ampere) or later; {gpu.name} is {gpu.cc}: "
        "torch.cuda.is_bf16_supported() is False there; use --dtype fp16 (or fp32, or --amp fp16)"
    )


@dataclass(frozen=True)
class Way:
    """A change that makes the run fit ``gpu``: its flags and the new peak."""

    label: str
    flags: str
    peak_bytes: int
    fits: bool


@dataclass(frozen=True)
class FitReport:
    estimate: Estimate
    verdicts: tuple[Verdict, ...]
    ways: tuple[Way, ...]  # for the first GPU it does not fit (empty when it fits them all)
    ways_for: Gpu | None
    max_batch: int | None  # on the smallest GPU given; None: not even batch 1 fits
    max_seq: int | None
    limit_gpu: Gpu | None


def fit_report(
    spec: ModelSpec, w: Workload, gpus: Sequence[Gpu], table_gpus: Sequence[Gpu], const: Constants
) -> FitReport:
    """The estimate, a verdict per GPU in ``gpus``, ways to fit, and the largest batch/context that
    fit the smallest of ``gpus``. ``table_gpus``: candidates for "a larger GPU"."""
    est = estimate(spec, w, const)
    verdicts = tuple(_verdict(g, est, w) for g in gpus)
    short = next((v.gpu for v in verdicts if not v.fits), None)
    ways = tuple(_ways(spec, w, short, table_gpus, const)) if short else ()
    smallest = min(gpus, key=lambda g: g.total_bytes) if gpus else None
    max_batch = max_seq = None
    if smallest is not None:
        limit = smallest.total_bytes
        max_batch = _largest(lambda b: _peak(spec, w.with_(batch=b), const), 1, MAX_BATCH, limit)
        seq_cap = MAX_SEQ
        if spec.traits.learned_positions and spec.max_positions:
            seq_cap = spec.max_positions - w.new_tokens
        max_seq = _largest(lambda s: _peak(spec, w.with_(seq=s), const), 1, max(1, seq_cap), limit)
    return FitReport(est, verdicts, ways, short, max_batch, max_seq, smallest)


def _verdict(g: Gpu, est: Estimate, w: Workload) -> Verdict:
    """Judged with the allocator reserve at its band's upper edge (a "fits" must not OOM)."""
    problem = dtype_problem(g, w.dtype, w.amp)
    need = est.peak_high_bytes or est.peak_bytes
    return Verdict(g, need <= g.total_bytes and problem is None, g.total_bytes - need, problem)


def _peak(spec: ModelSpec, w: Workload, const: Constants) -> int:
    """The peak a way or a largest batch is judged by: the band's upper edge."""
    e = estimate(spec, w, const)
    return e.peak_high_bytes or e.peak_bytes


def _largest(peak: Callable[[int], int], lo: int, hi: int, limit: int) -> int | None:
    """The largest x in [lo, hi] with peak(x) <= limit (peak grows with x); None if not even lo."""
    if peak(lo) > limit:
        return None
    if peak(hi) <= limit:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if peak(mid) <= limit:
            lo = mid
        else:
            hi = mid
    return lo


def _ways(spec: ModelSpec, w: Workload, gpu: Gpu, table_gpus: Sequence[Gpu], const: Constants) -> list[Way]:
    limit = gpu.total_bytes
    out: list[Way] = []
    prefix = ""

    def consider(label: str, flags: str, changed: Workload) -> None:
        if changed.problems(spec):
            return
        p = _peak(spec, changed, const)
        out.append(Way(label, (prefix + " " + flags).strip(), p, p <= limit))

    if dtype_problem(gpu, w.dtype, w.amp):
        # the GPU has no bf16: every other way is on top of fp16
        fixed, prefix = (w.with_(amp="fp16"), "--amp fp16") if w.amp else (w.with_(dtype="fp16"), "--dtype fp16")
        consider("fp16 instead of bf16 (this GPU has no bf16)", "", fixed)
        w = fixed
    if w.train:
        if w.amp and w.dtype == "fp32":
            consider(
                f"pure {w.amp} weights (no fp32 copy; AdamW states follow the weights' dtype)",
                f"--dtype {w.amp}",
                w.with_(dtype=w.amp, amp=None),
            )
        if w.optimizer in ("adamw", "adamw_foreach"):
            consider("8-bit AdamW (bitsandbytes)", "--optimizer adamw8bit", w.with_(optimizer="adamw8bit"))
            consider("Adafactor (factored second moment)", "--optimizer adafactor", w.with_(optimizer="adafactor"))
        if not w.grad_checkpointing:
            consider("gradient checkpointing", "--grad-checkpointing", w.with_(grad_checkpointing=True))
        if not w.lora_rank:
            consider("LoRA r=16 (frozen base, trained adapters)", "--lora 16", w.with_(lora_rank=16))
        if not w.quant:
            consider(
                "QLoRA: int4 base + LoRA r=16",
                "--quant int4 --lora 16",
                w.with_(quant="int4", lora_rank=w.lora_rank or 16),
            )
        if w.zero != 3:
            for n in (2, 4, 8, 16, 32, 64):
                changed = w.with_(zero=3, gpus=n, ddp=False, pp=1)
                if changed.problems(spec):
                    break
                if _peak(spec, changed, const) <= limit:
                    consider(f"ZeRO-3 / FSDP over {n} GPUs", f"--zero 3 --gpus {n}", changed)
                    break
    else:
        if w.tp == 1 and w.gpus == 1:
            for n in (2, 4, 8):
                changed = w.with_(tp=n, gpus=n)
                if changed.problems(spec):
                    continue
                if _peak(spec, changed, const) <= limit:
                    consider(f"tensor parallel over {n} GPUs (per GPU)", f"--tp {n}", changed)
                    break
        for q in ("int8", "int4"):
            if w.quant != q and not (w.quant == "int4" and q == "int8"):
                consider(f"{q} weights", f"--quant {q}", w.with_(quant=q))
        seq = _largest(lambda s: _peak(spec, w.with_(seq=s), const), 1, w.seq, limit)
        if seq and seq < w.seq:
            consider(f"a shorter prompt ({seq} tokens)", f"--seq {seq}", w.with_(seq=seq))
    if w.batch > 1:
        b = _largest(lambda x: _peak(spec, w.with_(batch=x), const), 1, w.batch, limit)
        if b:
            consider(f"a smaller batch ({b})", f"--batch {b}", w.with_(batch=b))
    prefix = ""
    need = _peak(spec, w, const)
    bigger = sorted(
        (g for g in table_gpus if g.total_bytes >= need and not dtype_problem(g, w.dtype, w.amp)),
        key=lambda g: g.total_bytes,
    )
    if bigger:
        g = bigger[0]
        out.append(
            Way(f"a larger GPU: {g.name} ({g.total_bytes / GIB:.0f} GiB, {g.source})", f'--gpu "{g.name}"', need, True)
        )
    return out

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
from dataclasses import dataclass, replace
from typing import Callable

from envdoctor.fit.activations import effective_attention
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
    note: str | None = None  # how the GPU runs it differently from the estimate printed (SDPA's math kernel)
    tight: str | None = None  # it fits, with less than TIGHT_SHARE of the usable memory spare: why that is close


#: a "fits" with less than this share of the usable memory spare is called tight
TIGHT_SHARE = 0.05


def tight_note(fits: bool, spare_bytes: int, usable_bytes: int) -> str | None:
    """Why a "fits" is close, when the spare (at the band's upper edge) is under :data:`TIGHT_SHARE`
    of the usable memory; None when it does not fit or has more spare. Pure.

    >>> tight_note(True, int(0.04 * 100 * 2**30), 100 * 2**30)[:36]
    'tight: 4.0% of the usable memory spa'
    >>> tight_note(True, int(0.06 * 100 * 2**30), 100 * 2**30) is None
    True
    >>> tight_note(False, -1, 100 * 2**30) is None
    True
    """
    if not fits or usable_bytes <= 0 or spare_bytes < 0 or spare_bytes >= TIGHT_SHARE * usable_bytes:
        return None
    return (
        f"tight: {spare_bytes / usable_bytes * 100:.1f}% of the usable memory spare (under "
        f"{TIGHT_SHARE * 100:.0f}%): on the held-out set the point estimate was up to 8.6% under the measured "
        "peak and the upper edge once 0.8% under (docs/fit.md, 'Fourth held-out results'); a long run's "
        "fragmentation, other processes on the GPU and a library's workspace (cuDNN, compiled kernels, "
        "NCCL grown past its figure) come on top"
    )


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


#: bitsandbytes' minimum compute capability per feature (its installation guide's table, v0.50.0:
#: https://huggingface.co/docs/bitsandbytes/v0.50.0/installation): LLM.int8() 7.5 (Turing), the
#: 8-bit optimizers and NF4/FP4 quantisation 6.0 (Pascal)
BNB_INT8_MIN_CC = (7, 5)
BNB_MIN_CC = (6, 0)
BNB_SOURCE = "bitsandbytes' installation guide, https://huggingface.co/docs/bitsandbytes/v0.50.0/installation"


def _cc(gpu: Gpu) -> tuple[int, int] | None:
    try:
        major, minor = (int(x) for x in (gpu.cc or "").split(".")[:2])
    except ValueError:
        return None
    return major, minor


def gpu_problem(gpu: Gpu, w: Workload) -> str | None:
    """Why ``gpu`` cannot run ``w`` whatever its memory, or None (also when its cc is unknown): bf16
    (weights, autocast or the KV cache) below sm_80, bitsandbytes' LLM.int8() (``--quant int8``)
    below sm_75, NF4 (``--quant int4``) and 8-bit AdamW below sm_60.

    >>> p100 = Gpu("Tesla P100-PCIE-16GB", 1, "table", "6.0")
    >>> gpu_problem(p100, Workload(mode="infer", dtype="fp16", quant="int8"))[:60]
    'LLM.int8() (--quant int8) needs compute capability 7.5 (Turi'
    >>> gpu_problem(p100, Workload(mode="infer", dtype="fp16", quant="int4")) is None
    True
    """
    problem = dtype_problem(gpu, w.dtype, w.amp) or (dtype_problem(gpu, w.kv_dtype, None) if w.kv_dtype else None)
    if problem:
        return problem
    cc = _cc(gpu)
    if cc is None:
        return None
    if w.quant == "int8" and cc < BNB_INT8_MIN_CC:
        return (
            f"LLM.int8() (--quant int8) needs compute capability 7.5 (Turing) or later; {gpu.name} is "
            f"{gpu.cc} ({BNB_SOURCE}); use --quant int4 (NF4, from 6.0) or no --quant"
        )
    uses = [
        what
        for what, on in (("NF4 (--quant int4)", w.quant == "int4"), ("8-bit AdamW", w.optimizer == "adamw8bit"))
        if on
    ]
    if uses and cc < BNB_MIN_CC:
        return (
            f"bitsandbytes' {' and '.join(uses)} needs compute capability 6.0 (Pascal) or later; {gpu.name} is "
            f"{gpu.cc} ({BNB_SOURCE})"
        )
    return None


def runnable(gpu: Gpu, w: Workload) -> tuple[Workload, list[str]]:
    """The nearest workload ``gpu`` can run and what was changed, each said ([] when ``w`` runs):
    fp16 for bf16, int4 for int8 (none below 6.0), AdamW for 8-bit AdamW below 6.0.

    >>> k80 = Gpu("Tesla K80", 1, "table", "3.7")
    >>> fixed, why = runnable(k80, Workload(mode="infer", dtype="bf16", quant="int8"))
    >>> fixed.dtype, fixed.quant, len(why)
    ('fp16', None, 2)
    """
    why: list[str] = []
    for _ in range(4):
        if gpu_problem(gpu, w) is None:
            break
        if dtype_problem(gpu, w.dtype, w.amp) or (w.kv_dtype and dtype_problem(gpu, w.kv_dtype, None)):
            w = w.with_(
                amp="fp16" if w.amp else None,
                dtype="fp16" if w.dtype == "bf16" else w.dtype,
                kv_dtype="fp16" if w.kv_dtype == "bf16" else w.kv_dtype,
            )
            why.append("fp16 instead of bf16 (this GPU has no bf16)")
            continue
        cc = _cc(gpu) or (0, 0)
        if w.quant == "int8" and cc < BNB_INT8_MIN_CC:
            if cc >= BNB_MIN_CC:
                w = w.with_(quant="int4")
                why.append("int4 (NF4) instead of int8 (LLM.int8() needs compute capability 7.5)")
            else:
                w = w.with_(quant=None)
                why.append("no quantisation (bitsandbytes needs compute capability 6.0)")
            continue
        if w.quant == "int4":
            w = w.with_(quant=None)
            why.append("no quantisation (bitsandbytes needs compute capability 6.0)")
            continue
        if w.optimizer == "adamw8bit":
            w = w.with_(optimizer="adamw")
            why.append("AdamW instead of 8-bit AdamW (bitsandbytes needs compute capability 6.0)")
            continue
        break
    return w, why


def math_sdpa(gpu: Gpu, spec: ModelSpec, w: Workload) -> bool:
    """SDPA runs torch's math kernel on ``gpu``: fp16 below sm_80 with grouped KV heads.

    torch's ``select_sdp_backend`` (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp) has no
    flash kernel below sm_80 (``check_flash_attention_hardware_support``), and its memory-efficient
    kernel takes no grouped query heads (``check_batch_size_and_num_heads_dense<false>``), which
    transformers 5 passes as ``enable_gqa=True``; the math kernel keeps the s x s softmax of every
    head. fp32 without autocast is already counted so by the estimate (activations.sdpa_math).

    >>> from envdoctor.fit.models import bundled_models
    >>> spec = bundled_models().find("Llama-3.2-1B").spec
    >>> math_sdpa(Gpu("Tesla T4", 1, "table", "7.5"), spec, Workload(dtype="fp16"))
    True
    >>> math_sdpa(Gpu("NVIDIA A100-SXM4-80GB", 1, "table", "8.0"), spec, Workload(dtype="fp16"))
    False
    """
    cc = _cc(gpu)
    return (
        cc is not None
        and cc < BF16_MIN_CC
        and w.attention == "sdpa"
        and effective_attention(spec, "sdpa") == "sdpa"
        and (w.amp or w.dtype) == "fp16"
        and 0 < spec.kv_heads < spec.heads
        and spec.family not in ("gpt2", "bert", "t5")
    )


def as_run(gpu: Gpu | None, spec: ModelSpec, w: Workload) -> Workload:
    """The workload as ``gpu`` runs it, for judging: SDPA's math kernel counted as eager attention
    (its fp32 softmax and the repeated k and v; eager keeps a bf16 cast besides, an upper bound)."""
    return w.with_(attention="eager") if gpu is not None and math_sdpa(gpu, spec, w) else w


MATH_SDPA_NOTE = (
    "SDPA runs its math kernel here (no flash kernel below sm_80, and the memory-efficient one takes "
    "no grouped KV heads, torch's sdp_utils.cpp): judged as --attention eager, an upper bound of it, {peak}"
)


#: the options a way may change, in the order its flags are printed: (field, flag, how a value is written)
_FLAG_ORDER = (
    ("dtype", "--dtype"),
    ("amp", "--amp"),
    ("kv_dtype", "--kv-dtype"),
    ("quant", "--quant"),
    ("optimizer", "--optimizer"),
    ("grad_checkpointing", "--grad-checkpointing"),
    ("lora_rank", "--lora"),
    ("zero", "--zero"),
    ("gpus", "--gpus"),
    ("ddp", "--ddp"),
    ("tp", "--tp"),
    ("pp", "--pp"),
    ("device_map", "--device-map"),
    ("batch", "--batch"),
    ("seq", "--seq"),
)
#: the value of a field that its flag's absence gives
_ABSENT = {
    "amp": None,
    "kv_dtype": None,
    "quant": None,
    "grad_checkpointing": False,
    "lora_rank": 0,
    "zero": 0,
    "gpus": 1,
    "ddp": False,
    "tp": 1,
    "pp": 1,
    "device_map": False,
}


def flags_between(given: Workload, changed: Workload) -> tuple[str, tuple[str, ...]]:
    """The flags that turn the command line of ``given`` into that of ``changed``: (what to add or
    set, the flags to leave out); pure.

    >>> amp = Workload(dtype="fp32", amp="bf16")
    >>> flags_between(amp, amp.with_(dtype="bf16", amp=None, optimizer="adamw8bit"))
    ('--dtype bf16 --optimizer adamw8bit', ('--amp',))
    >>> flags_between(Workload(ddp=True, gpus=4), Workload(zero=3, gpus=4))
    ('--zero 3', ('--ddp',))
    """
    add: list[str] = []
    drop: list[str] = []
    for field, flag in _FLAG_ORDER:
        old, new = getattr(given, field), getattr(changed, field)
        if old == new:
            continue
        if field == "gpus" and given.gpus == 1 and new in (changed.tp, changed.pp):
            continue  # --tp N / --pp N imply --gpus N where none was given
        if field in _ABSENT and new == _ABSENT[field]:
            drop.append(flag)
        elif isinstance(new, bool):
            add.append(flag)
        elif field == "device_map":
            add.append(f"{flag} auto")
        else:
            add.append(f"{flag} {str(new).replace('_', '-')}")
    if given.lora_targets and not changed.lora_rank:
        drop.append("--lora-targets")
    return " ".join(add), tuple(drop)


@dataclass(frozen=True)
class Way:
    """A change that makes the run fit ``gpu``: its flags (to add or set; ``without``: the given
    flags to leave out) and the new peak, at the band's upper edge."""

    label: str
    flags: str
    peak_bytes: int
    fits: bool
    without: tuple[str, ...] = ()


@dataclass(frozen=True)
class FitReport:
    estimate: Estimate
    verdicts: tuple[Verdict, ...]
    ways: tuple[Way, ...]  # for the first GPU it does not fit (empty when it fits them all)
    ways_for: Gpu | None
    max_batch: int | None  # on the smallest GPU given; None: not even batch 1 fits
    max_seq: int | None
    limit_gpu: Gpu | None
    #: the flags the largest batch and sequence assume beyond those given ("--dtype fp16" where the
    #: smallest GPU cannot run the workload as given), "" when none
    limits_with: str = ""


def fit_report(
    spec: ModelSpec, w: Workload, gpus: Sequence[Gpu], table_gpus: Sequence[Gpu], const: Constants
) -> FitReport:
    """The estimate, a verdict per GPU in ``gpus``, ways to fit, and the largest batch/context that
    fit the smallest of ``gpus``. ``table_gpus``: candidates for "a larger GPU"."""
    est = estimate(spec, w, const)
    verdicts = tuple(_verdict(g, est, w, spec, const) for g in gpus)
    short = next((v.gpu for v in verdicts if not v.fits), None)
    ways = tuple(_ways(spec, w, short, table_gpus, const)) if short else ()
    smallest = min(gpus, key=lambda g: g.total_bytes) if gpus else None
    max_batch = max_seq = None
    limits_with = ""
    if smallest is not None:
        limit = smallest.total_bytes
        # the limits of what the smallest GPU can run: on a T4, bf16's limits would be advice it cannot take
        lw, _ = runnable(smallest, w)
        limits_with = flags_between(w, lw)[0]
        max_batch = _largest(lambda b: _peak(spec, lw.with_(batch=b), const, smallest), 1, MAX_BATCH, limit)
        seq_cap = MAX_SEQ
        if spec.max_positions:
            # learned positions end there; RoPE runs on past it but the model was not trained there
            # (the estimate notes it), so the longest advised is the model's own
            seq_cap = spec.max_positions - lw.new_tokens
        max_seq = _largest(lambda s: _peak(spec, lw.with_(seq=s), const, smallest), 1, max(1, seq_cap), limit)
    return FitReport(est, verdicts, ways, short, max_batch, max_seq, smallest, limits_with)


#: NCCL's NVLS (NVLink SHARP) needs multicast objects (src/transport/nvls.cc asks
#: CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED), which Hopper and later GPUs on an NVSwitch have
NVLS_MIN_CC = (9, 0)


def for_gpu(const: Constants, gpu: Gpu | None) -> Constants:
    """The constants as ``gpu`` sees them: no NVLS buffers on the upper edge of a GPU below sm_90 (it
    has no multicast); unchanged for a GPU whose compute capability is unknown (``--memory``).

    >>> for_gpu(Constants(), Gpu("NVIDIA GeForce RTX 4090", 1, "table", "8.9")).nccl_nvls_bytes
    0
    >>> for_gpu(Constants(), Gpu("NVIDIA H200", 1, "table", "9.0")).nccl_nvls_bytes // 2**20
    1126
    """
    cc = _cc(gpu) if gpu is not None else None
    if cc is not None and cc < NVLS_MIN_CC and const.nccl_nvls_bytes:
        return replace(const, nccl_nvls_bytes=0)
    return const


def _verdict(g: Gpu, est: Estimate, w: Workload, spec: ModelSpec, const: Constants) -> Verdict:
    """Judged with the allocator reserve at its band's upper edge (a "fits" must not OOM), for the
    workload as the GPU runs it (:func:`as_run`), with NCCL's NVLS buffers only where it can have them."""
    problem = gpu_problem(g, w)
    need, note = est.peak_high_bytes or est.peak_bytes, None
    run = as_run(g, spec, w)
    mine = for_gpu(const, g)
    nvls = dict(est.term("nccl").inputs).get("nvls_bytes", 0)
    if run != w or (mine != const and nvls):
        need = _peak(spec, run, mine)
        notes = []
        if run != w:
            notes.append(MATH_SDPA_NOTE.format(peak=f"{need / GIB:.2f} GiB at the band's upper edge"))
        if mine != const and nvls:
            notes.append(
                f"no NVLS buffers here (compute capability {g.cc}: NCCL's NVLink SHARP needs multicast, Hopper "
                f"or later on an NVSwitch): judged at {need / GIB:.2f} GiB at the band's upper edge"
            )
        note = "; ".join(notes)
    fits = need <= g.total_bytes and problem is None
    spare = g.total_bytes - need
    return Verdict(g, fits, spare, problem, note, tight_note(fits, spare, g.total_bytes))


def _peak(spec: ModelSpec, w: Workload, const: Constants, gpu: Gpu | None = None) -> int:
    """The peak a way or a largest batch is judged by: the band's upper edge, as ``gpu`` runs it."""
    e = estimate(spec, as_run(gpu, spec, w), for_gpu(const, gpu))
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


def _ways(spec: ModelSpec, given: Workload, gpu: Gpu, table_gpus: Sequence[Gpu], const: Constants) -> list[Way]:
    """Each way is a whole workload, judged as a verdict is (the band's upper edge against ``gpu``'s
    usable memory, and only what ``gpu`` can run); its flags are the difference from ``given``, so
    the command line they make gives the same peak."""
    limit = gpu.total_bytes
    out: list[Way] = []
    seen: set[Workload] = set()

    def consider(label: str, changed: Workload) -> None:
        if changed in seen or changed == given or changed.problems(spec) or gpu_problem(gpu, changed):
            return
        seen.add(changed)
        p = _peak(spec, changed, const, gpu)
        flags, without = flags_between(given, changed)
        out.append(Way(label, flags, p, p <= limit, without))

    w, fixes = runnable(gpu, given)
    if fixes:
        # the GPU cannot run it as given: every other way is on top of what it can run
        consider("; ".join(fixes), w)
        if w.train and w.dtype == "fp16" and given.dtype == "bf16":
            # pure fp16 training has no loss scaling (HF Trainer refuses fp16=True on fp16 weights):
            # fp32 weights under fp16 autocast with a GradScaler is the recipe for these GPUs
            consider(
                "fp32 weights under fp16 autocast (mixed precision with loss scaling)",
                w.with_(dtype="fp32", amp="fp16"),
            )
    if w.train:
        if w.amp and w.dtype == "fp32":
            pure = w.with_(dtype=w.amp, amp=None)
            consider(f"pure {w.amp} weights (no fp32 copy; AdamW states follow the weights' dtype)", pure)
            if w.optimizer in ("adamw", "adamw_foreach"):
                consider(f"pure {w.amp} weights and 8-bit AdamW (bitsandbytes)", pure.with_(optimizer="adamw8bit"))
        if w.optimizer in ("adamw", "adamw_foreach"):
            consider("8-bit AdamW (bitsandbytes)", w.with_(optimizer="adamw8bit"))
            consider("Adafactor (factored second moment)", w.with_(optimizer="adafactor"))
        if not w.grad_checkpointing:
            consider("gradient checkpointing", w.with_(grad_checkpointing=True))
        if not w.lora_rank:
            consider("LoRA r=16 (frozen base, trained adapters)", w.with_(lora_rank=16))
        if not w.quant:
            rank = w.lora_rank or 16
            consider(f"QLoRA: int4 base + LoRA r={rank}", w.with_(quant="int4", lora_rank=rank))
        if w.pp > 1:
            for n in (4, 8, 16, 32, 64):
                staged = w.with_(pp=n, gpus=n)
                if n <= w.pp or staged.problems(spec):
                    continue
                if _peak(spec, staged, const, gpu) <= limit:
                    consider(f"pipeline over {n} stages (per GPU)", staged)
                    break
        if w.zero != 3:
            for n in (2, 4, 8, 16, 32, 64):
                changed = w.with_(zero=3, gpus=max(n, w.gpus) if w.ddp or w.zero else n, ddp=False, pp=1)
                if changed.problems(spec):
                    break
                if _peak(spec, changed, const, gpu) <= limit:
                    consider(f"ZeRO-3 / FSDP over {changed.gpus} GPUs", changed)
                    break
    else:
        if w.gpus == 1 or w.tp > 1 or w.device_map:
            # one GPU, or more of the split given: tensor parallel over more GPUs (device_map keeps its kind)
            for n in (2, 4, 8, 16):
                if n <= w.gpus:
                    continue
                changed = w.with_(gpus=n) if w.device_map else w.with_(tp=n, gpus=n)
                if changed.problems(spec):
                    continue
                if _peak(spec, changed, const, gpu) <= limit:
                    how = 'device_map="auto"' if w.device_map else "tensor parallel"
                    consider(f"{how} over {n} GPUs (per GPU)", changed)
                    break
        for q in ("int8", "int4"):
            if w.quant != q and not (w.quant == "int4" and q == "int8"):
                consider(f"{q} weights", w.with_(quant=q))
        seq = _largest(lambda s: _peak(spec, w.with_(seq=s), const, gpu), 1, w.seq, limit)
        if seq and seq < w.seq:
            consider(f"a shorter prompt ({seq} tokens)", w.with_(seq=seq))
    if w.batch > 1:
        b = _largest(lambda x: _peak(spec, w.with_(batch=x), const, gpu), 1, w.batch, limit)
        if b:
            consider(f"a smaller batch ({b})", w.with_(batch=b))
    # a larger GPU: the workload as given, on a GPU that can run it and has more memory than this one
    bigger = sorted(
        (g for g in table_gpus if g.total_bytes > limit and not gpu_problem(g, given)), key=lambda g: g.total_bytes
    )
    for g in bigger:
        need = _peak(spec, given, const, g)
        if need > g.total_bytes:
            continue
        out.append(
            Way(f"a larger GPU: {g.name} ({g.total_bytes / GIB:.0f} GiB, {g.source})", f'--gpu "{g.name}"', need, True)
        )
        break
    return out

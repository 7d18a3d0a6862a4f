"""The pure estimate: (model shape, workload, constants) -> peak memory of one GPU, term by term.

The peak is the largest of a few moments ("phases") of a step, each the sum of what is alive then:

- training: the loss backward (all activations kept, the fp32 log-softmax and its gradients),
  the backward of the last layer (the head's gradient and one layer's backward temporaries, plus
  one layer's recomputed activations with gradient checkpointing), the optimizer step (all
  gradients, and the foreach AdamW's temporary copy of one state);
- inference (``generate``): the prefill (KV cache of the prompt and one layer's working set),
  and the last generated token (the full KV cache and the cache's concatenation copy).

Every phase adds the CUDA context and cuBLAS workspace, and the caching allocator's reserve on
top of what is allocated. Each :class:`Term` carries its formula and the numbers that went in.

>>> from envdoctor.fit.spec import ModelSpec
>>> from envdoctor.fit.constants import Constants
>>> spec = ModelSpec(name="tiny", architecture="LlamaForCausalLM", family="llama", hidden=64,
...                  intermediate=128, layers=2, heads=4, kv_heads=2, head_dim=16, vocab=100)
>>> e = estimate(spec, Workload(mode="infer", batch=1, seq=10, dtype="fp32"), Constants())
>>> e.term("weights").bytes            # 86,848 parameters x 4 bytes
347392
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from envdoctor.fit.activations import (
    Precision,
    Saved,
    effective_attention,
    layer_bytes_per_token,
    layer_saved,
    sdpa_math,
)
from envdoctor.fit.constants import Constants
from envdoctor.fit.params import Weight, inventory, largest_layer_params, matmul_params, total_params
from envdoctor.fit.spec import ModelSpec
from envdoctor.fit.workload import DTYPE_BYTES, Workload

TermName = Literal[
    "weights",
    "gradients",
    "optimizer",
    "optimizer_step",
    "activations",
    "layer_working",
    "logits",
    "held_logits",
    "kv_cache",
    "autocast_copies",
    "zero_gathered",
    "ddp_buckets",
    "build_copy",
    "context",
    "nccl",
    "allocator_reserve",
]
Value = Any  # int, float, str or bool: what a term's inputs hold

#: linears LoRA leaves alone by default: the MoE router and Qwen's shared-expert gate
_NOT_LORA = ("router", "shared_expert_gate")


@dataclass(frozen=True)
class Term:
    """``bytes`` of one kind of memory, ``formula`` in words and symbols, ``inputs`` its numbers."""

    name: TermName
    bytes: int
    formula: str
    inputs: tuple[tuple[str, Value], ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Phase:
    """``terms`` alive at one moment; ``stranded``: bytes of freed blocks the caching allocator
    still holds and cannot hand to this moment's requests (they are too small), added to its reserve."""

    name: str
    terms: tuple[Term, ...]
    stranded: int = 0
    #: gradient checkpointing: the loss's gradient block and one layer's recomputed activations, each
    #: weighted in the reserve (see ``_reserve``)
    grad_block: int = 0
    recompute: int = 0
    #: generation: the generated tokens' KV cache, whose previous, one token shorter K/V blocks torch.cat
    #: leaves cached
    kv_cat: int = 0
    #: checkpointing with HF Trainer's loop: what of the freed low-precision logits block the optimizer
    #: states do not fill (they were cut from it; the fp32 gradient blocks stay whole, ``grad_block`` 0)
    spare: int = 0
    #: HF Trainer's loop: the low-precision logits block freed before the loss backward; with
    #: expandable_segments the loss's second fp32 block is mapped on after it (see ``_reserve``)
    freed_logits: int = 0
    #: the allocator reserve's band at this moment (low, high); (0, 0) before the reserve is added
    reserve_band: tuple[int, int] = (0, 0)
    #: NCCL's own memory's band (low, high), beside its ``nccl`` term's point; (0, 0) without one
    nccl_band: tuple[int, int] = (0, 0)

    @property
    def bytes(self) -> int:
        return sum(t.bytes for t in self.terms)

    def edge(self, high: bool) -> int:
        """The phase's bytes with the reserve (and NCCL's memory) at the band's upper (or lower) edge."""
        i = 1 if high else 0
        reserve = sum(t.bytes for t in self.terms if t.name == "allocator_reserve")
        nccl = sum(t.bytes for t in self.terms if t.name == "nccl")
        return self.bytes - reserve + self.reserve_band[i] - nccl + (self.nccl_band[i] if nccl else 0)


@dataclass(frozen=True)
class Flops:
    """Model FLOPs (no recompute) per token and per step, PaLM/nanoGPT convention (6N + 12·L·H·Q·T
    for training, 2N + 4·L·H·Q·T forward), and the causal variant (attention halved)."""

    convention: str
    n_matmul: int  # N: active matmul parameters (the head included, embedding lookups not)
    n_all: int  # every parameter a token touches (embeddings too): nanoGPT's N for tied GPT-2
    per_token: float
    per_token_causal: float
    per_step: float
    per_step_causal: float
    tokens_per_step: int


@dataclass(frozen=True)
class Estimate:
    spec: ModelSpec
    workload: Workload
    phases: tuple[Phase, ...]
    peak_phase: str
    peak_bytes: int  # one GPU, context and allocator reserve included (the model's point)
    params_total: int
    params_trainable: int
    flops: Flops
    notes: tuple[str, ...]
    #: per kind of block ("layer", "encoder layer", "decoder layer"): the tensors it keeps for backward
    activation_detail: tuple[tuple[str, tuple[Saved, ...]], ...] = ()
    #: the peak with the allocator reserve at its band's edges; verdicts use the upper one
    peak_low_bytes: int = 0
    peak_high_bytes: int = 0

    @property
    def terms(self) -> tuple[Term, ...]:
        return next(p.terms for p in self.phases if p.name == self.peak_phase)

    def term(self, name: str) -> Term:
        for t in self.terms:
            if t.name == name:
                return t
        return Term(name, 0, "not part of the peak")  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Run:
    """The precision and trainable set derived from the workload."""

    prec: Precision
    weight_bytes: float
    zero_layout: bool  # ZeRO with --amp: DeepSpeed's half params + half grads + fp32 master (ZeRO §3.1)
    trainable: int
    grad_bytes: int
    lora_linears: tuple[Weight, ...]
    lora_params: int


def estimate(spec: ModelSpec, w: Workload, const: Constants) -> Estimate:
    """The estimate for one GPU. Raises ValueError when ``w.problems(spec)`` is not empty."""
    problems = w.problems(spec)
    if problems:
        raise ValueError(problems[0])
    weights = inventory(spec)
    n_total = total_params(weights)
    run = _run(spec, w, weights, const)
    notes: list[str] = []
    if w.attention != effective_attention(spec, w.attention):
        notes.append(f"{spec.architecture}: counted with eager attention (transformers 5 has no flash path for it)")
    if spec.sliding_window and w.mode == "infer":
        notes.append(f"sliding window {spec.sliding_window}: the KV cache is counted at full length (an upper bound)")
    if spec.max_positions and not spec.traits.learned_positions and w.seq + w.new_tokens > spec.max_positions:
        notes.append(f"--seq + --new-tokens exceeds max_position_embeddings {spec.max_positions}")
    if spec.traits.moe and w.lora_rank:
        notes.append(
            "LoRA on MoE: the experts are 3-D parameters in transformers 5, not nn.Linear, so the "
            "adapters go on attention (and shared-expert) linears only"
        )
    if w.tp > 1:
        notes.append(
            f"tensor parallel over {w.tp} GPUs: one GPU's share; NCCL's buffers counted per communicator "
            "(the upper edge holds vLLM's custom all-reduce too)"
        )
    if w.device_map:
        notes.append(
            f'device_map="auto" over {w.gpus} GPUs: the fullest GPU (a balanced split assumed; '
            "accelerate's max_memory or an uneven split moves it)"
        )
    const_terms = _constant_terms(const)
    nccl, nccl_band = nccl_term(w, const)
    if nccl is not None:
        const_terms += (nccl,)
    if w.train:
        phases = _train_phases(spec, w, weights, run, const, notes)
        if w.pp > 1:
            phases = _pipeline_stages(spec, weights, phases, w.pp)
            notes.append(
                f"pipeline over {w.pp} stages (1F1B, --batch is the micro-batch): the fuller of the first "
                "and the last stage"
            )
    else:
        phases = _infer_phases(spec, w, weights, run, const)
    finished = []
    for p in phases:
        reserve, band = _reserve(p, w, const, spec.traits.moe)
        finished.append(replace(p, terms=p.terms + const_terms + (reserve,), reserve_band=band, nccl_band=nccl_band))
    peak = max(finished, key=lambda p: p.bytes)
    if _expandable(w.alloc_conf):
        notes.append(
            "expandable_segments: the loss's second fp32 block reserves only what the freed logits block "
            "does not cover (measured on two in-sample H200 rows, X15 and X16)"
        )
    return Estimate(
        spec=spec,
        workload=w,
        phases=tuple(finished),
        peak_phase=peak.name,
        peak_bytes=peak.bytes,
        params_total=n_total,
        params_trainable=run.trainable,
        flops=flops(spec, w, weights),
        notes=tuple(notes),
        activation_detail=_detail(spec, w, run) if w.train else (),
        peak_low_bytes=max(p.edge(False) for p in finished),
        peak_high_bytes=max(p.edge(True) for p in finished),
    )


def _detail(spec: ModelSpec, w: Workload, run: _Run) -> tuple[tuple[str, tuple[Saved, ...]], ...]:
    lora = [x.name for x in run.lora_linears]
    full = not w.lora_rank

    def one(cross: bool) -> tuple[Saved, ...]:
        return layer_saved(
            spec,
            run.prec,
            w.seq,
            w.attention,
            trainable_linears=full,
            lora=lora,
            lora_rank=w.lora_rank,
            cross_attention=cross,
        )

    if spec.decoder_layers:
        return (("encoder layer", one(False)), ("decoder layer", one(True)))
    return (("layer", one(False)),)


def _run(spec: ModelSpec, w: Workload, weights: tuple[Weight, ...], const: Constants) -> _Run:
    wb = DTYPE_BYTES[w.dtype]
    autocast = bool(w.amp) and w.dtype == "fp32"
    zero_layout = w.train and w.zero >= 1 and autocast
    if zero_layout or w.quant:
        autocast = False
    act = 2 if autocast or wb == 2 or zero_layout else 4
    resid = 2 if zero_layout else wb
    lora_linears = _lora_linears(weights, w) if w.lora_rank else ()
    lora_params = sum(w.lora_rank * (lw.rows + lw.cols) * lw.count for lw in lora_linears)
    n_total = total_params(weights)
    trainable = lora_params if w.lora_rank else (n_total if w.train else 0)
    grad_bytes = const.lora_adapter_bytes if w.lora_rank else (2 if zero_layout else wb)
    weight_bytes = 2.0 if zero_layout else float(wb)
    return _Run(
        Precision(act, resid, autocast), weight_bytes, zero_layout, trainable, grad_bytes, lora_linears, lora_params
    )


def _lora_linears(weights: tuple[Weight, ...], w: Workload) -> tuple[Weight, ...]:
    block = [x for x in weights if x.kind == "linear" and x.block]
    if w.lora_targets:
        return tuple(x for x in block if x.name in w.lora_targets or x.name.split(".")[-1] in w.lora_targets)
    return tuple(x for x in block if x.name not in _NOT_LORA)


def lora_linears(spec: ModelSpec, w: Workload) -> tuple[str, ...]:
    """The names of the linears ``w``'s LoRA adapts (``--lora-targets``, else every linear of the
    blocks but the MoE router and Qwen's shared-expert gate), as the estimate counts them."""
    return tuple(x.name for x in _lora_linears(inventory(spec), w))


def lora_target_names(spec: ModelSpec) -> tuple[str, ...]:
    """The names ``--lora-targets`` accepts for ``spec`` (the linears of its blocks)."""
    return tuple(x.name for x in inventory(spec) if x.kind == "linear" and x.block)


# --- terms ------------------------------------------------------------------------------------


def _constant_terms(const: Constants) -> tuple[Term, ...]:
    return (
        Term(
            "context",
            const.context_bytes + const.cublas_bytes,
            "CUDA context + cuBLAS workspace (measured once, H200)",
            (("cuda_context_bytes", const.context_bytes), ("cublas_bytes", const.cublas_bytes)),
        ),
    )


#: where NCCL's figures come from (data/fit.toml has each constant's own source)
NCCL_SOURCES = (
    "https://github.com/NVIDIA/nccl/issues/964",
    "https://github.com/NVIDIA/nccl/blob/v2.21.5-1/src/init.cc",
    "https://github.com/vllm-project/vllm/pull/10511",
    "https://github.com/NVIDIA/nccl/releases/tag/v2.21.5-1",
    "https://github.com/NVIDIA/nccl/issues/1685",
)


def nccl_term(w: Workload, const: Constants) -> tuple[Term | None, tuple[int, int]]:
    """NCCL's own memory on one GPU and its band (low, high), or (None, (0, 0)) for a workload that
    runs no NCCL collective (one GPU, ``device_map="auto"``: accelerate copies between the GPUs).

    One communicator per process group that runs collectives (DDP, ZeRO/FSDP, tensor parallel: one;
    a pipeline stage: the device communicator and its send/recv peer, one at the first and the last
    stage, which are the stages the estimate holds). NCCL allocates it with cudaMalloc/cuMem, outside
    torch's caching allocator, so it is persistent and takes no share of the reserve. The upper edge
    covers what a user meets without knowing it: vLLM's custom all-reduce beside NCCL's buffers for
    tensor parallel, NVLS's buffers on a communicator of 4 or more GPUs (NVSwitch systems).

    >>> t, band = nccl_term(Workload(mode="infer", tp=2, gpus=2), Constants())
    >>> t.bytes // 2**20, band[1] // 2**20
    (656, 1833)
    >>> nccl_term(Workload(mode="infer", device_map=True, gpus=2), Constants())
    (None, (0, 0))
    """
    groups: list[tuple[str, int, int]] = []  # (what, GPUs in the group, upper edge per communicator)
    if w.tp > 1:
        groups.append(("tensor parallel", w.tp, const.nccl_tp_high_bytes))
    if w.gpus > 1 and (w.ddp or w.zero):
        what = f"ZeRO-{w.zero}" if w.zero else "DDP"
        groups.append((what, w.gpus, const.nccl_comm_high_bytes))
    peers = 0
    if w.pp > 1:
        groups.append(("pipeline", w.pp, const.nccl_comm_high_bytes))
        peers = 1  # the first and the last stage each send to (and receive from) one neighbour
    if not groups:
        return None, (0, 0)
    nvls = sum(const.nccl_nvls_bytes for _, n, _ in groups if n >= 4)
    p2p = peers * const.nccl_p2p_peer_bytes
    point = len(groups) * const.nccl_comm_bytes + p2p
    low = len(groups) * const.nccl_comm_low_bytes + p2p
    high = sum(h for _, _, h in groups) + nvls + p2p
    names = ", ".join(f"{what} over {n} GPUs" for what, n, _ in groups)
    formula = (
        f"{len(groups)} communicator{'s' if len(groups) > 1 else ''} ({names})"
        + f" x {const.nccl_comm_bytes / 2**20:.0f} MiB"
        + (f" + {peers} send/recv peer x {const.nccl_p2p_peer_bytes / 2**20:.0f} MiB" if peers else "")
        + f" (NCCL's buffers, outside torch's allocator; band {low / 2**30:.2f}..{high / 2**30:.2f} GiB"
        + (", the upper edge with NVLS's buffers at 4+ GPUs" if nvls else "")
        + ", the verdict uses the upper edge)"
    )
    inputs: tuple[tuple[str, Value], ...] = (
        ("communicators", len(groups)),
        ("groups", names),
        ("per_communicator_bytes", const.nccl_comm_bytes),
        ("p2p_peers", peers),
        ("p2p_peer_bytes", const.nccl_p2p_peer_bytes),
        ("nvls_bytes", nvls),
        ("nccl_low_bytes", low),
        ("nccl_high_bytes", high),
        ("source", " ".join(NCCL_SOURCES)),
    )
    note = (
        "measured 544-688 MB per communicator (nccl#964); NCCL 2.22+ allocates lazily (less), NVLS on older "
        "NCCL and vLLM's custom all-reduce more; NCCL_BUFFSIZE and NCCL_NVLS_ENABLE=0 move it"
    )
    return Term("nccl", point, formula, inputs, note), (low, high)


#: torch's caching allocator (c10/cuda/CUDACachingAllocator.cpp): a request of at least kMinLargeAlloc gets a
#: segment of its own, rounded up to kRoundLarge; smaller large-pool requests share kLargeBuffer segments
_MIN_LARGE_ALLOC = 10 * 2**20

#: what stays allocated across steps in the same blocks (the model, its states, DDP's buckets): the
#: caching allocator does not fragment it; the rest of a moment (activations, logits, gradients, the
#: KV cache, temporaries) is allocated and freed every step and is what leaves free blocks unusable
_PERSISTENT = ("weights", "optimizer", "ddp_buckets", "zero_gathered", "context", "nccl")


def _expandable(alloc_conf: str) -> bool:
    """``expandable_segments:True`` in a PYTORCH_CUDA_ALLOC_CONF-style string."""
    for part in alloc_conf.replace(" ", "").lower().split(","):
        key, _, value = part.partition(":")
        if key == "expandable_segments" and value in ("true", "1"):
            return True
    return False


def _reserve(phase: Phase, w: Workload, const: Constants, moe: bool = False) -> tuple[Term, tuple[int, int]]:
    """The caching allocator's reserve above allocated at one moment, and its band (low, high).

    torch's CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp) rounds every request to 512 B,
    packs requests up to 1 MiB into 2 MiB segments and those up to 10 MiB into 20 MiB ones, gives a
    larger request its own segment rounded to 2 MiB, reuses a freed block for a request that fits it
    (best fit, splitting) and never merges separate segments. So what is kept across steps costs
    about nothing; what is allocated and freed every step (``transient``) leaves blocks of the wrong
    size behind; a freed low-precision logits block next to the loss's fp32 requests is the largest
    such block (``stranded``). With gradient checkpointing the loss backward's second fp32 gradient
    block needs a segment of its own and the recomputed layer's blocks are cut by the parameters'
    gradients (``grad_block``, ``recompute``); in generation torch.cat leaves every layer's previous
    K/V blocks cached (``kv_cat``). Model: segments + f x transient + s x stranded + c_g x grad_block +
    c_r x recompute + c_kv x kv_cat, the constants fitted on in-sample H200 rows only (docs/fit.md,
    data/fit.toml); the band scales the variable part."""
    transient = sum(t.bytes for t in phase.terms if t.name not in _PERSISTENT)
    f = const.allocator_transient_train if w.train else const.allocator_transient_infer
    if w.train and w.grad_checkpointing:
        f = const.allocator_transient_ckpt
    if w.train and moe:  # routed experts: per-expert token groups of every size (in-sample H19, X5, H17)
        f = const.allocator_transient_moe
    s = const.allocator_stranded_factor
    expandable = _expandable(w.alloc_conf)
    if w.grad_checkpointing:
        c_g = const.allocator_ckpt_grad_block_custom if w.loop == "custom" else const.allocator_ckpt_grad_block
    else:
        c_g = const.allocator_grad_block
    # fourth round: the optimizer states, created by the first step's optimizer.step() out of the blocks that
    # step freed (activations, logits), displace the next step's transient into new segments
    states = sum(t.bytes for t in phase.terms if t.name == "optimizer") if w.train else 0
    c_o = const.allocator_states
    ckpt = c_g * phase.grad_block + const.allocator_ckpt_recompute * phase.recompute
    kv_cat = const.allocator_kv_cat * phase.kv_cat
    variable = f * transient + s * phase.stranded + ckpt + kv_cat + c_o * states + phase.spare
    if expandable:
        # fifth round, measured (X15, X16 against rows 10 and 13): expandable_segments maps pages onto one
        # segment per stream (CUDACachingAllocator.cpp, ExpandableSegment), so a free block at its end is
        # extended instead of a new segment cut: the loss's second fp32 block needs only what the freed
        # low-precision logits block before it does not cover; the forward's reserve was the same
        ckpt = c_g * max(0, phase.grad_block - phase.freed_logits) + const.allocator_ckpt_recompute * phase.recompute
        variable = f * transient + ckpt + kv_cat + c_o * states + phase.spare
    seg = const.allocator_segments_bytes
    point = int(seg + variable)
    allocated = sum(t.bytes for t in phase.terms if t.name not in ("context", "nccl"))  # nccl: not torch's
    low = int(seg + const.allocator_band_low * variable)
    # the upper edge: the band's multiple, at least a floor share of everything allocated (a moment whose
    # own transient is small, the optimizer step or a weight-bound prefill, still inherits the reserve
    # an earlier moment of the step left behind)
    # the floor is training's: there the step's later moments inherit what the backward left reserved;
    # a weight-bound inference reserves 0.1-2% (in-sample rows 21-25) and the model covers it
    floor = (const.allocator_floor_moe if moe else const.allocator_floor) if w.train else 0.0
    high = int(seg + max(const.allocator_band_high * variable, floor * allocated))
    formula = (
        f"segments + f x transient + s x stranded (torch's caching allocator model; band "
        f"{low / 2**30:.2f}..{high / 2**30:.2f} GiB, the verdict uses the upper edge)"
    )
    if expandable:
        formula = (
            "expandable_segments: segments + f x transient + c_g x (the loss's second fp32 block less the freed "
            "low-precision logits block it is mapped on after) (in-sample X15, X16)"
        )
    if ckpt:
        formula += " + c_g x the loss's second fp32 gradient block (+ c_r x one layer recomputed with checkpointing)"
    if states:
        formula += " + c_o x the optimizer states (they take the first step's freed blocks)"
    if kv_cat:
        formula += " + c_kv x the KV cache (torch.cat's previous K/V blocks, cached)"
    inputs: tuple[tuple[str, Value], ...] = (
        ("transient_bytes", transient),
        ("f", f),
        ("stranded_bytes", phase.stranded),
        ("s", s),
        ("ckpt_grad_block_bytes", phase.grad_block),
        ("c_g", c_g),
        ("ckpt_recompute_bytes", phase.recompute),
        ("c_r", const.allocator_ckpt_recompute),
        ("kv_cat_bytes", phase.kv_cat),
        ("c_kv", const.allocator_kv_cat),
        ("optimizer_state_bytes", states),
        ("c_o", c_o),
        ("spare_logits_block_bytes", phase.spare),
        ("freed_logits_block_bytes", phase.freed_logits),
        ("segments_bytes", seg),
        ("reserve_low_bytes", low),
        ("reserve_high_bytes", high),
        ("floor", floor),
        ("alloc_conf", w.alloc_conf or "default"),
    )
    return Term("allocator_reserve", point, formula, inputs), (low, high)


def _build_phase(spec: ModelSpec, w: Workload, weights_t: Term, run: _Run) -> Phase | None:
    """Building the model from its config (``from_config``, what ``--measure`` does): a tied head is
    created with its own weight, then tied to the embedding (its storage freed): for that moment
    the weights + one V x h matrix are alive. None when the head is not tied or the weights are quantised."""
    if not spec.tie_embeddings or w.quant:
        return None
    copy = spec.vocab * spec.hidden * run.weight_bytes
    term = Term(
        "build_copy",
        int(copy),
        "the head's own weight before transformers ties it to the embedding: V x h x bytes",
        (("vocab", spec.vocab), ("hidden", spec.hidden), ("bytes_each", run.weight_bytes)),
        note="from_config (--measure); from_pretrained builds on the meta device and has no such copy",
    )
    return Phase("model build", (weights_t, term))


def _weights_term(spec: ModelSpec, w: Workload, weights: tuple[Weight, ...], run: _Run, const: Constants) -> Term:
    n = total_params(weights)
    shard = w.gpus if w.zero == 3 else 1
    inputs: list[tuple[str, Value]] = [("params", n)]
    if w.quant:
        quantised = sum(x.numel for x in weights if x.kind in ("linear", "expert") and x.block)
        per = const.nf4_bytes_per_param if w.quant == "int4" else const.int8_bytes_per_param
        base = quantised * per + (n - quantised) * run.weight_bytes
        inputs += [
            ("quantised_params", quantised),
            ("bytes_per_quantised_param", round(per, 5)),
            ("other_params_bytes_each", run.weight_bytes),
        ]
        formula = (
            f"quantised block linears x {per:.4f} B ({w.quant}"
            f"{', NF4 + double-quant constants' if w.quant == 'int4' else ''})"
            f" + the rest x {run.weight_bytes:g} B"
        )
    else:
        base = n * run.weight_bytes
        inputs.append(("bytes_each", run.weight_bytes))
        what = "bf16/fp16 copy of the ZeRO layout" if run.zero_layout else w.dtype
        formula = f"params x {run.weight_bytes:g} B ({what})"
    if shard > 1:
        base /= shard
        inputs.append(("zero3_shards", shard))
        formula += f" / {shard} GPUs (ZeRO-3)"
    if run.lora_params:
        base += run.lora_params * const.lora_adapter_bytes
        inputs += [
            ("lora_params", run.lora_params),
            ("lora_bytes_each", const.lora_adapter_bytes),
            ("lora_rank", w.lora_rank),
            ("lora_linears", ",".join(sorted({x.name for x in run.lora_linears}))),
        ]
        formula += " + LoRA adapters r*(d_in + d_out) per adapted linear x 4 B (PEFT keeps them fp32)"
    return Term("weights", int(base), formula, tuple(inputs))


def _state_bytes(
    w: Workload, weights: tuple[Weight, ...], run: _Run, const: Constants
) -> tuple[float, str, list[tuple[str, Value]]]:
    """Optimizer bytes for all trainable params (unsharded), the formula, the inputs."""
    p_bytes = run.grad_bytes  # the trainable params' own dtype (states follow it: torch zeros_like(p))
    n = run.trainable
    if w.optimizer in ("adamw", "adamw_foreach"):
        if run.zero_layout:
            return 12.0 * n, "params x 12 B (fp32 master, momentum, variance: ZeRO §3.1, K=12)", [("trainable", n)]
        return (
            2.0 * p_bytes * n,
            f"params x 2 states x {p_bytes} B (AdamW exp_avg, exp_avg_sq = zeros_like(param))",
            [("trainable", n), ("state_bytes", p_bytes)],
        )
    if w.optimizer == "adamw8bit":
        per = const.adam8bit_bytes_per_param + (4 if run.zero_layout else 0)
        master = ", + fp32 master" if run.zero_layout else ""
        return per * n, f"params x {per:g} B (two 8-bit states + block absmax{master})", [("trainable", n)]
    if w.optimizer == "sgd":
        per = (4 + 4) if run.zero_layout else p_bytes
        master = ", + fp32 master" if run.zero_layout else ""
        return float(per * n), f"params x {per} B (one momentum buffer{master})", [("trainable", n)]
    # adafactor: factored second moment in the gradient's dtype (torch 2.13 torch/optim/_adafactor.py
    # _init_group: row_var = p.grad.new_zeros(row_shape), col_var likewise, vectors zeros_like(p.grad)):
    # rows + cols per matrix, numel per vector, x the param's bytes
    trainable_w = _trainable_weights(weights, w, run)
    states = 0
    for x in trainable_w:
        states += ((x.rows + x.cols) if x.rows > 1 and x.cols > 1 else x.rows * x.cols) * x.count * p_bytes
    if run.zero_layout:
        states += 4 * n
    return (
        float(states),
        f"sum over matrices of (rows + cols) x {p_bytes} B, vectors numel x {p_bytes} B (Adafactor, factored, "
        "in the gradient's dtype)",
        [("trainable", n), ("matrices", len(trainable_w)), ("state_bytes", p_bytes)],
    )


def _trainable_weights(weights: tuple[Weight, ...], w: Workload, run: _Run) -> list[Weight]:
    if w.lora_rank:
        out = []
        for x in run.lora_linears:
            out.append(Weight(f"{x.name}.lora_A", w.lora_rank, x.cols, x.count, "linear"))
            out.append(Weight(f"{x.name}.lora_B", x.rows, w.lora_rank, x.count, "linear"))
        return out
    return list(weights)


def _train_phases(
    spec: ModelSpec, w: Workload, weights: tuple[Weight, ...], run: _Run, const: Constants, notes: list[str]
) -> tuple[Phase, ...]:
    b, s, A = w.batch, w.seq, run.prec.act
    tokens = b * s
    weights_t = _weights_term(spec, w, weights, run, const)
    opt_bytes, opt_formula, opt_inputs = _state_bytes(w, weights, run, const)
    opt_shard = w.gpus if w.zero >= 1 else 1
    optimizer = Term(
        "optimizer",
        int(opt_bytes / opt_shard),
        opt_formula + (f" / {opt_shard} GPUs (ZeRO-{w.zero})" if opt_shard > 1 else ""),
        tuple(opt_inputs) + (("optimizer", w.optimizer),),
    )
    grad_shard = w.gpus if w.zero >= 2 else 1
    grads_all = run.trainable * run.grad_bytes
    gradients = Term(
        "gradients",
        int(grads_all / grad_shard),
        f"trainable params x {run.grad_bytes} B" + (f" / {grad_shard} GPUs (ZeRO-{w.zero})" if grad_shard > 1 else ""),
        (("trainable", run.trainable), ("bytes_each", run.grad_bytes)),
    )
    extra: list[Term] = []
    if run.prec.autocast:
        n_mm = matmul_params(weights) + (spec.vocab * spec.hidden if spec.tie_embeddings else 0)
        words = "autocast's bf16/fp16 copy of every matmul weight, kept for backward = matmul params x 2 B"
        if w.grad_checkpointing:
            # fifth round: a checkpointed layer keeps no saved tensors, so its weights' casts live only in
            # autocast's cast cache, which is cleared when the autocast region exits (torch
            # autocast_mode.py __exit__: torch.clear_autocast_cache()), before loss.backward(); the
            # recomputation casts one layer at a time. What stays is the head's cast, saved by its matmul
            # (in-sample: the AMP + checkpointing rows were over by 0.7-2.8 B per logit)
            n_mm = spec.vocab * spec.hidden
            words = (
                "autocast's bf16/fp16 copy of the head's weight, saved for backward (a checkpointed layer's casts "
                "are freed with autocast's cache when the forward's autocast region exits) = V x h x 2 B"
            )
        extra.append(Term("autocast_copies", n_mm * 2, words, (("matmul_params", n_mm),)))
    if w.zero == 3:
        ll = largest_layer_params(spec, weights)
        extra.append(
            Term(
                "zero_gathered",
                int(2 * ll * run.weight_bytes),
                "ZeRO-3 gathers a layer at a time, with one prefetched = 2 x largest layer x bytes",
                (("largest_layer_params", ll), ("bytes_each", run.weight_bytes)),
            )
        )
        notes.append("ZeRO/FSDP communication buckets are not counted")
    if w.ddp and w.gpus > 1 and w.zero == 0:
        extra.append(
            Term(
                "ddp_buckets",
                grads_all,
                "DDP's gradient buckets, a second copy of the gradients (gradient_as_bucket_view=False)",
                (("gradient_bytes", grads_all),),
            )
        )

    acts, per_layer, layer_max = _activations(spec, w, run)
    per_layer_inputs = tuple((k, v) for k, v in per_layer)
    activations = Term(
        "activations",
        int(acts["total"]),
        acts["formula"],
        per_layer_inputs
        + (
            ("batch", b),
            ("seq", s),
            ("attention", effective_attention(spec, w.attention)),
            ("grad_checkpointing", w.grad_checkpointing),
            ("act_bytes", A),
            ("resid_bytes", run.prec.resid),
            ("autocast", run.prec.autocast),
        ),
    )

    V = spec.vocab
    E = tokens * V
    upcast = 4 if A != 4 else 0
    loss_elem = max(A + upcast + 4, 12, 4 + (A if A != 4 else 0))
    # BERT's MLM head: BertForMaskedLM calls CrossEntropyLoss on the bf16/fp16 scores as they are (no
    # .float()), so log-softmax, its gradient and the scores' gradient are all in A (H200 row H3 measured
    # 6 B per logit less than the upcast count); under autocast log_softmax runs in fp32 as before
    # fifth round: T5ForConditionalGeneration does the same (transformers modeling_t5.py: loss_fct =
    # CrossEntropyLoss(ignore_index=-100); loss_fct(lm_logits.view(-1, lm_logits.size(-1)), labels.view(-1)),
    # no .float()): measured, its backward grew max_memory_reserved by b*s*V x 2, not x 4 (T4, t5-base b8, N2)
    mlm_low = spec.family in ("bert", "t5") and A == 2 and not run.prec.autocast
    if mlm_low:
        loss_elem = 3 * A
    # fifth round, measured (not derived from the source): the same two losses under autocast, where
    # autocast's own cast feeds log_softmax instead of an explicit .float(), kept 10 B per logit at the loss
    # backward, not 12 (bert-large AMP +1.75 B, T3 +2.2 B, t5-small AMP H4 +1.9 B per logit over with 12)
    amp_direct = spec.family in ("bert", "t5") and run.prec.autocast
    if amp_direct:
        loss_elem = A + 8
    softcap = A if spec.traits.logit_softcap else 0
    loss_words = (
        "log-softmax output kept in fp32 (4) + its gradient (4) + the gradient of the upcast logits (4) "
        "during the loss backward (transformers ForCausalLMLoss upcasts logits.float(); cross_entropy = "
        "log_softmax + nll_loss)"
    )
    if amp_direct:
        loss_words = (
            "log-softmax output (fp32, autocast) and its gradient (4 + 4) + the scores' gradient (A): measured on "
            "the H200 for BERT's and T5's CrossEntropyLoss on autocast's bf16 scores (no explicit .float())"
        )
    if mlm_low:
        head_class = "BertForMaskedLM" if spec.family == "bert" else "T5ForConditionalGeneration"
        loss_words = (
            f"log-softmax output, its gradient and the scores' gradient, each {A} B ({head_class}'s "
            "CrossEntropyLoss runs on the scores' own dtype, no upcast)"
        )
    logits = Term(
        "logits",
        (loss_elem + softcap) * E,
        f"logits b*s*V x {loss_elem + softcap} B: "
        + loss_words
        + (" + tanh of the soft-capped logits (A)" if softcap else ""),
        (("batch", b), ("seq", s), ("vocab", V), ("bytes_per_logit", loss_elem + softcap)),
    )
    head_trainable = not w.lora_rank
    head_grad = spec.vocab * spec.hidden * run.grad_bytes if head_trainable else 0
    working_pt = _layer_backward_working(spec, w, run, layer_max)
    # fifth round: bitsandbytes' MatMul4Bit.backward dequantizes the 4-bit weight for grad_A
    # (F.dequantize_4bit(B, ctx.state).to(grad_output.dtype)): one copy of a block linear beside the temporaries
    dq = (
        max((x.rows * x.cols for x in weights if x.kind == "linear" and x.block), default=0) if w.quant == "int4" else 0
    )
    working = Term(
        "layer_working",
        int(max(A * E, working_pt * tokens + dq * A)),
        "the larger of dlogits (b*s*V x A) and one layer's backward temporaries"
        + (" + one layer's recomputed activations" if w.grad_checkpointing else "")
        + (" + the 4-bit linear dequantized for its input's gradient (bitsandbytes)" if dq else ""),
        (("dlogits_bytes", A * E), ("layer_working_bytes_per_token", working_pt), ("dequantized_linear_params", dq)),
    )
    head_grads = Term(
        "gradients",
        int(head_grad / grad_shard),
        "the head's gradient, computed first: V x h x bytes",
        (("vocab", V), ("hidden", spec.hidden), ("bytes_each", run.grad_bytes)),
    )
    step_tmp = _step_temporaries(w, weights, run, opt_shard)
    # the logits in A bytes (bf16/fp16 weights, or the head under autocast) are freed after the forward;
    # their block cannot hold the fp32 gradients of the loss backward (the allocator never merges
    # separate segments), so it stays reserved beside them
    stranded = A * E if A != 4 and not mlm_low else 0
    held: tuple[Term, ...] = ()
    if w.loop == "custom":
        # the examples' loop holds outputs (its logits, in the head's output dtype A) from the forward
        # through the backward and the step; in A = 2 bytes that block is the one the trainer loop strands
        held = (
            Term(
                "held_logits",
                A * E,
                "custom loop: outputs.logits held through backward and the step (outputs = model(**batch); "
                "outputs.loss.backward()) = b*s*V x A",
                (("batch", b), ("seq", s), ("vocab", V), ("act_bytes", A), ("loop", w.loop)),
            ),
        )
        stranded = 0
    # gradient checkpointing: the reserve the step keeps (torch never gives a segment back by itself, so
    # what the backward reserved is still reserved at the optimizer step): the loss's gradient block (b*s*V x 4
    # upcast, x A for BERT's low-precision MLM loss) and one layer's recomputed activations
    # fourth round: every training step's loss backward asks for a second b*s*V gradient block that no freed
    # block holds; measured, max_memory_reserved grew by exactly b*s*V x 4 B (x A for BERT's low-precision MLM
    # loss) between the forward and the backward in most in-sample rows, with or without checkpointing
    grad_block, recompute = (A if mlm_low else 4) * E, 0
    spare = 0
    if not w.grad_checkpointing and w.lora_rank and w.loop == "trainer" and A != 4 and optimizer.bytes < A * E:
        # fifth round: HF Trainer's loop with LoRA, measured: the backward did not grow the reserved memory
        # (row 16 Phi-3 LoRA, row 19 Qwen2.5-7B LoRA64, H12): the freed logits block takes the tiny states and
        # the adapters' gradients, nothing cuts the loss's fp32 blocks, which the next step reuses whole
        # (the custom loop's held logits are not free: its LoRA rows N9, T9, X14 did grow by the block)
        grad_block = 0
    if w.grad_checkpointing:
        recompute = int(layer_max * tokens if w.lora_rank else min(layer_max * tokens, grads_all))
        stranded = 0
        # HF Trainer's loop frees the low-precision logits after the forward; with checkpointing no large
        # activation block is freed beside it, so the first step's optimizer states (the embedding's among
        # them) are cut from that block (best fit) when they fit in it, and the fp32 blocks of the loss stay
        # whole for the next step: no new segment (H6: max_memory_reserved did not grow in the backward),
        # and what the states leave of the block stays reserved
        if w.loop == "trainer" and A != 4 and not mlm_low and optimizer.bytes < A * E:
            spare, grad_block = A * E - optimizer.bytes, 0
        elif w.loop == "trainer" and A != 4 and not mlm_low and optimizer.bytes < layer_max * tokens:
            # fifth round: the same when the states fit in one layer's recomputed activations, freed after that
            # layer's backward (T15, 32,768 tokens a step: 6.1 GiB recomputed, 3.4 GiB of states; its backward
            # did not grow max_memory_reserved); the fp32 blocks of the loss stay whole. Not with the custom
            # loop: measured, its LoRA rows (H11, N20), whose states fit anywhere, grew by the gradient block
            grad_block = 0
    freed = A * E if w.loop == "trainer" and A != 4 and not mlm_low else 0
    loss_phase = Phase(
        "loss backward",
        (weights_t, optimizer, activations, logits, *held, *extra),
        stranded,
        grad_block=grad_block,
        recompute=recompute,
        spare=spare,
        freed_logits=freed,
    )
    layer_phase = Phase(
        "backward of the last layer",
        (weights_t, optimizer, activations, head_grads, working, *held, *extra),
        grad_block=grad_block,
        recompute=recompute,
        spare=spare,
        freed_logits=freed,
    )
    step_extra = tuple(t for t in extra if t.name == "ddp_buckets")
    step_phase = Phase(
        "optimizer step",
        (weights_t, gradients, optimizer, step_tmp, *held, *step_extra),
        grad_block=grad_block,
        recompute=recompute,
        spare=spare,
        freed_logits=freed,
    )
    build = _build_phase(spec, w, weights_t, run)
    return ((build,) if build else ()) + (loss_phase, layer_phase, step_phase)


def _activations(spec: ModelSpec, w: Workload, run: _Run) -> tuple[dict[str, Any], list[tuple[str, Value]], float]:
    """Total saved activation bytes, the per-layer inputs, and the largest layer's bytes per token."""
    b, s = w.batch, w.seq
    lora_names = [x.name for x in run.lora_linears]
    full = w.train and not w.lora_rank

    def per_token(cross: bool = False) -> float:
        return layer_bytes_per_token(
            layer_saved(
                spec,
                run.prec,
                s,
                w.attention,
                trainable_linears=full,
                lora=lora_names,
                lora_rank=w.lora_rank,
                cross_attention=cross,
            )
        )

    kinds = [("layer", spec.layers, per_token())]
    if spec.decoder_layers:
        kinds = [("encoder layer", spec.layers, per_token()), ("decoder layer", spec.decoder_layers, per_token(True))]
    layer_max = max(pt for _, _, pt in kinds)
    R, A = run.prec.resid, run.prec.act
    # outside the blocks: the final norm and the head's input (the MLM head's transform for BERT)
    outside_pt = 4 * spec.hidden + 4 + R * spec.hidden + (A * spec.hidden if full else 0)
    if spec.family == "bert":
        outside_pt += 3 * A * spec.hidden
    if spec.family == "t5":
        outside_pt += R * spec.hidden  # the encoder output, input of every cross-attention k and v
    inputs: list[tuple[str, Value]] = [(f"{name}_bytes_per_token", round(pt, 2)) for name, _, pt in kinds]
    inputs += [(f"{name}s", n) for name, n, _ in kinds]
    inputs.append(("outside_blocks_bytes_per_token", outside_pt))
    if w.grad_checkpointing:
        stored = sum(n for _, n, _ in kinds) * R * spec.hidden
        total: float = b * s * (stored + outside_pt)
        formula = (
            "b*s x (layers x h x R: each layer's input, kept by torch.utils.checkpoint + final norm "
            "and head input); the recomputed layer is in the layer working set"
        )
    else:
        total = b * s * (sum(n * pt for _, n, pt in kinds) + outside_pt)
        formula = (
            "b*s x (layers x bytes per token per layer + final norm and head input); per layer: the "
            "tensors autograd keeps (listed in the JSON's activation_detail)"
        )
    return {"total": total, "formula": formula}, inputs, layer_max


def _layer_backward_working(spec: ModelSpec, w: Workload, run: _Run, layer_max: float) -> float:
    """Bytes per token alive inside one layer's backward besides what is kept: the gradients of the
    MLP's f-wide tensors (about three at once), or of the eager s x s scores."""
    A = run.prec.act
    t = spec.traits
    if t.moe:
        mlp = 3 * A * spec.expert_intermediate * spec.experts_per_token / max(1, spec.experts) + 2 * A * spec.hidden
    else:
        mlp = (3 if t.gated_mlp else 2) * A * spec.intermediate
    if effective_attention(spec, w.attention) == "eager":
        attn = (2 * A + 4) * spec.heads * w.seq
    elif sdpa_math(spec, run.prec, w.attention):
        attn = 8 * spec.heads * w.seq  # the math kernel's fp32 gradients of the probabilities and the scores
    else:
        attn = 3 * A * spec.q_dim
    working = max(mlp, attn)
    if w.grad_checkpointing:
        working += layer_max
    return working


def _step_temporaries(w: Workload, weights: tuple[Weight, ...], run: _Run, shard: int) -> Term:
    if w.optimizer == "adamw_foreach" and not run.zero_layout:
        n = run.trainable
        return Term(
            "optimizer_step",
            int(n * run.grad_bytes / shard),
            "foreach AdamW (torch.optim.AdamW's default on CUDA): _foreach_sqrt(exp_avg_sqs) copies one "
            "state = params x state bytes",
            (("trainable", n), ("state_bytes", run.grad_bytes)),
            note="fused=True (HF Trainer's adamw_torch_fused) avoids it",
        )
    if w.optimizer == "adafactor":
        # torch.optim.Adafactor defaults to its single-tensor loop (foreach=None is not foreach there:
        # torch/optim/_adafactor.py, the foreach docstring), which builds one full-size var_estimate =
        # row_var @ col_var per parameter in the gradient's dtype and updates it in place (clamp_, rsqrt_,
        # mul_(grad)): one copy of the largest parameter at a time
        big = max((x.rows * x.cols for x in _trainable_weights(weights, w, run)), default=0)
        return Term(
            "optimizer_step",
            big * run.grad_bytes,
            "Adafactor's single-tensor step: var_estimate = row_var @ col_var, one copy of the largest "
            "parameter in its gradient's dtype",
            (("largest_param", big), ("bytes_each", run.grad_bytes)),
        )
    return Term("optimizer_step", 0, f"{w.optimizer}: no step-wide temporary copy", ())


# --- inference --------------------------------------------------------------------------------


def kv_bytes_per_token(spec: ModelSpec, kv_bytes: float) -> float:
    """Bytes of KV cache per generated/prompt token of one sequence: 2 x L x n_kv x d_head x bytes."""
    layers = spec.decoder_layers if spec.kind == "encoder-decoder" else spec.layers
    return 2 * layers * spec.kv_heads * spec.head_dim * kv_bytes


def _infer_phases(
    spec: ModelSpec, w: Workload, weights: tuple[Weight, ...], run: _Run, const: Constants
) -> tuple[Phase, ...]:
    b, s, new, A, R = w.batch, w.seq, w.new_tokens, run.prec.act, run.prec.resid
    weights_t = _weights_term(spec, w, weights, run, const)
    kvb = DTYPE_BYTES[w.kv_dtype] if w.kv_dtype else A
    per_tok = kv_bytes_per_token(spec, kvb)
    attention = effective_attention(spec, w.attention)
    tp = w.tp
    if tp > 1:
        weights_t, per_tok = _tensor_parallel(spec, weights, weights_t, per_tok, tp)
    if w.device_map:
        weights_t, per_tok = _layer_split(spec, weights, weights_t, per_tok, w.gpus)

    def kv(length: int, cross: int) -> Term:
        if spec.kind == "encoder":
            return Term("kv_cache", 0, f"{spec.architecture} is an encoder: no KV cache", ())
        total = b * length * per_tok + b * cross * per_tok
        formula = "2 x layers x n_kv x d_head x bytes x batch x tokens"
        if cross:
            formula += " (+ the cross-attention cache of the encoder tokens)"
        return Term(
            "kv_cache",
            int(total),
            formula,
            (
                ("layers", spec.decoder_layers or spec.layers),
                ("kv_heads", spec.kv_heads),
                ("head_dim", spec.head_dim),
                ("kv_bytes", kvb),
                ("batch", b),
                ("tokens", length),
                ("cross_tokens", cross),
            ),
        )

    t = spec.traits
    f = spec.intermediate
    if t.moe:
        # every routed token at once (transformers 5's experts run grouped, not one expert at a time):
        # the gathered input and the output (2h) and gate, up and their product (3 f_e) per chosen expert;
        # in-sample H200 rows 24 and 25 (Mixtral, Qwen3-MoE prefill) allocated 0.83 and 0.24 GiB more
        # than the one-expert-at-a-time count, which this is
        # fourth round: gate_up's 2 f_e output, the activation and the product (4 f_e), and beside the gathered
        # input and the expert's output the routing-weighted copy (3h) per chosen expert (N13, N16 in-sample)
        mlp = A * spec.experts_per_token * (3 * spec.hidden + 4 * spec.expert_intermediate)
    else:
        mlp = A * (3 if t.gated_mlp else 2) * f
    if attention == "eager":
        soft = (A + 8) if t.eager_softmax_fp32 else 2 * A
        attn = A * 3 * spec.q_dim + (soft + (A if t.logit_softcap else 0)) * spec.heads * s
        mask = b * s * s * R
    elif sdpa_math(spec, run.prec, attention):
        # fp32 with grouped KV heads: the math kernel (activations.sdpa_math) repeats k and v to every head
        # and materialises the fp32 scores and their softmax, s x s per head
        attn = A * (2 * spec.q_dim + 2 * spec.kv_dim) + 2 * 4 * spec.q_dim + 2 * 4 * spec.heads * s
        mask = 0
    else:
        attn = A * (2 * spec.q_dim + 2 * spec.kv_dim)
        mask = 0
    # held by Python references while a layer runs: the model's forward keeps the embedding output
    # (``inputs_embeds``, then ``hidden_states = inputs_embeds``) and the layer loop keeps the layer's
    # input (``hidden_states = layer(hidden_states)`` rebinds only when the layer returns)
    held = (2 if spec.total_layers > 1 else 1) * R * spec.hidden
    # tensor parallel: the MLP's f and the attention heads split, the residual stream is replicated
    working_pt = 2 * R * spec.hidden + held + max(mlp, attn) / tp
    mask = mask // tp
    prefill_work = Term(
        "layer_working",
        int(b * s * working_pt + mask),
        "one layer's working set over the prompt: b*s x (hidden + residual + the embedding output "
        "and the layer's input, still referenced + max(MLP, attention))"
        + (" + the eager causal mask b*s*s x R" if mask else ""),
        (
            ("bytes_per_token", working_pt),
            ("held_bytes_per_token", held),
            ("mask_bytes", mask),
            ("attention", attention),
        ),
    )
    if spec.kind == "encoder":
        logits = Term(
            "logits",
            b * s * spec.vocab * A,
            "one forward: logits b*s*V x A",
            (("batch", b), ("seq", s), ("vocab", spec.vocab)),
        )
        build = _build_phase(spec, w, weights_t, run)
        return ((build,) if build else ()) + (Phase("forward", (weights_t, prefill_work, logits, kv(0, 0))),)
    last = Term(
        "logits",
        b * spec.vocab * (A + 8),
        "generate keeps the last position's logits: b x V x (A + fp32 copy + processed)",
        (("batch", b), ("vocab", spec.vocab)),
    )
    cross = s if spec.kind == "encoder-decoder" else 0
    prompt = 0 if spec.kind == "encoder-decoder" else s
    layers = spec.decoder_layers or spec.layers
    cat = Term(
        "layer_working",
        int(b * (prompt + new) * per_tok / max(1, layers)),
        "DynamicCache grows by torch.cat: one layer's K and V are copied at full length",
        (("layers", layers),),
    )
    if w.quant == "int4":
        # fifth round: bitsandbytes' 4-bit matmul for a prompt of many tokens falls back to dequantize + F.linear
        # (bitsandbytes 0.50 backends/cuda/ops.py gemm_4bit: M past the fused kernel's limit ->
        # _dequant_linear_fallback): one bf16/fp16 copy of a block linear's weight while it runs
        big = max((x.rows * x.cols for x in weights if x.kind == "linear" and x.block), default=0)
        prefill_work = replace(
            prefill_work,
            bytes=prefill_work.bytes + int(big * A),
            formula=prefill_work.formula + " + the largest 4-bit linear dequantized for the matmul (bitsandbytes)",
            inputs=prefill_work.inputs + (("dequantized_linear_params", big),),
        )
    phases = [Phase("prefill", (weights_t, kv(prompt, cross), prefill_work, last))]
    if new:
        final_kv = kv(prompt + new, cross)
        # the generated tokens' share of the cache: each token's torch.cat leaves the previous, shorter K/V
        # blocks cached (fourth round: the reserve grows with the tokens generated, N19, H22)
        # fifth round: only growth above kMinLargeAlloc (10 MiB) strands: torch's caching allocator serves a
        # 1-10 MiB request from a shared 20 MiB segment (kLargeBuffer), where a freed block merges with its
        # free neighbours and holds the next, longer K/V; a larger one gets its own segment rounded to 2 MiB
        # (kRoundLarge), which the next token's longer block outgrows and leaves cached
        # (CUDACachingAllocator.cpp; in-sample X12: 8 -> 12 MiB blocks, T22's decoder cache from 0)
        block = b * per_tok / max(1, 2 * layers)  # one layer's K (or V) per token
        start, end = block * prompt, block * (prompt + new)
        large = max(0.0, end - max(start, float(_MIN_LARGE_ALLOC)))
        phases.append(
            Phase(
                "last generated token",
                (weights_t, final_kv, cat, last),
                kv_cat=int(b * new * per_tok * large / (end - start)) if end > start else 0,
            )
        )
    build = _build_phase(spec, w, weights_t, run) if tp == 1 and not w.device_map else None
    return ((build,) if build else ()) + tuple(phases)


#: terms that follow the parameters a stage holds
_PARAM_TERMS = ("weights", "optimizer", "gradients", "autocast_copies", "optimizer_step", "ddp_buckets")


def _pipeline_stages(
    spec: ModelSpec, weights: tuple[Weight, ...], phases: Sequence[Phase], pp: int
) -> tuple[Phase, ...]:
    """Each training moment on the first and on the last of ``pp`` pipeline stages (1F1B: the first
    stage holds ``pp`` micro-batches' activations of its L/pp layers, as much as one micro-batch of
    all L; the last holds one, and the head, the logits and the loss). The first stage has the
    embedding, the last the head and the final norm (a tied head is a copy there, as Megatron keeps)."""
    block = sum(x.numel for x in weights if x.block)
    total = sum(x.numel for x in weights) or 1
    embedding = spec.vocab * spec.hidden
    first = (block / pp + embedding) / total
    last = (block / pp + embedding + (total - block - embedding if not spec.tie_embeddings else 0)) / total
    out = []
    for p in phases:
        if p.name == "model build":
            continue
        for stage, share in (("first stage", first), ("last stage", last)):
            terms = []
            for t in p.terms:
                scale = 1.0
                if t.name in _PARAM_TERMS:
                    scale = share
                elif t.name in ("logits", "held_logits") and stage == "first stage":
                    scale = 0.0
                elif t.name == "activations" and stage == "last stage":
                    scale = 1.0 / pp
                terms.append(
                    Term(
                        t.name,
                        int(t.bytes * scale),
                        t.formula + (f"; {stage} of {pp}" if scale != 1.0 else ""),
                        t.inputs + (("pp_stage", stage),),
                        t.note,
                    )
                )
            out.append(
                replace(
                    p,
                    name=f"{p.name} ({stage})",
                    terms=tuple(terms),
                    stranded=p.stranded if stage == "last stage" else 0,
                    grad_block=p.grad_block if stage == "last stage" else 0,
                    spare=p.spare if stage == "last stage" else 0,
                )
            )
    return tuple(out)


def _layer_split(
    spec: ModelSpec, weights: tuple[Weight, ...], weights_t: Term, per_tok: float, gpus: int
) -> tuple[Term, float]:
    """The fullest GPU of ``device_map="auto"`` (accelerate's balanced split of the blocks over
    ``gpus``): 1/gpus of the blocks and of the KV cache, and every parameter outside the blocks
    (embedding, head, final norm: the GPU that holds them, tied ones together); the layer working
    set and the logits are whole on the GPU that runs them."""
    block = sum(x.numel for x in weights if x.block)
    total = sum(x.numel for x in weights) or 1
    share = (block / gpus + (total - block)) / total
    term = Term(
        "weights",
        int(weights_t.bytes * share),
        weights_t.formula + f'; device_map="auto" over {gpus} GPUs: the fullest GPU, 1/{gpus} of the '
        "blocks + the embedding, head and final norm",
        weights_t.inputs + (("device_map_gpus", gpus), ("block_params", block)),
    )
    return term, per_tok / gpus


def _tensor_parallel(
    spec: ModelSpec, weights: tuple[Weight, ...], weights_t: Term, per_tok: float, tp: int
) -> tuple[Term, float]:
    """One GPU's share under Megatron-style tensor parallelism over ``tp`` GPUs: the linears (column
    and row splits), the experts and the vocabulary-parallel embedding and head split, the norms are
    replicated; the KV cache holds the GPU's KV heads (one each, replicated, when there are fewer
    heads than GPUs, as vLLM does)."""
    split = sum(x.numel for x in weights if x.kind in ("linear", "expert", "embedding"))
    total = sum(x.numel for x in weights) or 1
    share = (split / tp + (total - split)) / total
    kv_share = max(1, spec.kv_heads // tp) / spec.kv_heads
    term = Term(
        "weights",
        int(weights_t.bytes * share),
        weights_t.formula + f"; tensor parallel over {tp} GPUs: linears, experts, embedding and head / {tp}, "
        "norms replicated",
        weights_t.inputs + (("tp", tp), ("split_params", split), ("kv_heads_per_gpu", max(1, spec.kv_heads // tp))),
        note="NCCL's buffers and the all-reduce workspace are the nccl term",
    )
    return term, per_tok * kv_share


# --- FLOPs ------------------------------------------------------------------------------------


def flops(spec: ModelSpec, w: Workload, weights: Sequence[Weight] | None = None) -> Flops:
    """PaLM (arXiv:2204.02311 App. B) / nanoGPT: training 6N + 12·L·H·Q·T per token, N the matmul
    parameters a token runs through (MoE: its top-k experts), T the sequence length; forward only
    2N + 4·L·H·Q·T. The causal variant halves the attention term (Megatron, FlashAttention)."""
    ws = tuple(weights) if weights is not None else inventory(spec)
    n = matmul_params(ws, active_only=True) + (spec.vocab * spec.hidden if spec.tie_embeddings else 0)
    attn_layers = spec.layers + 2 * spec.decoder_layers  # T5 decoder: self + cross attention
    T = w.seq + (w.new_tokens if not w.train else 0)
    hq = spec.q_dim
    if w.train:
        per, attn = 6.0 * n, 12.0 * attn_layers * hq * T
    else:
        per, attn = 2.0 * n, 4.0 * attn_layers * hq * T
    causal = attn if spec.kind == "encoder" else attn / 2
    tokens = w.batch * (w.seq + (0 if w.train else w.new_tokens))
    embed = sum(x.numel for x in ws if x.kind == "embedding")
    return Flops(
        convention="PaLM/nanoGPT: 6N + 12*L*H*Q*T per training token (2N + 4*L*H*Q*T forward), "
        "N = matmul parameters (embedding lookups left out, as torchtitan does)",
        n_matmul=n,
        n_all=n + embed - (spec.vocab * spec.hidden if spec.tie_embeddings else 0),
        per_token=per + attn,
        per_token_causal=per + causal,
        per_step=(per + attn) * tokens,
        per_step_causal=(per + causal) * tokens,
        tokens_per_step=tokens,
    )

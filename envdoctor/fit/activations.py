"""What autograd keeps per layer and per token between forward and backward, tensor by tensor.

Korthikanti et al. (arXiv:2205.05198, Table 2) count sbh(34 + 5as/h) per GPT layer with 16-bit
activations, dropout and eager attention. Modern decoders differ in ways that change the sum:
RMSNorm written in Python (an fp32 copy of its input is kept), SwiGLU (three projections, four
saved f-sized tensors), GQA (k and v are smaller), no dropout, SDPA/flash attention (no s x s
tensor kept, only q, k, v, the output and a log-sum-exp). So instead of one constant this module
lists the saved tensors of one layer as transformers 5.x builds it, each with the op(s) that keep
it. A tensor counts once however many ops keep it, and not at all when no op that keeps it is
active (a frozen linear does not keep its input: torch saves ``x`` for ``mm`` only when the weight
needs a gradient).

Sizes are elements per token; ``bytes_each`` is the element size in the run's precision:

- ``A``: activations that feed matrix products (2 for bf16/fp16 weights or under autocast, 4 fp32),
- ``R``: the residual stream (the weights' dtype; fp32 under autocast with fp32 weights),
- 4: fp32 copies (RMSNorm's upcast, softmax in fp32, the log-sum-exp), 1: dropout masks.

>>> from envdoctor.fit.spec import ModelSpec
>>> spec = ModelSpec(name="tiny", architecture="LlamaForCausalLM", family="llama", hidden=64,
...                  intermediate=128, layers=2, heads=4, kv_heads=2, head_dim=16, vocab=100)
>>> p = Precision(act=2, resid=2, autocast=False)
>>> layer_bytes_per_token(layer_saved(spec, p, seq=32, attention="sdpa", trainable_linears=True))
2456
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from envdoctor.fit.spec import ModelSpec

Attention = Literal["sdpa", "eager"]


@dataclass(frozen=True)
class Precision:
    """Element sizes of one run: ``act`` (A), ``resid`` (R); ``autocast``: fp32 weights under
    torch.autocast, where each linear casts its own copy of its fp32 input. ``mask``: bytes of a
    dropout mask element (CUDA's fused dropout keeps a bool mask; the CPU keeps one of the input dtype);
    ``cuda``: autocast follows CUDA's op lists (False: the CPU's)."""

    act: int
    resid: int
    autocast: bool
    mask: int = 1
    #: CUDA's autocast op lists (``pow`` runs in fp32 there, not on the CPU)
    cuda: bool = True


@dataclass(frozen=True)
class Saved:
    """One tensor kept for backward: ``per_token`` elements of ``bytes_each`` bytes, kept by ``savers``."""

    name: str
    per_token: float
    bytes_each: float
    savers: tuple[str, ...]

    @property
    def bytes_per_token(self) -> float:
        return self.per_token * self.bytes_each


def layer_bytes_per_token(saved: Iterable[Saved]) -> float:
    return sum(s.bytes_per_token for s in saved)


class _Layer:
    """Collects the saved tensors of one layer; linears are savers named ``linear:<name>``."""

    def __init__(self, p: Precision, trainable_linears: bool, lora: Sequence[str], lora_rank: int) -> None:
        self.p = p
        self.trainable = trainable_linears
        self.lora = set(lora)
        self.rank = lora_rank
        self.items: list[Saved] = []

    def add(self, name: str, per_token: float, bytes_each: float, *savers: str) -> None:
        # a linear keeps its input, and a norm its normalised input, only for its weight's gradient
        active = tuple(s for s in savers if not s.startswith(("linear:", "weight:")) or self.trainable)
        if active:
            self.items.append(Saved(name, per_token, bytes_each, active))

    def linear_input(
        self, name: str, per_token: float, bytes_each: float, consumers: Sequence[str], also: Sequence[str] = ()
    ) -> None:
        """The input of ``consumers`` (linears), plus what LoRA adapters on them keep (PEFT casts
        the input to the adapter's fp32, so a bf16 input is copied; an fp32 one is shared)."""
        adapted = [c for c in consumers if c in self.lora]
        shared = bytes_each == 4 and not self.p.autocast  # an fp32 input needs no cast: lora_A keeps it
        self.add(
            name,
            per_token,
            bytes_each,
            *also,
            *(f"linear:{c}" for c in consumers),
            *(f"lora:{c}" for c in adapted if shared),
        )
        for c in adapted:
            if not shared:
                self.add(
                    f"lora {c}: input cast to the adapter dtype",
                    per_token,
                    self.p.act if self.p.autocast else 4,
                    f"lora:{c}",
                )
            self.add(f"lora {c}: rank-r middle", self.rank, self.p.act if self.p.autocast else 4, f"lora:{c}")

    def norm(self, name: str, kind: str, h: int, consumers: Sequence[str]) -> None:
        """A norm and the inputs it hands to ``consumers`` (empty: its output goes into a residual add)."""
        p = self.p
        if kind in ("rms", "rms_t5"):
            # hidden.to(float32) kept by pow and mul; weight * normed.to(input_dtype) keeps normed
            self.add(f"{name}: fp32 copy of the input", h, 4, "norm")
            if kind == "rms_t5" and p.resid != 4:  # T5LayerNorm multiplies the input itself by rsqrt
                self.add(f"{name}: input", h, p.resid, "norm")
            self.add(f"{name}: rsqrt (fp32, one per token)", 1, 4, "norm")
            self.add(f"{name}: normalised, before the weight", h, p.resid, "weight:norm")
            out_bytes = p.resid
        elif kind == "rms_gemma":
            # _norm(x.float()) * (1 + weight.float()): fp32 input and fp32 normalised are kept
            self.add(f"{name}: fp32 copy of the input", h, 4, "norm")
            self.add(f"{name}: rsqrt (fp32, one per token)", 1, 4, "norm")
            self.add(f"{name}: fp32 normalised", h, 4, "weight:norm")
            out_bytes = p.resid
        else:  # F.layer_norm keeps its input (fp32 under autocast, which runs layer_norm in fp32)
            self.add(f"{name}: input", h, 4 if p.autocast else p.resid, "layernorm")
            self.add(f"{name}: mean and rstd (fp32)", 2, 4, "layernorm")
            out_bytes = 4 if p.autocast else p.resid
        if not consumers:
            return
        if p.autocast:
            for c in consumers:  # autocast casts the fp32 output separately for every linear
                self.linear_input(f"{name}: output cast to bf16/fp16 for {c}", h, p.act, [c])
        else:
            self.linear_input(f"{name}: output", h, out_bytes, consumers)


def effective_attention(spec: ModelSpec, attention: Attention) -> Attention:
    """Gemma 2 has no SDPA path in transformers 5 (it refuses it); T5's trainable position bias
    enters SDPA as a float mask, which no flash kernel takes: both are counted as eager."""
    return "eager" if spec.family in ("gemma2", "t5") else attention


def sdpa_math(spec: ModelSpec, p: Precision, attention: Attention) -> bool:
    """SDPA falls back to torch's math kernel: fp32 q/k/v (no autocast) with grouped KV heads.

    transformers' ``sdpa_attention_forward`` passes ``enable_gqa=True`` (no mask, torch >= 2.5:
    ``use_gqa_in_sdpa``) instead of repeating k and v; torch's ``select_sdp_backend``
    (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp) then tries flash (fp16/bf16 only:
    ``check_dtypes_flash_attention``), the memory-efficient kernel (fp32 allowed on sm80+, but
    ``check_batch_size_and_num_heads_dense<false>``: no grouped query heads) and ends in the math
    kernel, which repeats k and v, scales q and k and keeps the fp32 softmax output (s x s per head)
    for backward. On the CPU the flash kernel takes fp32, so the CPU cannot show it (H200 row H9:
    8.4 GiB more saved than the flash-like count, 16 layers x 32 heads x 2048^2 x 4 B + the repeats)."""
    return (
        attention == "sdpa"
        and effective_attention(spec, attention) == "sdpa"
        and p.act == 4
        and not p.autocast
        and p.cuda
        and spec.kv_heads < spec.heads
        and spec.family not in ("gpt2", "bert", "t5")
    )


def layer_saved(
    spec: ModelSpec,
    p: Precision,
    seq: int,
    attention: Attention,
    trainable_linears: bool,
    lora: Sequence[str] = (),
    lora_rank: int = 0,
    cross_attention: bool = False,
    dropout: bool | None = None,
) -> tuple[Saved, ...]:
    """The tensors one block of ``spec`` keeps per token at sequence length ``seq``.

    ``trainable_linears``: the block's linear weights need gradients (full fine-tuning);
    ``lora``: the linears that carry adapters; ``cross_attention``: a T5 decoder block;
    ``dropout``: whether the config's dropout is live (training), defaults to True.
    """
    t = spec.traits
    h = spec.hidden
    attention = effective_attention(spec, attention)
    lay = _Layer(p, trainable_linears, lora, lora_rank)
    drop_live = True if dropout is None else dropout
    attn_drop = drop_live and spec.attention_dropout > 0
    hid_drop = drop_live and spec.hidden_dropout > 0

    if t.post_ln:  # BERT: the layer input feeds q, k, v directly; LayerNorm after each residual add
        _bert_layer(lay, spec, seq, attention, attn_drop, hid_drop)
        return tuple(lay.items)

    qkv_names = {"gpt2": ["attn.c_attn"], "t5": ["q", "k", "v"]}.get(
        spec.family, ["qkv_proj"] if t.fused_qkv else ["q_proj", "k_proj", "v_proj"]
    )
    lay.norm("attention norm", t.norm, h, qkv_names)
    _self_attention(lay, spec, seq, attention, attn_drop)
    if t.sandwich_norm:
        lay.norm("post-attention norm", t.norm, h, [])
    if hid_drop:
        lay.add("dropout mask after attention", h, lay.p.mask, "dropout")
    if cross_attention:
        lay.norm("cross-attention norm", t.norm, h, ["q"])
        _attention_core(lay, spec, seq, attention, attn_drop, prefix="cross ")
        if hid_drop:
            lay.add("dropout mask after cross-attention", h, lay.p.mask, "dropout")
    _mlp(lay, spec, seq)
    if hid_drop:
        lay.add("dropout mask after the MLP", h, lay.p.mask, "dropout")
    return tuple(lay.items)


def _self_attention(lay: _Layer, spec: ModelSpec, seq: int, attention: Attention, attn_drop: bool) -> None:
    t = spec.traits
    q, kv, A = spec.q_dim, spec.kv_dim, lay.p.act
    if t.qk_norm:  # Qwen3: RMSNorm over head_dim on q and k before RoPE
        for name, d in (("q_norm", q), ("k_norm", kv)):
            lay.add(f"{name}: fp32 copy", d, 4, "norm")
            lay.add(f"{name}: rsqrt (fp32, one per head)", d // spec.head_dim, 4, "norm")
            lay.add(f"{name}: normalised", d, A, "weight:norm")
    _attention_core(lay, spec, seq, attention, attn_drop)


def _attention_core(
    lay: _Layer, spec: ModelSpec, seq: int, attention: Attention, attn_drop: bool, prefix: str = ""
) -> None:
    t = spec.traits
    q, kv, a, A = spec.q_dim, spec.kv_dim, spec.heads, lay.p.act
    out_proj = {"gpt2": "attn.c_proj", "t5": "o", "bert": "attention.output.dense"}.get(spec.family, "o_proj")
    rep = q if attention == "eager" and kv != q else kv  # eager repeats k/v to every head (repeat_kv)
    if t.fused_qkv and not t.rope:  # GPT-2: q, k, v are views of c_attn's output
        lay.add("c_attn output (q, k, v views)", q + 2 * kv, A, "attention")
        if attention == "sdpa":  # measured on the CPU: SDPA gets contiguous copies of two of them
            lay.add("q and k copied contiguous for SDPA", 2 * q, A, "attention")
    else:
        which = "q after RoPE" if t.rope else "q"
        lay.add(f"{prefix}{which}", q, A, "attention")
        # cross-attention: k and v come from the encoder output (one per decoder layer, per encoder token)
        lay.add(f"{prefix}{'k after RoPE' if t.rope else 'k'}", rep, A, "attention")
        lay.add(f"{prefix}v", rep, A, "attention")
    if attention == "sdpa" and sdpa_math(spec, lay.p, attention) and not prefix:
        # the math kernel keeps its own scaled q, k and v repeated to every head (q wide each) and the
        # fp32 softmax output; the o_proj input is the output's contiguous copy (no log-sum-exp)
        lay.add("math SDPA: scaled k and v repeated to every head (fp32)", 2 * q - 2 * kv, 4, "attention")
        lay.add("math SDPA: softmax output (fp32, s x s per head)", a * seq, 4, "attention")
        lay.linear_input(f"{prefix}attention output", q, A, [out_proj])
        return
    if attention == "sdpa":
        lay.linear_input(f"{prefix}attention output", q, A, [out_proj], also=["attention"])
        lay.add(f"{prefix}log-sum-exp (fp32, per head)", a, 4, "attention")
        if t.fused_qkv and t.rope:  # Phi-3 (measured on the CPU): o_proj gets its own copy
            lay.add("attention output copy for o_proj", q, A, f"linear:{out_proj}")  # CPU-measured
        return
    # eager: softmax output (fp32 for the Llama family and T5, else the activation dtype) ...
    if t.logit_softcap:  # Gemma 2: tanh(scores / cap) * cap, tanh keeps its output
        lay.add(f"{prefix}tanh of the capped scores", a * seq, A, "tanh")
    # under autocast a decoder's fp32 causal mask (or T5's fp32 position bias) promotes the scores to fp32
    soft = 4 if t.eager_softmax_fp32 or (lay.p.autocast and spec.kind != "encoder") else A
    lay.add(f"{prefix}softmax output (s x s per head)", a * seq, soft, "softmax")
    if attn_drop:
        lay.add(f"{prefix}attention dropout mask", a * seq, lay.p.mask, "dropout")
        lay.add(f"{prefix}attention probabilities after dropout", a * seq, A, "matmul")
    elif soft != A:
        lay.add(f"{prefix}attention probabilities cast back", a * seq, A, "matmul")
    # ... and the (batch, heads, seq, d) output transposed into a contiguous copy for the out-projection
    lay.linear_input(f"{prefix}attention output (contiguous)", q, A, [out_proj])


def _mlp(lay: _Layer, spec: ModelSpec, seq: int) -> None:
    t = spec.traits
    h, A = spec.hidden, lay.p.act
    if t.moe:
        e, k, fe = spec.experts, spec.experts_per_token, spec.expert_intermediate
        # transformers 5 runs the experts on their 3-D weight slices; measured on the CPU, autocast
        # leaves them in fp32, so under autocast they keep fp32 tensors
        A = 4 if lay.p.autocast else A
        lay.norm(
            "MLP norm",
            t.norm,
            h,
            ["router"]
            + (["shared_expert.gate_proj", "shared_expert.up_proj"] if spec.shared_expert_intermediate else []),
        )
        lay.add("router probabilities (fp32)", e, 4, "router")
        lay.add("routing indices and weights (int64, fp32)", 40 * k + 4, 1, "router")
        # per token and chosen expert: its gathered input, gate_up output, act, product, weighted output
        # the gathered inputs and the products feed the experts' matmuls; measured on the CPU they are kept
        # even with the experts frozen (bf16), so they count always; the outputs are multiplied by the
        # router's weights (kept only when the router trains)
        lay.add("experts: gathered inputs", k * h, A, "experts")
        lay.add("experts: gate_up outputs", k * 2 * fe, A, "act", "mul")
        lay.add("experts: activation outputs", k * fe, A, "mul")
        lay.add("experts: products", k * fe, A, "experts")
        lay.add("experts: outputs (weighted by the router)", k * h, A, "linear:router")
        if spec.shared_expert_intermediate:
            fs = spec.shared_expert_intermediate
            _gated(lay, fs, "shared_expert.gate_proj", "shared_expert.down_proj", prefix="shared expert ")
            lay.add("shared expert output", h, A, "experts")
        return
    f = spec.intermediate
    if spec.family == "gpt2":
        lay.norm("MLP norm", t.norm, h, ["mlp.c_fc"])
        if lay.p.autocast and lay.p.cuda:
            # NewGELUActivation is Python: 0.5*x*(1+tanh(c*(x+0.044715*pow(x,3)))). pow is on CUDA
            # autocast's fp32 list, so pow keeps an fp32 copy of x and everything after it is fp32
            # (tanh's output, 1+tanh); only 0.5*x stays in A; c_proj keeps its own cast of the fp32 product
            lay.add("gelu_new: c_fc output cast to fp32 for pow (autocast fp32 op)", f, 4, "gelu")
            lay.add("gelu_new: tanh output and 1+tanh (fp32)", 2 * f, 4, "gelu")
            lay.add("gelu_new: 0.5*x", f, A, "gelu")
            lay.linear_input("gelu output cast for c_proj", f, A, ["mlp.c_proj"])
            return
        lay.add("c_fc output", f, A, "gelu")
        # NewGELUActivation is Python: 0.5*x, tanh(...) and 1+tanh(...) are kept besides x
        lay.add("gelu_new: 0.5*x, tanh, 1+tanh", 3 * f, A, "gelu")
        lay.linear_input("gelu output", f, A, ["mlp.c_proj"])
        return
    if spec.family == "t5":
        lay.norm("MLP norm", t.norm, h, ["wi"])
        lay.add("relu output", f, A, "relu")
        if spec.hidden_dropout > 0:
            lay.add("MLP dropout mask", f, lay.p.mask, "dropout")
            lay.linear_input("MLP dropout output", f, A, ["wo"])
        return
    names = ["gate_up_proj"] if t.fused_gate_up else ["gate_proj", "up_proj"]
    lay.norm("MLP norm", t.norm, h, names)
    _gated(lay, f, names[0], "down_proj")
    if t.sandwich_norm:
        lay.norm("post-MLP norm", t.norm, h, [])


def _gated(lay: _Layer, f: int, gate: str, down: str, prefix: str = "") -> None:
    A = lay.p.act
    lay.add(f"{prefix}gate output (kept by the activation)", f, A, "act")
    lay.add(f"{prefix}activation output", f, A, "mul")
    lay.add(f"{prefix}up output", f, A, "mul")
    lay.linear_input(f"{prefix}act(gate) * up", f, A, [down])


def _bert_layer(lay: _Layer, spec: ModelSpec, seq: int, attention: Attention, attn_drop: bool, hid_drop: bool) -> None:
    h, f, A = spec.hidden, spec.intermediate, lay.p.act
    names = ["query", "key", "value"]
    if lay.p.autocast:
        for c in names:
            lay.linear_input(f"layer input cast for {c}", h, A, [c])
    else:
        lay.linear_input("layer input", h, lay.p.resid, names)
    _attention_core(lay, spec, seq, attention, attn_drop)
    # the attention output projection's output -> dropout -> LayerNorm(that + input)
    if hid_drop:
        lay.add("dropout mask after attention", h, lay.p.mask, "dropout")
    lay.norm("attention LayerNorm", "layernorm", h, ["intermediate.dense"])
    lay.add("intermediate output (kept by gelu)", f, A, "gelu")
    lay.linear_input("gelu output", f, A, ["output.dense"])
    if hid_drop:
        lay.add("dropout mask after the MLP", h, lay.p.mask, "dropout")
    lay.norm("output LayerNorm", "layernorm", h, [])

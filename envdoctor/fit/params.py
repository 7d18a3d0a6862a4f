"""Every weight tensor a model of a given shape has, as transformers (5.x) builds it.

The inventory drives the weights, gradients and optimizer terms, the Adafactor row/column states,
the LoRA adapters (which linears of the blocks), the autocast weight copies and the FLOPs.

>>> from envdoctor.fit.spec import ModelSpec
>>> gpt2 = ModelSpec(name="gpt2", architecture="GPT2LMHeadModel", family="gpt2", hidden=768,
...                  intermediate=3072, layers=12, heads=12, kv_heads=12, head_dim=64, vocab=50257,
...                  max_positions=1024, tie_embeddings=True, attention_bias=True, mlp_bias=True)
>>> total_params(inventory(gpt2))       # GPT2LMHeadModel, as HF counts it
124439808
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from envdoctor.fit.spec import ModelSpec

WeightKind = Literal["linear", "embedding", "vector", "expert"]


@dataclass(frozen=True)
class Weight:
    """``count`` tensors of ``rows x cols`` (a linear's weight is out x in; a vector has cols 1).

    ``block`` is True inside the transformer blocks (where LoRA adapters go); ``active`` is the
    fraction of the tensors one token runs through (top-k of the experts for MoE, else 1).
    """

    name: str
    rows: int
    cols: int
    count: int
    kind: WeightKind
    block: bool = True
    active: float = 1.0

    @property
    def numel(self) -> int:
        return self.rows * self.cols * self.count


def total_params(weights: tuple[Weight, ...]) -> int:
    return sum(w.numel for w in weights)


def matmul_params(weights: tuple[Weight, ...], active_only: bool = False) -> int:
    """Weights used in a matrix product (linears, experts and the output head, tied or not)."""
    return int(sum(w.numel * (w.active if active_only else 1.0) for w in weights if w.kind in ("linear", "expert")))


def largest_layer_params(spec: ModelSpec, weights: tuple[Weight, ...]) -> int:
    """The biggest single module ZeRO-3 gathers at once: one block, or the embedding/head."""
    per_block = sum(w.numel for w in weights if w.block) // max(1, spec.total_layers)
    outside = max((w.numel for w in weights if not w.block), default=0)
    return max(per_block, outside)


def _vec(name: str, n: int, count: int, block: bool = True) -> Weight:
    return Weight(name, n, 1, count, "vector", block)


def _lin(name: str, d_out: int, d_in: int, count: int, bias: bool = False) -> list[Weight]:
    out = [Weight(name, d_out, d_in, count, "linear")]
    if bias:
        out.append(_vec(f"{name}.bias", d_out, count))
    return out


def inventory(spec: ModelSpec) -> tuple[Weight, ...]:
    """All weights of ``spec``'s model (the ``...ForCausalLM`` / ``ForMaskedLM`` /
    ``ForConditionalGeneration`` class of its family)."""
    if spec.family == "gpt2":
        return _gpt2(spec)
    if spec.family == "bert":
        return _bert(spec)
    if spec.family == "t5":
        return _t5(spec)
    return _decoder(spec)


def _decoder(spec: ModelSpec) -> tuple[Weight, ...]:
    h, q, kv, L, t = spec.hidden, spec.q_dim, spec.kv_dim, spec.layers, spec.traits
    w: list[Weight] = []
    if t.fused_qkv:
        w += _lin("qkv_proj", q + 2 * kv, h, L, spec.attention_bias)
    else:
        for name, d in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
            w += _lin(name, d, h, L, spec.attention_bias)
    # Llama puts a bias on o_proj too when attention_bias; Qwen2 has q/k/v biases only
    w += _lin("o_proj", h, q, L, spec.attention_bias and spec.family in ("llama", "mistral"))
    if t.qk_norm:
        w += [_vec("q_norm", spec.head_dim, L), _vec("k_norm", spec.head_dim, L)]
    norms = 4 if t.sandwich_norm else 2
    w.append(_vec("layer_norms", h, L * norms))
    if t.moe:
        e, k, fe = spec.experts, spec.experts_per_token, spec.expert_intermediate
        w.append(Weight("router", e, h, L, "linear"))
        w.append(Weight("experts.gate_up", 2 * fe, h, L * e, "expert", active=k / e))
        w.append(Weight("experts.down", h, fe, L * e, "expert", active=k / e))
        if spec.shared_expert_intermediate:
            fs = spec.shared_expert_intermediate
            w += _lin("shared_expert.gate_proj", fs, h, L) + _lin("shared_expert.up_proj", fs, h, L)
            w += _lin("shared_expert.down_proj", h, fs, L) + _lin("shared_expert_gate", 1, h, L)
    else:
        f = spec.intermediate
        if t.fused_gate_up:
            w += _lin("gate_up_proj", 2 * f, h, L, spec.mlp_bias)
        else:
            w += _lin("gate_proj", f, h, L, spec.mlp_bias) + _lin("up_proj", f, h, L, spec.mlp_bias)
        w += _lin("down_proj", h, f, L, spec.mlp_bias)
    w.append(Weight("embed_tokens", spec.vocab, h, 1, "embedding", block=False))
    w.append(_vec("final_norm", h, 1, block=False))
    w.append(_head(spec))
    return tuple(w)


def _head(spec: ModelSpec) -> Weight:
    # tied: the head's matmul uses the embedding matrix, so it adds no parameters but is a matmul
    return Weight("lm_head", spec.vocab, spec.hidden, 0 if spec.tie_embeddings else 1, "linear", block=False)


def _gpt2(spec: ModelSpec) -> tuple[Weight, ...]:
    h, f, L = spec.hidden, spec.intermediate, spec.layers
    w: list[Weight] = [_vec("ln_1+ln_2 (weight, bias)", h, 4 * L)]
    w += _lin("attn.c_attn", 3 * h, h, L, True) + _lin("attn.c_proj", h, h, L, True)
    w += _lin("mlp.c_fc", f, h, L, True) + _lin("mlp.c_proj", h, f, L, True)
    w.append(Weight("wte", spec.vocab, h, 1, "embedding", block=False))
    w.append(Weight("wpe", spec.max_positions or 1024, h, 1, "embedding", block=False))
    w.append(_vec("ln_f (weight, bias)", h, 2, block=False))
    w.append(_head(spec))
    return tuple(w)


def _bert(spec: ModelSpec) -> tuple[Weight, ...]:
    """BertForMaskedLM: no pooler; the MLM head has a transform (dense + LayerNorm) and a tied
    decoder with its own bias."""
    h, f, L = spec.hidden, spec.intermediate, spec.layers
    w: list[Weight] = []
    for name in ("query", "key", "value", "attention.output.dense"):
        w += _lin(name, h, h, L, True)
    w += _lin("intermediate.dense", f, h, L, True) + _lin("output.dense", h, f, L, True)
    w.append(_vec("LayerNorms (weight, bias)", h, 4 * L))
    w.append(Weight("word_embeddings", spec.vocab, h, 1, "embedding", block=False))
    w.append(Weight("position_embeddings", spec.max_positions or 512, h, 1, "embedding", block=False))
    w.append(Weight("token_type_embeddings", spec.type_vocab or 2, h, 1, "embedding", block=False))
    w.append(_vec("embeddings.LayerNorm (weight, bias)", h, 2, block=False))
    w.append(Weight("cls.predictions.transform.dense", h, h, 1, "linear", block=False))
    w.append(_vec("cls.predictions (transform bias, LayerNorm)", h, 3, block=False))
    w.append(_vec("cls.predictions.bias", spec.vocab, 1, block=False))
    w.append(_head(spec))
    return tuple(w)


def _t5(spec: ModelSpec) -> tuple[Weight, ...]:
    """T5ForConditionalGeneration (t5-small/base/large: ReLU MLP, shared tied embedding)."""
    d, f, inner = spec.hidden, spec.intermediate, spec.q_dim
    Le, Ld = spec.layers, spec.decoder_layers
    w: list[Weight] = []
    for stack, n, attns in (("encoder", Le, 1), ("decoder", Ld, 2)):
        w.append(Weight(f"{stack}.attention q,k,v", inner, d, 3 * n * attns, "linear"))
        w.append(Weight(f"{stack}.attention o", d, inner, n * attns, "linear"))
        w.append(Weight(f"{stack}.wi", f, d, n, "linear"))
        w.append(Weight(f"{stack}.wo", d, f, n, "linear"))
        w.append(_vec(f"{stack}.layer_norms", d, n * (attns + 1)))
        w.append(_vec(f"{stack}.relative_attention_bias", spec.relative_buckets * spec.heads, 1, block=False))
        w.append(_vec(f"{stack}.final_layer_norm", d, 1, block=False))
    w.append(Weight("shared", spec.vocab, d, 1, "embedding", block=False))
    w.append(_head(spec))
    return tuple(w)

"""The shape of a model as the estimate needs it, and the traits of each supported family.

A :class:`ModelSpec` is what ``config.json`` says (or a bundled row), normalised: GPT-2's
``n_embd``/``n_layer``/``n_head`` and T5's ``d_model``/``d_ff``/``num_layers`` become the same
fields as Llama's. The family traits say how transformers builds a layer of that family (which
norm, fused projections, gated MLP, eager softmax dtype), because the saved activations depend
on it (see :mod:`envdoctor.fit.activations`).

>>> spec = ModelSpec(name="tiny", architecture="LlamaForCausalLM", family="llama", hidden=64,
...                  intermediate=128, layers=2, heads=4, kv_heads=2, head_dim=16, vocab=100)
>>> spec.q_dim, spec.kv_dim, spec.traits.norm
(64, 32, 'rms')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Family = Literal[
    "llama",
    "qwen2",
    "qwen3",
    "mistral",
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "phi3",
    "gpt2",
    "bert",
    "t5",
]
Kind = Literal["decoder", "encoder", "encoder-decoder"]
Norm = Literal["rms", "rms_gemma", "layernorm", "rms_t5"]
Activation = Literal["silu", "gelu_tanh", "gelu_new_python", "gelu", "relu", "gelu_new_gated"]


@dataclass(frozen=True)
class Traits:
    """How transformers (5.x) builds one layer of a family; each flag changes what backward keeps."""

    kind: Kind
    norm: Norm
    gated_mlp: bool  # SwiGLU/GeGLU: gate, up and down projections
    activation: Activation
    fused_qkv: bool = False  # one qkv projection (Phi-3, GPT-2)
    fused_gate_up: bool = False  # one gate_up projection (Phi-3)
    rope: bool = True
    qk_norm: bool = False  # RMSNorm on q and k per head (Qwen3)
    sandwich_norm: bool = False  # norms after attention and MLP too (Gemma 2): four per layer
    post_ln: bool = False  # LayerNorm after the residual add (BERT)
    eager_softmax_fp32: bool = True  # eager attention upcasts the scores to fp32 (Llama family, T5)
    moe: bool = False
    learned_positions: bool = False
    logit_softcap: bool = False


TRAITS: dict[str, Traits] = {
    "llama": Traits("decoder", "rms", True, "silu"),
    "mistral": Traits("decoder", "rms", True, "silu"),
    "qwen2": Traits("decoder", "rms", True, "silu"),
    "qwen3": Traits("decoder", "rms", True, "silu", qk_norm=True),
    "mixtral": Traits("decoder", "rms", True, "silu", moe=True),
    "qwen2_moe": Traits("decoder", "rms", True, "silu", moe=True),
    "qwen3_moe": Traits("decoder", "rms", True, "silu", qk_norm=True, moe=True),
    "gemma": Traits("decoder", "rms_gemma", True, "gelu_tanh"),
    "gemma2": Traits("decoder", "rms_gemma", True, "gelu_tanh", sandwich_norm=True, logit_softcap=True),
    "phi3": Traits("decoder", "rms", True, "silu", fused_qkv=True, fused_gate_up=True),
    "gpt2": Traits(
        "decoder",
        "layernorm",
        False,
        "gelu_new_python",
        fused_qkv=True,
        rope=False,
        eager_softmax_fp32=False,
        learned_positions=True,
    ),
    "bert": Traits(
        "encoder",
        "layernorm",
        False,
        "gelu",
        rope=False,
        post_ln=True,
        eager_softmax_fp32=False,
        learned_positions=True,
    ),
    "t5": Traits("encoder-decoder", "rms_t5", False, "relu", rope=False, eager_softmax_fp32=False),
}


@dataclass(frozen=True)
class ModelSpec:
    """One model's shape. Sizes are counts (not bytes); ``head_dim`` is already resolved.

    ``intermediate`` is the dense MLP width; for MoE families ``expert_intermediate`` is each
    expert's width (Mixtral uses ``intermediate_size`` for it, Qwen-MoE ``moe_intermediate_size``).
    For T5, ``layers`` is the encoder and ``decoder_layers`` the decoder.
    """

    name: str
    architecture: str
    family: Family
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    max_positions: int | None = None
    tie_embeddings: bool = False
    dtype: str | None = None  # torch_dtype of the checkpoint ("bfloat16"), informative
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_expert_intermediate: int = 0
    decoder_layers: int = 0
    attention_bias: bool = False  # q/k/v (and o for Llama) biases
    mlp_bias: bool = False
    attention_dropout: float = 0.0
    hidden_dropout: float = 0.0
    type_vocab: int = 0  # BERT token types
    relative_buckets: int = 0  # T5 relative attention buckets
    sliding_window: int | None = None
    source: str = ""  # where the shape came from: a path or "bundled: <name>"

    @property
    def traits(self) -> Traits:
        return TRAITS[self.family]

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def kind(self) -> Kind:
        return self.traits.kind

    @property
    def total_layers(self) -> int:
        return self.layers + self.decoder_layers

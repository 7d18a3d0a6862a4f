"""What ``fit --measure`` sends its child: the model (config.json for transformers, the normalised
shape for the reference decoder) and the workload, as plain JSON data (pure).

>>> from envdoctor.fit.models import bundled_models
>>> m = bundled_models().find("Qwen2.5-0.5B")
>>> model = child_model(m.spec, m.config)
>>> model["config"]["model_type"], model["config"]["architectures"], model["shape"]["kv_heads"]
('qwen2', ['Qwen2ForCausalLM'], 2)
>>> lora_modules(m.spec, Workload(mode="train", lora_rank=8))
['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envdoctor.fit.activations import effective_attention
from envdoctor.fit.estimate import lora_linears
from envdoctor.fit.spec import ModelSpec
from envdoctor.fit.workload import Workload

#: config.json keys the child must not hand to transformers: remote code, a pre-quantised
#: checkpoint's quantizer (from_config would start it), and bookkeeping
DROPPED = ("auto_map", "quantization_config", "_name_or_path", "transformers_version", "_commit_hash")
#: T5's block linears, as peft's target names (fit lists them per stack and kind)
_T5_LORA = ["q", "k", "v", "o", "wi", "wo"]


def hf_config(spec: ModelSpec, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The config.json object transformers builds the model from: the language model's part of a
    multimodal config, ``architectures`` and ``model_type`` set, remote code and quantizers dropped."""
    data = dict(raw)
    inner = data.get("text_config")
    if isinstance(inner, Mapping) and "hidden_size" not in data and "n_embd" not in data and "d_model" not in data:
        data = dict(inner)
        if isinstance(data.get("model_type"), str):
            data["model_type"] = data["model_type"].replace("_text", "")
    for key in DROPPED:
        data.pop(key, None)
    data["architectures"] = [spec.architecture]
    if not isinstance(data.get("model_type"), str):
        data["model_type"] = spec.family
    if spec.family == "t5":  # the t5-small/base/large configs set both; generate and the loss need them
        data.setdefault("decoder_start_token_id", 0)
        data.setdefault("pad_token_id", 0)
    return data


def shape(spec: ModelSpec, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The normalised fields the plain-torch reference decoder is built from."""
    rope = raw.get("rope_parameters") if isinstance(raw.get("rope_parameters"), Mapping) else {}
    theta = raw.get("rope_theta", rope.get("rope_theta") if isinstance(rope, Mapping) else None)
    return {
        "family": spec.family,
        "hidden": spec.hidden,
        "intermediate": spec.intermediate,
        "layers": spec.layers,
        "decoder_layers": spec.decoder_layers,
        "heads": spec.heads,
        "kv_heads": spec.kv_heads,
        "head_dim": spec.head_dim,
        "vocab": spec.vocab,
        "tie_embeddings": spec.tie_embeddings,
        "attention_bias": spec.attention_bias,
        "mlp_bias": spec.mlp_bias,
        "attention_dropout": spec.attention_dropout,
        "experts": spec.experts,
        "rms_norm_eps": raw.get("rms_norm_eps") if isinstance(raw.get("rms_norm_eps"), (int, float)) else None,
        "rope_theta": theta if isinstance(theta, (int, float)) else None,
    }


def child_model(spec: ModelSpec, raw: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "config": hf_config(spec, raw),
        "family": spec.family,
        "kind": spec.kind,
        "moe": spec.traits.moe,
        "architecture": spec.architecture,
        "shape": shape(spec, raw),
    }


def lora_modules(spec: ModelSpec, w: Workload) -> list[str] | None:
    """peft ``target_modules`` for the linears the estimate adapts (names matched as suffixes);
    None where fit's names do not map onto modules (T5 with ``--lora-targets``)."""
    if not w.lora_rank:
        return []
    names = lora_linears(spec, w)
    if spec.family == "t5":
        return None if w.lora_targets else list(_T5_LORA)
    return list(dict.fromkeys(names))


def child_attention(spec: ModelSpec, w: Workload) -> str:
    """Gemma 2 has no SDPA path in transformers 5 (the estimate counts it eager too); T5 keeps what
    was asked (its SDPA runs the math kernel, which the estimate counts as eager)."""
    return "eager" if effective_attention(spec, w.attention) == "eager" and spec.family != "t5" else w.attention


def child_workload(spec: ModelSpec, w: Workload) -> dict[str, Any]:
    return {
        "mode": w.mode,
        "batch": w.batch,
        "seq": w.seq,
        "new_tokens": w.new_tokens,
        "dtype": w.dtype,
        "amp": w.amp,
        "quant": w.quant,
        "kv_dtype": w.kv_dtype,
        "optimizer": w.optimizer,
        "grad_checkpointing": w.grad_checkpointing,
        "lora_rank": w.lora_rank,
        "lora_modules": lora_modules(spec, w),
        "attention": child_attention(spec, w),
        "loop": w.loop,
        "alloc_conf": w.alloc_conf,
    }

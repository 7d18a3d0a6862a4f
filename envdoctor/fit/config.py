"""A Hugging Face ``config.json`` (text or already-decoded object) to a :class:`ModelSpec`.

Every external config goes through :mod:`envdoctor.parse.jsontext`; anything wrong with it is
one :class:`ConfigError` naming the field:

>>> spec_from_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}', "config.json")
Traceback (most recent call last):
...
envdoctor.fit.config.ConfigError: config.json: field 'num_attention_heads' is missing (LlamaForCausalLM needs it)

Field names differ per family (GPT-2 ``n_embd``/``n_layer``/``n_head``, T5 ``d_model``/``d_ff``/
``num_layers``); defaults are those of transformers 5.x's config classes (``tie_word_embeddings``
True for Gemma, GPT-2, BERT and T5, False for Llama, Mistral, Qwen, Phi-3; ``num_key_value_heads``
defaults to ``num_attention_heads``; ``head_dim`` to ``hidden_size // num_attention_heads``).
A multimodal config with the language model under ``text_config`` is read from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envdoctor.fit.spec import Family, ModelSpec
from envdoctor.parse import ParseError
from envdoctor.parse import jsontext as jt

#: config.json files larger than this are not model configs (Llama-3-70B's is under 1 KiB)
MAX_CONFIG_CHARS = 4 * 1024 * 1024


class ConfigError(ParseError):
    """A config that is not JSON, lacks a field the estimate needs, or names an unsupported model."""


#: ``architectures[0]`` (or ``model_type``) -> family
ARCHITECTURES: dict[str, Family] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Phi3ForCausalLM": "phi3",
    "GPT2LMHeadModel": "gpt2",
    "GPT2Model": "gpt2",
    "BertForMaskedLM": "bert",
    "BertModel": "bert",
    "BertForPreTraining": "bert",
    "BertForSequenceClassification": "bert",
    "T5ForConditionalGeneration": "t5",
    "T5Model": "t5",
}
MODEL_TYPES: dict[str, Family] = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "mixtral": "mixtral",
    "qwen2_moe": "qwen2_moe",
    "qwen3_moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "phi3": "phi3",
    "gpt2": "gpt2",
    "bert": "bert",
    "t5": "t5",
}
_TIED_BY_DEFAULT = {"gemma", "gemma2", "gpt2", "bert", "t5"}
#: the largest value fit takes per integer field (far past any released model: Llama-3.1-405B has
#: hidden 16384, 126 layers, vocab 128k; the longest contexts are 10M tokens); past it the config
#: is refused with the field's name, so no arithmetic ever meets a 400-digit number
FIELD_MAX: dict[str, int] = {
    "hidden_size": 1 << 20,
    "n_embd": 1 << 20,
    "d_model": 1 << 20,
    "intermediate_size": 1 << 22,
    "n_inner": 1 << 22,
    "d_ff": 1 << 22,
    "moe_intermediate_size": 1 << 22,
    "shared_expert_intermediate_size": 1 << 22,
    "num_hidden_layers": 1 << 14,
    "n_layer": 1 << 14,
    "num_layers": 1 << 14,
    "num_decoder_layers": 1 << 14,
    "num_attention_heads": 1 << 16,
    "n_head": 1 << 16,
    "num_heads": 1 << 16,
    "num_key_value_heads": 1 << 16,
    "head_dim": 1 << 16,
    "d_kv": 1 << 16,
    "vocab_size": 1 << 24,
    "type_vocab_size": 1 << 24,
    "num_local_experts": 1 << 16,
    "num_experts": 1 << 16,
    "num_experts_per_tok": 1 << 16,
    "max_position_embeddings": 1 << 30,
    "n_positions": 1 << 30,
    "sliding_window": 1 << 30,
    "relative_attention_num_buckets": 1 << 16,
    "decoder_sparse_step": 1 << 14,
}
#: any other integer field
DEFAULT_FIELD_MAX = (1 << 31) - 1


def _int_field(data: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int | None:
    """An integer field within its bound (FIELD_MAX), or ConfigError naming it."""
    value = jt.get_int(data, key, default)
    limit = FIELD_MAX.get(key, DEFAULT_FIELD_MAX)
    if value is not None and value > limit:
        shown = str(value) if value < 10**30 else f"a {len(str(value))}-digit number"
        raise ConfigError(f"{where}: field {key!r} is {shown}; fit takes at most {limit:,}")
    return value


_MIXED_LAYERS = "mixes dense and MoE layers (decoder_sparse_step/mlp_only_layers), which fit does not model"


def spec_from_text(text: str, where: str) -> ModelSpec:
    """Parse config.json text; ``where`` names it in errors (a path)."""
    try:
        data = jt.loads_object(text, what=where, max_chars=MAX_CONFIG_CHARS)
    except jt.JsonError as exc:
        msg = str(exc)
        raise ConfigError(msg if msg.startswith(where) else f"{where}: {msg}") from None
    return spec_from_config(data, where)


def spec_from_config(data: Mapping[str, Any], where: str, name: str | None = None) -> ModelSpec:
    """A decoded config object -> ModelSpec; ConfigError naming the missing or wrong field."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: not a JSON object")
    try:
        return _spec(data, where, name)
    except jt.JsonError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _family(data: Mapping[str, Any], where: str) -> tuple[Family, str]:
    archs = jt.get_list(data, "architectures")
    arch = archs[0] if archs and isinstance(archs[0], str) else None
    model_type = jt.get_str(data, "model_type")
    if arch in ARCHITECTURES:
        return ARCHITECTURES[arch], arch
    if arch is None and model_type in MODEL_TYPES:
        return MODEL_TYPES[model_type], model_type
    named = arch or model_type
    if named is None:
        raise ConfigError(
            f"{where}: field 'architectures' is missing (and no 'model_type'): is this a Hugging Face config.json?"
        )
    known = ", ".join(sorted({a for a in ARCHITECTURES if not a.endswith("Model")}))
    raise ConfigError(f"{where}: architecture {named!r} is not one fit knows (known: {known})")


def _spec(data: Mapping[str, Any], where: str, name: str | None) -> ModelSpec:
    text_config = jt.get_dict(data, "text_config")
    if text_config and "hidden_size" not in data and "n_embd" not in data and "d_model" not in data:
        inner = dict(text_config)
        if "architectures" not in inner and "model_type" in inner:
            mt = jt.get_str(inner, "model_type") or ""
            inner["model_type"] = mt.replace("_text", "")
        return _spec(inner, f"{where} (text_config)", name)
    family, arch = _family(data, where)

    def need(key: str) -> int:
        value = _int_field(data, key, where)
        if value is None:
            raise ConfigError(f"{where}: field {key!r} is missing ({arch} needs it)")
        if value <= 0:
            raise ConfigError(f"{where}: field {key!r} must be a positive integer, not {value}")
        return value

    def opt_int(key: str, default: int | None = None) -> int | None:
        value = _int_field(data, key, where, default)
        if value is not None and value <= 0:
            raise ConfigError(f"{where}: field {key!r} must be a positive integer, not {value}")
        return value

    def opt_float(key: str, default: float = 0.0) -> float:
        """A probability (the dropout rates): between 0 and 1."""
        raw = data.get(key) if isinstance(data, Mapping) else None
        if isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) > 1:
            raise ConfigError(f"{where}: field {key!r} is a probability between 0 and 1, not {str(raw)[:20]}")
        value = jt.get_float(data, key, default)
        if value is None:
            return default
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"{where}: field {key!r} is a probability between 0 and 1, not {value:g}")
        return value

    tie = jt.get_bool(data, "tie_word_embeddings", family in _TIED_BY_DEFAULT)
    dtype = jt.get_str(data, "torch_dtype") or jt.get_str(data, "dtype")
    common: dict[str, Any] = dict(
        name=name or where, architecture=arch, family=family, dtype=dtype, tie_embeddings=bool(tie), source=where
    )
    if family == "gpt2":
        h, heads = need("n_embd"), need("n_head")
        return ModelSpec(
            hidden=h,
            intermediate=opt_int("n_inner") or 4 * h,
            layers=need("n_layer"),
            heads=heads,
            kv_heads=heads,
            head_dim=_divide(h, heads, where, "n_embd", "n_head"),
            vocab=need("vocab_size"),
            max_positions=opt_int("n_positions", 1024),
            attention_bias=True,
            mlp_bias=True,
            attention_dropout=opt_float("attn_pdrop", 0.1),
            hidden_dropout=opt_float("resid_pdrop", 0.1),
            **common,
        )
    if family == "t5":
        d, heads = need("d_model"), need("num_heads")
        layers = need("num_layers")
        proj = jt.get_str(data, "feed_forward_proj") or "relu"
        if proj not in ("relu",):
            raise ConfigError(
                f"{where}: feed_forward_proj {proj!r}: fit models T5 with the ReLU MLP "
                "(t5-small/base/large); gated-gelu (T5 v1.1, Flan-T5) is not modelled yet"
            )
        common["tie_embeddings"] = True  # transformers 5 always ties T5's head (configuration_t5.py)
        return ModelSpec(
            hidden=d,
            intermediate=need("d_ff"),
            layers=layers,
            decoder_layers=opt_int("num_decoder_layers") or layers,
            heads=heads,
            kv_heads=heads,
            head_dim=opt_int("d_kv", 64) or 64,
            vocab=need("vocab_size"),
            max_positions=None,
            relative_buckets=opt_int("relative_attention_num_buckets", 32) or 32,
            attention_dropout=opt_float("dropout_rate", 0.1),
            hidden_dropout=opt_float("dropout_rate", 0.1),
            **common,
        )
    h, heads = need("hidden_size"), need("num_attention_heads")
    kv_heads = opt_int("num_key_value_heads") or heads
    if heads % kv_heads:
        raise ConfigError(f"{where}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    head_dim = opt_int("head_dim") or _divide(h, heads, where, "hidden_size", "num_attention_heads")
    layers = need("num_hidden_layers")
    extra: dict[str, Any] = {}
    if family == "bert":
        extra = dict(
            type_vocab=opt_int("type_vocab_size", 2) or 2,
            attention_bias=True,
            mlp_bias=True,
            attention_dropout=opt_float("attention_probs_dropout_prob", 0.1),
            hidden_dropout=opt_float("hidden_dropout_prob", 0.1),
        )
    elif family == "mixtral":
        extra = dict(
            experts=need("num_local_experts"),
            experts_per_token=need("num_experts_per_tok"),
            expert_intermediate=need("intermediate_size"),
        )
    elif family in ("qwen2_moe", "qwen3_moe"):
        if (opt_int("decoder_sparse_step", 1) or 1) != 1 or jt.get_list(data, "mlp_only_layers"):
            raise ConfigError(f"{where}: this config {_MIXED_LAYERS}")
        extra = dict(
            experts=need("num_experts"),
            experts_per_token=need("num_experts_per_tok"),
            expert_intermediate=need("moe_intermediate_size"),
            shared_expert_intermediate=_int_field(data, "shared_expert_intermediate_size", where) or 0,
        )
    if family in ("qwen2",):
        extra["attention_bias"] = True  # Qwen2Attention: q/k/v projections always have a bias
    elif family != "bert":
        extra["attention_bias"] = bool(jt.get_bool(data, "attention_bias", False))
        extra["mlp_bias"] = bool(jt.get_bool(data, "mlp_bias", False))
        extra["attention_dropout"] = opt_float("attention_dropout", 0.0)
    if extra.get("experts") and extra["experts_per_token"] > extra["experts"]:
        raise ConfigError(
            f"{where}: num_experts_per_tok {extra['experts_per_token']} exceeds the {extra['experts']} experts"
        )
    intermediate = extra.get("expert_intermediate") if family == "mixtral" else None
    return ModelSpec(
        hidden=h,
        intermediate=intermediate or need("intermediate_size")
        if family != "qwen3_moe"
        else (opt_int("intermediate_size") or 0),
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=need("vocab_size"),
        max_positions=opt_int("max_position_embeddings"),
        sliding_window=(opt_int("sliding_window") if jt.get_bool(data, "use_sliding_window", True) else None),
        **extra,
        **common,
    )


def _divide(total: int, parts: int, where: str, a: str, b: str) -> int:
    if total % parts:
        raise ConfigError(f"{where}: {a} {total} is not a multiple of {b} {parts}")
    return total // parts

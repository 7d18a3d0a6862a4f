"""Reading real config.json shapes (tests/fixtures/hf-configs/, README there) and refusing bad ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.fit.config import ConfigError, spec_from_config, spec_from_text
from envdoctor.fit.resolve import read_config_file, resolve_model

FIX = Path(__file__).parent / "fixtures" / "hf-configs"

# (file, family, hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, tied): read off the files by hand
SHAPES = [
    ("llama-3.2-1b.json", "llama", 2048, 8192, 16, 32, 8, 64, 128256, True),
    ("llama-3.1-8b.json", "llama", 4096, 14336, 32, 32, 8, 128, 128256, False),
    ("qwen2.5-7b.json", "qwen2", 3584, 18944, 28, 28, 4, 128, 152064, False),
    ("mistral-7b-v0.1.json", "mistral", 4096, 14336, 32, 32, 8, 128, 32000, False),
    ("mistral-nemo-base-2407.json", "mistral", 5120, 14336, 40, 32, 8, 128, 131072, False),
    ("mixtral-8x7b-v0.1.json", "mixtral", 4096, 14336, 32, 32, 8, 128, 32000, False),
    ("gemma-2b.json", "gemma", 2048, 16384, 18, 8, 1, 256, 256000, True),  # tied by GemmaConfig's default
    ("gemma-2-9b.json", "gemma2", 3584, 14336, 42, 16, 8, 256, 256000, True),
    ("phi-3.5-mini-instruct.json", "phi3", 3072, 8192, 32, 32, 32, 96, 32064, False),
    ("gpt2.json", "gpt2", 768, 3072, 12, 12, 12, 64, 50257, True),  # n_inner null: 4 x n_embd
    ("gpt2-medium.json", "gpt2", 1024, 4096, 24, 16, 16, 64, 50257, True),
    ("qwen3-0.6b.json", "qwen3", 1024, 3072, 28, 16, 8, 128, 151936, True),
    ("bert-base-uncased.json", "bert", 768, 3072, 12, 12, 12, 64, 30522, True),
    ("t5-small.json", "t5", 512, 2048, 6, 8, 8, 64, 32128, True),
]


@pytest.mark.parametrize("name,family,h,f,layers,heads,kv,hd,vocab,tied", SHAPES)
def test_real_config_shapes(name, family, h, f, layers, heads, kv, hd, vocab, tied):
    s = read_config_file(FIX / name)
    assert (
        s.family,
        s.hidden,
        s.intermediate,
        s.layers,
        s.heads,
        s.kv_heads,
        s.head_dim,
        s.vocab,
        s.tie_embeddings,
    ) == (family, h, f, layers, heads, kv, hd, vocab, tied)


def test_moe_fields():
    mix = read_config_file(FIX / "mixtral-8x7b-v0.1.json")
    assert (mix.experts, mix.experts_per_token, mix.expert_intermediate) == (8, 2, 14336)
    qwen3 = read_config_file(FIX / "qwen3-30b-a3b.json")
    assert (qwen3.experts, qwen3.experts_per_token, qwen3.expert_intermediate, qwen3.head_dim) == (128, 8, 768, 128)
    qwen15 = read_config_file(FIX / "qwen1.5-moe-a2.7b.json")
    assert (qwen15.experts, qwen15.experts_per_token, qwen15.shared_expert_intermediate) == (60, 4, 5632)


def test_t5_decoder_and_dropout_and_gpt2_dropout():
    t5 = read_config_file(FIX / "t5-small.json")
    assert (t5.decoder_layers, t5.relative_buckets, t5.hidden_dropout) == (6, 32, 0.1)
    gpt2 = read_config_file(FIX / "gpt2.json")
    assert (gpt2.max_positions, gpt2.attention_dropout, gpt2.hidden_dropout) == (1024, 0.1, 0.1)
    assert read_config_file(FIX / "mistral-7b-v0.1.json").sliding_window == 4096


def test_a_directory_holding_config_json(tmp_path):
    (tmp_path / "config.json").write_text((FIX / "qwen2.5-7b.json").read_text())
    assert resolve_model(str(tmp_path)).hidden == 3584
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="a directory without config.json"):
        resolve_model(str(empty))


def test_llava_text_config_names_the_missing_field():
    # LLaVA-1.5 lists only what differs from LlamaConfig's defaults under text_config
    with pytest.raises(ConfigError) as exc:
        read_config_file(FIX / "llava-1.5-7b.json")
    assert "(text_config): field 'hidden_size' is missing (LlamaForCausalLM needs it)" in str(exc.value)


def test_gemma3_text_config_names_the_unknown_architecture():
    with pytest.raises(ConfigError, match="architecture 'gemma3' is not one fit knows"):
        read_config_file(FIX / "gemma-3-4b-it.json")


def test_a_complete_text_config_is_read():
    # synthetic: a multimodal wrapper around a complete Llama text config (the shape of newer VLM configs)
    inner = json.loads((FIX / "llama-3.2-1b.json").read_text())
    outer = {
        "architectures": ["SomeVisionLanguageModel"],
        "model_type": "vlm",
        "text_config": inner,
        "vision_config": {"hidden_size": 1024},
    }
    s = spec_from_config(outer, "config.json")
    assert (s.family, s.hidden, s.layers) == ("llama", 2048, 16)


@pytest.mark.parametrize(
    "text,message",
    [
        ("not json", "config.json: not valid JSON"),
        ("[1, 2]", "config.json is not a JSON object (got list)"),
        ('{"hidden_size": 10}', "field 'architectures' is missing (and no 'model_type')"),
        (
            '{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4}',
            "field 'num_hidden_layers' is missing (LlamaForCausalLM needs it)",
        ),
        (
            '{"architectures": ["LlamaForCausalLM"], "hidden_size": "64"}',
            "hidden_size: expected an integer, got string",
        ),
        (
            '{"architectures": ["LlamaForCausalLM"], "hidden_size": 65, "num_attention_heads": 4}',
            "hidden_size 65 is not a multiple of num_attention_heads 4",
        ),
        ('{"architectures": ["MambaForCausalLM"]}', "architecture 'MambaForCausalLM' is not one fit knows"),
        (
            '{"architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, '
            '"num_hidden_layers": 2, "decoder_sparse_step": 2}',
            "mixes dense and MoE layers",
        ),
        (
            '{"architectures": ["T5ForConditionalGeneration"], "d_model": 8, "num_heads": 2, "num_layers": 1, "d_ff": 8, '
            '"vocab_size": 10, "feed_forward_proj": "gated-gelu"}',
            "gated-gelu (T5 v1.1, Flan-T5) is not modelled yet",
        ),
        ('{"architectures": ["LlamaForCausalLM"], "hidden_size": 1e999}', "out of range"),
    ],
)
def test_bad_configs_are_one_line_naming_the_field(text, message):
    with pytest.raises(ConfigError) as exc:
        spec_from_text(text, "config.json")
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_an_unreadable_or_huge_file(tmp_path):
    big = tmp_path / "config.json"
    big.write_text(" " * (4 * 1024 * 1024 + 1))
    with pytest.raises(ConfigError, match="too large for a config.json"):
        read_config_file(big)
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        read_config_file(binary)


SCALARS = st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "architectures",
        "model_type",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
        "text_config",
        "n_embd",
        "n_layer",
        "n_head",
        "d_model",
        "num_layers",
        "num_heads",
        "d_ff",
        "num_experts",
        "num_local_experts",
        "num_experts_per_tok",
        "tie_word_embeddings",
        "moe_intermediate_size",
    ]
)
VALUES = st.one_of(
    JSON,
    st.sampled_from(
        [
            ["LlamaForCausalLM"],
            ["T5ForConditionalGeneration"],
            ["GPT2LMHeadModel"],
            ["MixtralForCausalLM"],
            "llama",
            "t5",
            0,
            -1,
            64,
            4,
        ]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(KEYS, VALUES, max_size=10))
def test_any_config_object_gives_a_spec_or_a_config_error(data):
    try:
        spec = spec_from_config(data, "config.json")
    except ConfigError as exc:
        assert "\n" not in str(exc)
    else:
        assert spec.hidden > 0 and spec.layers > 0 and spec.head_dim > 0


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gives_a_spec_or_a_config_error(text):
    try:
        spec_from_text(text, "config.json")
    except ConfigError:
        pass

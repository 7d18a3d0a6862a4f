"""data/models.toml: every bundled row loads and checks; lookups; broken copies are refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.fit.models import bundled_models, read_models
from envdoctor.fit.params import inventory, total_params
from envdoctor.table import TableError, data_directory

TOML = data_directory() / "models.toml"

# Parameter counts as the model cards / HF report them (written by hand, not from this code).
PUBLISHED = {
    "Llama-3.1-8B": 8_030_261_248,
    "gpt2": 124_439_808,  # GPT2LMHeadModel, tied head
    "t5-small": 60_506_624,  # T5ForConditionalGeneration
    "Mixtral-8x7B-v0.1": 46_702_792_704,
}


def test_every_bundled_row_loads_and_is_confirmed_or_marked():
    table = read_models(TOML)
    assert len(table.models) >= 30
    for m in table.models:
        assert m.source.startswith("https://huggingface.co/") and m.source.endswith("/blob/main/config.json")
        assert m.confirmed_from or m.unconfirmed, m.name
        assert m.checked
        assert total_params(inventory(m.spec)) > 0


def test_the_families_the_issue_asks_for_are_bundled():
    names = {m.name for m in bundled_models().models}
    for want in (
        "Llama-3.2-1B",
        "Llama-3.2-3B",
        "Llama-3.1-8B",
        "Llama-3.1-70B",
        "Qwen2.5-0.5B",
        "Qwen2.5-72B",
        "Mistral-7B-v0.1",
        "Mixtral-8x7B-v0.1",
        "gemma-2b",
        "gemma-7b",
        "gemma-2-9b",
        "Phi-3-mini-4k-instruct",
        "Phi-3.5-mini-instruct",
        "gpt2",
        "gpt2-medium",
        "gpt2-large",
        "gpt2-xl",
        "bert-base-uncased",
        "bert-large-uncased",
        "t5-small",
        "t5-base",
        "t5-large",
    ):
        assert want in names
    kinds = {m.spec.family for m in bundled_models().models}
    assert {"llama", "mixtral", "qwen3_moe", "bert", "t5", "gpt2"} <= kinds  # dense, GQA, MoE, encoder(-decoder)


@pytest.mark.parametrize("name,count", sorted(PUBLISHED.items()))
def test_parameter_counts_match_the_published_ones(name, count):
    assert total_params(inventory(bundled_models().find(name).spec)) == count


def test_bert_base_masked_lm_count_by_hand():
    # embeddings 30522*768 + 512*768 + 2*768 + LN 2*768 = 24,247,296 (+ ...); per layer 4 x (768*768+768)
    # + (768*3072+3072) + (3072*768+768) + 4*768 = 7,087,872; 12 layers = 85,054,464; MLM head: dense
    # 768*768+768, LN 2*768, decoder bias 30522 = 622,650 (decoder tied).
    embeddings = 30522 * 768 + 512 * 768 + 2 * 768 + 2 * 768
    layer = 4 * (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) + 4 * 768
    head = 768 * 768 + 768 + 2 * 768 + 30522
    assert total_params(inventory(bundled_models().find("bert-base-uncased").spec)) == embeddings + 12 * layer + head


def test_lookup_is_case_insensitive_and_takes_hub_ids_and_aliases():
    t = bundled_models()
    assert t.find("LLAMA-3.1-8B").name == "Llama-3.1-8B"
    assert t.find("meta-llama/Llama-3.1-8B").name == "Llama-3.1-8B"
    assert t.find("llama-3-8b").name == "Llama-3.1-8B"  # alias
    assert t.find("no-such-model") is None
    assert "Qwen2.5-7B" in t.suggest("qwen2.5-7")


def test_unconfirmed_fields_are_kept():
    m = bundled_models().find("Qwen2.5-1.5B")
    assert m.unconfirmed_fields == ("max_position_embeddings",)


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    text = TOML.read_text()
    assert old in text
    p = tmp_path / "models.toml"
    p.write_text(text.replace(old, new, 1))
    return p


@pytest.mark.parametrize(
    "old,new,message",
    [
        ('name = "gpt2-medium"', 'name = "gpt2"', "name 'gpt2' is already used by 'gpt2'"),
        (
            'source = "https://huggingface.co/openai-community/gpt2/blob/main/config.json"',
            'source = "https://example.com/gpt2.json"',
            "is not https://huggingface.co/<org>/<model>/blob/main/config.json",
        ),
        ("n_embd = 768", 'n_embd = "768"', "n_embd: expected an integer, got string"),
        ("n_embd = 768", "n_embd = 0", "field 'n_embd' must be a positive integer, not 0"),
        (
            'architecture = "GPT2LMHeadModel"',
            'architecture = "GPT3LMHeadModel"',
            "architecture 'GPT3LMHeadModel' is not one",
        ),
        ('checked = "2026-12-01"', 'checked = "yesterday"', "is not a date"),
    ],
)
def test_broken_rows_are_refused_with_the_row_and_field(tmp_path, old, new, message):
    with pytest.raises(TableError) as exc:
        read_models(_broken(tmp_path, old, new))
    assert message in str(exc.value)
    assert "models.toml" in str(exc.value)


def test_a_row_without_confirmation_must_be_marked(tmp_path):
    text = TOML.read_text()
    start = text.index('name = "gpt2"')
    line = text.index("confirmed_from", start)
    end = text.index("\n", line)
    p = tmp_path / "models.toml"
    p.write_text(text[:line] + text[end + 1 :])
    with pytest.raises(TableError, match="no 'confirmed_from'"):
        read_models(p)
    p.write_text(text[:line] + "unconfirmed = true\n" + text[end + 1 :])
    assert read_models(p).find("gpt2").unconfirmed

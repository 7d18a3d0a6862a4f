"""Issue 28 §5: a Hugging Face id resolves from the local Hub cache, never the network.

The cache is laid out as huggingface_hub writes it: ``models--ORG--NAME/refs/main`` holding the
revision, ``snapshots/<revision>/config.json``; HF_HUB_CACHE wins over HF_HOME/hub.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.fit.config import ConfigError
from envdoctor.fit.resolve import hub_cache_dir, hub_config, resolve_model, resolve_model_config

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 5000,
    "torch_dtype": "bfloat16",
}


def cache_with(
    root: Path, repo: str, config: dict, rev: str = "0123456789abcdef0123456789abcdef01234567", ref: bool = True
) -> Path:
    folder = root / ("models--" + repo.replace("/", "--"))
    snap = folder / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    if ref:
        (folder / "refs").mkdir()
        (folder / "refs" / "main").write_text(rev)
    return snap / "config.json"


def test_the_cache_folder_follows_hf_hub_cache_then_hf_home(tmp_path):
    assert hub_cache_dir({"HF_HUB_CACHE": str(tmp_path / "c"), "HF_HOME": "/x"}) == tmp_path / "c"
    assert hub_cache_dir({"HF_HOME": str(tmp_path)}) == tmp_path / "hub"
    assert hub_cache_dir({}) == Path("~/.cache/huggingface/hub").expanduser()


def test_a_hub_id_resolves_from_the_cache_by_refs_main(tmp_path, monkeypatch):
    path = cache_with(tmp_path / "hub", "my-org/Tiny-Llama", CONFIG)
    other = path.parent.parent / "ffffffffffffffffffffffffffffffffffffffff" / "config.json"
    other.parent.mkdir()
    other.write_text(json.dumps(dict(CONFIG, num_hidden_layers=9)))  # newer, but not refs/main
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert hub_config("my-org/Tiny-Llama")[0] == path
    spec = resolve_model("my-org/Tiny-Llama")
    assert spec.name == "my-org/Tiny-Llama" and spec.layers == 3 and str(path) in spec.source
    spec, raw = resolve_model_config("my-org/Tiny-Llama")
    assert raw["vocab_size"] == 5000
    r = CliRunner().invoke(cli, ["fit", "my-org/Tiny-Llama", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["model"]["name"] == "my-org/Tiny-Llama"


def test_without_refs_main_the_newest_snapshot(tmp_path, monkeypatch):
    cache_with(tmp_path, "org/M", CONFIG, ref=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert resolve_model("org/M").layers == 3


def test_a_cached_id_wins_over_the_bundled_row_and_an_uncached_one_falls_back_to_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert resolve_model("meta-llama/Llama-3.1-8B").name == "Llama-3.1-8B"  # bundled
    cache_with(tmp_path, "meta-llama/Llama-3.1-8B", CONFIG)
    assert resolve_model("meta-llama/Llama-3.1-8B").hidden == 128  # the cache's


def test_not_found_is_one_line_naming_where_and_how_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ConfigError) as err:
        resolve_model("someorg/NoSuchModel")
    assert str(tmp_path / "models--someorg--NoSuchModel") in str(err.value)
    assert "huggingface-cli download someorg/NoSuchModel config.json" in str(err.value)
    r = CliRunner().invoke(cli, ["fit", "someorg/NoSuchModel"], env={"HF_HUB_CACHE": str(tmp_path)})
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1


def test_a_broken_cached_config_names_its_file(tmp_path, monkeypatch):
    path = cache_with(tmp_path, "org/Broken", CONFIG)
    path.write_text("{not json")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ConfigError, match="not valid JSON"):
        resolve_model("org/Broken")

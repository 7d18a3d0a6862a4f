"""``envdoctor fit`` through Click's CliRunner: text, --json, verdicts, exit codes, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli

FIX = Path(__file__).parent / "fixtures" / "hf-configs"


def run(*args: str):
    return CliRunner().invoke(cli, ["fit", *args])


def test_bundled_model_inference_text_fits_an_h200():
    r = run("Llama-3.1-8B", "--gpu", "H200")
    assert r.exit_code == 0, r.output
    assert "envdoctor fit Llama-3.1-8B (LlamaForCausalLM, 8.03B parameters)" in r.output
    assert "inference, batch 1, 2048-token prompt + 256 new tokens, bf16 weights" in r.output
    assert "weights                  14.96 GiB  params x 2 B (bf16)" in r.output  # 8,030,261,248 x 2 B
    assert "KV cache" in r.output and "CUDA context + cuBLAS" in r.output
    assert "NVIDIA H200" in r.output and "fits," in r.output
    assert "largest --batch" in r.output


def test_training_that_does_not_fit_lists_ways_and_exits_1():
    r = run("Llama-3.1-8B", "--train", "--gpu", "RTX 4090")
    assert r.exit_code == 1, r.output
    assert "does not fit by" in r.output
    assert "Ways to fit NVIDIA GeForce RTX 4090" in r.output
    # fifth round: ZeRO-3 over up to 64 GPUs no longer fits 23.28 GiB at the band's upper edge (the
    # unsharded activations and logits, 15.7 GiB, plus their reserve); QLoRA and a larger GPU are listed
    assert "--quant int4 --lora 16" in r.output and "a larger GPU" in r.output


def test_json_document_has_peak_terms_and_inputs():
    r = run(
        str(FIX / "qwen2.5-7b.json"),
        "--train",
        "--dtype",
        "fp32",
        "--amp",
        "bf16",
        "--batch",
        "2",
        "--seq",
        "1024",
        "--grad-checkpointing",
        "--memory",
        "80GiB",
        "--json",
    )
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.output)
    assert doc["schema"] == "envdoctor.fit/1"
    assert doc["peak_bytes"] == sum(doc["terms"].values())
    assert doc["model"]["architecture"] == "Qwen2ForCausalLM" and doc["model"]["params_total"] > 7e9
    assert doc["workload"]["amp"] == "bf16" and doc["workload"]["grad_checkpointing"] is True
    details = {t["name"]: t for t in doc["term_details"]}
    assert details["weights"]["inputs"]["bytes_each"] == 4
    assert doc["peak_phase"] == "optimizer step"  # 16 B/param dominates with checkpointing
    loss = next(p for p in doc["phases"] if p["name"] == "loss backward")
    acts = next(t for t in loss["term_details"] if t["name"] == "activations")
    assert acts["inputs"]["batch"] == 2 and acts["inputs"]["grad_checkpointing"] is True
    assert doc["gpus"][0]["total_bytes"] == 80 * 2**30
    assert doc["activation_detail"]["layer"][0]["tensor"].startswith("attention norm")
    assert doc["flops"]["tokens_per_step"] == 2048


def test_no_gpu_given_says_how_to_get_a_verdict():
    r = run("gpt2", "--seq", "512")
    assert r.exit_code == 0
    assert "No GPU given: add --gpu NAME" in r.output


def test_list_shows_the_bundled_models():
    r = run("--list")
    assert r.exit_code == 0
    assert "Mixtral-8x7B-v0.1" in r.output and "t5-small" in r.output
    assert "(unconfirmed: max_position_embeddings)" in r.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["gpt2", "--batch", "0"], "--batch must be between 1 and 65536 (got 0)"),
        (["Llama-3.1-8B", "--seq", "1000000000"], "--seq must be between 1 and 1048576 (got 1000000000)"),
        (["gpt2", "--seq", "2000"], "gpt2 has 1024 learned positions"),
        (["lama-3.1-8b"], "did you mean: Llama-3.1-8B"),
        ([str(FIX / "llava-1.5-7b.json")], "field 'hidden_size' is missing"),
        ([str(FIX / "gemma-3-4b-it.json")], "architecture 'gemma3' is not one fit knows"),
        (["gpt2", "--gpu", "no such gpu"], "--gpu 'no such gpu': not in the table"),
        (["gpt2", "--memory", "lots"], "--memory: 'lots' is not a size"),
        (["gpt2", "--train", "--quant", "int4"], "--quant in training needs --lora R"),
        (["gpt2", "--train", "--lora", "8", "--lora-targets", "q_proj"], "--lora-targets 'q_proj' is not a linear"),
        (["bert-base-uncased", "--new-tokens", "4"], "is an encoder"),
        ([], "give MODEL"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert "Traceback" not in r.output


def test_a_config_that_is_not_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    r = run(str(p))
    assert r.exit_code == 2
    assert f"envdoctor fit: {p}: not valid JSON" in r.output


def test_every_bundled_model_answers():
    from envdoctor.fit.models import bundled_models

    for m in bundled_models().models:
        r = run(m.name, "--seq", "512", "--json")
        assert r.exit_code == 0, (m.name, r.output)
        assert json.loads(r.output)["peak_bytes"] > 0


_LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 1000,
}


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("vocab_size", int("9" * 400), "field 'vocab_size' is a 400-digit number; fit takes at most 16,777,216"),
        ("hidden_size", int("9" * 400), "field 'hidden_size' is a 400-digit number; fit takes at most 1,048,576"),
        ("num_hidden_layers", 10**9, "field 'num_hidden_layers' is 1000000000; fit takes at most 16,384"),
        ("attention_dropout", int("9" * 400), "field 'attention_dropout' is a probability between 0 and 1"),
        ("attention_dropout", 1.5, "field 'attention_dropout' is a probability between 0 and 1, not 1.5"),
    ],
)
def test_hostile_fit_config_numbers_are_one_line_and_exit_2(tmp_path, field, value, message):
    """Issue 27: a 400-digit vocab_size or hidden_size gave OverflowError (exit 3); each integer field
    has a bound and the refusal names it."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(dict(_LLAMA, **{field: value})))
    for extra in ((), ("--train",)):
        r = run(str(p), *extra)
        assert r.exit_code == 2, r.output
        assert message in r.output and len(r.output.strip().splitlines()) == 1
        assert "Traceback" not in r.output and "internal error" not in r.output


@pytest.mark.parametrize(
    "model, message",
    [
        ("a" * 300, "(300 characters) is not a file, a directory or a bundled model"),
        ("a" * 5000, "MODEL is 5,000 characters long"),
        ("/tmp/" + "b" * 300 + "/config.json", "is not a file, a directory or a bundled model"),
    ],
)
def test_hostile_fit_model_names_are_one_line_and_exit_2(model, message):
    """Issue 27: a name past the file-name limit gave OSError (ENAMETOOLONG), exit 3."""
    r = run(model)
    assert r.exit_code == 2, r.output
    assert message in r.output and len(r.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "size, message",
    [
        ("999999999999999999999999999999", "has no unit"),  # envdoctor/units.py: a bare number is refused
        ("999999999999999999999999999999GiB", "is outside 1 B to 1 PiB"),
        ("9" * 400, "is not a size like"),
        ("\u0663GiB", "is not a size like"),  # an Arabic-Indic digit: only ASCII digits are numbers
        ("inf", "is not a size like"),
        ("nan", "is not a size like"),
    ],
)
def test_hostile_fit_memory_sizes_are_one_line_and_exit_2(size, message):
    """Issue 27: --memory 999999999999999999999999999999 gave OverflowError (float infinity to int)."""
    r = run("gpt2", "--memory", size)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output


def test_alloc_conf_comes_from_the_option_or_the_environment_and_is_said():
    # fifth round: expandable_segments lowers the loss's second fp32 block by the freed bf16 logits block,
    # which HF Trainer's loop frees (the custom loop holds it)
    trainer = ["--dtype", "bf16", "--loop", "trainer"]
    r = run("gpt2", "--train", "--batch", "2", "--seq", "256", *trainer, "--json")
    base = json.loads(r.output)
    assert base["workload"]["alloc_conf"] is None and base["peak_high_bytes"] > base["peak_bytes"]
    r = CliRunner().invoke(
        cli,
        ["fit", "gpt2", "--train", "--batch", "2", "--seq", "256", *trainer, "--json"],
        env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    )
    doc = json.loads(r.output)
    assert doc["workload"]["alloc_conf"] == "expandable_segments:True" and doc["peak_bytes"] < base["peak_bytes"]
    text = run("gpt2", "--train", "--batch", "2", "--seq", "256", "--alloc-conf", "expandable_segments:True").output
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in text and "verdicts use the upper edge" in text
    bad = run("gpt2", "--alloc-conf", "expandable_segments:\x00True")
    assert bad.exit_code == 2 and "not a setting like expandable_segments:True" in bad.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["Llama-3.1-70B", "--gpus", "2"], "--gpus 2 needs a strategy: --tp 2"),
        (["gpt2", "--train", "--gpus", "4"], "--gpus 4 needs a strategy: --ddp (replicas), --zero 1|2|3 or --fsdp"),
        (["gpt2", "--train", "--fsdp", "--zero", "1", "--gpus", "2"], "--fsdp is ZeRO-3's layout"),
        (["Llama-3.1-70B", "--tp", "3"], "64 attention heads do not split over 3 GPUs"),
        (["Llama-3.1-70B", "--tp", "2", "--gpus", "4"], "data parallel over tensor-parallel groups is not modelled"),
        (["gpt2", "--train", "--tp", "2"], "--tp is modelled for --infer only"),
    ],
)
def test_multi_gpu_strategies_are_asked_for(args, message):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert message in r.output and len(r.output.strip().splitlines()) == 1


def test_fsdp_is_zero3_and_tp_answers_a_70b_inference_on_two_h200s():
    fsdp = json.loads(run("Llama-3.1-8B", "--train", "--fsdp", "--gpus", "8", "--json").output)
    zero = json.loads(run("Llama-3.1-8B", "--train", "--zero", "3", "--gpus", "8", "--json").output)
    assert fsdp["peak_bytes"] == zero["peak_bytes"] and fsdp["workload"]["zero"] == 3
    r = run("Llama-3.1-70B", "--seq", "4096", "--tp", "2", "--memory", "139GiB", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["workload"]["tp"] == 2 and doc["workload"]["gpus"] == 2 and doc["gpus"][0]["fits"]


@pytest.mark.parametrize(
    "conf,says",
    [
        ("garbage", "'garbage' is not a key:value item"),
        (
            "max_split_size_mb:NaN",
            "max_split_size_mb takes a whole number of MiB (torch reads it with std::stoull), not 'NaN'",
        ),
        (
            "expandable_segments:True,max_split_size_mb:inf",
            "max_split_size_mb takes a whole number of MiB (torch reads it with std::stoull), not 'inf'",
        ),
        ("garbage_collection_threshold:-1", "garbage_collection_threshold takes a number"),
    ],
)
def test_an_alloc_conf_torch_would_refuse_is_a_usage_error_not_a_silent_fit(conf, says):
    r = run("gpt2", "--gpu", "H200", "--alloc-conf", conf)
    assert r.exit_code == 2, r.output
    assert says in r.output and len(r.output.strip().splitlines()) == 1


def test_an_alloc_conf_with_a_bracketed_list_is_accepted():
    r = run("gpt2", "--gpu", "H200", "--alloc-conf", "roundup_power2_divisions:[256:1,512:2],expandable_segments:True")
    assert r.exit_code == 0, r.output


def test_loop_trainer_without_train_is_a_usage_error_like_the_other_train_options():
    """`--loop trainer` with inference was taken silently (and changed nothing), unlike --zero or --amp."""
    r = run("gpt2", "--loop", "trainer")
    assert r.exit_code == 2, r.output
    assert "--loop trainer is for --train" in r.output
    assert run("gpt2", "--train", "--loop", "trainer", "--gpu", "H200").exit_code == 0

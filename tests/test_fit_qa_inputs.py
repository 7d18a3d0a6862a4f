"""Issue 28, the inputs a user planning a job gives ``fit``: allocator settings torch would refuse
(or that the model does not cover), a strategy without its GPUs, a Hub cache folder without a
config, and this machine's GPU that cannot run bf16. Each one was a silent answer before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.fit import usable
from envdoctor.fit.command import alloc_conf_note, alloc_conf_problem
from envdoctor.fit.usable import local_gpus
from tests.fakenvml import FakeNvml

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, ["fit", *args], env=env)


@pytest.mark.parametrize(
    "conf,says",
    [
        # torch's ConfigTokenizer::toBool takes exactly True or False: 'true' was modelled as expandable
        ("expandable_segments:true", "expandable_segments takes True or False (torch's spelling), not 'true'"),
        ("expandable_segments:1", "expandable_segments takes True or False"),
        ("max_split_size_mb:10", "max_split_size_mb must be at least 20"),
        ("garbage_collection_threshold:1.5", "garbage_collection_threshold must be between 0.0 and 1.0"),
        ("backend:cudaMallocSync", "backend is native or cudaMallocAsync, not 'cudaMallocSync'"),
        # torch reads sizes with std::stoull: '1e3' is 1 there, '1_000' 1, a 60-digit value throws
        ("max_split_size_mb:1e3", "max_split_size_mb takes a whole number of MiB"),
        ("max_split_size_mb:1_000", "max_split_size_mb takes a whole number of MiB"),
        ("max_split_size_mb:" + "9" * 60, "max_split_size_mb takes a whole number of MiB"),
        ("per_process_memory_fraction:5", "per_process_memory_fraction must be in (0, 1]"),
        ("per_process_memory_fraction:0", "per_process_memory_fraction must be in (0, 1]"),
    ],
)
def test_an_alloc_conf_torch_refuses_is_one_line_exit_2(conf, says):
    r = run("gpt2", "--no-local", "--alloc-conf", conf)
    assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert says in alloc_conf_problem(conf)


def test_what_the_reserve_model_does_not_cover_is_said():
    """cudaMallocAsync is not the caching allocator the reserve models; max_split_size_mb changes
    which blocks are split. Both ran silently with the default allocator's band."""
    out = run("gpt2", "--no-local", "--alloc-conf", "backend:cudaMallocAsync").output
    assert "note: backend:cudaMallocAsync: the reserve is a model of torch's native caching allocator" in out
    doc = json.loads(run("gpt2", "--no-local", "--alloc-conf", "max_split_size_mb:512", "--json").output)
    assert any(n.startswith("max_split_size_mb: not modelled") for n in doc["notes"])
    assert alloc_conf_note("expandable_segments:True") == ""
    assert alloc_conf_note("roundup_power2_divisions:[256:1,512:2],expandable_segments:True").startswith(
        "roundup_power2_divisions: not modelled"
    )  # the bracketed list is one item


def test_fsdp_without_gpus_names_fsdp():
    r = run("gpt2", "--train", "--fsdp")
    assert r.exit_code == 2 and "--fsdp shards over --gpus N" in r.output, r.output


def test_a_cache_folder_without_a_config_says_so_and_how(tmp_path):
    """A gated model's folder: refs/main and an empty snapshot, huggingface_hub's .no_exist marker."""
    folder = tmp_path / "models--org--Gated"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("abc1234")
    (folder / "snapshots" / "abc1234").mkdir(parents=True)
    (folder / ".no_exist" / "abc1234").mkdir(parents=True)
    (folder / ".no_exist" / "abc1234" / "config.json").write_text("")
    r = run("org/Gated", env={"HF_HUB_CACHE": str(tmp_path)})
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert f"its Hugging Face cache folder {folder} holds no readable config.json" in r.output
    assert "huggingface-cli download org/Gated config.json" in r.output
    r = run("org/Absent", env={"HF_HUB_CACHE": str(tmp_path)})
    assert "is not in the local Hugging Face cache" in r.output


def test_a_local_t4_cannot_run_bf16_and_its_limits_are_fp16s(monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_DATA", str(ROOT / "data"))
    fake = FakeNvml.recorded("h200-driver580-cuda13")
    fake.set(0, "nvmlDeviceGetName", "Tesla T4")
    fake.set(0, "nvmlDeviceGetCudaComputeCapability", [7, 5])
    fake.set(0, "nvmlDeviceGetMemoryInfo", {"total": 16_106_127_360, "used": 1_200_000_000, "free": 14_906_127_360})
    monkeypatch.setattr(usable, "local_gpus", lambda nvml=None: local_gpus(fake))
    r = run("Qwen2.5-0.5B", "--train", "--json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    g = doc["gpus"][0]
    assert g["total_bytes"] == 14_906_127_360 and "bf16 needs compute capability 8.0" in g["problem"]
    assert (
        "less 1.12 GiB used now (the driver's reserve and what other processes hold" in g["source"]
        and doc["limits_with"] == "--dtype fp16"
    )


@pytest.mark.parametrize("model", ["Mixtral-8x7B-v0.1", "Qwen3-30B-A3B"])
def test_quantising_an_moe_is_refused_not_a_fits_that_ooms(model):
    """transformers 5's fused MoE experts are 3-D parameters bitsandbytes skips (bitsandbytes#1849):
    they stay in bf16. Counted as NF4, Mixtral-8x7B --quant int4 was 22.8 GiB of weights and
    "fits" a 40 GiB A100; the experts alone are ~84 GiB."""
    r = run(model, "--quant", "int4", "--gpu", "A100 40GB")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert "bitsandbytes does not quantise transformers 5's fused MoE experts" in r.output
    r = run(model, "--train", "--lora", "16", "--gpu", "RTX 4090", "--json")
    ways = json.loads(r.output)["ways"]
    assert ways and not any("--quant" in w["flags"] for w in ways), ways  # no QLoRA way for it either


@pytest.mark.parametrize(
    "name,datasheet,real",
    [
        # torch's "total capacity" in public OOM reports: 97% of a small card was over it
        ("NVIDIA GeForce RTX 2060", 6.0, 5.79),  # facebookresearch/meshrcnn#92
        ("NVIDIA GeForce RTX 3080", 10.0, 9.78),  # zai-org/CogVideo#34
        ("NVIDIA GeForce RTX 4090", 24.0, 23.68),  # zai-org/CogVideo#36
        ("Tesla K80", 12.0, 11.17),  # lllyasviel/Fooocus#2436, piegu/fastai-projects#2
    ],
)
def test_an_estimated_usable_figure_is_never_above_a_measured_one(monkeypatch, name, datasheet, real):
    from envdoctor.fit.usable import usable_gpu
    from envdoctor.table import load_table

    monkeypatch.setenv("ENVDOCTOR_DATA", str(ROOT / "data"))
    g = load_table().gpu(name)
    assert g is not None and g.memory_gib == datasheet
    guess = usable_gpu(g.name, g.memory_gib, g.cc, g.is_datacenter(), ())  # as if it had no [[usable]] row
    assert guess.total_bytes <= real * 2**30 and guess.source.startswith("estimated"), guess


def test_ecc_without_a_gpu_name_is_a_usage_error_not_ignored():
    r = run("gpt2", "--ecc", "off", "--memory", "16GiB")
    assert r.exit_code == 2 and "--ecc off picks a --gpu NAME's usable figure" in r.output, r.output
    assert run("gpt2", "--ecc", "off", "--gpu", "T4", "--dtype", "fp16").exit_code == 0


def test_the_longest_sequence_advised_is_within_the_models_positions():
    """Llama-3.2-1B on 24 GiB advised --seq 148502, past its 131072 positions (RoPE runs on, the
    model was never trained there; the estimate itself notes such a --seq)."""
    r = run("Llama-3.2-1B", "--memory", "24GiB", "--json")
    doc = json.loads(r.output)
    assert doc["max_seq"] == 131072 - 256, doc["max_seq"]
    assert "longest --seq 130816 (the model's 131072 positions)" in run("Llama-3.2-1B", "--memory", "24GiB").output
    short = json.loads(run("Llama-3.2-1B", "--memory", "8GiB", "--json").output)["max_seq"]
    assert short is not None and short < 130816  # memory bounds it first there


def test_device_map_over_more_gpus_than_layers_is_refused_like_pp():
    r = run("gpt2", "--device-map", "auto", "--gpus", "16")
    assert r.exit_code == 2 and "gpt2 has 12 layers, fewer than the GPUs" in r.output, r.output
    assert run("gpt2", "--device-map", "auto", "--gpus", "12", "--no-local").exit_code == 0


def test_the_allocator_setting_is_read_and_measured_under_the_name_torch_reads_first():
    """torch reads PYTORCH_ALLOC_CONF before PYTORCH_CUDA_ALLOC_CONF (c10/core/AllocatorConfig.cpp):
    fit read them the other way round, and --measure set only the second, so a shell's
    PYTORCH_ALLOC_CONF measured another setting than the one estimated."""
    from envdoctor.fit.host import measured_env

    both = {"PYTORCH_ALLOC_CONF": "expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64"}
    r = run("gpt2", "--train", "--no-local", "--json", env=both)
    assert json.loads(r.output)["workload"]["alloc_conf"] == "expandable_segments:True", r.output
    env = measured_env(both, "garbage_collection_threshold:0.5")
    assert env["PYTORCH_ALLOC_CONF"] == env["PYTORCH_CUDA_ALLOC_CONF"] == "garbage_collection_threshold:0.5"
    env = measured_env(both, "")  # --alloc-conf "" asks for the default allocator: the shell's goes
    assert "PYTORCH_ALLOC_CONF" not in env and "PYTORCH_CUDA_ALLOC_CONF" not in env
    assert env["HF_HUB_OFFLINE"] == "1"


def test_a_gpu_not_in_the_table_names_the_way_to_judge_it_anyway():
    r = run("gpt2", "--gpu", "RTX 4090 Laptop GPU")
    assert r.exit_code == 2 and "--memory SIZE judges against any GPU" in r.output, r.output


@pytest.mark.parametrize(
    "args,says",
    [
        # vLLM's QKVParallelLinear: divide(tp, kv heads) when there are fewer KV heads than GPUs
        (["Qwen2.5-7B", "--tp", "7"], "Qwen2.5-7B's 4 KV heads are replicated only over a multiple of 4 GPUs"),
        # 28 heads, 4 KV heads and 18944 columns all split over 4
        (["Qwen2.5-7B", "--tp", "4"], ""),
    ],
)
def test_a_tensor_parallel_split_the_layers_cannot_take_is_refused(args, says):
    r = run(*args, "--no-local")
    if says:
        assert r.exit_code == 2 and says in r.output, r.output
    else:
        assert r.exit_code == 0, r.output


def test_the_mlp_width_must_split_in_equal_columns():
    from envdoctor.fit.models import bundled_models
    from envdoctor.fit.workload import Workload

    spec = bundled_models().find("Qwen2.5-7B").spec  # 28 heads, 4 KV heads, MLP 18944 = 2^7 x 148
    assert any(
        "MLP width 18944 does not split into 28" in p for p in Workload(mode="infer", tp=28, gpus=28).problems(spec)
    )


def test_the_html_page_says_cannot_run_and_the_flags_to_leave_out(monkeypatch, tmp_path):
    monkeypatch.setenv("ENVDOCTOR_DATA", str(ROOT / "data"))
    out = tmp_path / "t4.html"
    r = run("Llama-3.1-8B", "--train", "--dtype", "fp32", "--amp", "bf16", "--gpu", "T4", "--html", "-o", str(out))
    assert r.exit_code == 1, r.output
    html = out.read_text()
    assert "cannot run it on Tesla T4" in html and "bf16 needs compute capability 8.0" in html
    assert "--dtype fp16 (without --amp)" in html


def test_per_process_memory_fraction_caps_the_memory_judged():
    """torch refuses an allocation past per_process_memory_fraction of the GPU: an 8B inference that
    fits an H200 does not fit a tenth of it, and no larger GPU is offered at its whole size."""
    whole = run("Llama-3.1-8B", "--gpu", "H200", "--json")
    tenth = run("Llama-3.1-8B", "--gpu", "H200", "--alloc-conf", "per_process_memory_fraction:0.1", "--json")
    assert whole.exit_code == 0 and tenth.exit_code == 1, tenth.output
    a, b = json.loads(whole.output)["gpus"][0], json.loads(tenth.output)["gpus"][0]
    assert b["total_bytes"] == int(a["total_bytes"] * 0.1) and "per_process_memory_fraction" in b["source"]
    for way in json.loads(tenth.output)["ways"]:
        assert "--gpu" not in way.get("flags", ""), way

"""``recommend --with``: a torch every library's pin accepts, and an order of commands in which no
install replaces torch (what-if machines, offline: the frozen table and data/extensions.toml)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from envdoctor.advise.stack import StackError, candidates, parse_with
from envdoctor.cli import cli
from envdoctor.stack.table import load_extensions
from tests.fakes import cli_runner

SCHEMA = json.loads((Path(__file__).parent.parent / "envdoctor/schemas/plan-1.json").read_text())
H100 = ["--gpu", "H100", "--driver", "580.95.05", "--os", "ubuntu:24.04", "--python-version", "3.12", "--offline"]


def plan(*args):
    r = cli_runner().invoke(cli, ["recommend", *H100, *args, "--json"], catch_exceptions=False)
    return r.exit_code, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


def commands(doc):
    return [c for s in doc["steps"] for c in s["commands"] if not c.startswith("#")]


def cpu_plan(machine, library):
    """``recommend --with library --json`` on a machine without an NVIDIA GPU (``--no-gpu``) or with
    a CPU torch asked for: exit 0 and a plan that follows its schema."""
    base = ["--os", "ubuntu:24.04", "--python-version", "3.12", "--offline"]
    if machine != ["--no-gpu"]:
        base = ["--driver", "580.95.05", *base]
    r = cli_runner().invoke(cli, ["recommend", *base, *machine, "--with", library, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    return doc


def test_vllm_flash_attn_xformers_on_an_h100():
    code, doc, _ = plan("--with", "vllm,flash-attn,xformers")
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    cmds = commands(doc)
    torch_at = next(i for i, c in enumerate(cmds) if "pip install torch==2.8.0+cu128" in c)
    pins_at = next(i for i, c in enumerate(cmds) if c.startswith("printf") and "'torch==2.8.0+cu128'" in c)
    vllm_at = next(i for i, c in enumerate(cmds) if "pip install vllm==0.11.0 -c ~/envdoctor-torch-pins.txt" in c)
    xf_at = next(i for i, c in enumerate(cmds) if "pip install xformers==0.0.32.post1 -c" in c)
    fa_at = next(
        i
        for i, c in enumerate(cmds)
        if "--no-deps https://github.com/Dao-AILab/flash-attention/releases/"
        "download/v2.8.3/flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl" in c
    )
    assert torch_at < pins_at < vllm_at < xf_at < fa_at  # torch first, the pins, flash-attn last (--no-deps)
    assert "--index-url https://download.pytorch.org/whl/cu128" in cmds[xf_at]
    assert any(c.endswith("-m pip check") for c in cmds)


def test_a_version_asked_for_picks_its_torch():
    code, doc, _ = plan("--with", "vllm==0.8.5.post1")
    assert code == 0 and any("pip install torch==2.6.0+cu124" in c for c in commands(doc))


def test_torch_and_with_that_disagree_are_a_usage_error():
    code, _, err = plan("--with", "vllm==0.11.0", "--torch", "2.5")
    assert code == 2 and "--torch 2.5 and --with disagree: vllm 0.11.0 pins torch 2.8.0" in err


def test_flash_attn_is_left_out_on_a_v100():
    r = cli_runner().invoke(
        cli,
        [
            "recommend",
            "--gpu",
            "V100",
            "--driver",
            "580.95.05",
            "--os",
            "ubuntu:24.04",
            "--python-version",
            "3.12",
            "--offline",
            "--with",
            "flash-attn",
            "--json",
        ],
    )
    doc = json.loads(r.stdout)
    assert not any("flash" in c for c in commands(doc))
    assert any(w.startswith("flash-attn is left out: Tesla V100") for w in doc["warnings"])


def test_no_prebuilt_wheel_means_the_source_build_prerequisites():
    code, doc, _ = plan("--with", "flash-attn==2.7.4.post1", "--torch", "2.8")
    cmds = [c for s in doc["steps"] for c in s["commands"]]
    build = next(c for c in cmds if "--no-build-isolation" in c)
    assert build.startswith('MAX_JOBS=4 TORCH_CUDA_ARCH_LIST="9.0" ') and "flash-attn==2.7.4.post1" in build
    assert any(c.startswith("# needs nvcc 12.") and "GCC of at most" in c for c in cmds)


def test_the_docker_route_takes_vllms_own_image():
    code, doc, _ = plan("--with", "vllm", "--route", "docker")
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    assert commands(doc)[:2] == [
        "docker pull vllm/vllm-openai:v0.11.0",
        "docker run --gpus all --ipc=host -p 8000:8000 vllm/vllm-openai:v0.11.0 --model <MODEL>",
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("foo", "--with 'foo': envdoctor plans vllm"),
        ("vllm==x", "'x' is not a version"),
        ("vllm,vllm", "names vllm twice"),
        (" , ", "--with is empty"),
    ],
)
def test_bad_with_values(text, message):
    with pytest.raises(StackError, match=message):
        parse_with(text)
    r = cli_runner().invoke(cli, ["recommend", *H100, "--with", text])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1


def test_pins_that_cannot_agree_have_no_candidate():
    ext = load_extensions()
    assert candidates(parse_with("vllm==0.11.0,xformers==0.0.28.post3"), ext) == []
    assert [c.torch for c in candidates(parse_with("xformers"), ext)] == ["2.8.0", "2.7.1", "2.5.1"]


def test_the_python_decides_the_release():
    r = cli_runner().invoke(
        cli,
        [
            "recommend",
            "--gpu",
            "H100",
            "--driver",
            "580.95.05",
            "--os",
            "ubuntu:24.04",
            "--python-version",
            "3.9",
            "--offline",
            "--with",
            "vllm",
            "--json",
        ],
    )
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and any("vllm==0.10.1.1 -c" in c for c in commands(doc))  # 0.11.0 has no cp39
    r = cli_runner().invoke(cli, ["recommend", *H100[:-3], "--python-version", "3.8", "--offline", "--with", "vllm"])
    assert r.exit_code == 1 and "has wheels for Python 3.8" in r.stderr


@pytest.mark.parametrize("machine", [["--no-gpu"], ["--torch", "2.8.0+cpu"]], ids=["no-gpu", "cpu-torch"])
def test_flash_attn_on_a_cpu_torch_is_one_warning_not_a_source_build_that_cannot_work(machine):
    """qa2: on a CPU torch the plan built flash-attn from source (its kernels are CUDA only), and the
    import check read ``import torch, ;`` once flash-attn was left out."""
    doc = cpu_plan(machine, "flash-attn")
    cmds = [c for s in doc["steps"] for c in s["commands"]]
    assert not any("flash" in c or "--no-build-isolation" in c or "nvcc" in c for c in cmds), cmds
    (left,) = [w for w in doc["warnings"] if "flash-attn" in w]
    assert left.startswith("flash-attn is left out: it needs a CUDA torch, and torch 2.")
    assert left.endswith(
        "plan the CUDA torch first (`envdoctor recommend --gpu NAME --with flash-attn`, NAME the GPU "
        "it will run on) or drop flash-attn"
    )
    assert any(c.endswith("-c 'import torch; print(torch.__version__)'") for c in cmds), cmds


def test_flash_attn_left_out_on_a_v100_leaves_an_import_check_that_runs():
    r = cli_runner().invoke(
        cli,
        [
            "recommend",
            "--gpu",
            "V100",
            "--driver",
            "580.95.05",
            "--os",
            "ubuntu:24.04",
            "--python-version",
            "3.12",
            "--offline",
            "--with",
            "flash-attn",
            "--json",
        ],
    )
    cmds = commands(json.loads(r.stdout))
    assert not any("import torch, ;" in c for c in cmds) and any("-c 'import torch; print(" in c for c in cmds)


@pytest.mark.parametrize("machine", [["--no-gpu"], ["--torch", "2.8.0+cpu"]], ids=["no-gpu", "cpu-torch"])
def test_vllm_on_a_cpu_torch_is_one_warning_and_no_install_line(machine):
    """vLLM's pip wheels are CUDA builds: on a machine without an NVIDIA GPU (or a CPU torch) the plan
    installed vllm==0.11.0 over torch+cpu, offered its GPU image and uv's line, and warned that
    "cu128 was asked for" (the pins' variant, not the user's). Now: vllm left out, as flash-attn is,
    its CPU route named with its source (data/extensions.toml)."""
    doc = cpu_plan(machine, "vllm")
    cmds = [c for s in doc["steps"] for c in s["commands"]] + list(doc.get("alternatives") or [])
    assert not any("vllm" in c for c in cmds), cmds
    assert any(c.endswith("-c 'import torch; print(torch.__version__)'") for c in cmds), cmds
    (left,) = [w for w in doc["warnings"] if "vllm" in w]
    assert left.startswith("vllm is left out: its pip wheels are CUDA builds that need an NVIDIA GPU, and torch 2.8.0")
    assert "built from source (VLLM_TARGET_DEVICE=cpu)" in left
    assert "https://docs.vllm.ai/en/v0.10.2/getting_started/installation/cpu.html" in left
    assert left.endswith("or drop vllm")
    assert not any("was asked for" in w for w in doc["warnings"]), doc["warnings"]
    assert not any("vllm-openai" in x for x in doc["choice_reasons"] + doc["reasons"])


def test_vllm_is_left_out_on_a_gpu_older_than_its_cuda_build():
    args = ["--gpu", "P100", "--driver", "580.95.05", "--os", "ubuntu:24.04", "--python-version", "3.12"]
    r = cli_runner().invoke(cli, ["recommend", *args, "--offline", "--with", "vllm", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert not any("vllm" in c for s in doc["steps"] for c in s["commands"])
    assert any(w.startswith("vllm is left out: Tesla P100") and "(7.0+;" in w for w in doc["warnings"])
    # the pins' cu128 has no kernels for compute 6.0: the release is planned on what fits, and no
    # warning says "cu128 was asked for" (no one asked: --torch was not given)
    assert doc["variant"] == "cu126" and not any("was asked for" in w for w in doc["warnings"]), doc["warnings"]

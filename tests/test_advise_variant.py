"""The wheel variant named in ``--torch`` (``2.7.1+cu118``): used where it works, else the plan says why not.

Was (issue 12): ``--torch 2.7.1+cu118 --gpu H100 --driver 580.95.05`` planned cu128 without a word (the
local label was dropped when the specifier was read), although cu118 runs there: 2.7's cu118 arch
list has sm_90 and driver 580 runs CUDA 11.8 directly.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envdoctor.advise.choose import choose_variant
from envdoctor.advise.request import SpecError, parse_torch_spec, spec_variant
from envdoctor.cli import cli
from envdoctor.table import load_table

T = load_table()
UBUNTU = ["--offline", "--os", "ubuntu:24.04", "--python-version", "3.12"]


def plan(*args, code=0):
    r = CliRunner().invoke(cli, ["recommend", *UBUNTU, "--json", *args])
    assert r.exit_code == code, r.output
    return json.loads(r.output)


@pytest.mark.parametrize(
    "text, spec, variant",
    [
        ("2.7.1+cu118", "==2.7.1", "cu118"),
        ("==2.7.1+cu118", "==2.7.1", "cu118"),
        ("2.7+CU118", "==2.7.*", "cu118"),
        ("2.7.1", "==2.7.1", None),
        (">=2.4,<2.6", "<2.6,>=2.4", None),
    ],
)
def test_the_local_label_is_the_variant_and_the_version_stays(text, spec, variant):
    assert str(parse_torch_spec(text)) == spec and spec_variant(text) == variant


def test_two_different_labels_are_a_spec_error():
    with pytest.raises(SpecError, match="more than one wheel variant"):
        spec_variant("==2.7.0+cu118,==2.7.1+cu126")


def test_asked_variant_that_works_is_used_not_silently_replaced():
    doc = plan("--torch", "2.7.1+cu118", "--gpu", "H100", "--driver", "580.95.05")
    assert (doc["torch"], doc["variant"], doc["cuda"]) == ("2.7.1", "cu118", "11.8")
    assert (doc["variant_asked"], doc["variant_changed"]) == ("cu118", None)
    assert "wheel variant cu118, as --torch 2.7.1+cu118 asks" in doc["choice_reasons"]
    assert (
        "~/venvs/torch/bin/python -m pip install torch==2.7.1+cu118 torchvision==0.22.1 torchaudio==2.7.1 "
        "--index-url https://download.pytorch.org/whl/cu118"
    ) in doc["commands"]


def test_asked_variant_without_kernels_for_the_gpu_says_why_it_was_changed():
    doc = plan("--torch", "2.7.1+cu118", "--gpu", "RTX 5090", "--driver", "580.95.05")
    assert (doc["torch"], doc["variant"]) == ("2.7.1", "cu128")
    why = (
        "torch 2.7.1+cu118 does not fit here: no kernels for compute 12.0 (it has sm_37, sm_50, sm_60, "
        "sm_70, sm_75, sm_80, sm_86, sm_90)"
    )
    assert doc["variant_changed"] == why
    said = f"--torch 2.7.1+cu118: cu118 was asked for, but {why}; planned cu128 instead"
    assert said in doc["warnings"]
    r = CliRunner().invoke(
        cli, ["recommend", *UBUNTU, "--torch", "2.7.1+cu118", "--gpu", "RTX 5090", "--driver", "580.95.05"]
    )
    assert f"! {said}" in r.output


def test_asked_variant_the_driver_cannot_run_says_the_driver_it_needs():
    doc = plan("--torch", "2.11.0+cu130", "--gpu", "RTX 4090", "--driver", "535.104.05")
    assert doc["variant"] == "cu128" and doc["variant_changed"] == (
        "torch 2.11.0+cu130 does not fit here: CUDA 13.0 needs driver 580.65.06 (minor-version floor "
        "580.65.06); driver 535.104.05 is older"
    )


def test_asked_variant_the_release_does_not_have():
    doc = plan("--torch", "2.13+cu118", "--gpu", "H100", "--driver", "580.95.05")
    assert doc["variant_changed"] == "torch 2.13.0 has no cu118 wheels"
    assert (
        "--torch 2.13+cu118: cu118 was asked for, but torch 2.13.0 has no cu118 wheels; planned cu130 instead"
        in doc["warnings"]
    )


def test_asked_variant_is_found_in_an_older_release_within_the_specifier():
    doc = plan("--torch", "2+cu118", "--gpu", "H100", "--driver", "580.95.05")
    assert (doc["torch"], doc["variant"], doc["variant_changed"]) == ("2.7.1", "cu118", None)


def test_asked_unconfirmed_variant_is_used_and_said_unconfirmed():
    # 2.13's cu129 is on the test channel only as far as the table knows (unconfirmed = true)
    doc = plan("--torch", "2.13.0+cu129", "--gpu", "H100", "--driver", "580.95.05")
    assert doc["variant"] == "cu129"
    assert (
        "envdoctor's table does not confirm torch 2.13.0 cu129 (asked for with --torch 2.13.0+cu129); "
        "check the index before relying on it"
    ) in doc["warnings"]
    assert not any("its wheels are confirmed" in w for w in doc["warnings"])


@pytest.mark.parametrize(
    "args, why, planned",
    [
        (
            ["--gpu", "H100", "--driver", "580.95.05", "--torch", "2.7.1+cpu"],
            "CPU wheels would leave the NVIDIA GPUs unused (for CPU wheels, plan with --no-gpu)",
            "cu128",
        ),
        (
            ["--no-gpu", "--torch", "2.7.1+cu118"],
            "there is no NVIDIA GPU here: CPU wheels do the same work, without the CUDA libraries (GBs)",
            "cpu",
        ),
        (
            ["--gpu", "H100", "--driver", "580.95.05", "--torch", "2.7.1+rocm6.3"],
            "rocm6.3 wheels are for AMD GPUs",
            "cu128",
        ),
    ],
)
def test_asked_variant_of_another_kind(args, why, planned):
    doc = plan(*args)
    asked = args[-1]
    assert doc["variant"] == planned
    assert doc["variant_changed"] == why
    assert (
        f"--torch {asked}: {asked.split('+')[1]} was asked for, but {why}; planned {planned} instead" in doc["warnings"]
    )


def test_unknown_variant_is_exit_2_in_one_line():
    r = CliRunner().invoke(
        cli, ["recommend", *UBUNTU, "--torch", "2.7.1+cu999", "--gpu", "H100", "--driver", "580.95.05"]
    )
    assert r.exit_code == 2
    [line] = r.output.strip().splitlines()
    assert line.startswith(
        "envdoctor recommend: --torch 2.7.1+cu999: envdoctor's table knows no wheel variant "
        "cu999 (it knows cpu, cu102, "
    )


@pytest.mark.parametrize(
    "route, why",
    [
        ("conda", "the conda route installs conda-forge's build, whose CUDA the plan chooses (cuda-version)"),
        ("docker", "the docker route runs an NGC image, which brings its own CUDA"),
    ],
)
def test_asked_variant_on_a_route_without_pip_wheels_is_said_unused(route, why):
    doc = plan("--torch", "2.7+cu118", "--gpu", "H100", "--driver", "580.95.05", "--route", route)
    assert f"--torch 2.7+cu118: the +cu118 wheel variant is not used here: {why}" in doc["warnings"]


def test_without_a_label_nothing_changes():
    c = choose_variant(T, "2.7.1", "580.95.05", ["9.0"], "3.12", "2.39")
    assert (c.variant, c.variant_asked, c.variant_changed) == ("cu128", None, None)


@pytest.mark.parametrize(
    "machine, code, why",
    [
        (["--os", "macos:14", "--no-gpu"], 0, "macOS has one torch wheel (PyPI's), without CUDA variants"),
        (
            ["--os", "ubuntu:22.04", "--gpu", "MI300X"],
            1,
            "envdoctor plans NVIDIA installs only (AMD: PyTorch's ROCm wheels)",
        ),
    ],
)
def test_asked_variant_on_macos_or_amd_is_said_unused(machine, code, why):
    r = CliRunner().invoke(
        cli, ["recommend", "--offline", "--json", "--python-version", "3.12", *machine, "--torch", "2.7.1+cu118"]
    )
    assert r.exit_code == code, r.output
    assert f"--torch 2.7.1+cu118: the +cu118 wheel variant is not used here: {why}" in json.loads(r.output)["warnings"]

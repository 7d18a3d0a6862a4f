"""``envdoctor table`` through Click's CliRunner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import envdoctor.table
from envdoctor.cli import cli
from envdoctor.cli.table import table


def run(*args: str):
    return CliRunner().invoke(table, list(args))


def test_torch_2_7():
    r = run("torch", "2.7")
    assert r.exit_code == 0, r.output
    assert "PyPI default:      cu126" in r.output
    assert "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120" in r.output
    assert "source:" in r.output and "[unconfirmed]" in r.output  # cu118/cu126 lists were inferred


def test_torch_2_7_marks_the_inferred_arch_lists_field_by_field():
    # 2.7 cu118/cu126: wheels confirmed, arch_list in unconfirmed_fields; cu128's list is confirmed.
    lines = run("torch", "2.7").output.splitlines()
    arch = [x.strip() for x in lines if x.strip().startswith("arch list:")]
    assert arch == [
        "arch list: sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90 [unconfirmed]",
        "arch list: sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90 [unconfirmed]",
        "arch list: sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120",
    ]
    lines = run("torch", "2.13").output.splitlines()
    assert "aarch64:   sm_80 sm_90 sm_100 sm_110 sm_120 [unconfirmed]" in [x.strip() for x in lines]


def test_cuda_12_8_shows_driver_and_source():
    r = run("cuda", "12.8")
    assert r.exit_code == 0
    assert ">= 570.26" in r.output
    assert "https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html" in r.output
    assert "525.60.13" in r.output


def test_gpu_marks_unconfirmed_fields():
    r = run("gpu", "RTX 3090 Ti")
    assert r.exit_code == 0
    assert "0x2203" in r.output and "8.6 (Ampere)" in r.output
    assert "FP32:" in r.output and "[unconfirmed]" in r.output


def test_gpu_by_unknown_pci_id_falls_back_to_the_chip_family():
    r = run("gpu", "0x2b87")
    assert r.exit_code == 0
    assert "12.0 (Blackwell)" in r.output


def test_ngc_25_01():
    r = run("ngc", "25.01")
    assert r.exit_code == 0
    assert "nvcr.io/nvidia/pytorch:25.01-py3" in r.output and "12.8.0" in r.output


@pytest.mark.parametrize(
    "args, text",
    [
        (["arch", "8.6"], "Ampere"),
        (["arch", "sm_120"], "Blackwell"),
        (["distro", "ubuntu", "22.04"], "ubuntu2204"),
        (["variant", "cu128"], "https://download.pytorch.org/whl/cu128"),
        (["torch"], "torch 2.14"),
        (["cuda"], "13.2.2"),
        (["variant"], "mirror.sjtu.edu.cn"),
    ],
)
def test_other_kinds(args, text):
    r = run(*args)
    assert r.exit_code == 0, r.output
    assert text in r.output


def test_json_document():
    r = run("torch", "2.8", "--json")
    assert r.exit_code == 0
    doc = json.loads(r.output)
    assert (doc["version"], doc["kind"], doc["key"]) == ("1", "torch", "2.8")
    cu128 = next(v for v in doc["result"]["variants"] if v["name"] == "cu128")
    assert "sm_70" in cu128["arch_list"]
    assert doc["result"]["source"]


def test_json_gpu_and_cuda():
    g = json.loads(run("gpu", "H200", "--json").output)["result"]
    assert g["pci_ids"] == ["0x2335"] and g["unconfirmed"] is False
    c = json.loads(run("cuda", "12.8", "--json").output)["result"]
    assert c["release"]["min_driver_linux"] == "570.26" and c["minor_compat"]["major"] == 12


@pytest.mark.parametrize(
    "args",
    [
        ["torch", "9.9"],
        ["cuda", "12.7"],
        ["gpu", "Voodoo 5"],
        ["ngc", "19.01"],
        ["arch", "4.0"],
        ["distro", "ubuntu", "16.04"],
        ["variant", "cu999"],
    ],
)
def test_unknown_key_is_one_line_and_exit_1(args):
    r = run(*args)
    assert r.exit_code == 1
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("envdoctor: no ")


@pytest.mark.parametrize("args", [["torch", "2.7", "2.8"], ["frobnicate"], ["distro", "ubuntu"], ["torch", "--jsn"]])
def test_usage_errors_exit_2(args):
    assert run(*args).exit_code == 2


def test_broken_table_exits_3(monkeypatch):
    def broken(directory=None):
        raise envdoctor.table.TableError("data/cuda.toml: [[release]] 12.8.0: unknown field 'x'")

    monkeypatch.setattr(envdoctor.table, "load_table", broken)
    r = run("cuda", "12.8")
    assert r.exit_code == 3
    assert "unknown field 'x'" in r.output


def test_through_the_top_level_command():
    r = CliRunner().invoke(cli, ["table", "arch", "9.0"])
    assert r.exit_code == 0 and "Hopper" in r.output

"""parse/conda.py against conda and micromamba JSON of the shapes conda and libmamba print."""

from __future__ import annotations

import pytest

from envdoctor.facts.conda import CondaPackage
from envdoctor.parse.conda import CondaParseError, channel_name, parse_error, parse_info, parse_list
from tests.fakes import recorded

CF129 = "public-conda25-conda-forge-cu129"
MM126 = "public-micromamba2-conda-forge-cu126"
PT121 = "public-conda24-pytorch-channel-cu121"


def test_conda_info():
    info = parse_info(recorded(CF129, "conda-info.txt"))
    assert info.version == "25.5.1"
    assert info.base_prefix == "/home/ada/miniforge3"
    assert (info.active_prefix, info.active_name) == ("/home/ada/miniforge3/envs/dl", "dl")
    assert info.channels == ("conda-forge",)
    assert info.virtual_cuda == "12.9"


def test_conda_info_of_the_retired_channels():
    info = parse_info(recorded(PT121, "conda-info.txt"))
    assert info.channels == ("pytorch", "nvidia", "pkgs/main", "pkgs/r")
    assert info.virtual_cuda == "12.2"


def test_micromamba_info():
    info = parse_info(recorded(MM126, "micromamba-info.txt"))
    assert info.version == "2.3.0"
    assert info.base_prefix == "/home/ada/micromamba"
    assert (info.active_prefix, info.active_name) == ("/home/ada/micromamba/envs/torch", "torch")
    assert info.virtual_cuda == "12.8"


def test_micromamba_info_without_env_or_cuda():
    info = parse_info(
        '{"libmamba version": "2.3.0", "mamba version": "2.3.0", "environment": "None", '
        '"env location": "-", "virtual packages": ["__unix=0=0", "__linux=6.8.0=0"], "channels": []}'
    )
    assert info.version == "2.3.0" and info.active_prefix is None and info.active_name is None
    assert info.virtual_cuda is None


@pytest.mark.parametrize(
    "text", ["", "Traceback (most recent call last):", "[]", '{"name": "x"}', '{"conda_version": "25']
)
def test_info_garbage_raises(text):
    with pytest.raises(CondaParseError):
        parse_info(text)


def test_conda_list_keeps_only_cuda_packages():
    pkgs = parse_list(recorded(CF129, "conda-list.txt"))
    assert [p.name for p in pkgs] == ["cuda-version", "pytorch"]
    assert pkgs[1] == CondaPackage("pytorch", "2.8.0", "cuda129_generic_py312_h464b887_201", "conda-forge")


def test_micromamba_list():
    pkgs = {p.name: p for p in parse_list(recorded(MM126, "micromamba-list.txt"))}
    assert set(pkgs) == {"cuda-cudart", "cuda-nvcc", "cuda-version", "pytorch", "pytorch-gpu", "torchvision"}
    assert pkgs["cuda-nvcc"].version == "12.6.85" and pkgs["cuda-nvcc"].channel == "conda-forge"


def test_conda_list_with_pip_torch():
    pkgs = {p.name: p for p in parse_list(recorded(PT121, "conda-list.txt"))}
    assert pkgs["pytorch"].channel == "pytorch" and pkgs["torch"].channel == "pypi"
    assert "cupy-cuda12x" not in pkgs


@pytest.mark.parametrize("text", ["", "{}", '[{"version": "1"}]', '[{"name": "pytorch", '])
def test_list_garbage_raises(text):
    with pytest.raises(CondaParseError):
        parse_list(text)


def test_channel_names():
    assert channel_name("https://conda.anaconda.org/conda-forge/linux-64") == "conda-forge"
    assert channel_name("https://repo.anaconda.com/pkgs/main/noarch") == "pkgs/main"
    assert channel_name("https://prefix.dev/conda-forge/") == "https://prefix.dev/conda-forge"


def test_conda_json_error_message():
    text = (
        '{"caused_by": "None", "error": "EnvironmentLocationNotFound: Not a conda environment: /x", '
        '"exception_name": "EnvironmentLocationNotFound", "message": "Not a conda environment: /x"}'
    )
    assert parse_error(text) == "Not a conda environment: /x"
    assert parse_error("plain text") is None and parse_error("[]") is None

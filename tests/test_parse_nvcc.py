"""parse/nvcc.py against recorded nvcc output and toolkit version files."""

from __future__ import annotations

import pytest

from envdoctor.parse import ParseError, loose_version, major_minor
from envdoctor.parse.nvcc import (
    NvccParseError,
    NvccVersion,
    parse_dryrun_bin,
    parse_nvcc_version,
    parse_version_json,
    parse_version_txt,
)
from tests.fakes import recorded


@pytest.mark.parametrize(
    "machine, name, expected",
    [
        ("cpu-nvcc13-docker-client", "nvcc.txt", NvccVersion("13.0", "13.0.88")),
        ("h200-driver580-cuda13", "nvcc.txt", NvccVersion("13.0", "13.0.88")),
        ("public-nvcc", "nvcc-11.8.txt", NvccVersion("11.8", "11.8.89")),
        ("public-nvcc", "nvcc-12.1.txt", NvccVersion("12.1", "12.1.105")),
        ("public-nvcc", "nvcc-12.8.txt", NvccVersion("12.8", "12.8.93")),
    ],
)
def test_nvcc_version_of_recorded_releases(machine, name, expected):
    assert parse_nvcc_version(recorded(machine, name)) == expected


def test_nvcc_version_without_v_number():
    assert parse_nvcc_version("Cuda compilation tools, release 12.4") == NvccVersion("12.4", None)


@pytest.mark.parametrize(
    "text", ["", "nvcc: NVIDIA (R) Cuda compiler driver\n", "\x00\x01garbage", "Cuda compilation tools, rel"]
)
def test_nvcc_version_garbage_raises(text):
    with pytest.raises(NvccParseError):
        parse_nvcc_version(text)
    assert issubclass(NvccParseError, ParseError) and issubclass(NvccParseError, ValueError)


def test_version_json_prefers_the_nvcc_component():
    assert parse_version_json(recorded("public-nvcc", "version-json-11.8.txt")) == ("11.8.89", "11.8")


def test_version_json_without_nvcc_component_keeps_the_sdk_version():
    assert parse_version_json(recorded("public-nvcc", "version-json-12.6.txt")) == ("12.6.20241114", "12.6")


@pytest.mark.parametrize("text", ["", "{", "[]", '{"cuda": {}}', '{"cuda": {"version": "x"}}', '{"cuda": "12.8"}'])
def test_version_json_garbage_raises(text):
    with pytest.raises(NvccParseError):
        parse_version_json(text)


def test_version_txt():
    assert parse_version_txt(recorded("public-nvcc", "version-txt-10.2.txt")) == ("10.2.89", "10.2")
    with pytest.raises(NvccParseError):
        parse_version_txt("CUDA 10")


def test_dryrun_names_the_real_bin_folder():
    assert parse_dryrun_bin(recorded("cpu-nvcc13-docker-client", "nvcc-dryrun.txt")) == "/usr/local/cuda-13.0/bin"
    with pytest.raises(NvccParseError):
        parse_dryrun_bin("nvcc fatal   : No input files specified; use option --help for more information")


def test_loose_version_and_major_minor():
    assert str(loose_version("20.10.24+dfsg1")) == "20.10.24"
    assert loose_version("v2.2.2") is None and loose_version(None) is None
    assert major_minor("12.8.93") == "12.8" and major_minor("13") is None

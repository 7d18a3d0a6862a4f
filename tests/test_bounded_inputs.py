"""Inputs that once ran for seconds to minutes (issue 12, "Time: nothing may run unbounded"), each
named after its failure. The time bound is generous (a slow CI core); before the fixes each took
10 s or more, or hung."""

from __future__ import annotations

import time

import pytest

from envdoctor.parse.conda import CondaParseError, parse_info
from envdoctor.parse.docker import classify_daemon_error
from envdoctor.parse.jsontext import JsonError, loads
from envdoctor.parse.nvidia_proc import parse_proc_version
from envdoctor.parse.nvidia_smi import SmiParseError, parse_query_gpu
from envdoctor.parse.torch import linux_platform_tags, parse_glibc, target_python, torch_facts
from envdoctor.redact import mask_text
from envdoctor.wheels.pages import PageError, parse_html
from envdoctor.wheels.target import TargetError, expand_platform, target_from_probe

BOUND = 1.0


def quick(fn, *args):
    started = time.perf_counter()
    try:
        return fn(*args)
    finally:
        assert time.perf_counter() - started < BOUND


def test_index_page_with_many_comments_and_one_open_is_not_quadratic():
    with pytest.raises(PageError, match="truncated inside a comment"):
        quick(parse_html, "<html></html>" + "<!--x-->" * 24 + "<!--", "https://x/")


def test_index_page_of_sixty_thousand_open_comments_does_not_hang():
    with pytest.raises(PageError):
        quick(parse_html, "<!--" * 60000, "https://x/")


def test_a_closed_comment_still_hides_its_links():
    page = parse_html(
        '<html><!-- <a href="torch-1.0-py3-none-any.whl">x</a> --><a href="b-1.0-py3-none-any.whl">b</a></html>',
        "https://x/",
    )
    assert [f.filename for f in page.files] == ["b-1.0-py3-none-any.whl"]


def test_proc_version_with_two_thousand_spaces_is_instant():
    assert quick(parse_proc_version, "NVRM version:" + " " * 2000) == (None, None)
    assert parse_proc_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build") == (
        "580.159.04",
        "open",
    )


def test_daemon_error_of_repeated_unix_schemes_is_instant():
    state, socket = quick(classify_daemon_error, "unix://" * 16000)
    assert state == "error"
    assert classify_daemon_error(
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
    ) == ("not_running", "unix:///var/run/docker.sock")


def test_daemon_address_with_credentials_is_masked():
    assert (
        classify_daemon_error("error during connect: tcp://admin:hunter2@docker-host.example.com:2376 refused")[1]
        == "tcp://admin:***@docker-host.example.com:2376"
    )


def test_query_gpu_header_of_a_hundred_thousand_brackets_is_an_error_not_a_wait():
    with pytest.raises(SmiParseError):
        quick(parse_query_gpu, "index," + "[" * 100000 + "\n0,x\n")


def test_query_gpu_with_an_infinite_index_is_an_error_not_an_overflow():
    with pytest.raises(SmiParseError, match="not a number"):
        parse_query_gpu("index\ninf\n")


def test_query_gpu_with_a_field_bigger_than_csv_allows_is_an_error():
    with pytest.raises(SmiParseError):
        parse_query_gpu("index, name\n0, " + "x" * 131_073 + "\n")


def test_masking_forty_thousand_characters_is_instant():
    assert quick(mask_text, "x" * 40000) == "x" * 40000
    assert quick(mask_text, "A" * 50000 + " https://u:p@h/") == "A" * 50000 + " https://u:***@h/"


def test_a_glibc_of_two_point_a_hundred_and_fifty_million_is_unknown():
    assert quick(parse_glibc, "glibc 2.150000000") is None
    assert quick(linux_platform_tags, "2.150000000", "linux_x86_64") == ("linux_x86_64",)


def test_a_platform_tag_for_glibc_two_point_ten_million_is_refused():
    with pytest.raises(TargetError, match="out of range"):
        quick(expand_platform, "manylinux_2_10000000_x86_64")


def test_a_python_version_of_two_to_the_sixty_four_is_refused():
    with pytest.raises(TargetError, match="cannot read"):
        quick(
            target_from_probe,
            {
                "version": [3, 2**64, 7],
                "implementation": "cpython",
                "abiflags": "",
                "libc": ["glibc", "2.39"],
                "machine": "x86_64",
                "bits": 64,
                "platform": "linux-x86_64",
            },
            "/usr/bin/python3",
        )


@pytest.mark.parametrize("text", ["[" * 100000, '{"a": ' * 100000, "1" * 5000, "1e400"])
def test_deep_or_huge_json_is_one_error(text):
    with pytest.raises(JsonError):
        quick(loads, text)


@pytest.mark.parametrize("text", ['{"channels": 1, "conda_version": "24.1"}', "[" * 100000])
def test_conda_info_of_the_wrong_shape_is_condas_parse_error(text):
    with pytest.raises(CondaParseError):
        parse_info(text)


# --- the torch child's answer with values of the wrong type (issue 12: "soabi": 5) ----------------

PY = {
    "version": "3.11.2",
    "implementation": "cpython",
    "libc": "glibc 2.36",
    "platform": "linux-x86_64",
    "soabi": "cpython-311-x86_64-linux-gnu",
}


@pytest.mark.parametrize(
    "field, value",
    [
        ("soabi", 5),
        ("implementation", ["cpython"]),
        ("version", [3, 2**64, 7]),
        ("py_version_nodot", 311),
        ("libc", {"glibc": 2}),
        ("prefix", 1.5),
    ],
)
def test_a_child_python_field_of_the_wrong_type_counts_as_absent(field, value):
    """Was AttributeError ('int' object has no attribute 'startswith'): check exit 3."""
    py = target_python(dict(PY, **{field: value}))
    if field in ("version", "prefix", "implementation"):
        assert getattr(py, field) is None  # never "[3, 18446744073709551616, 7]"
    else:
        assert py.version == "3.11.2"
    assert py.abi_tag in (None, "cp311")


@pytest.mark.parametrize("python", [{"distributions": 1}, {"distributions": [1]}, 7, None])
def test_distributions_of_1_in_the_child_answer_is_no_package_metadata(python):
    """Was AttributeError at torch_facts: check exit 3."""
    facts = torch_facts(
        {
            "installed": True,
            "version": "2.13.0+cpu",
            "libraries": 5,
            "devices": "x",
            "warnings": 3,
            "import_seconds": 10**400,
        },
        python,
    )
    assert facts.installed and facts.version == "2.13.0+cpu"
    assert facts.torchvision is None and facts.libraries == () and facts.devices == () and facts.warnings == ()
    assert facts.import_seconds is None


def test_a_torch_answer_that_is_not_an_object_is_not_installed():
    assert torch_facts(5, {"distributions": {"torch": "2.13.0"}}).installed is False  # type: ignore[arg-type]

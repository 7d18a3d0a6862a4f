"""What a target interpreter answers envdoctor's interpreter check may be odd (a ``--python`` that
answers so, issue 27): libc as an int, a blank confstr, a PyPy SOABI that is an int, a macOS
version with a superscript digit, glibc "2.150000000". None of them is exit 3 or a hang; a
field of the wrong shape counts as absent."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.wheels.target import TargetError, target_from_probe
from tests.fakes import FakeBin
from tests.indexserver import IndexServer

H200 = {
    "version": [3, 12, 3],
    "implementation": "cpython",
    "cache_tag": "cpython-312",
    "abiflags": "",
    "gil_disabled": False,
    "soabi": "cpython-312-x86_64-linux-gnu",
    "libc": ["glibc", "2.39"],
    "confstr": "glibc 2.39",
    "machine": "x86_64",
    "bits": 64,
    "platform": "linux-x86_64",
    "mac_ver": "",
}
ODD = {
    "libc as an int": dict(H200, libc=5, confstr=None),
    "a blank confstr": dict(H200, confstr="   ", libc=["glibc", ""]),
    "a pypy soabi that is an int": dict(H200, implementation="pypy", soabi=73),
    "a macos version with a superscript": dict(
        H200, platform="macosx-11.0-arm64", machine="arm64", mac_ver="1\u00b2.3"
    ),
    "a glibc of 2.150000000": dict(H200, confstr="glibc 2.150000000", libc=["glibc", "2.150000000"]),
    "a machine that is a list": dict(H200, machine=["x86_64"], platform=7),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_interpreter_answers_give_a_target_quickly(name):
    started = time.process_time()
    target = target_from_probe(ODD[name], "/opt/odd/python3")
    assert time.process_time() - started < 2.0
    assert target.tags and target.python == "3.12.3"


def test_a_glibc_of_2_150000000_is_no_glibc_as_check_reads_it():
    assert target_from_probe(ODD["a glibc of 2.150000000"], "/p").platforms == ("linux_x86_64",)
    assert target_from_probe(H200, "/p").platforms[0] == "manylinux_2_39_x86_64"
    assert target_from_probe(ODD["libc as an int"], "/p").platforms == ("linux_x86_64",)


@pytest.mark.parametrize("version", [None, "3.12", [3], [3, True, 1], [3, 12, "x"], [3, 10**400]])
def test_a_version_that_cannot_be_read_is_a_target_error(version):
    with pytest.raises(TargetError, match="cannot read"):
        target_from_probe(dict(H200, version=version), "/p")
    with pytest.raises(TargetError, match="cannot read"):
        target_from_probe([1, 2], "/p")  # type: ignore[arg-type]


def fake_python(tmp_path, line):
    bin = FakeBin(tmp_path)
    data = tmp_path / "answer.json"
    data.write_text(line + "\n")
    return bin.add_script("python3", f"cat > /dev/null; cat {data}")


@pytest.mark.parametrize("name", sorted(ODD))
def test_index_python_of_an_odd_answer_is_no_internal_error_and_no_hang(tmp_path, name):
    python = fake_python(tmp_path, json.dumps({"envdoctor_child": 2, "kind": "result", "result": ODD[name]}))
    with IndexServer() as server:
        started = time.monotonic()
        r = CliRunner().invoke(
            cli,
            ["index", "cu128", "--python", str(python), "--index-url", server.url()],
            env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"), "ENVDOCTOR_INDEX_RETRIES": "0"},
        )
    assert time.monotonic() - started < 30
    assert r.exit_code in (0, 1), r.output
    assert "internal error" not in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("kind", ["no_torch", "internal", "odd kind"])
def test_index_python_of_an_error_line_is_the_targets_answer_exit_2(tmp_path, kind):
    python = fake_python(
        tmp_path, json.dumps({"envdoctor_child": 2, "kind": "error", "error": {"kind": kind, "message": "planted"}})
    )
    r = CliRunner().invoke(
        cli,
        ["index", "cu128", "--python", str(python), "--offline"],
        env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert r.exit_code == 2, r.output
    assert f"answered the interpreter check with an error ({kind}): planted" in r.output


@pytest.mark.parametrize("kind", ["no_torch", "internal"])
def test_check_of_an_error_line_from_the_target_is_ed200_not_a_bug(tmp_path, kind):
    """Counted as envdoctor's own failure (exit 3) before; it is the target's answer."""
    python = fake_python(
        tmp_path, json.dumps({"envdoctor_child": 2, "kind": "error", "error": {"kind": kind, "message": "planted"}})
    )
    r = CliRunner().invoke(
        cli,
        [
            "check",
            "--root",
            str(tmp_path),
            "--skip",
            "conda",
            "--skip",
            "docker",
            "--skip",
            "toolkits",
            "--python",
            str(python),
        ],
        env={"PATH": "/usr/bin:/bin"},
    )
    assert r.exit_code == 1, r.output
    assert "ED200 error" in r.output and f"answered an error ({kind}): planted" in r.output
    assert "a bug" not in r.output

"""Target interpreters: tags from packaging.tags for this, another, or a described Python."""

from __future__ import annotations

import stat
import sys

import pytest
from packaging import tags
from packaging.utils import parse_wheel_filename

from envdoctor.wheels import Target, TargetError, expand_platform
from envdoctor.wheels.target import target_from_probe


def wheel(name: str):
    return parse_wheel_filename(name)[3]


def test_for_python_expands_manylinux_down_to_linux():
    t = Target.for_python("3.12", platform="manylinux_2_28_x86_64")
    assert t.interpreter == "cp312" and t.short == "cp312" and t.python == "3.12"
    assert t.platforms[0] == "manylinux_2_28_x86_64"
    assert {"manylinux2014_x86_64", "manylinux1_x86_64"} <= set(t.platforms)
    assert t.platforms[-1] == "linux_x86_64"
    assert t.accepts(wheel("torch-2.8.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl"))
    assert t.accepts(wheel("torch-2.3.0+cu121-cp312-cp312-linux_x86_64.whl"))
    assert t.accepts(wheel("numpy-2.0.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"))
    assert t.accepts(wheel("six-1.16.0-py2.py3-none-any.whl"))
    assert t.accepts(wheel("x-1.0-cp39-abi3-manylinux_2_17_x86_64.whl"))
    assert not t.accepts(wheel("torch-2.0.1+cu117-cp311-cp311-linux_x86_64.whl"))
    assert not t.accepts(wheel("x-1.0-cp312-cp312-manylinux_2_34_x86_64.whl"))
    assert not t.accepts(wheel("torch-2.8.0-cp312-cp312-win_amd64.whl"))


def test_free_threaded_target():
    t = Target.for_python("3.13t", platform="manylinux_2_28_aarch64")
    assert t.short == "cp313t"
    assert t.accepts(wheel("torch-2.9.0+cu130-cp313-cp313t-manylinux_2_28_aarch64.whl"))
    assert not t.accepts(wheel("torch-2.9.0+cu130-cp313-cp313-manylinux_2_28_aarch64.whl"))
    assert not t.accepts(wheel("x-1.0-cp39-abi3-manylinux_2_28_aarch64.whl"))


@pytest.mark.parametrize("version", ["3", "3.12.1", "python3.12", "twelve", ""])
def test_bad_python_version(version):
    with pytest.raises(TargetError, match="not a Python version"):
        Target.for_python(version)


def test_expand_platform_forms():
    assert expand_platform("manylinux_2_17_aarch64") == (
        "manylinux_2_17_aarch64",
        "manylinux2014_aarch64",
        "linux_aarch64",
    )
    legacy = expand_platform("manylinux2014_x86_64")
    assert legacy[0] == "manylinux_2_17_x86_64" and "manylinux1_x86_64" in legacy
    assert expand_platform("musllinux_1_2_x86_64") == (
        "musllinux_1_2_x86_64",
        "musllinux_1_1_x86_64",
        "musllinux_1_0_x86_64",
        "linux_x86_64",
    )
    assert "macosx_11_0_arm64" in expand_platform("macosx_14_0_arm64")
    assert expand_platform("win_amd64") == ("win_amd64",)
    assert expand_platform("linux-x86_64") == ("linux_x86_64",)
    with pytest.raises(TargetError):
        expand_platform("manylinux 2 28 / x86")


def test_current_is_sys_tags():
    t = Target.current()
    assert set(t.tags) == set(tags.sys_tags())
    assert t.interpreter == f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert "envdoctor's own Python" in t.description


def test_with_platform_keeps_the_interpreter():
    t = Target.for_python("3.11", platform="manylinux_2_28_x86_64").with_platform("win_amd64")
    assert t.platforms == ("win_amd64",)
    assert t.accepts(wheel("torch-2.5.1+cu121-cp311-cp311-win_amd64.whl"))
    assert not t.accepts(wheel("torch-2.5.1+cu121-cp311-cp311-linux_x86_64.whl"))
    assert t.accepts(wheel("six-1.16.0-py2.py3-none-any.whl"))


# -- what the probe script printed ----------------------------------------------------------

UBUNTU_2404_PY312 = {
    "version": [3, 12, 3],
    "implementation": "cpython",
    "abiflags": "",
    "gil_disabled": False,
    "libc": ["glibc", "2.39"],
    "confstr": "glibc 2.39",
    "machine": "x86_64",
    "bits": 64,
    "platform": "linux-x86_64",
    "mac_ver": "",
}


def test_probe_of_ubuntu_python():
    t = target_from_probe(UBUNTU_2404_PY312, "/usr/bin/python3")
    assert t.python == "3.12.3" and t.short == "cp312"
    assert t.platforms[0] == "manylinux_2_39_x86_64"
    assert t.description == "/usr/bin/python3, Python 3.12.3"
    assert t.accepts(wheel("torch-2.8.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl"))


def test_probe_prefers_confstr_and_handles_old_abiflags():
    info = dict(UBUNTU_2404_PY312, version=[3, 7, 17], abiflags="m", libc=["", ""], confstr="glibc 2.17")
    t = target_from_probe(info, "/opt/py37/bin/python")
    assert t.platforms[0] == "manylinux_2_17_x86_64"
    assert t.accepts(wheel("torch-1.13.0+cu117-cp37-cp37m-linux_x86_64.whl"))
    assert not t.accepts(wheel("x-1.0-cp37-cp37m-manylinux_2_28_x86_64.whl"))


def test_probe_without_glibc_and_32_bit():
    musl = dict(UBUNTU_2404_PY312, libc=["", ""], confstr=None)
    assert target_from_probe(musl, "p").platforms == ("linux_x86_64",)
    i686 = dict(UBUNTU_2404_PY312, bits=32)
    assert target_from_probe(i686, "p").platforms[0] == "manylinux_2_39_i686"


def test_probe_free_threaded_and_pypy():
    ft = dict(UBUNTU_2404_PY312, version=[3, 13, 1], abiflags="t", gil_disabled=True)
    assert target_from_probe(ft, "p").short == "cp313t"
    pypy = dict(UBUNTU_2404_PY312, version=[3, 10, 14], implementation="pypy", soabi="pypy310-pp73-x86_64-linux-gnu")
    t = target_from_probe(pypy, "p")
    assert t.interpreter == "pp310"
    assert not t.accepts(wheel("torch-2.5.1-cp310-cp310-manylinux_2_28_x86_64.whl"))
    assert t.accepts(wheel("six-1.16.0-py3-none-any.whl"))


def test_probe_garbage():
    with pytest.raises(TargetError):
        target_from_probe({"version": "three"}, "p")


def test_from_interpreter_runs_the_real_interpreter():
    t = Target.from_interpreter(sys.executable, timeout=30)
    assert t.short == Target.current().short
    assert set(t.platforms) == set(Target.current().platforms)
    assert set(t.tags) == set(tags.sys_tags())


def test_from_interpreter_that_is_not_python(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'Python is sleeping'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(TargetError, match="did not print"):
        Target.from_interpreter(str(fake), timeout=5)
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho 'error while loading shared libraries' >&2\nexit 127\n")
    broken.chmod(broken.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(TargetError, match="could not run"):
        Target.from_interpreter(str(broken), timeout=5)

"""Pure compatibility answers: kernels for a GPU (cubin/PTX rules of the CUDA binary-compatibility
model) and drivers for a CUDA version (NVIDIA Table 3 minimums and minor-version compatibility).
Expected answers are written out by hand."""

from __future__ import annotations

import pytest

from envdoctor.compat import (
    DriverSupport,
    KernelSupport,
    driver_os,
    driver_support,
    kernel_support,
    open_modules,
    variant_tag,
)
from envdoctor.facts.system import SystemFacts
from envdoctor.table import load_table

CU126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]  # torch 2.8 cu126
CU128_211 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]  # torch 2.11 cu128
CU130_29 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


@pytest.fixture(scope="module")
def t():
    return load_table()


@pytest.mark.parametrize(
    "arch, cc, expected",
    [
        (CU126, "8.9", KernelSupport("cubin", "sm_86")),  # same major, higher minor
        (CU126, "8.6", KernelSupport("cubin", "sm_86")),
        (["sm_80"], "8.6", KernelSupport("cubin", "sm_80")),
        (CU126, "9.0", KernelSupport("cubin", "sm_90")),
        (CU126, "12.0", KernelSupport("none", None)),  # no sm_12x, no PTX
        (CU126, "6.1", KernelSupport("cubin", "sm_60")),
        (CU128_211, "7.0", KernelSupport("none", None)),  # V100 on 2.11 cu128
        (CU128_211, "10.3", KernelSupport("cubin", "sm_100")),  # B300 through sm_100
        (CU128_211, "12.1", KernelSupport("cubin", "sm_120")),  # GB10 through sm_120
        (CU130_29, "12.0", KernelSupport("cubin", "sm_120")),  # cubin preferred over PTX
        (["sm_90", "compute_90"], "12.0", KernelSupport("ptx", "compute_90")),
        (["compute_120"], "10.0", KernelSupport("none", None)),  # PTX only JITs upwards
        (["sm_90a"], "9.0", KernelSupport("cubin", "sm_90a")),
        (["sm_90a"], "10.0", KernelSupport("none", None)),  # arch-specific: exactly 9.0
        (["sm_100a"], "10.3", KernelSupport("none", None)),
        (["compute_90a"], "12.0", KernelSupport("none", None)),
        (["sm_90"], "10.0", KernelSupport("none", None)),  # other major: no cubin
        (["sm_86", "sm_80"], "sm_89", KernelSupport("cubin", "sm_86")),
    ],
)
def test_kernel_support(arch, cc, expected):
    assert kernel_support(arch, cc) == expected


def test_kernel_support_ok_and_bad_input():
    assert kernel_support(CU126, "8.9").ok
    assert not kernel_support([], "8.9").ok
    assert kernel_support(["garbage", "sm_86"], "8.6").via == "sm_86"
    with pytest.raises(ValueError):
        kernel_support(CU126, "eight")


def test_driver_direct(t):
    assert driver_support(t, "570.26", "12.8") == DriverSupport("direct", "570.26", "525.60.13", ())
    assert driver_support(t, "580.159.04", "cu130").kind == "direct"  # the H200 machine
    assert driver_support(t, "580.159.04", "12.8").kind == "direct"


def test_driver_minor_version(t):
    s = driver_support(t, "535.104.05", "12.8")
    assert (s.kind, s.needed, s.floor) == ("minor-version", "570.26", "525.60.13")
    assert any("PTX" in x for x in s.limitations)
    assert s.ok
    assert driver_support(t, "450.80.02", "11.8").kind == "minor-version"
    assert driver_support(t, "527.41", "12.1", os="windows").kind == "minor-version"


def test_driver_none(t):
    assert driver_support(t, "470.82.01", "12.1").kind == "none"
    s = driver_support(t, "550.54.15", "13.0")
    assert (s.kind, s.floor) == ("none", "580.65.06")
    assert driver_support(t, "450.51.05", "11.4").kind == "none"  # below the 11.x floor 450.80.02
    assert not driver_support(t, "418.39", "cu113").ok


def test_driver_unknown_cuda_and_bad_driver(t):
    assert driver_support(t, "580.65.06", "13.9").kind == "unknown"
    with pytest.raises(ValueError):
        driver_support(t, "five-eighty", "12.8")


# WSL2 runs the Windows driver: NVIDIA Table 3 gives CUDA 12.8 GA 570.26 (Linux) / 570.65
# (Windows), and Table 2 the 12.x minor-version floor 525.60.13 / 527.41. For 13.x the Windows
# column says N/A: the Linux minimum stands in, with a note.


def test_windows_driver_is_held_to_the_windows_minimums(t):
    win = driver_support(t, "566.36", "cu128", os="windows")
    assert (win.kind, win.needed, win.floor, win.note) == ("minor-version", "570.65", "527.41", None)
    linux = driver_support(t, "566.36", "cu128")
    assert (linux.kind, linux.needed, linux.floor) == ("minor-version", "570.26", "525.60.13")
    assert driver_support(t, "560.70", "12.6").kind == "direct"  # Linux 12.6: 560.28.03
    assert driver_support(t, "560.70", "12.6", os="windows").kind == "minor-version"  # Windows: 560.76


def test_windows_without_a_minimum_in_the_table_borrows_the_linux_one(t):
    s = driver_support(t, "581.57", "cu130", os="windows")
    assert (s.kind, s.needed) == ("direct", "580.65.06")
    assert s.note == (
        "envdoctor's table has no Windows driver minimum for CUDA 13.0; the Linux one (580.65.06) stands in"
    )
    assert driver_support(t, "581.57", "cu130").note is None


def test_variant_tag():
    assert variant_tag("12.8") == "cu128" and variant_tag("12.8.1") == "cu128" and variant_tag("13.0") == "cu130"
    assert variant_tag("11.8.89") == "cu118" and variant_tag(None) == "cpu" and variant_tag("") == "cpu"


def test_open_or_proprietary_kernel_modules():
    # architectures.toml kernel_modules: Turing and newer "either" or "open", Maxwell/Pascal/Volta "proprietary"
    t = load_table()
    assert open_modules(t, ["7.5", "12.0"]) and open_modules(t, []) and open_modules(t, [None, "8.6"])
    assert not open_modules(t, ["8.6", "7.0"]) and not open_modules(t, ["6.1"])
    assert open_modules(t, ["9.9"])  # an architecture the table does not know does not decide
    assert open_modules(None, ["6.1"])  # no table: nothing decides, NVIDIA's default (open)


def test_driver_os_is_windows_only_under_wsl2():
    assert driver_os(SystemFacts(wsl="wsl2")) == "windows"
    assert driver_os(SystemFacts(wsl="wsl1")) == driver_os(SystemFacts()) == "linux"

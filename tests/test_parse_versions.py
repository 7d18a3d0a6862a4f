"""The one set of version helpers (envdoctor.parse): real inputs from drivers, CUDA and torch."""

from __future__ import annotations

from packaging.version import Version

from envdoctor.parse import loose_version, major, major_minor, release, version, version_key


def test_version_keeps_the_local_label_and_refuses_garbage():
    assert version("2.11.0+cu130") == Version("2.11.0+cu130")
    assert version("580.159.04") == Version("580.159.4")
    assert version("12.8") == Version("12.8")
    assert version(None) is None and version("") is None and version("unknown") is None


def test_release_drops_the_local_label():
    assert release("2.11.0+cu130") == Version("2.11.0")
    assert release("580.159.04") == Version("580.159.4")
    assert release("12.8") == Version("12.8") and release(None) is None and release("?") is None


def test_major_is_the_driver_branch():
    assert major("580.159.04") == 580 and major("470") == 470 and major("12.8") == 12
    assert major(None) is None and major("") is None and major("R580") is None


def test_major_minor_and_loose_version():
    assert major_minor("580.159.04") == "580.159" and major_minor("12.8.93") == "12.8"
    assert major_minor("13") is None
    assert loose_version("20.10.24+dfsg1") == Version("20.10.24")


def test_versions_compare_as_versions_not_strings():
    assert version("12.10") > version("12.9")
    assert version("580.159.04") > version("580.65.06")
    assert sorted(["12.10", "?", "12.9", "11.8"], key=version_key) == ["11.8", "12.9", "12.10", "?"]

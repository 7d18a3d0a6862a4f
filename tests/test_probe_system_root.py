"""ENVDOCTOR_ROOT / --root (a mounted image): glibc and GCC are the image's, never the host's.

Was (issue 26): under another root the system probe took glibc from envdoctor's own process
(os.confstr: the host's 2.36 here) and ran the host's ``gcc --version``. The image's libc.so.6 holds
its banner (the real one of Debian 12: "GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release
version 2.36."; Ubuntu 22.04's below), and its GCC is the version folder under /usr/lib/gcc/<triplet>/.
"""

from __future__ import annotations

import os

from envdoctor.parse.libc import parse_libc_banner
from envdoctor.probes.context import Context
from envdoctor.probes.system import probe
from tests.fakes import FakeBin

UBUNTU_2204 = b"GNU C Library (Ubuntu GLIBC 2.35-0ubuntu3.8) stable release version 2.35.\nCopyright (C) 2022"


def _image(tmp_path, libc: bytes = UBUNTU_2204, gcc: str = "11"):
    root = tmp_path / "image"
    lib = root / "lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libc.so.6").write_bytes(b"\x7fELF\x02\x01\x01" + os.urandom(4096) + libc + b"\x00" * 64)
    (root / "usr/lib/gcc/x86_64-linux-gnu" / gcc).mkdir(parents=True)
    (root / "usr/bin").mkdir(parents=True)
    os.symlink(f"gcc-{gcc}", root / "usr/bin/gcc")
    (root / "etc").mkdir()
    (root / "etc/os-release").write_text('ID=ubuntu\nVERSION_ID="22.04"\nNAME="Ubuntu"\n')
    return root


def test_envdoctor_root_reads_glibc_and_gcc_of_the_image_not_the_host(tmp_path):
    host = FakeBin(tmp_path / "host")
    host.add("gcc", by_args={"--version": ("gcc (Debian 12.2.0-14) 12.2.0\n", "", 0)})
    facts = probe(Context(root=_image(tmp_path), env=host.env(hermetic=True), timeout=5.0))
    assert facts.glibc == "2.35"
    assert facts.gcc_version == "11" and "12.2.0" not in (facts.gcc or "")
    assert facts.gcc == "gcc 11 (/usr/lib/gcc/x86_64-linux-gnu/11 in the image; not run)"
    assert facts.os_id == "ubuntu" and facts.os_version == "22.04"


def test_an_image_without_libc_or_gcc_says_unknown_rather_than_the_hosts(tmp_path):
    root = tmp_path / "bare"
    (root / "etc").mkdir(parents=True)
    host = FakeBin(tmp_path / "host")
    host.add("gcc", by_args={"--version": ("gcc (Debian 12.2.0-14) 12.2.0\n", "", 0)})
    facts = probe(Context(root=root, env=host.env(hermetic=True), timeout=5.0))
    assert facts.glibc is None and facts.gcc is None and facts.gcc_version is None


def test_the_banner_of_real_glibc_builds():
    assert parse_libc_banner(b"..GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36.\n") == "2.36"
    assert parse_libc_banner(b"GNU C Library (GNU libc) stable release version 2.28.\n") == "2.28"
    assert parse_libc_banner(b"\x00\x01 no banner here") is None

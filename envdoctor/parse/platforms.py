"""CPU architecture names and the Linux platform tags a glibc accepts: pure, one home for both.

The tag list follows ``packaging.tags`` (pypa/packaging ``src/packaging/_manylinux.py``
``platform_tags`` and ``tags._linux_platforms``): ``manylinux_2_<N>_<arch>`` from the glibc down
to 2_17 (2_5 on x86_64/i686), each legacy alias (``manylinux2014``, ``manylinux2010``,
``manylinux1``) right after its ``manylinux_2_X`` tag, and ``linux_<arch>`` last.

>>> manylinux_tags((2, 28), "aarch64")[:2], manylinux_tags((2, 28), "aarch64")[-2:]
(('manylinux_2_28_aarch64', 'manylinux_2_27_aarch64'), ('manylinux2014_aarch64', 'linux_aarch64'))
>>> cpu_arch("amd64"), cpu_arch("arm64"), cpu_arch("ppc64le")
('x86_64', 'aarch64', 'ppc64le')
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

#: Names a CPU goes by (``platform.machine()`` on Windows and macOS, Docker's names) -> the Linux one.
_ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
#: The legacy manylinux names of glibc 2.17, 2.12 and 2.5 (PEP 599, 571, 513).
LEGACY_MANYLINUX: dict[tuple[int, int], str] = {
    (2, 17): "manylinux2014",
    (2, 12): "manylinux2010",
    (2, 5): "manylinux1",
}
#: manylinux2014 exists for these architectures; manylinux2010 and manylinux1 only for x86_64/i686.
_LEGACY_2014_ARCHS = frozenset({"x86_64", "i686", "aarch64", "armv7l", "ppc64", "ppc64le", "s390x"})


def cpu_arch(name: Optional[str]) -> Optional[str]:
    """The Linux name of a CPU architecture: "amd64" -> "x86_64", "arm64" -> "aarch64"; others
    lower-cased as they are; None for None or ""."""
    if not name:
        return None
    key = name.strip().lower()
    return _ARCH_ALIASES.get(key, key)


def manylinux_tags(glibc: tuple[int, int], arch: str) -> tuple[str, ...]:
    """The manylinux tags glibc ``glibc`` accepts on ``arch``, newest first, then ``linux_<arch>``."""
    return linux_tags(glibc, (arch,))


def linux_tags(glibc: Optional[tuple[int, int]], archs: Iterable[str]) -> tuple[str, ...]:
    """:func:`manylinux_tags` for several architectures (``("armv8l", "armv7l")``: a 32-bit Python on
    64-bit Arm), all their manylinux tags first, as packaging orders them; without a glibc (musl,
    unknown) only the ``linux_<arch>`` tags."""
    archs = tuple(archs)
    tags: list[str] = []
    if glibc is not None and glibc[0] == 2:
        for arch in archs:
            floor = 5 if arch in ("x86_64", "i686") else 17
            for minor in range(glibc[1], floor - 1, -1):
                tags.append(f"manylinux_2_{minor}_{arch}")
                legacy = LEGACY_MANYLINUX.get((2, minor))
                if legacy and (arch in _LEGACY_2014_ARCHS if minor == 17 else arch in ("x86_64", "i686")):
                    tags.append(f"{legacy}_{arch}")
    return tuple(tags) + tuple(f"linux_{arch}" for arch in archs)

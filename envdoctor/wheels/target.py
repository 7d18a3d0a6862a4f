"""The interpreter a wheel must fit: its tags, computed with ``packaging.tags``.

>>> t = Target.for_python("3.12", platform="manylinux_2_28_x86_64")
>>> t.interpreter, t.platforms[:2], t.platforms[-1]
('cp312', ('manylinux_2_28_x86_64', 'manylinux_2_27_x86_64'), 'linux_x86_64')
>>> t.accepts(packaging.utils.parse_wheel_filename("torch-2.8.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl")[3])
True
"""

from __future__ import annotations

import platform as _platform
import re
import sys
from dataclasses import dataclass, field
from typing import FrozenSet, Iterable, Optional, Sequence, Tuple

from packaging import tags as _tags
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.version import InvalidVersion, Version

from envdoctor.parse import MAX_VERSION_PART
from envdoctor.parse.platforms import LEGACY_MANYLINUX, cpu_arch, manylinux_tags


class TargetError(ValueError):
    """The target interpreter or the requested Python/platform could not be used (one line)."""


_VERSION = re.compile(r"^(?P<major>\d)\.(?P<minor>\d{1,2})(?P<t>t?)$")
_MANYLINUX = re.compile(r"^manylinux_(?P<major>\d+)_(?P<minor>\d+)_(?P<arch>.+)$")
_MANYLINUX_LEGACY = re.compile(r"^(?P<name>manylinux1|manylinux2010|manylinux2014)_(?P<arch>.+)$")
_MUSLLINUX = re.compile(r"^musllinux_(?P<major>\d+)_(?P<minor>\d+)_(?P<arch>.+)$")
_MACOSX = re.compile(r"^macosx_(?P<major>\d+)_(?P<minor>\d+)_(?P<arch>.+)$")
_PLATFORM_TAG = re.compile(r"^[a-z0-9_.]+$")


@dataclass(frozen=True)
class Target:
    """What a wheel must match: Python version, interpreter tag and the ordered tag list."""

    python: str  # "3.12.3" (or "3.12" when only the series is known)
    interpreter: str  # "cp312"
    platforms: Tuple[str, ...]  # ("manylinux_2_39_x86_64", ..., "linux_x86_64")
    tags: Tuple[Tag, ...]
    description: str  # "envdoctor's own Python, /usr/bin/python3.11"
    _tagset: FrozenSet[Tag] = field(init=False, repr=False, compare=False)
    _short: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_tagset", frozenset(self.tags))
        threaded = any(t.abi == f"{self.interpreter}t" for t in self.tags)
        object.__setattr__(self, "_short", self.interpreter + ("t" if threaded else ""))

    # -- constructors ------------------------------------------------------------------------

    @classmethod
    def current(cls) -> Target:
        """envdoctor's own interpreter, as pip would see it (``packaging.tags.sys_tags()``)."""
        tags = tuple(_tags.sys_tags())
        interp = _tags.interpreter_name() + _tags.interpreter_version()
        platforms = sorted(
            _unique(t.platform for t in tags if t.platform != "any"), key=lambda p: p.startswith("linux_")
        )
        return cls(
            _platform.python_version(), interp, tuple(platforms), tags, f"envdoctor's own Python, {sys.executable}"
        )

    @classmethod
    def for_python(cls, version: str, platform: Optional[str] = None) -> Target:
        """CPython ``version`` ("3.12", "3.13t" for free-threaded) on ``platform``.

        ``platform`` is the best tag the machine accepts ("manylinux_2_28_x86_64"); older
        manylinux tags and ``linux_<arch>`` follow from it. None: this machine's platforms.
        """
        m = _VERSION.match(version.strip())
        if not m:
            raise TargetError(f"not a Python version: {version!r} (expected X.Y, e.g. 3.12)")
        pyver = (int(m["major"]), int(m["minor"]))
        abi = f"cp{pyver[0]}{pyver[1]}{m['t']}"
        platforms = expand_platform(platform) if platform else _current_platforms()
        where = platform or "this machine's platforms"
        return cls._cpython(f"{pyver[0]}.{pyver[1]}", pyver, abi, platforms, f"CPython {version} on {where}")

    @classmethod
    def from_interpreter(cls, path: str, timeout: float = 10.0) -> Target:
        """Ask the interpreter at ``path`` (in a child process) for its version, ABI and libc."""
        from envdoctor.child import run_child

        child = run_child("interpreter.py", python=path, timeout=timeout, isolated=True, what="the interpreter check")
        if child.failure is not None:  # the target's own answer, an error line of the protocol
            kind = child.failure.get("kind")
            raise TargetError(
                f"{path} answered the interpreter check with an error "
                f"({str(kind)[:40] if isinstance(kind, str) else 'error'}): "
                f"{str(child.failure.get('message') or 'no message')[:200]}"
            )
        if child.cause is not None:
            raise TargetError(f"could not run {path}: {child.cause.message}")
        if child.result is None:
            raise TargetError(f"{path} did not print its interpreter details")
        return target_from_probe(child.result, path)

    @classmethod
    def _cpython(
        cls, python: str, pyver: Tuple[int, int], abi: str, platforms: Sequence[str], description: str
    ) -> Target:
        interp = f"cp{pyver[0]}{pyver[1]}"
        tags = list(_tags.cpython_tags(pyver, abis=[abi], platforms=platforms))
        tags += _tags.compatible_tags(pyver, interp, platforms)
        return cls(python, interp, tuple(platforms), tuple(tags), description)

    def with_platform(self, platform: str) -> Target:
        """The same interpreter and ABI on another platform (``--python PATH --platform TAG``)."""
        platforms = expand_platform(platform)
        pairs = _unique_pairs((t.interpreter, t.abi) for t in self.tags if t.platform != "any")
        tags = [Tag(i, a, p) for i, a in pairs for p in platforms]
        tags += [t for t in self.tags if t.platform == "any"]
        return Target(self.python, self.interpreter, platforms, tuple(tags), f"{self.description} on {platform}")

    # -- questions ---------------------------------------------------------------------------

    @property
    def short(self) -> str:
        """ "cp312" or, for free-threaded builds, "cp313t" (what people call the Python)."""
        return self._short

    def accepts(self, wheel_tags: Iterable[Tag]) -> bool:
        """True when one of the wheel's tags is one this interpreter installs."""
        return not self._tagset.isdisjoint(wheel_tags)

    def accepts_platform(self, platform: str) -> bool:
        return platform in self.platforms or platform == "any"

    def satisfies(self, requires_python: Optional[str]) -> bool:
        """``data-requires-python`` / ``requires-python`` check; unparseable specs pass (pip too)."""
        if not requires_python:
            return True
        try:
            return Version(self.python) in SpecifierSet(requires_python)
        except (InvalidSpecifier, InvalidVersion):
            return True


def expand_platform(platform: str) -> Tuple[str, ...]:
    """Every platform tag a machine whose best tag is ``platform`` installs, best first.

    >>> expand_platform("manylinux_2_17_aarch64")
    ('manylinux_2_17_aarch64', 'manylinux2014_aarch64', 'linux_aarch64')
    """
    platform = platform.strip().lower().replace("-", "_").replace(".", "_")
    if not _PLATFORM_TAG.match(platform):
        raise TargetError(f"not a platform tag: {platform!r} (e.g. manylinux_2_28_x86_64)")
    numbered = _MANYLINUX.match(platform) or _MUSLLINUX.match(platform) or _MACOSX.match(platform)
    if numbered and max(len(numbered["major"]), len(numbered["minor"])) > 2:
        raise TargetError(
            f"not a platform tag envdoctor can use: {platform[:60]!r} "
            f"(version {numbered['major'][:12]}.{numbered['minor'][:12]} is out of range)"
        )
    legacy = _MANYLINUX_LEGACY.match(platform)
    if legacy:
        glibc = {v: k for k, v in LEGACY_MANYLINUX.items()}[legacy["name"]]
        return manylinux_tags(glibc, legacy["arch"])
    m = _MANYLINUX.match(platform)
    if m:
        return manylinux_tags((int(m["major"]), int(m["minor"])), m["arch"])
    m = _MUSLLINUX.match(platform)
    if m:
        arch = m["arch"]
        return tuple(f"musllinux_{m['major']}_{y}_{arch}" for y in range(int(m["minor"]), -1, -1)) + (f"linux_{arch}",)
    m = _MACOSX.match(platform)
    if m:
        return tuple(_tags.mac_platforms((int(m["major"]), int(m["minor"])), m["arch"]))
    return (platform,)


def _current_platforms() -> Tuple[str, ...]:
    """This machine's platform tags, best first (``linux_<arch>`` last, as pip ranks it)."""
    found = _unique(t.platform for t in _tags.sys_tags() if t.platform != "any")
    return tuple(sorted(found, key=lambda p: p.startswith("linux_")))


def _unique_pairs(items: Iterable[Tuple[str, str]]) -> Tuple[Tuple[str, str], ...]:
    return tuple(dict.fromkeys(items))


def _unique(items: Iterable[str]) -> Tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def target_from_probe(info: dict, path: str) -> Target:
    """Build the :class:`Target` from what ``envdoctor/child/interpreter.py`` answered (pure).

    The answer is the target's, so anything in it may be odd (libc as a number, a blank confstr,
    a PyPy SOABI that is no string, a macOS version with a superscript digit): a field of the
    wrong type or shape counts as absent; a version that cannot be read is a TargetError.

    >>> target_from_probe({"version": [3, 12, 3], "implementation": "cpython", "abiflags": "",
    ...     "libc": ["glibc", "2.39"], "machine": "x86_64", "bits": 64,
    ...     "platform": "linux-x86_64"}, "/usr/bin/python3").short
    'cp312'
    """
    cannot = TargetError(f"{path} printed interpreter details envdoctor cannot read")
    if not isinstance(info, dict):
        raise cannot
    raw = info.get("version")
    if (
        not isinstance(raw, list)
        or not 2 <= len(raw)
        or not all(type(x) is int and 0 <= x <= MAX_VERSION_PART for x in raw[:3])
    ):
        raise cannot
    version = tuple(raw[:3])
    pyver = (version[0], version[1])
    impl = _text(info.get("implementation")) or "cpython"
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", impl):
        raise cannot
    python = ".".join(str(x) for x in version)
    platforms = _probe_platforms(info)
    description = f"{path}, Python {python}"
    if impl == "cpython":
        flags = info.get("abiflags")
        if flags is None:  # Windows has no sys.abiflags
            flags = "t" if info.get("gil_disabled") is True else ""
        if not isinstance(flags, str) or not re.fullmatch(r"[a-z]{0,4}", flags):
            raise cannot
        return Target._cpython(python, pyver, f"cp{pyver[0]}{pyver[1]}{flags}", platforms, description)
    # PyPy and others: pp310 + the ABI from SOABI ("pypy310-pp73" -> "pypy310_pp73").
    short = {"pypy": "pp", "ironpython": "ip", "jython": "jy"}.get(impl, impl)
    interp = f"{short}{pyver[0]}{pyver[1]}"
    soabi = _text(info.get("soabi"))
    abis = [soabi.replace("-", "_").replace(".", "_")] if soabi else []
    tags = list(_tags.generic_tags(interp, abis, platforms))
    tags += _tags.compatible_tags(pyver, interp, platforms)
    return Target(python, interp, tuple(platforms), tuple(tags), description)


def _text(value: object, limit: int = 200) -> Optional[str]:
    """A non-blank string of the answer, stripped; None for anything else (a number, a list)."""
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        return None
    return value.strip()


def _probe_platforms(info: dict) -> Tuple[str, ...]:
    plat = _text(info.get("platform")) or ""
    machine = (_text(info.get("machine")) or "").lower()
    if not re.fullmatch(r"[a-z0-9_.-]*", plat.lower()) or not re.fullmatch(r"[a-z0-9_]*", machine):
        return ()
    if plat.startswith("linux"):
        arch = cpu_arch(machine) or "x86_64"
        if info.get("bits") == 32:
            arch = {"x86_64": "i686", "aarch64": "armv7l"}.get(arch, arch)
        glibc = _glibc(info)
        return manylinux_tags(glibc, arch) if glibc else (f"linux_{arch}",)
    if plat.startswith("macosx"):
        mac = _text(info.get("mac_ver")) or ""
        parts = [int(p) for p in mac.split(".")[:2] if re.fullmatch(r"[0-9]{1,2}", p)] or [11, 0]
        major, minor = (parts + [0])[:2]
        if major >= 11:
            minor = 0
        return tuple(_tags.mac_platforms((major, minor), machine or "x86_64"))
    return (plat.replace("-", "_").replace(".", "_"),) if plat else ()


def _glibc(info: dict) -> Optional[Tuple[int, int]]:
    """glibc version from ``os.confstr`` ("glibc 2.39") or ``platform.libc_ver()``
    (["glibc", "2.39"]), read by the one parser ``check`` uses (``parse.torch.parse_glibc``):
    "2.150000000" is no glibc (it made ``index --python`` build tags for 90 s and more)."""
    from envdoctor.parse.torch import parse_glibc

    candidates = [_text(info.get("confstr"))]
    libc = info.get("libc")
    if isinstance(libc, list) and len(libc) == 2 and libc[0] == "glibc" and _text(libc[1]):
        candidates.append(f"glibc {_text(libc[1])}")
    for text in candidates:
        found = parse_glibc(text) if text else None
        if found:
            major, minor = found.split(".")
            return int(major), int(minor)
    return None


def interpreter_key(interpreter: str) -> Tuple[str, int, int]:
    """Sort key for "cp39" < "cp310" < "cp313t"."""
    m = re.match(r"^([a-z]+)(\d)(\d*)", interpreter)
    if not m:
        return (interpreter, 0, 0)
    return (m[1], int(m[2]), int(m[3] or 0))

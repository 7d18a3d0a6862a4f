"""What a torch choice is asked for: one frozen :class:`Request`, the ``--torch`` specifier, the live index.

A way out is the same request with one limit changed (``dataclasses.replace(request, python=None)``:
any Python), so every limit of the machine and of the user's request travels in one value.

>>> str(parse_torch_spec("2.7")), str(parse_torch_spec("2.7.1")), parse_torch_spec(None)
('==2.7.*', '==2.7.1', None)
>>> str(parse_torch_spec("2.7.1+cu118")), spec_variant("2.7.1+cu118"), spec_variant("==2.7.1+cu118")
('==2.7.1', 'cu118', 'cu118')
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

_OPS = re.compile(r"[<>=!~]")
#: A local version label in --torch: the wheel variant ("2.7.1+cu118", "==2.7.1+cu118").
_LOCAL = re.compile(r"\+([A-Za-z0-9.]+)\s*(?=,|$)")
_NOT_A_SPEC = "--torch {text}: not a version or a PEP 440 specifier (e.g. 2.7, '>=2.4,<2.6')"
#: The longest option value read: a GPU name, a specifier, an ID:VERSION are far shorter; a longer
#: one is refused before it reaches a parser (a 5,000-digit number is not a version).
MAX_VALUE = 100

#: Whose driver minimums apply: "windows" for the Windows driver that serves WSL2.
DriverOs = Literal["linux", "windows"]


class SpecError(ValueError):
    """``--torch`` is neither a version nor a PEP 440 specifier."""


@dataclass(frozen=True)
class IndexAnswer:
    """What the live index said about one wheel: ``found`` None means it could not tell."""

    found: bool | None
    detail: str = ""  # "https://download.pytorch.org/whl/cu128: no torch 2.13.0 for cp312 ..."


#: ``available(variant, torch_version)`` -> IndexAnswer; None: no live check (offline).
Availability = Callable[[str, str], IndexAnswer]


@dataclass(frozen=True)
class Request:
    """One torch choice to make: the machine's limits and the user's request.

    ``Request(None, "580.95.05", ("8.6",), "3.12", "2.35")``: the newest torch for an RTX 3090 on
    driver 580.95.05, CPython 3.12, glibc 2.35, x86_64. ``ccs`` empty: CPU wheels; a ``None`` in it:
    a GPU of unknown compute capability. ``driver`` None with GPUs: none installed yet.
    """

    spec: SpecifierSet | None
    driver: str | None
    ccs: tuple[str | None, ...]
    python: str | None  # "3.12", "3.13t"; None: any
    glibc: str | None  # "2.35"; None: unknown
    arch: str = "x86_64"  # "x86_64" | "aarch64"
    require_direct: bool = False  # only CUDA the driver runs without minor-version compatibility
    cudas: tuple[str, ...] | None = None  # only these CUDA lines ("12.8"): --with-nvcc
    require_known_kernels: bool = False  # only variants whose arch list the table confirms
    spec_text: str | None = None  # --torch as the user wrote it (">=9", "2.1.5")
    os: DriverOs = "linux"
    variant: str | None = None  # the wheel variant --torch names ("2.7.1+cu118" -> "cu118")


def parse_torch_spec(text: str | SpecifierSet | None) -> SpecifierSet | None:
    """``"2.1"`` -> ``==2.1.*``; ``"2.7.1"`` -> ``==2.7.1``; ``">=2.4,<2.6"`` as written; None -> None.
    An empty or blank text is a :class:`SpecError` (it is not "no --torch")."""
    if text is None or isinstance(text, SpecifierSet):
        return text
    s = text.strip()
    if len(s) > MAX_VALUE:
        raise SpecError(too_long("--torch", s))
    if not s:
        raise SpecError(
            "--torch is empty: give a torch version or a PEP 440 specifier (2.7, 2.7.1, '>=2.4,<2.6'), "
            "or leave it out for the newest that works"
        )
    variant = spec_variant(s)
    s = _LOCAL.sub("", s) if variant else s
    if _OPS.search(s):
        try:
            return SpecifierSet(s)
        except InvalidSpecifier:
            raise SpecError(_NOT_A_SPEC.format(text=shown(text))) from None
    try:
        v = Version(re.sub(r"\.\*$", "", s))
    except InvalidVersion:
        raise SpecError(_NOT_A_SPEC.format(text=shown(text))) from None
    if len(v.release) >= 3 and not s.endswith("*"):
        return SpecifierSet(f"=={v.public}")
    return SpecifierSet(f"=={'.'.join(str(x) for x in v.release)}.*")


def spec_variant(text: str | SpecifierSet | None) -> str | None:
    """The wheel variant a ``--torch`` text names with a local label: ``"2.7.1+cu118"`` -> ``"cu118"``;
    None without one. Two different labels (``"==2.7.0+cu118,==2.7.1+cu126"``) are a :class:`SpecError`."""
    if not isinstance(text, str):
        return None
    labels = {m.lower() for m in _LOCAL.findall(text.strip())}
    if len(labels) > 1:
        raise SpecError(f"--torch {shown(text)}: names more than one wheel variant ({', '.join(sorted(labels))})")
    return labels.pop() if labels else None


def shown(text: str, limit: int = 40) -> str:
    """An option value as a message quotes it: ``'banana'``; a long one cut (``'3.1111…' (5002 characters)``)."""
    s = text.strip()
    if len(s) <= limit:
        return repr(s)
    return f"{s[:limit]!r}... ({len(s)} characters)"


def too_long(option: str, text: str) -> str:
    """The message for a value longer than :data:`MAX_VALUE`."""
    return f"{option} {shown(text)}: too long to be a value envdoctor reads (at most {MAX_VALUE} characters)"


def spec_text(text: str | SpecifierSet | None) -> str | None:
    """``--torch`` as the user wrote it, for messages: ``" >=9 "`` -> ``">=9"``."""
    if isinstance(text, str):
        return text.strip()
    return str(text) if text is not None else None

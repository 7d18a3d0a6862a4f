"""What a torch choice is asked for: one frozen :class:`Request`, the ``--torch`` specifier, the live index.

A way out is the same request with one limit changed (``dataclasses.replace(request, python=None)``:
any Python), so every limit of the machine and of the user's request travels in one value.

>>> str(parse_torch_spec("2.7")), str(parse_torch_spec("2.7.1")), parse_torch_spec(None)
('==2.7.*', '==2.7.1', None)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

_OPS = re.compile(r"[<>=!~]")
_NOT_A_SPEC = "--torch {text!r}: not a version or a PEP 440 specifier (e.g. 2.7, '>=2.4,<2.6')"

#: Whose driver minimums apply: "windows" for the Windows driver that serves WSL2.
DriverOs = Literal["linux", "windows"]


class SpecError(ValueError):
    """``--torch`` is neither a version nor a PEP 440 specifier."""


@dataclass(frozen=True)
class IndexAnswer:
    """What the live index said about one wheel: ``found`` None means it could not tell."""

    found: bool | None
    detail: str = ""            # "https://download.pytorch.org/whl/cu128: no torch 2.13.0 for cp312 ..."


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
    python: str | None                      # "3.12", "3.13t"; None: any
    glibc: str | None                       # "2.35"; None: unknown
    arch: str = "x86_64"                    # "x86_64" | "aarch64"
    require_direct: bool = False            # only CUDA the driver runs without minor-version compatibility
    cudas: tuple[str, ...] | None = None    # only these CUDA lines ("12.8"): --with-nvcc
    require_known_kernels: bool = False     # only variants whose arch list the table confirms
    spec_text: str | None = None            # --torch as the user wrote it (">=9", "2.1.5")
    os: DriverOs = "linux"


def parse_torch_spec(text: str | SpecifierSet | None) -> SpecifierSet | None:
    """``"2.1"`` -> ``==2.1.*``; ``"2.7.1"`` -> ``==2.7.1``; ``">=2.4,<2.6"`` as written; None -> None."""
    if text is None or isinstance(text, SpecifierSet):
        return text
    s = text.strip()
    if not s:
        return None
    if _OPS.search(s):
        try:
            return SpecifierSet(s)
        except InvalidSpecifier:
            raise SpecError(_NOT_A_SPEC.format(text=text)) from None
    try:
        v = Version(re.sub(r"\.\*$", "", s))
    except InvalidVersion:
        raise SpecError(_NOT_A_SPEC.format(text=text)) from None
    if len(v.release) >= 3 and not s.endswith("*"):
        return SpecifierSet(f"=={v.public}")
    return SpecifierSet(f"=={'.'.join(str(x) for x in v.release)}.*")


def spec_text(text: str | SpecifierSet | None) -> str | None:
    """``--torch`` as the user wrote it, for messages: ``" >=9 "`` -> ``">=9"``."""
    if isinstance(text, str):
        return text.strip()
    return str(text) if text is not None else None

"""Parsers of what tells a CUDA toolkit's version: ``nvcc --version``, ``version.json``,
``version.txt``, and ``nvcc -dryrun`` (which names the folder of the real nvcc behind a wrapper).

``nvcc --version`` of CUDA 13.0 (recorded on envdoctor's CI machine)::

    nvcc: NVIDIA (R) Cuda compiler driver
    Copyright (c) 2005-2025 NVIDIA Corporation
    Built on Wed_Aug_20_01:58:59_PM_PDT_2025
    Cuda compilation tools, release 13.0, V13.0.88
    Build cuda_13.0.r13.0/compiler.36424714_0
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from envdoctor.parse import ParseError, major_minor
from envdoctor.parse.jsontext import JsonError, get_dict, get_str, loads_object


class NvccParseError(ParseError):
    """nvcc or a toolkit version file said something unexpected."""


@dataclass(frozen=True)
class NvccVersion:
    release: str  # "13.0"
    version: Optional[str]  # "13.0.88" (the V... number), None when nvcc did not print it


_RELEASE = re.compile(r"Cuda compilation tools, release (\d+\.\d+)(?:, V(\d+(?:\.\d+)+))?")


def parse_nvcc_version(text: str) -> NvccVersion:
    """``Cuda compilation tools, release 12.8, V12.8.93`` -> NvccVersion("12.8", "12.8.93")."""
    match = _RELEASE.search(text or "")
    if not match:
        first = (text or "").strip().splitlines()[:1]
        raise NvccParseError(
            f"nvcc --version printed no 'release X.Y' line: {first[0][:80]!r}"
            if first
            else "nvcc --version printed nothing"
        )
    return NvccVersion(match.group(1), match.group(2))


def parse_version_json(text: str) -> tuple[str, str]:
    """A toolkit's ``version.json`` -> (version, release).

    ``{"cuda": {"name": "CUDA SDK", "version": "11.8.20220929"}, "cuda_nvcc": {"name": "CUDA NVCC",
    "version": "11.8.89"}, ...}`` -> ("11.8.89", "11.8"): the nvcc component when present (it is
    the number ``nvcc --version`` prints), the SDK's otherwise; the release from the SDK's.
    """
    try:
        data = loads_object(text, "version.json")
        sdk = get_str(get_dict(data, "cuda"), "version", where="cuda")
    except JsonError as exc:
        raise NvccParseError(f"version.json cannot be read: {exc}") from None
    if sdk is None:
        raise NvccParseError("version.json has no cuda.version")
    release = major_minor(sdk) if isinstance(sdk, str) else None
    if release is None:
        raise NvccParseError(f"version.json: cuda.version {sdk!r} is not a version")
    nvcc = data.get("cuda_nvcc", {}).get("version") if isinstance(data.get("cuda_nvcc"), dict) else None
    return (nvcc if isinstance(nvcc, str) and major_minor(nvcc) == release else sdk), release


def parse_version_txt(text: str) -> tuple[str, str]:
    """``CUDA Version 10.2.89`` (toolkits up to 11.0) -> ("10.2.89", "10.2")."""
    match = re.search(r"CUDA Version (\d+\.\d+(?:\.\d+)*)", text or "")
    if not match:
        raise NvccParseError("version.txt has no 'CUDA Version X.Y' line")
    return match.group(1), major_minor(match.group(1)) or match.group(1)


def parse_dryrun_bin(text: str) -> str:
    """The folder of the real nvcc from ``nvcc -dryrun -E -x cu /dev/null`` (printed on stderr)::

        #$ _HERE_=/usr/local/cuda-13.0/bin
        #$ _THERE_=/usr/local/cuda-13.0/bin

    -> "/usr/local/cuda-13.0/bin". A wrapper script on PATH (``exec /usr/local/cuda-13.0/bin/nvcc
    "$@"``) hides where the toolkit is; this line names it.
    """
    match = re.search(r"^#\$ _HERE_=(\S+)\s*$", text or "", re.M)
    if not match:
        raise NvccParseError("nvcc -dryrun printed no _HERE_ line")
    return match.group(1).rstrip("/") or "/"

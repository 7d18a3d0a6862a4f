"""Parsers of ``conda info --json``, ``micromamba info --json`` (mamba 2 too) and ``list --json``.

conda (``conda/cli/main_info.py`` ``get_info_dict``) prints sorted snake_case keys::

    {"active_prefix": "/home/ada/miniforge3/envs/dl", "active_prefix_name": "dl",
     "channels": ["https://conda.anaconda.org/conda-forge/linux-64", ...], "conda_version": "25.5.1",
     "root_prefix": "/home/ada/miniforge3", "virtual_pkgs": [["__cuda", "12.8", "0"], ...], ...}

libmamba (``libmamba/src/api/info.cpp``) prints spaced keys and ``name=version=build`` strings::

    {"base environment": "/home/ada/micromamba", "env location": "/home/ada/micromamba/envs/dl",
     "environment": "dl (active)", "micromamba version": "2.3.0", "libmamba version": "2.3.0",
     "virtual packages": ["__unix=0=0", "__linux=6.8.0=0", "__glibc=2.39=0", "__cuda=12.8=0", ...]}

``list --json`` has the same shape in both: ``[{"base_url": ..., "build_number": 201,
"build_string": "cuda129_generic_py312_h464b887_201", "channel": "conda-forge", "name": "pytorch",
"platform": "linux-64", "version": "2.8.0"}, ...]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional

from envdoctor.facts.conda import CondaPackage
from envdoctor.parse import ParseError
from envdoctor.parse.jsontext import JsonError, get_list, loads

#: Packages of the active environment that decide what CUDA it runs and builds with.
CUDA_PACKAGES = (
    "cudatoolkit",
    "cuda-version",
    "cuda-runtime",
    "cuda-cudart",
    "cuda-nvcc",
    "cuda-toolkit",
    "pytorch",
    "pytorch-cuda",
    "pytorch-gpu",
    "torch",
    "torchvision",
    "torchaudio",
    "cudnn",
    "nccl",
)

_PLATFORMS = re.compile(r"/(linux-64|linux-aarch64|linux-ppc64le|osx-64|osx-arm64|win-64|noarch)$")


class CondaParseError(ParseError):
    """conda printed something that is not the JSON asked for."""


@dataclass(frozen=True)
class CondaInfo:
    version: Optional[str] = None
    base_prefix: Optional[str] = None
    active_prefix: Optional[str] = None
    active_name: Optional[str] = None
    channels: tuple[str, ...] = ()
    virtual_cuda: Optional[str] = None


def _json(text: str, what: str) -> Any:
    """Through the one bounded JSON reader; its error becomes conda's, with the reason."""
    if not (text or "").strip():
        raise CondaParseError(f"{what} printed nothing")
    try:
        return loads(text)
    except JsonError as exc:
        start = text.strip()[:60]
        raise CondaParseError(f"{what} is not JSON envdoctor can read ({exc}): {start!r}") from None


def _strings(data: dict[str, Any], key: str, what: str) -> list[str]:
    try:
        return [x for x in get_list(data, key) if isinstance(x, str)]
    except JsonError as exc:
        raise CondaParseError(f"{what}: {exc}") from None


def _text(data: dict[str, Any], key: str) -> Optional[str]:
    value = data.get(key)
    return value if isinstance(value, str) else None


def channel_name(url: str) -> str:
    """ "https://conda.anaconda.org/conda-forge/linux-64" -> "conda-forge";
    "https://repo.anaconda.com/pkgs/main/noarch" -> "pkgs/main"; other hosts keep their URL."""
    url = _PLATFORMS.sub("", url.strip().rstrip("/"))
    for host in ("https://conda.anaconda.org/", "https://repo.anaconda.com/"):
        if url.startswith(host):
            return url[len(host) :]
    return url


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def parse_info(text: str) -> CondaInfo:
    """``conda info --json`` or ``micromamba info --json`` -> CondaInfo."""
    data = _json(text, "conda info --json")
    if not isinstance(data, dict):
        raise CondaParseError("conda info --json did not print an object")
    what = "conda info --json"
    if "conda_version" in data or "root_prefix" in data:
        try:
            virtual_pkgs = get_list(data, "virtual_pkgs")
        except JsonError as exc:
            raise CondaParseError(f"{what}: {exc}") from None
        cuda = next(
            (
                v[1]
                for v in virtual_pkgs
                if isinstance(v, list) and len(v) >= 2 and v[0] == "__cuda" and isinstance(v[1], str)
            ),
            None,
        )
        return CondaInfo(
            version=_text(data, "conda_version"),
            base_prefix=_text(data, "root_prefix"),
            active_prefix=_text(data, "active_prefix"),
            active_name=_text(data, "active_prefix_name"),
            channels=_dedupe(channel_name(c) for c in _strings(data, "channels", what)),
            virtual_cuda=cuda,
        )
    if "libmamba version" in data or "base environment" in data:
        version = next(
            (
                v
                for k, v in data.items()
                if k.endswith("mamba version") and k != "libmamba version" and isinstance(v, str)
            ),
            _text(data, "libmamba version"),
        )
        virtual = [v.split("=") for v in _strings(data, "virtual packages", what)]
        cuda = next((v[1] for v in virtual if len(v) >= 2 and v[0] == "__cuda"), None)
        name = re.sub(r" \((active|not env|not found)\)$", "", _text(data, "environment") or "") or None
        location = _text(data, "env location")
        return CondaInfo(
            version=version,
            base_prefix=_text(data, "base environment"),
            active_prefix=location if location not in (None, "-") else None,
            active_name=None if name == "None" else name,
            channels=_dedupe(channel_name(c) for c in _strings(data, "channels", what)),
            virtual_cuda=cuda,
        )
    raise CondaParseError("conda info --json has neither conda's nor libmamba's keys")


def parse_list(text: str, names: Iterable[str] = CUDA_PACKAGES) -> tuple[CondaPackage, ...]:
    """``conda list --json`` -> the packages named in ``names``, in the order listed."""
    data = _json(text, "conda list --json")
    if not isinstance(data, list):
        raise CondaParseError("conda list --json did not print a list")
    wanted = set(names)
    out = []
    for row in data:
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise CondaParseError(f"conda list --json: a row without a name: {str(row)[:60]!r}")
        if row["name"] in wanted:
            channel = row.get("channel")
            version, build = row.get("version", ""), row.get("build_string")
            out.append(
                CondaPackage(
                    row["name"],
                    version if isinstance(version, str) else str(version)[:40],
                    build if isinstance(build, str) else None,
                    channel_name(channel) if isinstance(channel, str) else None,
                )
            )
    return tuple(out)


def parse_error(text: str) -> Optional[str]:
    """The message of conda's JSON error (``{"exception_name": "EnvironmentLocationNotFound",
    "message": "Not a conda environment: /x", ...}``), or None when ``text`` is not one."""
    try:
        data = loads(text)
    except JsonError:
        return None
    if isinstance(data, dict) and (data.get("message") or data.get("error")):
        lines = str(data.get("message") or data.get("error")).strip().splitlines()
        return lines[0][:500] if lines else None
    return None

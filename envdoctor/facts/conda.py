"""Facts about conda / mamba / micromamba and the CUDA packages of the active environment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from envdoctor.facts.base import ProbeError


@dataclass(frozen=True)
class CondaPackage:
    """``pytorch 2.7.1 cuda126_generic_py312_h... conda-forge``."""

    name: str
    version: str
    build: Optional[str] = None
    channel: Optional[str] = None


@dataclass(frozen=True)
class CondaFacts:
    exe: Optional[str] = None  # "/opt/conda/bin/conda"
    flavor: Optional[str] = None  # "conda", "mamba", "micromamba"
    found_via: Optional[str] = None  # "CONDA_EXE", "MAMBA_EXE", "PATH"
    source: Optional[str] = None  # "/opt/conda/bin/conda info --json"
    version: Optional[str] = None
    base_prefix: Optional[str] = None
    active_prefix: Optional[str] = None  # $CONDA_PREFIX
    active_name: Optional[str] = None  # $CONDA_DEFAULT_ENV
    channels: tuple[str, ...] = ()  # names: ("conda-forge",), ("pytorch", "nvidia", "pkgs/main")
    virtual_cuda: Optional[str] = None  # the __cuda virtual package, "13.0"
    packages: tuple[CondaPackage, ...] = ()  # CUDA-relevant packages of the active env
    packages_source: Optional[str] = None  # "conda list --json --prefix /home/ada/miniforge3/envs/dl"
    json_required = ("error",)  # a saved report's area always says whether its probe failed
    error: Optional[ProbeError] = None

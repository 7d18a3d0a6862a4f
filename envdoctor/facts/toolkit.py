"""Facts about installed CUDA toolkits (``nvcc``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from envdoctor.facts.base import ProbeError


@dataclass(frozen=True)
class Toolkit:
    """One CUDA toolkit root, e.g. ``/usr/local/cuda-13.0`` with ``bin/nvcc`` release 13.0."""

    root: str                                  # "/usr/local/cuda-13.0" (resolved)
    nvcc: Optional[str] = None                 # "/usr/local/cuda-13.0/bin/nvcc"
    version: Optional[str] = None              # "13.0.88" (nvcc V..., or version.json)
    release: Optional[str] = None              # "13.0"
    version_source: Optional[str] = None       # "nvcc --version" or "version.json"
    found_via: Tuple[str, ...] = ()            # ("PATH", "CUDA_HOME", "/usr/local/cuda", "conda")
    error: Optional[ProbeError] = None


@dataclass(frozen=True)
class ToolkitFacts:
    toolkits: Tuple[Toolkit, ...] = ()
    cuda_home: Optional[str] = None            # $CUDA_HOME as set
    cuda_path: Optional[str] = None            # $CUDA_PATH as set
    nvcc_on_path: Optional[str] = None         # first nvcc on PATH
    extension_root: Optional[str] = None       # what torch.utils.cpp_extension would use
    extension_rule: Optional[str] = None       # "CUDA_HOME", "nvcc on PATH", "/usr/local/cuda"
    error: Optional[ProbeError] = None

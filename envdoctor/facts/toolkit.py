"""Facts about installed CUDA toolkits (``nvcc``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from envdoctor.facts.base import ProbeError


@dataclass(frozen=True)
class Toolkit:
    """One CUDA toolkit root, e.g. ``/usr/local/cuda-13.0`` with ``bin/nvcc`` release 13.0."""

    root: str  # "/usr/local/cuda-13.0" (resolved)
    nvcc: Optional[str] = None  # "/usr/local/cuda-13.0/bin/nvcc"
    version: Optional[str] = None  # "13.0.88" (nvcc V..., or version.json)
    release: Optional[str] = None  # "13.0"
    version_source: Optional[str] = None  # "/usr/local/cuda-13.0/bin/nvcc --version" or ".../version.json"
    found_via: tuple[str, ...] = ()  # ("PATH", "CUDA_HOME", "/usr/local/cuda", "conda")
    aliases: tuple[str, ...] = ()  # other paths that lead here: "/usr/local/cuda", "/usr/local/bin/nvcc"
    error: Optional[ProbeError] = None  # nvcc failed (hung, crashed, printed garbage)


@dataclass(frozen=True)
class ToolkitFacts:
    """Every CUDA toolkit found, and the one a CUDA extension build would compile with.

    ``extension_root`` follows ``torch.utils.cpp_extension._find_cuda_home`` (pytorch/pytorch,
    torch/utils/cpp_extension.py): ``CUDA_HOME or CUDA_PATH``; else the folder above the folder of
    the first ``nvcc`` on PATH, symlinks *not* resolved; else ``/usr/local/cuda`` when it exists.
    """

    toolkits: tuple[Toolkit, ...] = ()
    cuda_home: Optional[str] = None  # $CUDA_HOME as set
    cuda_path: Optional[str] = None  # $CUDA_PATH as set
    nvcc_on_path: Optional[str] = None  # first nvcc on PATH
    extension_root: Optional[str] = None  # what torch.utils.cpp_extension would use
    extension_rule: Optional[str] = None  # "CUDA_HOME", "CUDA_PATH", "nvcc on PATH", "/usr/local/cuda"
    #: "ok"; "empty" (CUDA_HOME/CUDA_PATH set to ""); "missing" (the folder does not exist);
    #: "no_nvcc" (no bin/nvcc in it); "no_headers" (bin/nvcc but no include/cuda_runtime.h)
    extension_status: Optional[str] = None
    extension_toolkit: Optional[str] = None  # root of the entry in ``toolkits`` it compiles with
    path_nvccs: tuple[str, ...] = ()  # every nvcc on PATH, in PATH order
    json_required = ("error",)  # a saved report's area always says whether its probe failed
    error: Optional[ProbeError] = None

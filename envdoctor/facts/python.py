"""Facts about the target Python and the torch installed in it.

Both come from one child process of the target interpreter (``envdoctor/child/torch_probe.py``),
so they describe *that* interpreter, not the one running envdoctor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal, Optional

from envdoctor.doctypes import ComputeCapability, GlibcVersion, Json, ShortText
from envdoctor.facts.base import ProbeError
from envdoctor.stack.facts import StackFacts

#: How a configured index is used: instead of PyPI, in addition to it, or as a folder of links.
Role = Literal["index", "extra", "find-links"]
Tool = Literal["pip", "uv"]


@dataclass(frozen=True)
class ConfiguredIndex:
    """A package index the user's pip or uv is configured with (``probes/indexconf.py``), URL masked:
    ``ConfiguredIndex("https://mirror.example/pytorch/whl/cu128", "index", "pip", "PIP_INDEX_URL")``."""

    url: str
    role: Role  # "index" (instead of PyPI), "extra", "find-links"
    tool: Tool  # "pip", "uv"
    source: str  # "PIP_INDEX_URL", "/etc/pip.conf [global]", "uv.toml [[index]] pytorch"
    name: Optional[str] = None  # uv's index name
    explicit: bool = False  # uv: only for the packages pinned to it
    torch_pinned: bool = False  # uv: [tool.uv.sources] pins torch to it


@dataclass(frozen=True)
class IndexConfig:
    """What pip and uv are configured to install from, and through which proxy."""

    indexes: tuple[ConfiguredIndex, ...] = ()
    torch_base: Optional[str] = None  # the torch wheel base those imply ("https://mirror/whl"), masked
    torch_base_source: Optional[str] = None  # "PIP_INDEX_URL: https://mirror/whl/cu128"
    proxies: dict[str, str] = field(default_factory=dict)  # {"HTTPS_PROXY": "http://proxy:3128"}, masked
    files: tuple[str, ...] = ()  # the configuration files read
    problems: tuple[str, ...] = ()  # files pip or uv would refuse, one line each


@dataclass(frozen=True)
class TargetPython:
    """The interpreter whose torch is inspected (``--python``; default the first on PATH)."""

    executable: Optional[str] = None  # "/opt/torch/.venv/bin/python"
    chosen_by: Optional[str] = None  # "--python", "python3 on PATH", "python on PATH", "envdoctor's own"
    version: Optional[str] = None  # "3.12.3"
    implementation: Optional[str] = None  # "cpython"
    interpreter_tag: Optional[str] = None  # "cp312"
    abi_tag: Optional[str] = None  # "cp312"
    #: ("manylinux_2_39_x86_64", ..., "linux_x86_64")
    platform_tags: tuple[Annotated[str, Json(pattern="^[a-z0-9_]{1,64}$")], ...] = ()
    pip: Optional[str] = None  # pip's version, None when absent
    venv: bool = False
    conda_env: bool = False
    prefix: Optional[str] = None
    platform: Optional[str] = None  # "linux_x86_64" (sysconfig.get_platform(), as a tag)
    glibc: GlibcVersion = None  # "2.39" as the target interpreter sees it; None on musl
    #: versions of the packages a bug report lists (numpy, triton, pytorch-triton, nvidia-*, torch*),
    #: by normalized name: {"numpy": "2.5.2", "nvidia-nccl-cu13": "2.28.9", "triton": "3.6.0"}
    packages: Annotated[
        dict[str, Annotated[str, Json(maxLength=64)]],
        Json(maxProperties=300, propertyNames={"pattern": "^[a-z0-9][a-z0-9-]{0,99}$"}),
    ] = field(default_factory=dict)
    index_config: IndexConfig = field(default_factory=IndexConfig)
    json_required = ("error",)  # a saved report's area always says whether its probe failed
    error: Optional[ProbeError] = None


@dataclass(frozen=True)
class TorchDevice:
    index: int
    name: Optional[str] = None
    capability: ComputeCapability = None  # "9.0"
    memory_bytes: Optional[int] = None
    multiprocessors: Optional[int] = None
    uuid: Optional[str] = None  # "GPU-c7d3a8fe-..." (as nvidia-smi writes it)


@dataclass(frozen=True)
class LoadedLibrary:
    """A CUDA library mapped into the child after torch initialised CUDA (``/proc/self/maps``).

    ``via_ld_library_path`` is the ``LD_LIBRARY_PATH`` entry whose folder holds the file, when one
    does: ``LoadedLibrary("/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127",
    "/usr/local/cuda/lib64")``.
    """

    path: str
    via_ld_library_path: Optional[str] = None


@dataclass(frozen=True)
class TorchElsewhere:
    """Another interpreter of the machine that has torch (found by ``probes/interpreters.py`` when
    the target has none): ``TorchElsewhere("/opt/torch/.venv/bin/python", "2.11.0+cu130", "venv")``."""

    python: str
    version: str
    kind: str = "venv"  # "venv", "conda env", "pyenv", "uv", "uv tool", "system"
    prefix: Optional[str] = None  # "/opt/torch/.venv"


@dataclass(frozen=True)
class TorchFacts:
    """What ``import torch`` says in the target interpreter, run in a child process.

    ``installed`` False with no error: torch is not installed there. ``error`` set: the child
    crashed, hung, or printed something that is not the expected JSON (``stage`` says how far it
    got). ``import_error`` set: torch is installed but ``import torch`` raised.
    """

    installed: bool = False
    version: Optional[str] = None  # "2.11.0+cu130" (from the dist-info when the import fails)
    cuda: Optional[str] = None  # torch.version.cuda, "13.0"; None on CPU builds
    hip: Optional[str] = None
    git: Optional[str] = None
    debug_build: Optional[bool] = None  # torch.version.debug
    compiler: ShortText = None  # what torch was built with: "GCC 13.3" (torch.__config__.show())
    #: the CPU kernels torch uses: "AVX2", "AVX512", "DEFAULT"
    cpu_capability: Annotated[Optional[str], Json(maxLength=32)] = None
    cudnn_version: Optional[str] = None  # "9.19.0" (the cuDNN torch loaded)
    cudnn_path: Optional[str] = None  # the file it came from
    cudnn_error: Optional[str] = None  # torch.backends.cudnn.version() raised (version mismatch)
    nccl_version: Optional[str] = None  # "2.28.9"
    nccl_path: Optional[str] = None
    arch_list: tuple[str, ...] = ()  # ("sm_75", ..., "sm_120"): compiled in, even without a driver
    cuda_available: Optional[bool] = None
    cuda_error: Optional[str] = None  # the exact text when is_available() is False
    device_count: Optional[int] = None
    devices: tuple[TorchDevice, ...] = ()
    tiny_op: Optional[str] = None  # "ok", or the error of the tiny CUDA operation
    torchvision: Optional[str] = None  # "0.26.0+cu130"
    torchaudio: Optional[str] = None
    import_error: Optional[str] = None  # ImportError text when torch is broken on import
    import_seconds: Optional[float] = None
    stderr_tail: Optional[str] = None  # what the child printed on stderr, cut
    location: Optional[str] = None  # the torch package folder (".../site-packages/torch")
    installer: Optional[str] = None  # the dist-info's INSTALLER: "pip", "uv", "conda"
    libraries: tuple[LoadedLibrary, ...] = ()  # CUDA libraries mapped after CUDA init
    bundled_libraries: tuple[str, ...] = ()  # CUDA libraries shipped with the wheel (nvidia/*/lib, torch/lib)
    ld_library_path: Optional[str] = None  # LD_LIBRARY_PATH as the child saw it
    warnings: tuple[str, ...] = ()  # Python warnings torch emitted ("UserWarning: CUDA initialization: ...")
    unreadable: tuple[str, ...] = ()  # fields the child could not read, with the exception
    stage: Optional[str] = None  # the last step the child began ("import torch", "tiny op", ...)
    #: when torch is not installed in the target: the interpreters of the machine that have it
    elsewhere: tuple[TorchElsewhere, ...] = ()
    elsewhere_cut: bool = False  # the scan stopped at its count or time bound
    #: the libraries above torch (flash-attn, xformers, vLLM, ...): envdoctor/stack/
    extensions: StackFacts = field(default_factory=StackFacts)
    json_required = ("error",)  # a saved report's area always says whether its probe failed
    error: Optional[ProbeError] = None

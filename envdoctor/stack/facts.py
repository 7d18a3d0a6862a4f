"""Facts about the libraries above torch in the target Python (flash-attn, xformers, vLLM, ...).

They come from the same child that probes torch (``stack/target/extensions.py``, a part of
``child/torch_probe.py``) and sit in ``TorchFacts.extensions``, so a report holds them under
``facts.torch.extensions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class ImportOutcome:
    """How ``import MODULE`` went in a grandchild process of the target interpreter.

    ``ImportOutcome("flash_attn", ok=False, error_type="ImportError", message=".../flash_attn_2_cuda
    .cpython-312-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi")``; a crash has
    ``signal`` (11 for SIGSEGV), a hang ``timed_out``.
    """

    module: str
    ok: Optional[bool] = None  # None: it did not answer (crash, hang, no start)
    version: Optional[str] = None  # the module's __version__
    error_type: Optional[str] = None  # "ImportError", "OSError", "RuntimeError"
    message: Optional[str] = None  # the exception's text
    where: tuple[str, ...] = ()  # the last frames: "/.../flash_attn_interface.py:15"
    stderr: Optional[str] = None  # what it printed on stderr (the end), e.g. xFormers' warning
    returncode: Optional[int] = None
    signal: Optional[int] = None  # the signal that ended it (11: SIGSEGV)
    timed_out: bool = False
    seconds: Optional[float] = None
    torch_error: Optional[str] = None  # torch itself did not import in the grandchild
    start_error: Optional[str] = None  # the grandchild could not be started
    compatible_ops: dict[str, Optional[bool]] = field(default_factory=dict)  # deepspeed: builder.is_compatible()


@dataclass(frozen=True)
class DeepSpeedBuild:
    """What DeepSpeed's installer recorded (``deepspeed/git_version_info_installed.py``), as ds_report
    shows it: the ops compiled in, and the torch and CUDA they were compiled with ("0.0": none)."""

    path: str
    installed_ops: dict[str, bool] = field(default_factory=dict)
    compatible_ops: dict[str, bool] = field(default_factory=dict)
    torch_version: Optional[str] = None  # torch_info["version"], "2.4"
    cuda_version: Optional[str] = None  # torch_info["cuda_version"], "12.1"
    unreadable: bool = False


@dataclass(frozen=True)
class DirectUrl:
    """``direct_url.json`` (PEP 610): where a package was installed from when not from an index."""

    url: str = ""
    editable: bool = False
    vcs: Optional[str] = None
    commit: Optional[str] = None
    archive: bool = False
    unreadable: bool = False


@dataclass(frozen=True)
class Extension:
    """One installed library above torch: ``Extension("flash-attn", "flash-attn", "2.8.3", ...)``."""

    name: str  # the catalog's name: "flash-attn", "xformers"
    dist: str  # the distribution found: "flash-attn", "flash-attn-3"
    version: str  # from the dist-info folder's name
    info: str  # the dist-info folder
    installer: Optional[str] = None  # "pip", "uv", "conda"
    direct_url: Optional[DirectUrl] = None  # None: installed from an index
    requires: tuple[str, ...] = ()  # Requires-Dist lines, as written
    wheel_tags: tuple[str, ...] = ()  # "cp312-cp312-linux_x86_64"
    modules: tuple[str, ...] = ()  # what is imported to test it: ("flash_attn",)
    metadata_error: Optional[str] = None
    outcome: Optional[ImportOutcome] = None  # None: not imported (see StackFacts.imports_skipped)
    deepspeed: Optional[DeepSpeedBuild] = None


@dataclass(frozen=True)
class BuildEnvironment:
    """What a source build of a CUDA extension would find, as the target interpreter sees it."""

    ninja: Optional[str] = None  # ninja on PATH
    cpus: Optional[int] = None
    memory_bytes: Optional[int] = None  # physical RAM
    available_bytes: Optional[int] = None  # MemAvailable
    env: dict[str, str] = field(default_factory=dict)  # TORCH_CUDA_ARCH_LIST, MAX_JOBS, CUDA_HOME, ...


@dataclass(frozen=True)
class StackFacts:
    """Every library of the catalog installed in the target Python, and how each imports.

    ``checked`` False: the child was not asked or did not get that far (``error`` says which).
    """

    checked: bool = False
    extensions: tuple[Extension, ...] = ()
    torch_cxx11_abi: Optional[bool] = None  # torch._C._GLIBCXX_USE_CXX11_ABI
    build: BuildEnvironment = field(default_factory=BuildEnvironment)
    imports_skipped: Optional[str] = None  # "torch does not import here": no import was tried
    seconds: Optional[float] = None
    error: Optional[str] = None

    def get(self, name: str) -> Optional[Extension]:
        return next((e for e in self.extensions if e.name == name), None)

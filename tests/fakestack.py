"""Fake libraries above torch (flash-attn, xformers, vLLM, ...) written next to a fake torch.

Each is a dist-info folder with real ``Requires-Dist`` lines and a package whose import does what a
real broken install does: raise the exact error text recorded from a real breakage (``ERRORS``,
each with the public issue it was copied from; tests/fixtures/stack/README.md lists them), print
xFormers' warning, crash with SIGSEGV, or hang::

    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8", devices=[gpu("NVIDIA H200", 9, 0)])
    make_extension(site, "flash-attn", "2.8.3", "flash_attn", requires=["torch", "einops"],
                   raises=ERRORS["fa2_cxx11abi"])

Standard library only in the fakes (they run in the target interpreter, 3.8 included).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Tuple

#: (exception type, text) of real import failures, by what broke; the source of each is its issue.
ERRORS: Dict[str, Tuple[str, str, str]] = {
    # flash-attn's wheel built with the C++11 ABI on a torch without it (torch 2.1, the cxx11abiTRUE wheel)
    "fa2_cxx11abi": (
        "ImportError",
        "/opt/venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_"
        "traitsIcESaIcEEE",
        "https://github.com/Dao-AILab/flash-attention/issues/1691",
    ),
    # flash-attn installed without its compiled part (its own module, shipped in its own wheel)
    "fa2_no_cuda_module": (
        "ModuleNotFoundError",
        "No module named 'flash_attn_2_cuda'",
        "https://github.com/Dao-AILab/flash-attention/issues/933",
    ),
    # flash-attn built against another torch (a c10 symbol that moved)
    "fa2_torch": (
        "ImportError",
        "/opt/venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEi",
        "https://github.com/Dao-AILab/flash-attention/issues/966",
    ),
    # an at:: operator symbol of another torch release
    "fa2_aten": (
        "ImportError",
        "/opt/venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN2at4_ops5zeros4callEN3c108ArrayRefINS2_6SymIntEEENS2_8optionalINS2_10Scalar"
        "TypeEEENS6_INS2_6LayoutEEENS6_INS2_6DeviceEEENS6_IbEE",
        "https://github.com/Dao-AILab/flash-attention/issues/1612",
    ),
    # a wheel built for CUDA 12 on a torch of CUDA 11.8
    "fa2_cudart12": (
        "ImportError",
        "libcudart.so.12: cannot open shared object file: No such file or directory",
        "https://github.com/Dao-AILab/flash-attention/issues/631",
    ),
    # vLLM built for CUDA 11 on a machine with only CUDA 12's runtime
    "vllm_cudart11": (
        "ImportError",
        "libcudart.so.11.0: cannot open shared object file: No such file or directory",
        "https://github.com/vllm-project/vllm/issues/3387",
    ),
    # bitsandbytes 0.43 without its CUDA binary
    "bnb_no_binary": (
        "OSError",
        "/usr/local/lib/python3.10/dist-packages/bitsandbytes/libbitsandbytes_cpu.so: cannot open "
        "shared object file: No such file or directory",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1190",
    ),
    # the GPU older than the kernels (raised at the first call; here at import, as sglang's check does)
    "fa2_arch": (
        "RuntimeError",
        "FlashAttention only supports Ampere GPUs or newer.",
        "https://github.com/Dao-AILab/flash-attention/issues/762",
    ),
}

#: xFormers' warning (stderr, on import) when its C++/CUDA part was built for another torch.
XFORMERS_BUILT_FOR = (
    "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
    "    PyTorch 2.2.0+cu121 with CUDA 1201 (you have 2.3.0+cu121)\n"
    "    Python  3.10.13 (you have 3.10.12)\n"
    "  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)\n"
    "  Memory-efficient attention, SwiGLU, sparse and more won't be available.\n"
    "  Set XFORMERS_MORE_DETAILS=1 for more details\n"
)
XFORMERS_SOURCE = "https://github.com/deforum/deforum-stable-diffusion/issues/377"

#: The real Requires-Dist lines of the releases the tests install (from each wheel's METADATA on PyPI).
REQUIRES: Dict[str, Tuple[str, ...]] = {
    "vllm-0.10.2": (
        "torch==2.8.0",
        "torchaudio==2.8.0",
        "torchvision==0.23.0",
        'xformers==0.0.32.post1; platform_system == "Linux" and platform_machine == "x86_64"',
        "transformers>=4.56.0",
    ),
    "xformers-0.0.32.post1": ("numpy", "torch==2.8.0"),
    "xformers-0.0.28.post3": ("numpy", "torch==2.5.1"),
    "flash-attn-2.8.3": ("torch", "einops"),
    "bitsandbytes-0.47.0": ("torch<3,>=2.2", "numpy>=1.17"),
    "deepspeed-0.17.5": (
        "einops",
        "hjson",
        "ninja",
        "numpy",
        "packaging>=20.0",
        "psutil",
        "py-cpuinfo",
        "pydantic>=2.0.0",
        "torch",
        "tqdm",
    ),
    "torchvision-0.23.0": ("numpy", "torch==2.8.0", "pillow!=8.3.*,>=5.3.0"),
}

FAKE_INIT = r"""
import json as _json
import os as _os
import sys as _sys

with open(_os.path.join(_os.path.dirname(__file__), "_fake_ext.json")) as _fh:
    _SPEC = _json.load(_fh)
if _SPEC.get("stderr"):
    _sys.stderr.write(_SPEC["stderr"])
    _sys.stderr.flush()
_what = _SPEC.get("on_import")
if _what == "segfault":
    import signal as _signal
    _os.kill(_os.getpid(), _signal.SIGSEGV)
elif _what == "exit":
    _sys.stderr.write("fatal: libflash_attn.so: bad ELF header\n")
    _sys.stderr.flush()
    _os._exit(3)
elif _what == "hang":
    import time as _time
    _time.sleep(600)
elif _what == "raise":
    import builtins as _builtins
    raise getattr(_builtins, _SPEC["error_type"])(_SPEC["error_text"])
__version__ = _SPEC["version"]
"""


def make_extension(
    site: Path,
    dist: str,
    version: str,
    module: str,
    requires: Optional[Iterable[str]] = None,
    raises: Optional[Tuple[str, str, str]] = None,
    on_import: Optional[str] = None,
    stderr: Optional[str] = None,
    installer: str = "pip",
    direct_url: Optional[Dict[str, Any]] = None,
    files: Optional[Dict[str, str]] = None,
    wheel_tag: Optional[str] = None,
) -> Path:
    """Write the package ``module`` and the dist-info of ``dist`` ``version`` into ``site``.

    ``requires`` defaults to the recorded lines of ``REQUIRES["{dist}-{version}"]``; ``raises`` is an
    entry of ``ERRORS``; ``on_import`` "segfault", "exit" (a C library's exit(3)) or "hang"; ``files`` maps paths under the package
    folder to text (DeepSpeed's git_version_info_installed.py)."""
    site = Path(site)
    pkg = site / module
    pkg.mkdir(parents=True, exist_ok=True)
    spec: Dict[str, Any] = {"version": version, "stderr": stderr, "on_import": on_import}
    if raises is not None:
        spec.update(on_import="raise", error_type=raises[0], error_text=raises[1])
    (pkg / "_fake_ext.json").write_text(json.dumps(spec))
    (pkg / "__init__.py").write_text(FAKE_INIT)
    for rel, text in (files or {}).items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    lines = requires if requires is not None else REQUIRES.get(f"{dist}-{version}", ())
    metadata = ["Metadata-Version: 2.1", f"Name: {dist}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {r}" for r in lines]
    (info / "METADATA").write_text("\n".join(metadata) + "\n\nThe long description.\nRequires-Dist: not-a-header\n")
    if installer:
        (info / "INSTALLER").write_text(installer + "\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    if wheel_tag:
        (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {wheel_tag}\n")
    return info


#: DeepSpeed 0.14.0's generated file as its sdist ships it (no op built: torch_info "0.0").
DEEPSPEED_JIT = (
    "version='0.14.0 '\ngit_hash='unknown'\ngit_branch='unknown'\n"
    "installed_ops={'async_io': False, 'fused_adam': False, 'cpu_adam': False}\n"
    "compatible_ops={'async_io': True, 'fused_adam': True, 'cpu_adam': True}\n"
    "torch_info={'version': '0.0', 'bf16_support': False, 'cuda_version': '0.0', 'nccl_version': '0.0', "
    "'hip_version': '0.0'}\n"
)


def deepspeed_prebuilt(torch_mm: str, cuda: str) -> str:
    """The same file as ``DS_BUILD_OPS=1 pip install deepspeed`` writes it: ops compiled in, with
    the torch and CUDA of that build."""
    return (
        "version='0.17.5'\ngit_hash='unknown'\ngit_branch='unknown'\n"
        "installed_ops={'async_io': False, 'fused_adam': True, 'cpu_adam': True}\n"
        "compatible_ops={'async_io': False, 'fused_adam': True, 'cpu_adam': True}\n"
        f"torch_info={{'version': '{torch_mm}', 'bf16_support': True, 'cuda_version': '{cuda}', "
        "'nccl_version': '2.21', 'hip_version': '0.0'}\n"
    )

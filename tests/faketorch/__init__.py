"""Fake ``torch`` packages that imitate GPU builds, written into a folder put on PYTHONPATH.

Each fake implements just what ``envdoctor/child/torch_probe.py`` touches, driven by a spec
(stored as JSON next to the package), so a test states the machine it imitates in one dict:

>>> site = make_torch(tmp_path, version="2.7.1+cu118", cuda="11.8", arch_flags="sm_50 sm_90",
...                   devices=[gpu("NVIDIA GeForce RTX 5090", 12, 0)])
>>> ctx = Context(env=torch_env(site), python=sys.executable)

``on_import`` picks a broken import: "segfault", "hang", "garbage" (prints junk, exits 0), "exit"
(a C library calls exit(3)),
"import_error" (raises ImportError(import_error_text)). Other keys: ``init_error`` (the driver
refuses, as torch.cuda.init() says it), ``init_warnings`` (warned on the first CUDA use),
``tiny_op_error``, ``cudnn``/``nccl``/``cudnn_error``, ``cxx11_abi`` (``torch._C._GLIBCXX_USE_CXX11_ABI``), ``import_print`` (print() during import),
``load_libraries`` (names dlopen()ed during import, found on LD_LIBRARY_PATH), ``config_show`` (the text of
``torch.__config__.show()``), ``debug`` (``torch.version.debug``), ``packages`` (name -> version: more
dist-info folders next to torch, as ``make_torch`` writes them). The fakes use only the standard library,
so they run on Python 3.8 too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Optional

TORCH_INIT = r'''
import json as _json
import os as _os
import warnings as _warnings

with open(_os.path.join(_os.path.dirname(__file__), "_fake_spec.json")) as _fh:
    _SPEC = _json.load(_fh)

_on_import = _SPEC.get("on_import")
if _on_import == "segfault":
    import signal as _signal
    _os.kill(_os.getpid(), _signal.SIGSEGV)
elif _on_import == "hang":
    import time as _time
    _time.sleep(600)
elif _on_import == "garbage":
    import sys as _sys
    _sys.__stdout__.write("Welcome to torch!\n\x00\x01 not json {\n")
    _sys.__stdout__.flush()
    _os.write(1, b"more garbage on fd 1\n")
    _os._exit(0)
elif _on_import == "exit":
    import sys as _sys
    _sys.stderr.write("fatal: libtorch_cuda.so: bad ELF header\n")
    _sys.stderr.flush()
    _os._exit(3)
elif _on_import == "import_error":
    raise ImportError(_SPEC["import_error_text"])

if _SPEC.get("import_print"):
    print(_SPEC["import_print"])
for _name in _SPEC.get("load_libraries", []):
    import ctypes as _ctypes
    _ctypes.CDLL(_name)
if _SPEC.get("import_warning"):
    _warnings.warn(_SPEC["import_warning"], UserWarning)

__version__ = _SPEC["version"]

from torch import version, cuda, backends  # noqa: E402


class _C(object):
    pass


if _SPEC.get("config_show") is not None:
    class __config__(object):  # noqa: N801 - torch.__config__ is a module in the real torch
        @staticmethod
        def show():
            return _SPEC["config_show"]


if _SPEC.get("cuda") or _SPEC.get("hip"):
    _C._cuda_getArchFlags = staticmethod(lambda: _SPEC.get("arch_flags"))
if _SPEC.get("cxx11_abi") is not None:   # torch._C._GLIBCXX_USE_CXX11_ABI (the stack checks read it)
    _C._GLIBCXX_USE_CXX11_ABI = _SPEC["cxx11_abi"]


class _Tensor(object):
    def __init__(self, value, device):
        self.value, self.device = value, device

    def __mul__(self, other):
        return _Tensor([v * other for v in self.value], self.device)

    def sum(self):
        return _Tensor([sum(self.value)], self.device)

    def item(self):
        if self.device.startswith("cuda") and _SPEC.get("tiny_op_error"):
            raise RuntimeError(_SPEC["tiny_op_error"])
        return float(self.value[0])


def ones(n, device="cpu"):
    if device.startswith("cuda"):
        cuda._lazy_init()
    return _Tensor([1.0] * n, device)
'''

TORCH_VERSION = r'''
import json as _json
import os as _os

with open(_os.path.join(_os.path.dirname(__file__), "_fake_spec.json")) as _fh:
    _SPEC = _json.load(_fh)
__version__ = _SPEC["version"]
cuda = _SPEC.get("cuda")
hip = _SPEC.get("hip")
git_version = _SPEC.get("git", "0000000000000000000000000000000000000000")
debug = _SPEC.get("debug", False)
'''

TORCH_CUDA = r'''
import warnings as _warnings

from torch import _SPEC

_initialized = [False]


def _gpu_build():
    return bool(_SPEC.get("cuda") or _SPEC.get("hip"))


def _usable():
    return _gpu_build() and not _SPEC.get("init_error") and bool(_SPEC.get("devices"))


def is_available():
    if _gpu_build() and _SPEC.get("init_error"):
        _warnings.warn("CUDA initialization: " + _SPEC["init_error"], UserWarning)
    if _SPEC.get("hang_in") == "is_available":
        import time
        time.sleep(600)
    return _usable()


def device_count():
    return len(_SPEC.get("devices") or []) if _usable() else 0


def _lazy_init():
    if not _gpu_build():
        raise AssertionError("Torch not compiled with CUDA enabled")
    if _SPEC.get("init_error"):
        raise RuntimeError(_SPEC["init_error"])
    if not _SPEC.get("devices"):
        raise RuntimeError("No CUDA GPUs are available")
    if not _initialized[0]:
        _initialized[0] = True
        for text in _SPEC.get("init_warnings", []):
            _warnings.warn(text, UserWarning)


def init():
    _lazy_init()


def get_arch_list():
    if not is_available():
        return []
    return (_SPEC.get("arch_flags") or "").split()


class _Props(object):
    def __init__(self, d):
        self.__dict__.update(d)


def get_device_properties(i):
    _lazy_init()
    return _Props(_SPEC["devices"][i])


def synchronize(device=None):
    _lazy_init()
'''

TORCH_NCCL = r'''
from torch import _SPEC


def version():
    if _SPEC.get("nccl") is None:
        raise AttributeError("module 'torch._C' has no attribute '_nccl_version'")
    return tuple(_SPEC["nccl"])
'''

TORCH_CUDNN = r'''
from torch import _SPEC


def version():
    if _SPEC.get("cudnn_error"):
        raise RuntimeError(_SPEC["cudnn_error"])
    return _SPEC.get("cudnn")
'''


def gpu(name: str, major: int, minor: int, memory: int = 34190917632, sms: int = 170,
        uuid: str = "5a1e2b3c-0000-4000-8000-000000000001") -> Dict[str, Any]:
    """One device as ``torch.cuda.get_device_properties`` describes it."""
    return {"name": name, "major": major, "minor": minor, "total_memory": memory,
            "multi_processor_count": sms, "uuid": uuid}


def _dist_info(site: Path, name: str, version: str, installer: Optional[str] = "pip") -> None:
    d = site / f"{name}-{version}.dist-info"
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if installer:
        (d / "INSTALLER").write_text(installer + "\n")


def make_torch(base: Path, version: str = "2.7.1+cu118", cuda: Optional[str] = "11.8",
               torchvision: Optional[str] = None, torchaudio: Optional[str] = None,
               bundled: Dict[str, bytes] = None, **spec: Any) -> Path:
    """Write a fake torch (and dist-infos) into ``base/site`` and return that folder.

    ``bundled`` maps a path under the site folder ("nvidia/cudnn/lib/libcudnn.so.9") to the bytes of
    a library file shipped "with the wheel".
    """
    site = Path(base) / "site"
    pkg = site / "torch"
    for sub in ("cuda", "backends"):
        (pkg / sub).mkdir(parents=True, exist_ok=True)
    spec = dict(spec, version=version, cuda=cuda)
    (pkg / "_fake_spec.json").write_text(json.dumps(spec))
    (pkg / "__init__.py").write_text(TORCH_INIT)
    (pkg / "version.py").write_text(TORCH_VERSION)
    (pkg / "cuda" / "__init__.py").write_text(TORCH_CUDA)
    (pkg / "cuda" / "nccl.py").write_text(TORCH_NCCL)
    (pkg / "backends" / "__init__.py").write_text("from torch.backends import cudnn\n")
    (pkg / "backends" / "cudnn.py").write_text(TORCH_CUDNN)
    _dist_info(site, "torch", version)
    if torchvision:
        _dist_info(site, "torchvision", torchvision)
    if torchaudio:
        _dist_info(site, "torchaudio", torchaudio)
    for name, pkg_version in (spec.get("packages") or {}).items():
        _dist_info(site, name, pkg_version)
    for rel, data in (bundled or {}).items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return site


def torch_env(site: Path, **extra: str) -> Dict[str, str]:
    """An environment whose PYTHONPATH puts the fake torch first."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "PYTHONPATH": str(site), "HOME": str(Path(site).parent)}
    env.update(extra)
    return env


def find_python(version: str) -> Optional[str]:
    """A working interpreter of ``version`` ("3.8"), or None: pyenv's, else one on PATH.

    pyenv shims on PATH fail for versions that are installed but not selected, so each candidate
    is run once.
    """
    import glob
    import shutil
    import subprocess

    candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python3")))
    candidates += sorted(glob.glob(f"/root/.pyenv/versions/{version}.*/bin/python3"))
    candidates += [p for p in (shutil.which(f"python{version}"), f"/usr/bin/python{version}") if p]
    for exe in candidates:
        try:
            ok = subprocess.run([exe, "-c", f"import sys; assert '%d.%d' % sys.version_info[:2] == '{version}'"],
                                capture_output=True, timeout=20).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return exe
    return None

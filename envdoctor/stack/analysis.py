"""Pure judgements of the libraries above torch: why an import failed, which pins fight, what a
GPU supports, which prebuilt flash-attn wheel fits, what a source build needs.

Nothing here reads the machine; every function takes the facts it needs::

    >>> classify("ImportError", "/x/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so: undefined symbol: "
    ...          "_ZN3c104cuda9SetDeviceEi", torch_abi=True, torch_cuda="12.8").kind
    'other_torch'
    >>> classify("ImportError", "libcudart.so.11.0: cannot open shared object file: No such file or directory",
    ...          torch_cuda="12.8").kind
    'other_cuda'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

#: kinds of broken import, the words a finding uses for each
KINDS: Dict[str, str] = {
    "cxx11_abi": "built with the other C++ ABI (cxx11abi) than this torch",
    "other_torch": "built for another torch release",
    "other_cuda": "built for another CUDA release",
    "missing_cuda_library": "a CUDA library it needs is missing",
    "arch": "does not support this GPU's architecture",
    "missing_module": "a package it imports is missing",
    "libstdcxx": "needs a newer C++ runtime (libstdc++) than the one loaded",
    "crashed": "crashed the interpreter",
    "hang": "hung",
    "other": "fails",
}

_UNDEFINED = re.compile(r"undefined symbol: (\S+)")
_NO_LIBRARY = re.compile(r"(lib[\w+.-]+?\.so(?:\.[\d.]+)?): cannot open shared object file")
_CUDA_LIB = re.compile(
    r"^lib(cudart|cublas|cublasLt|cudnn|cufft|curand|cusparse|cusolver|nvrtc|nvJitLink|nvjitlink|"
    r"nccl|cupti|nvToolsExt|cuda)\b"
)
_LIB_MAJOR = re.compile(r"\.so\.(\d+)")
#: CUDA libraries whose file name carries the CUDA major (libcudart.so.12); cuDNN and NCCL carry their own
_VERSIONED = ("libcudart", "libcublas", "libcufft", "libcurand", "libcusparse", "libcusolver")
_XFORMERS_BUILT = re.compile(r"xFormers was built for:\s*PyTorch (\S+) with CUDA (\d+) \(you have ([^)]+)\)")
_BNB_BINARY = re.compile(r"libbitsandbytes_cuda(\d+)")
_GLIBCXX = re.compile(r"(GLIBCXX_[\d.]+|CXXABI_[\d.]+)' not found")
_OPERATOR = re.compile(r"operator (\w+::\w+) does not exist")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_ARCH = (
    "only supports Ampere",
    "no kernel image is available",
    "not supported on this GPU",
    "requires compute capability",
    "sm_90a",
    "Unsupported gpu architecture",
)


@dataclass(frozen=True)
class Breakage:
    """Why a library does not load:
    ``Breakage("other_cuda", "it wants libcudart.so.11.0 (CUDA 11); torch is CUDA 12.8")``."""

    kind: str
    detail: str
    symbol: Optional[str] = None  # the undefined symbol
    library: Optional[str] = None  # the library that is missing

    @property
    def words(self) -> str:
        return KINDS.get(self.kind, KINDS["other"])


def _cuda_major(cuda: Optional[str]) -> Optional[int]:
    if not cuda:
        return None
    m = re.match(r"(\d+)", cuda)
    return int(m.group(1)) if m else None


def _xformers_cuda(number: str) -> str:
    """xFormers writes CUDA as major * 100 + minor: "1201" -> "12.1", "1108" -> "11.8"."""
    if not number.isdigit():
        return number
    n = int(number)
    minor = n % 100
    return f"{n // 100}.{minor // 10 if minor >= 10 and minor % 10 == 0 else minor}"


def classify(
    error_type: Optional[str],
    message: Optional[str],
    stderr: Optional[str] = None,
    torch_abi: Optional[bool] = None,
    torch_cuda: Optional[str] = None,
    torch_version: Optional[str] = None,
) -> Breakage:
    """The kind of a failed import, from the exception's text (and stderr: xFormers warns there)."""
    text = message or ""
    both = f"{text}\n{stderr or ''}"
    m = _XFORMERS_BUILT.search(" ".join(both.split()))
    if m:
        built_torch, built_cuda, have = m.group(1), m.group(2), m.group(3)
        cuda_text = _xformers_cuda(built_cuda)
        have_local = have.split("+", 1)[1] if "+" in have else ""
        built_local = built_torch.split("+", 1)[1] if "+" in built_torch else ""
        if built_torch.split("+")[0] == have.split("+")[0] and built_local != have_local:
            return Breakage(
                "other_cuda",
                f"its C++/CUDA part was built for PyTorch {built_torch} with CUDA {cuda_text}; this torch is {have}",
            )
        return Breakage(
            "other_torch",
            f"its C++/CUDA part was built for PyTorch {built_torch} with CUDA {cuda_text}; this torch is {have}",
        )
    m = _UNDEFINED.search(text)
    if m:
        symbol = m.group(1)
        uses_new = "__cxx11" in symbol
        uses_old = bool(re.search(r"(?:^|[^A-Za-z])Ss|RKSs|ESs|PKSs", symbol)) and not uses_new
        if (uses_new and torch_abi is False) or (uses_old and torch_abi is True):
            side = "the C++11 ABI" if uses_new else "the old (pre-C++11) ABI"
            torch_side = "without it" if uses_new else "with the C++11 ABI"
            return Breakage(
                "cxx11_abi",
                f"it was built with {side} and this torch {torch_side} (undefined symbol {symbol[:80]})",
                symbol=symbol,
            )
        if uses_new and torch_abi is None:
            return Breakage(
                "cxx11_abi",
                f"undefined symbol {symbol[:80]} names a C++11-ABI std::string: most often a "
                "wheel built with the other C++ ABI than this torch (or for another torch)",
                symbol=symbol,
            )
        if symbol.startswith(("_ZN3c10", "_ZN2at", "_ZN5torch", "_ZNK3c10", "_ZNK2at", "_ZN6caffe2", "_ZNK5torch")):
            return Breakage(
                "other_torch",
                f"a function of torch it was linked against is not in this torch "
                f"{torch_version or ''} (undefined symbol {symbol[:80]})".replace("  ", " "),
                symbol=symbol,
            )
        return Breakage("other", f"undefined symbol {symbol[:80]}", symbol=symbol)
    m = _OPERATOR.search(text)
    if m:  # torchvision's (and others') registered operators belong to another torch release
        return Breakage(
            "other_torch",
            f"its compiled operators ({m.group(1)}) are not registered with this torch {torch_version or ''}".rstrip(),
        )
    m = _GLIBCXX.search(text)
    if m:
        return Breakage("libstdcxx", f"{m.group(1)} is not in the libstdc++ this process loaded")
    m = _NO_LIBRARY.search(text)
    if m:
        library = m.group(1)
        if _CUDA_LIB.match(library):
            want = _LIB_MAJOR.search(library)
            have = _cuda_major(torch_cuda)
            if want and have is not None and int(want.group(1)) != have and library.startswith(_VERSIONED):
                return Breakage(
                    "other_cuda",
                    f"it wants {library} (CUDA {want.group(1)}); this torch is CUDA {torch_cuda}",
                    library=library,
                )
            return Breakage("missing_cuda_library", f"{library} is not found", library=library)
        m2 = _BNB_BINARY.search(both)
        if m2 or "libbitsandbytes" in library:
            return Breakage(
                "missing_cuda_library",
                f"{library} is not found: the package has no binary for "
                f"this CUDA{(' (' + torch_cuda + ')') if torch_cuda else ''}",
                library=library,
            )
        return Breakage("other", f"{library} is not found", library=library)
    if any(a in both for a in _ARCH):
        line = next((ln.strip() for ln in both.splitlines() if any(a in ln for a in _ARCH)), text)
        return Breakage("arch", line[:200])
    m = _NO_MODULE.search(text)
    if m and error_type in ("ModuleNotFoundError", "ImportError"):
        return Breakage("missing_module", f"it imports {m.group(1)}, which is not installed")
    if "CUDA Setup failed" in both or "libcudart.so not found" in both:
        return Breakage("missing_cuda_library", "bitsandbytes found no usable CUDA runtime (libcudart)")
    first = text.strip().splitlines()[0] if text.strip() else (error_type or "")
    return Breakage("other", first[:200])


# --- pins ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PinConflict:
    """``vllm 0.10.2`` requires ``torch==2.8.0``; ``2.5.1+cu124`` is installed."""

    package: str  # the library that declares the pin
    version: str
    requirement: str  # as written: "torch==2.8.0"
    wants: str  # the name it pins: "torch"
    installed: Optional[str]  # what is installed of it (None: missing)


#: The names whose pins decide whether the stack loads: torch, its siblings and the libraries above.
JUDGED = (
    "torch",
    "torchvision",
    "torchaudio",
    "triton",
    "xformers",
    "flash-attn",
    "flashinfer-python",
    "vllm",
    "sgl-kernel",
    "torchao",
    "bitsandbytes",
    "deepspeed",
    "transformer-engine",
    "mamba-ssm",
    "causal-conv1d",
)


def marker_environment(python_version: Optional[str], machine: Optional[str]) -> Dict[str, str]:
    """The PEP 508 marker values of a Linux target: ``marker_environment("3.12.3", "x86_64")``."""
    py = python_version or "3.12.0"
    parts = py.split(".")
    return {
        "python_version": ".".join(parts[:2]),
        "python_full_version": py,
        "platform_system": "Linux",
        "sys_platform": "linux",
        "platform_machine": machine or "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }


def applies(requirement: Requirement, env: Mapping[str, str]) -> bool:
    """Whether a requirement's marker holds on the target (no marker: always; an ``extra`` one: never)."""
    if requirement.marker is None:
        return True
    try:
        return bool(requirement.marker.evaluate(dict(env)))
    except Exception:  # a marker packaging cannot evaluate: count it, like pip would try to
        return True


def pin_conflicts(
    package: str, version: str, requires: Iterable[str], installed: Mapping[str, str], env: Mapping[str, str]
) -> Tuple[PinConflict, ...]:
    """The Requires-Dist lines of ``package`` that the installed versions of JUDGED names break.

    >>> pin_conflicts("xformers", "0.0.28.post3", ["numpy", "torch==2.5.1"], {"torch": "2.8.0+cu128"},
    ...               marker_environment("3.12.3", "x86_64"))[0].requirement
    'torch==2.5.1'
    """
    out = []
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if name not in JUDGED or not req.specifier or not applies(req, env):
            continue
        have = installed.get(name)
        if have is None:
            if name == "torch":
                out.append(PinConflict(package, version, line.split(";")[0].strip(), name, None))
            continue
        try:
            ok = req.specifier.contains(Version(have), prereleases=True)
        except InvalidVersion:
            continue
        if not ok:
            out.append(PinConflict(package, version, f"{req.name}{req.specifier}", name, have))
    return tuple(out)


def markers_valid(text: str) -> bool:
    try:
        Marker(text)
    except InvalidMarker:
        return False
    return True


# --- GPUs and builds --------------------------------------------------------------------------


def cc_value(cc: str) -> Tuple[int, int]:
    major, _, minor = cc.partition(".")
    return int(major), int(minor or 0)


def unsupported_gpus(ccs: Iterable[Tuple[str, str]], min_cc: str, max_cc: Optional[str]) -> List[Tuple[str, str]]:
    """The (label, cc) of GPUs outside [min_cc, max_cc]."""
    low = cc_value(min_cc)
    high = cc_value(max_cc) if max_cc else None
    return [(label, cc) for label, cc in ccs if cc_value(cc) < low or (high is not None and cc_value(cc) > high)]


def arch_list(ccs: Iterable[str]) -> str:
    """TORCH_CUDA_ARCH_LIST for these GPUs: ``arch_list(["9.0", "8.0", "9.0"])`` -> "8.0;9.0"."""
    return ";".join(sorted(set(ccs), key=cc_value))


def max_jobs(available_bytes: Optional[int], cpus: Optional[int], gib_per_job: float) -> Optional[int]:
    """MAX_JOBS that fits the memory: ``max_jobs(48 * 2**30, 64, 24)`` -> 2; never below 1."""
    if not available_bytes or gib_per_job <= 0:
        return None
    jobs = max(1, math.floor(available_bytes / (gib_per_job * 2**30)))
    return min(jobs, cpus) if cpus else jobs


def torch_minor(version: Optional[str]) -> Optional[str]:
    """ "2.8.0+cu128" -> "2.8"."""
    try:
        v = Version(version or "")
    except InvalidVersion:
        return None
    return f"{v.release[0]}.{v.release[1]}" if len(v.release) >= 2 else None


def wheel_url(template: str, version: str, cuda: str, torch: str, abi: bool, python: str) -> str:
    """A flash-attn release asset's URL: (template, "2.8.3", "12", "2.8", False, "3.12") -> .../
    flash_attn-2.8.3+cu12torch2.8cxx11abiFALSE-cp312-cp312-linux_x86_64.whl."""
    return template.format(
        version=version, cuda=cuda, torch=torch, abi="TRUE" if abi else "FALSE", py=python.replace(".", "")
    )

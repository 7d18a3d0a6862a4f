"""Pure parsers of what ``envdoctor/child/torch_probe.py`` answers: its JSON -> facts.

A real answer from the CPU development machine (torch 2.13.0+cpu)::

    {"python": {"version": "3.11.7", "implementation": "cpython", "soabi": "cpython-311-x86_64-linux-gnu",
                "platform": "linux-x86_64", "libc": "glibc 2.36", "maxsize_64bit": true,
                "prefix": "/src/envdoctor/.venv", "base_prefix": "/root/.pyenv/versions/3.11.7",
                "pip": "23.2.1", "distributions": {"torch": "2.13.0+cpu", ...}, ...},
     "torch": {"installed": true, "version": "2.13.0+cpu", "cuda": null, "available": false,
               "count": 0, "arch_flags": null, "import_seconds": 0.866, ...}}

Platform tags are built here, host-side, from the glibc and platform the child reports (the target
interpreter need not have ``packaging``), in ``packaging.tags`` order by
:func:`envdoctor.parse.platforms.linux_tags`. Not covered: musllinux (no glibc: only
``linux_<arch>``), the ABI checks packaging makes for 32-bit ARM, and macOS/Windows (the one
sysconfig tag).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from envdoctor.facts.python import LoadedLibrary, TargetPython, TorchDevice, TorchFacts
from envdoctor.parse import MAX_VERSION_PART
from envdoctor.parse.jsontext import opt_float, opt_int, opt_str
from envdoctor.parse.platforms import linux_tags


def parse_glibc(libc: Optional[str]) -> Optional[str]:
    """``os.confstr('CS_GNU_LIBC_VERSION')`` -> the glibc version.

    >>> parse_glibc("glibc 2.39")
    '2.39'
    >>> parse_glibc(None) is None
    True
    """
    if not libc:
        return None
    m = re.fullmatch(r"glibc (\d{1,6})\.(\d{1,6})(?:\.\d{1,6})?", libc.strip()[:100])
    if not m or int(m.group(2)) > MAX_VERSION_PART:
        return None
    return f"{m.group(1)}.{m.group(2)}"


def platform_tag(platform: Optional[str], is_64bit: bool = True) -> Optional[str]:
    """``sysconfig.get_platform()`` -> a wheel platform tag, as packaging.tags normalises it.

    >>> platform_tag("linux-x86_64"), platform_tag("linux-x86_64", is_64bit=False)
    ('linux_x86_64', 'linux_i686')
    """
    if not platform:
        return None
    tag = platform.replace("-", "_").replace(".", "_").replace(" ", "_")
    if not is_64bit:
        tag = {"linux_x86_64": "linux_i686", "linux_aarch64": "linux_armv8l"}.get(tag, tag)
    return tag


def linux_platform_tags(glibc: Optional[str], platform: Optional[str]) -> tuple[str, ...]:
    """The platform tags a glibc Linux interpreter accepts, most specific first (manylinux tags,
    newest first, then ``linux_<arch>``, as packaging orders them).

    >>> linux_platform_tags("2.28", "linux_aarch64")[:2]
    ('manylinux_2_28_aarch64', 'manylinux_2_27_aarch64')
    >>> linux_platform_tags("2.17", "linux_aarch64")[-2:]
    ('manylinux2014_aarch64', 'linux_aarch64')
    """
    if not platform:
        return ()
    if not platform.startswith("linux_"):
        return (platform,)
    arch = platform[len("linux_") :]
    version = re.fullmatch(r"2\.(\d{1,6})", glibc or "")
    minor = int(version.group(1)) if version else None
    return linux_tags(
        (2, minor) if minor is not None and minor <= MAX_VERSION_PART else None,
        ("armv8l", "armv7l") if arch == "armv8l" else (arch,),
    )


def interpreter_tags(py: dict[str, Any]) -> tuple[Optional[str], Optional[str]]:
    """(interpreter tag, ABI tag) from the child's sysconfig values, as packaging.tags makes them.

    >>> interpreter_tags({"implementation": "cpython", "py_version_nodot": "313",
    ...                   "soabi": "cpython-313t-x86_64-linux-gnu"})
    ('cp313', 'cp313t')
    >>> interpreter_tags({"implementation": "pypy", "py_version_nodot": "310",
    ...                   "soabi": "pypy310-pp73-x86_64-linux-gnu"})
    ('pp310', 'pypy310_pp73')
    """
    impl = opt_str(py.get("implementation"))
    short = {"cpython": "cp", "pypy": "pp", "ironpython": "ip", "jython": "jy"}.get(impl or "", impl)
    nodot = opt_str(py.get("py_version_nodot"))
    info = py.get("version_info")
    if (
        not nodot
        and isinstance(info, list)
        and len(info) >= 2
        and all(opt_int(v) is not None for v in info[:2])
        and 0 <= info[0] <= MAX_VERSION_PART
        and 0 <= info[1] <= MAX_VERSION_PART
    ):
        nodot = f"{info[0]}{info[1]}"
    interp = f"{short}{nodot}" if short and nodot else None
    soabi = opt_str(py.get("soabi")) or ""
    abi: Optional[str]
    if soabi.startswith("cpython-"):
        abi = "cp" + soabi.split("-")[1]
    elif soabi.startswith("pypy"):
        abi = "_".join(soabi.split("-")[:2])
    elif soabi:
        abi = soabi.split("-")[0]
    elif impl == "cpython" and nodot:
        abi = f"cp{nodot}" + ("d" if py.get("debug") else "") + ("t" if py.get("gil_disabled") else "")
    else:
        abi = None
    if abi:
        abi = abi.replace(".", "_").replace("-", "_")
    return interp, abi


def target_python(
    py: dict[str, Any], executable: Optional[str] = None, chosen_by: Optional[str] = None
) -> TargetPython:
    """The child's ``python`` object -> TargetPython (a value of the wrong type counts as absent)."""
    py = py if isinstance(py, dict) else {}
    interp, abi = interpreter_tags(py)
    glibc = parse_glibc(opt_str(py.get("libc")))
    plat = platform_tag(opt_str(py.get("platform")), bool(py.get("maxsize_64bit", True)))
    prefix = opt_str(py.get("prefix"))
    base = opt_str(py.get("base_prefix"))
    return TargetPython(
        executable=executable or opt_str(py.get("executable")),
        chosen_by=chosen_by,
        version=opt_str(py.get("version")),
        implementation=opt_str(py.get("implementation")),
        interpreter_tag=interp,
        abi_tag=abi,
        platform_tags=linux_platform_tags(glibc, plat),
        pip=opt_str(py.get("pip")),
        venv=bool(prefix and base and prefix != base),
        conda_env=bool(py.get("conda_meta")),
        prefix=prefix,
        platform=plat,
        glibc=glibc,
        packages=packages(py.get("packages")),
    )


#: Bounds on what the child may send: packages kept, and the length of a name or a version.
MAX_PACKAGES = 300
_PACKAGE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,99}")
_COMPILER = re.compile(r"^[ \t]*-[ \t]*((?:GCC|clang|Clang|MSVC|Apple clang)[ \t]+[0-9][0-9.]{0,30})[ \t]*$", re.M)
_CPU_CAPABILITY = re.compile(r"^[ \t]*-[ \t]*CPU capability usage:[ \t]*([A-Za-z0-9_]{1,32})[ \t]*$", re.M)


def packages(raw: Any) -> dict[str, str]:
    """The child's ``packages`` ({normalized name: version}) kept if well formed, at most MAX_PACKAGES.

    >>> packages({"numpy": "2.5.2", "nvidia-nccl-cu13": "2.28.9", "Bad Name": "1", "triton": 3})
    {'numpy': '2.5.2', 'nvidia-nccl-cu13': '2.28.9'}
    """
    if not isinstance(raw, dict):
        return {}
    out: dict[str, str] = {}
    for name, version in raw.items():
        if len(out) >= MAX_PACKAGES:
            break
        if (
            isinstance(name, str)
            and isinstance(version, str)
            and _PACKAGE_NAME.fullmatch(name)
            and 0 < len(version) <= 64
            and version.isprintable()
        ):
            out[name] = version
    return dict(sorted(out.items()))


def build_config(text: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """``torch.__config__.show()`` -> (the compiler torch was built with, the CPU capability it uses).

    >>> build_config("PyTorch built with:\\n  - GCC 13.3\\n  - C++ Version: 202002\\n"
    ...              "  - CPU capability usage: AVX2\\n  - Build settings: BLAS_INFO=mkl, ...")
    ('GCC 13.3', 'AVX2')
    >>> build_config(None)
    (None, None)
    """
    if not isinstance(text, str) or not text:
        return None, None
    text = text[:20000]
    compiler = _COMPILER.search(text)
    capability = _CPU_CAPABILITY.search(text)
    return (compiler.group(1) if compiler else None), (capability.group(1) if capability else None)


_VERSION_PY = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([0-9][0-9A-Za-z.+_-]{0,63})['"][ \t]*$""", re.M)


def torch_version_py(text: str) -> Optional[str]:
    """The ``__version__`` line of an installed ``torch/version.py``, read as text (never imported).

    >>> torch_version_py("from typing import Optional\\n\\n__all__ = ['__version__', 'debug']\\n"
    ...                  "__version__ = '2.13.0+cpu'\\ndebug = False\\ncuda: Optional[str] = None\\n")
    '2.13.0+cpu'
    >>> torch_version_py("__version__ = get_version()") is None
    True
    """
    m = _VERSION_PY.search(text[:65536])
    return m.group(1) if m else None


def cudnn_version(raw: Any) -> Optional[str]:
    """``torch.backends.cudnn.version()`` -> "major.minor.patch" (cuDNN 9 counts in 10000s).

    >>> cudnn_version(91900), cudnn_version(8902), cudnn_version(None)
    ('9.19.0', '8.9.2', None)
    """
    if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
        return None
    if raw >= 90000:
        return f"{raw // 10000}.{raw % 10000 // 100}.{raw % 100}"
    return f"{raw // 1000}.{raw % 1000 // 100}.{raw % 100}"


def nccl_version(raw: Any) -> Optional[str]:
    """``torch.cuda.nccl.version()`` (a tuple since torch 1.x, an int before) -> "2.28.9".

    >>> nccl_version([2, 28, 9]), nccl_version("(2, 28, 9)"), nccl_version(2708), nccl_version(22809)
    ('2.28.9', '2.28.9', '2.7.8', '2.28.9')
    """
    if isinstance(raw, (list, tuple)) and raw and all(isinstance(x, int) for x in raw):
        return ".".join(str(x) for x in raw[:3])
    if isinstance(raw, str):
        nums = re.findall(r"\d+", raw)
        return ".".join(nums[:3]) if nums else None
    if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
        if raw >= 20900:  # NCCL >= 2.9: major * 10000 + minor * 100 + patch
            return f"{raw // 10000}.{raw % 10000 // 100}.{raw % 100}"
        return f"{raw // 1000}.{raw % 1000 // 100}.{raw % 100}"
    return None


def _pick(paths: tuple[str, ...], stem: str) -> Optional[str]:
    """The main library among the mapped ones: ``libcudnn.so.9`` before ``libcudnn_graph.so.9``."""
    named = [p for p in paths if p.rsplit("/", 1)[-1].startswith(stem)]
    main = [p for p in named if p.rsplit("/", 1)[-1].startswith(stem + ".so")]
    return (main or named)[0] if (main or named) else None


def _device(raw: dict[str, Any], fallback_index: int) -> TorchDevice:
    cap = raw.get("capability")
    capability = None
    if isinstance(cap, (list, tuple)) and len(cap) == 2 and all(isinstance(x, int) for x in cap):
        capability = f"{cap[0]}.{cap[1]}"
    uuid = opt_str(raw.get("uuid"))
    if uuid and not uuid.startswith(("GPU-", "MIG-")):
        uuid = "GPU-" + uuid
    return TorchDevice(
        index=raw["index"] if isinstance(raw.get("index"), int) else fallback_index,
        name=opt_str(raw.get("name")),
        capability=capability,
        memory_bytes=opt_int(raw.get("memory")),
        multiprocessors=opt_int(raw.get("sms")),
        uuid=uuid,
    )


def torch_facts(data: Optional[dict[str, Any]], python: Optional[dict[str, Any]] = None) -> TorchFacts:
    """The child's ``torch`` object (and the ``python`` one, for the package metadata) -> TorchFacts.

    torchvision/torchaudio versions, and torch's own version when the import failed, come from
    the package metadata the child read without importing them.
    """
    python = python if isinstance(python, dict) else {}
    dists = python.get("distributions")
    dists = dists if isinstance(dists, dict) else {}
    data = data if isinstance(data, dict) else {}
    installed = bool(data.get("installed"))
    libraries = tuple(
        LoadedLibrary(str(lib["path"])[:4096], opt_str(lib.get("via_ld_library_path")))
        for lib in _list(data.get("libraries"))
        if isinstance(lib, dict) and opt_str(lib.get("path"))
    )
    paths = tuple(lib.path for lib in libraries)
    devices = tuple(_device(d, i) for i, d in enumerate(_list(data.get("devices"))) if isinstance(d, dict))
    arch = data.get("arch_flags")
    compiler, cpu_capability = build_config(data.get("build_config"))
    return TorchFacts(
        installed=installed,
        version=opt_str(data.get("version")) or (opt_str(dists.get("torch")) if installed else None),
        cuda=opt_str(data.get("cuda")),
        hip=opt_str(data.get("hip")),
        git=opt_str(data.get("git")),
        debug_build=data["debug"] if isinstance(data.get("debug"), bool) else None,
        compiler=compiler,
        cpu_capability=cpu_capability,
        cudnn_version=cudnn_version(data.get("cudnn")),
        cudnn_path=_pick(paths, "libcudnn"),
        cudnn_error=opt_str(data.get("cudnn_error")),
        nccl_version=nccl_version(data.get("nccl")),
        nccl_path=_pick(paths, "libnccl"),
        arch_list=tuple(arch.split()) if isinstance(arch, str) else tuple(str(a) for a in _list(arch)),
        cuda_available=data["available"] if isinstance(data.get("available"), bool) else None,
        cuda_error=opt_str(data.get("cuda_error")),
        device_count=opt_int(data.get("count")),
        devices=devices,
        tiny_op=opt_str(data.get("tiny_op")),
        torchvision=opt_str(dists.get("torchvision")),
        torchaudio=opt_str(dists.get("torchaudio")),
        import_error=opt_str(data.get("import_error")),
        import_seconds=opt_float(data.get("import_seconds"), low=0, high=1e7),
        location=opt_str(data.get("location")),
        installer=opt_str(python.get("torch_installer")),
        libraries=libraries,
        bundled_libraries=tuple(str(p) for p in _list(data.get("bundled"))),
        ld_library_path=opt_str(data.get("ld_library_path")),
        warnings=tuple(str(w) for w in _list(data.get("warnings"))),
        unreadable=tuple(str(w) for w in _list(data.get("unreadable"))),
        stage=opt_str(data.get("stage")),
    )


def _list(value: Any) -> list[Any]:
    """A list field of the child's answer (at most 1000 items); anything else is empty."""
    return value[:1000] if isinstance(value, list) else []

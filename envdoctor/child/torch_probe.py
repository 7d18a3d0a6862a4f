"""The target Python and its torch, for ``envdoctor check`` (run by envdoctor.child).

Standard library and torch only; runs on Python 3.8+ and still reports the version on older ones.
Never imports torchvision or torchaudio: their versions, and those of the packages a bug report
lists (numpy, triton, nvidia-*, ...: ``PACKAGE_NAMES``/``PACKAGE_PREFIXES``), come from the
dist-info folder names, read in one pass over sys.path (``installed_distributions``).
Events: ``python`` (the Python facts, before torch is touched), a ``stage`` before each step that
may crash or hang (with the torch facts so far), then the result ``{"python": ..., "torch": ...}``.
Config: ``{"torch": false}`` reads only the Python facts; ``{"extensions": {...}}`` also reads the
libraries above torch (``stack/target/extensions.py``, named on the line below), after torch.

The torch part, on the H200 (torch 2.11.0+cu130), looks like::

    {"installed": true, "version": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91900,
     "nccl": [2, 28, 9], "arch_flags": "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
     "available": true, "count": 1, "devices": [{"index": 0, "name": "NVIDIA H200",
     "capability": [9, 0], "memory": 150109880320, "sms": 132, "uuid": "c7d3a8fe-..."}], ...}
"""

# envdoctor child uses: stack/target/extensions.py
import os
import sys
import time
import warnings

if False:  # for readers and linters: these come from _prelude.py, which envdoctor sends first
    from envdoctor.child._prelude import Failure, _text, emit, stage
    from envdoctor.stack.target.extensions import extension_facts, start_imports

#: Library file names worth reporting from /proc/self/maps (driver: libcuda, libnvidia-*).
LIBRARY_PREFIXES = (
    "libcuda.",
    "libcudart",
    "libcudnn",
    "libcublas",
    "libcufft",
    "libcurand",
    "libcusparse",
    "libcusolver",
    "libcupti",
    "libnccl",
    "libnvrtc",
    "libnvJitLink",
    "libnvjitlink",
    "libnvToolsExt",
    "libnvshmem",
    "libcufile",
    "libnvidia-ml",
    "libamdhip64",
    "libMIOpen",
)
MAX_LIBRARIES = 80
#: Warning categories that say nothing about the install (library deprecations, unclosed files).
try:
    NOISE = (DeprecationWarning, PendingDeprecationWarning, ResourceWarning, ImportWarning)
except NameError:  # Python 2, which only gets as far as saying its version
    NOISE = (DeprecationWarning,)


def _exc(exc):
    return _text("%s: %s" % (type(exc).__name__, exc))


#: Packages reported with their versions, as torch.utils.collect_env lists them for a bug report:
#: a normalized name (PEP 503) equal to one of NAMES or starting with one of PREFIXES.
PACKAGE_NAMES = ("numpy", "triton", "optree", "mkl", "intel-openmp", "cupy", "jax", "jaxlib")
PACKAGE_PREFIXES = ("torch", "pytorch-", "nvidia-", "triton-", "cuda-", "cupy-", "onnx", "jax-")
MAX_PACKAGES = 300
MAX_FOLDERS = 64
_SEPARATORS = "-_."


def _normalize(name):
    """PEP 503: "Typing_Extensions" -> "typing-extensions"."""
    out = []
    for ch in name.lower():
        if ch in _SEPARATORS:
            if not out or out[-1] != "-":
                out.append("-")
        else:
            out.append(ch)
    return "".join(out)


def _split_info(entry):
    """``torch-2.8.0+cu128.dist-info`` -> ("torch", "2.8.0+cu128"); ``foo-1.0-py3.8.egg-info`` ->
    ("foo", "1.0"); None for anything else. Installers write a wheel's dist-info folder as
    ``{name}-{version}`` with "-" in the name escaped, so the first "-" ends the name."""
    for suffix in (".dist-info", ".egg-info"):
        if entry.endswith(suffix):
            stem = entry[: -len(suffix)]
            break
    else:
        return None
    if "-" not in stem:
        return None
    name, version = stem.split("-", 1)
    if suffix == ".egg-info" and "-py" in version:
        version = version.split("-py", 1)[0]
    if not name or not version:
        return None
    return _normalize(name), version


def installed_distributions(path=None, others=None):
    """{normalized name: (version, dist-info folder)} in ONE pass over the folders of sys.path (the
    folder names only: no METADATA read), first found wins, as importlib.metadata finds them.

    ``others`` (a set, when given) gets what only importlib.metadata can answer: the names of
    info folders without a version (``foo.egg-info``, a source checkout installed in develop
    mode), and "*" when an entry of sys.path is a file (a zipped egg) or the folders were cut."""
    found = {}
    seen = set()
    for folder in (sys.path if path is None else path)[: MAX_FOLDERS * 4]:
        folder = folder or "."
        if folder in seen or len(seen) >= MAX_FOLDERS:
            if folder not in seen and others is not None:
                others.add("*")
            continue
        seen.add(folder)
        try:
            entries = os.listdir(folder)
        except (OSError, TypeError, ValueError):
            if others is not None and os.path.isfile(folder):
                others.add("*")
            continue
        for entry in sorted(entries):
            split = _split_info(entry)
            if split is not None and split[0] not in found:
                found[split[0]] = (split[1], os.path.join(folder, entry))
            elif split is None and others is not None and entry.endswith((".dist-info", ".egg-info")):
                others.add(_normalize(entry.rsplit(".", 1)[0]))
    return found


def _metadata_version(name, others):
    """importlib.metadata's answer, for a distribution the folder names did not give (``others``
    of ``installed_distributions``). Not asked otherwise: its import and search of sys.path take
    most of the child's time (85 of 110 ms on the CPU box) and it would only say "not installed"."""
    if name not in others and "*" not in others:
        return None
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7 and older
        return None
    try:
        return metadata.version(name)
    except Exception:
        return None


def _wanted(name):
    return name in PACKAGE_NAMES or name.startswith(PACKAGE_PREFIXES)


def _installer(info):
    """The INSTALLER file of a dist-info folder ("pip", "uv", "conda"), or None."""
    if info is None:
        return None
    try:
        with open(os.path.join(info[1], "INSTALLER")) as fh:
            text = fh.read(200)
    except (OSError, UnicodeDecodeError):
        return None
    return text.strip() or None


def python_facts():
    import importlib.util
    import platform
    import sysconfig

    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.39"
    except (AttributeError, ValueError, OSError):
        libc = None
    prefix = sys.prefix
    base = getattr(sys, "real_prefix", None) or getattr(sys, "base_prefix", prefix)
    try:
        has_pip = importlib.util.find_spec("pip") is not None
    except Exception:
        has_pip = False
    others = set()
    dists = installed_distributions(others=others)
    packages = dict((name, dists[name][0]) for name in sorted(dists) if _wanted(name))
    if len(packages) > MAX_PACKAGES:
        packages = dict(sorted(packages.items())[:MAX_PACKAGES])
    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "version_info": list(sys.version_info[:3]),
        "implementation": sys.implementation.name,
        "py_version_nodot": sysconfig.get_config_var("py_version_nodot"),
        "soabi": sysconfig.get_config_var("SOABI"),
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
        "debug": bool(sysconfig.get_config_var("Py_DEBUG")) or hasattr(sys, "gettotalrefcount"),
        "gil_disabled": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "platform": sysconfig.get_platform(),
        "maxsize_64bit": sys.maxsize > 2**32,
        "libc": libc,
        "prefix": prefix,
        "base_prefix": base,
        "conda_meta": os.path.isdir(os.path.join(prefix, "conda-meta")),
        "pip": ((dists.get("pip") or ("unknown",))[0]) if has_pip else None,
        "distributions": dict(
            (name, dists[name][0] if name in dists else _metadata_version(name, others))
            for name in ("torch", "torchvision", "torchaudio")
        ),
        "packages": packages,
        "torch_installer": _installer(dists.get("torch")),
    }


class TorchReport(object):
    """The torch facts, filled step by step; ``stage`` writes what is known before a risky step."""

    def __init__(self):
        self.data = {"installed": True, "unreadable": []}
        self.caught = []

    def stage(self, name):
        self.data["stage"] = name
        self.data["warnings"] = self.warnings()
        stage(name, torch=self.data)

    def attempt(self, label, fn, default=None):
        """``fn()``, or ``default`` with the exception noted under ``unreadable``."""
        try:
            return fn()
        except Exception as exc:
            self.data["unreadable"].append("%s: %s" % (label, _exc(exc)))
            return default

    def warnings(self):
        seen = []
        for w in self.caught:
            if issubclass(w.category, NOISE):
                continue
            text = _text("%s: %s" % (w.category.__name__, w.message), 1000)
            if text not in seen:
                seen.append(text)
        return seen[:20]


def _libraries():
    """CUDA libraries mapped into this process, in load order, without duplicates."""
    found = []
    try:
        with open("/proc/self/maps") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        path = parts[5]
        if path.endswith(" (deleted)"):
            path = path[: -len(" (deleted)")]
        name = os.path.basename(path)
        if ".so" in name and name.startswith(LIBRARY_PREFIXES) and path not in found:
            found.append(path)
    return found[:MAX_LIBRARIES]


def _via_ld_library_path(path, entries):
    folder = os.path.realpath(os.path.dirname(path))
    for entry in entries:
        if entry and os.path.realpath(entry) == folder:
            return entry
    return None


def _bundled(torch_dir):
    """CUDA libraries shipped with the wheel: site-packages/nvidia/*/lib and torch/lib."""
    import glob

    site = os.path.dirname(torch_dir)
    patterns = (
        os.path.join(site, "nvidia", "*", "lib", "lib*.so*"),
        os.path.join(site, "nvidia", "*", "*", "lib", "lib*.so*"),
        os.path.join(torch_dir, "lib", "lib*.so*"),
    )
    out = []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            if os.path.basename(path).startswith(LIBRARY_PREFIXES):
                real = os.path.realpath(path)
                if real not in out:
                    out.append(real)
    return out[:200]


def _version_text(fn):
    value = fn()
    return list(value) if isinstance(value, tuple) else value


def torch_facts(report):
    d = report.data
    report.stage("import torch")
    started = time.monotonic()
    try:
        import torch
    except (Exception, SystemExit) as exc:
        d["import_seconds"] = round(time.monotonic() - started, 3)
        d["import_error"] = _exc(exc)
        return
    d["import_seconds"] = round(time.monotonic() - started, 3)
    d["location"] = os.path.dirname(os.path.abspath(getattr(torch, "__file__", "") or ""))
    version = getattr(torch, "version", None)
    d["version"] = str(getattr(torch, "__version__", "")) or None
    d["cuda"] = getattr(version, "cuda", None)
    d["hip"] = getattr(version, "hip", None)
    d["git"] = getattr(version, "git_version", None)
    d["debug"] = getattr(version, "debug", None)
    config = getattr(torch, "__config__", None)
    if config is not None and hasattr(config, "show"):
        # "PyTorch built with:\n  - GCC 13.3\n  - ... CPU capability usage: AVX2 ...": parsed host-side
        d["build_config"] = report.attempt("torch.__config__.show()", lambda: _text(config.show(), 8000))
    gpu_build = bool(d["cuda"] or d["hip"])
    # The compiled-in list, which torch.cuda.get_arch_list() hides when CUDA is not available.
    flags = getattr(getattr(torch, "_C", None), "_cuda_getArchFlags", None)
    if flags is not None:
        d["arch_flags"] = report.attempt("torch._C._cuda_getArchFlags()", flags)
    else:
        d["arch_flags"] = None
    if not d["arch_flags"] and gpu_build:
        arch = report.attempt("torch.cuda.get_arch_list()", lambda: torch.cuda.get_arch_list(), [])
        d["arch_flags"] = " ".join(arch or []) or None

    report.stage("torch.cuda.is_available()")
    d["available"] = report.attempt("torch.cuda.is_available()", lambda: torch.cuda.is_available())
    d["count"] = report.attempt("torch.cuda.device_count()", lambda: torch.cuda.device_count())
    if gpu_build and not d["available"]:
        report.stage("torch.cuda.init()")
        try:
            torch.cuda.init()
        except Exception as exc:
            d["cuda_error"] = _text(exc)
        if not d.get("cuda_error"):
            for w in report.caught:
                if "CUDA initialization" in str(w.message):
                    d["cuda_error"] = _text(w.message)
                    break

    devices = []
    if d["available"] and d["count"]:
        report.stage("torch.cuda.get_device_properties()")
        for i in range(d["count"]):
            devices.append(_device(report, torch, i))
        d["devices"] = devices
        report.stage("tiny CUDA operation")
        d["tiny_op"] = _tiny_ops(torch, devices)

    if gpu_build:
        report.stage("torch.backends.cudnn.version()")
        try:
            d["cudnn"] = torch.backends.cudnn.version()
        except Exception as exc:
            d["cudnn_error"] = _exc(exc)
        if d["cuda"]:
            report.stage("torch.cuda.nccl.version()")
            d["nccl"] = report.attempt("torch.cuda.nccl.version()", lambda: _nccl(torch))
    report.stage("/proc/self/maps")
    entries = os.environ.get("LD_LIBRARY_PATH", "")
    d["ld_library_path"] = entries or None
    split = [e for e in entries.split(":") if e]
    d["libraries"] = [{"path": p, "via_ld_library_path": _via_ld_library_path(p, split)} for p in _libraries()]
    d["bundled"] = report.attempt("bundled libraries", lambda: _bundled(d["location"]), [])


def _nccl(torch):
    import torch.cuda.nccl

    return _version_text(torch.cuda.nccl.version)


def _device(report, torch, i):
    dev = {"index": i}
    props = report.attempt("torch.cuda.get_device_properties(%d)" % i, lambda: torch.cuda.get_device_properties(i))
    if props is None:
        return dev
    dev["name"] = getattr(props, "name", None)
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    dev["capability"] = [major, minor] if major is not None else None
    dev["memory"] = getattr(props, "total_memory", None)
    dev["sms"] = getattr(props, "multi_processor_count", None)
    uuid = getattr(props, "uuid", None)
    dev["uuid"] = str(uuid) if uuid is not None else None
    return dev


def _tiny_ops(torch, devices):
    """Run ``(ones(8) * 2).sum()`` once per distinct capability; "ok" or the first failure."""
    done = set()
    for dev in devices:
        key = tuple(dev.get("capability") or ()) or dev["index"]
        if key in done:
            continue
        done.add(key)
        i = dev["index"]
        try:
            x = torch.ones(8, device="cuda:%d" % i)
            value = (x * 2).sum().item()
            torch.cuda.synchronize(i)
        except Exception as exc:
            return "cuda:%d: %s" % (i, _exc(exc))
        if value != 16:
            return "cuda:%d: (ones(8) * 2).sum() gave %r instead of 16" % (i, value)
    return "ok"


def main(config):
    if sys.version_info < (3, 6):
        version = "%d.%d.%d" % tuple(sys.version_info[:3])
        raise Failure(
            "unsupported_python",
            "Python %s is too old" % version,
            python={"version": version, "executable": sys.executable},
        )
    py = python_facts()
    emit("python", python=py)
    torch = {"installed": False}
    early = None
    if config.get("torch", True):
        import importlib.util

        if importlib.util.find_spec("torch") is not None:
            if config.get("extensions"):  # the libraries' imports run beside torch's own below
                early = start_imports(config["extensions"])
            report = TorchReport()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                report.caught = caught
                torch_facts(report)
                report.data["warnings"] = report.warnings()
            report.data.pop("stage", None)
            torch = report.data
    if config.get("extensions"):
        stage("extensions", torch=torch)
        return {"python": py, "torch": torch, "extensions": extension_facts(config["extensions"], torch, early)}
    return {"python": py, "torch": torch}

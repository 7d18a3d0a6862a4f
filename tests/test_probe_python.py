"""The target-Python probe against the real CPU torch, a Python without torch, and fake GPU builds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envdoctor.probes.context import Context
from envdoctor.probes.python import choose_python, probe
from tests.fakes import FakeBin
from tests.faketorch import find_python, gpu, make_torch, torch_env

RTX5090 = gpu(
    "NVIDIA GeForce RTX 5090", 12, 0, memory=34190917632, sms=170, uuid="5a1e2b3c-0000-4000-8000-000000000001"
)
CU118_ARCH = "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_37 sm_90"
NO_KERNEL = "CUDA error: no kernel image is available for execution on the device"
DRIVER_TOO_OLD = (
    "The NVIDIA driver on your system is too old (found version 12020). Please update "
    "your GPU driver by downloading and installing a new version from the URL: "
    "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org "
    "to install a PyTorch version that has been compiled with your version of the CUDA driver."
)


def _has_real_torch() -> bool:
    from importlib import metadata

    try:
        return metadata.version("torch").startswith("2.")
    except metadata.PackageNotFoundError:
        return False


# --- choosing the interpreter ------------------------------------------------------------------


def test_python_flag_wins(tmp_path):
    ctx = Context(env={"PATH": "/usr/bin:/bin"}, python="/opt/x/bin/python")
    assert choose_python(ctx) == ("/opt/x/bin/python", "--python")


def test_python3_then_python_on_path(tmp_path):
    bin = FakeBin(tmp_path)
    bin.add("python")
    only = {"PATH": str(bin.dir)}
    assert choose_python(Context(env=only)) == (str(bin.dir / "python"), "python on PATH")
    bin.add("python3")
    assert choose_python(Context(env=only)) == (str(bin.dir / "python3"), "python3 on PATH")


def test_envdoctors_own_python_when_path_has_none(tmp_path):
    assert choose_python(Context(env={"PATH": str(tmp_path)})) == (sys.executable, "envdoctor's own")


# --- real interpreters -------------------------------------------------------------------------


@pytest.mark.skipif(not _has_real_torch(), reason="the CPU torch wheel is not installed in this venv")
def test_real_cpu_torch():
    python, torch = probe(Context(python=sys.executable, torch_timeout=120))
    assert python.error is None and torch.error is None
    assert python.version == "%d.%d.%d" % sys.version_info[:3]
    assert python.venv is True and python.chosen_by == "--python"
    assert torch.installed is True
    assert torch.version.startswith("2.13.0")
    assert torch.cuda is None and torch.hip is None
    assert torch.cuda_available is False
    assert torch.arch_list == () and torch.devices == () and torch.device_count == 0
    assert torch.cuda_error is None and torch.tiny_op is None
    assert torch.location.endswith(os.path.join("site-packages", "torch"))
    assert torch.installer == "pip"
    assert torch.import_seconds is not None and torch.import_seconds > 0
    assert torch.stage is None


def test_python_without_torch(tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    exe = str(tmp_path / "bare" / "bin" / "python")
    python, torch = probe(Context(python=exe, env={"PATH": "/usr/bin:/bin"}))
    assert python.error is None
    assert python.executable == exe and python.venv is True and python.pip is None
    assert python.prefix == str(tmp_path / "bare")
    assert torch.installed is False and torch.error is None and torch.version is None


def test_without_torch_does_not_import_it(tmp_path):
    site = make_torch(tmp_path, on_import="hang")
    started = time.monotonic()
    python, torch = probe(Context(python=sys.executable, env=torch_env(site), torch_timeout=30), with_torch=False)
    assert time.monotonic() - started < 10
    assert python.version is not None and python.error is None
    # the version comes from the package metadata; nothing of the build is known without the import
    assert torch.installed is True and torch.version and torch.error is None and torch.cuda is None


def test_missing_interpreter():
    python, torch = probe(Context(python="/nonexistent/bin/python"))
    assert python.error.kind == "not_found"
    assert python.error.message == (
        "the target Python /nonexistent/bin/python (--python) could not be run: /nonexistent/bin/python: not found"
    )
    assert torch.error.kind == "unavailable" and torch.installed is False


def test_interpreter_that_prints_garbage(tmp_path):
    bin = FakeBin(tmp_path)
    exe = bin.add_script("python3", 'echo "Python wrapper: hello"; cat >/dev/null; exit 0')
    python, torch = probe(Context(python=str(exe), env=bin.env()))
    assert python.error.kind == "unparseable"
    assert python.error.message == (f"{exe} printed no envdoctor result; its stdout began with: Python wrapper: hello")
    assert torch.error.kind == "unparseable"


PY27 = "/root/.pyenv/versions/2.7.18/bin/python"


@pytest.mark.skipif(not os.path.exists(PY27), reason=f"{PY27} is not on this machine")
def test_python2_is_reported_not_crashed():
    python, torch = probe(Context(python=PY27))
    assert python.version == "2.7.18"
    assert python.error.kind == "unavailable"
    assert torch.error.kind == "unavailable"


# --- platform and interpreter tags, against packaging.tags in this interpreter ------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux platform tags")
def test_tags_match_packaging_for_this_interpreter():
    from packaging import tags

    python, _ = probe(Context(python=sys.executable), with_torch=False)
    expected = [t for t in tags.platform_tags() if not t.startswith("musllinux")]
    assert set(python.platform_tags) == set(expected)
    many = [t for t in expected if t.startswith("manylinux")]
    assert [t for t in python.platform_tags if t.startswith("manylinux")] == many
    first = next(iter(tags.sys_tags()))
    assert (python.interpreter_tag, python.abi_tag) == (first.interpreter, first.abi)


# --- fake GPU builds ----------------------------------------------------------------------------


def _fake(tmp_path, timeout=30.0, python=None, **spec):
    site = make_torch(tmp_path, **spec)
    return probe(Context(python=python or sys.executable, env=torch_env(site), torch_timeout=timeout))


def test_cu118_wheel_on_sm120(tmp_path):
    python, torch = _fake(
        tmp_path,
        version="2.7.1+cu118",
        cuda="11.8",
        arch_flags=CU118_ARCH,
        devices=[RTX5090],
        tiny_op_error=NO_KERNEL,
        cudnn=90100,
        nccl=[2, 21, 5],
        torchvision="0.22.1+cu118",
        init_warnings=[
            "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
            "the current PyTorch installation."
        ],
    )
    assert python.error is None and torch.error is None
    assert torch.version == "2.7.1+cu118" and torch.cuda == "11.8"
    assert torch.arch_list == ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_37", "sm_90")
    assert torch.cuda_available is True and torch.device_count == 1
    dev = torch.devices[0]
    assert (dev.index, dev.name, dev.capability, dev.memory_bytes, dev.multiprocessors, dev.uuid) == (
        0,
        "NVIDIA GeForce RTX 5090",
        "12.0",
        34190917632,
        170,
        "GPU-5a1e2b3c-0000-4000-8000-000000000001",
    )
    assert torch.tiny_op == f"cuda:0: RuntimeError: {NO_KERNEL}"
    assert torch.cudnn_version == "9.1.0" and torch.nccl_version == "2.21.5"
    assert torch.torchvision == "0.22.1+cu118" and torch.torchaudio is None
    assert (
        "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
        "the current PyTorch installation."
    ) in torch.warnings


def test_cu130_wheel_on_driver_535(tmp_path):
    python, torch = _fake(
        tmp_path,
        version="2.11.0+cu130",
        cuda="13.0",
        arch_flags="sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
        devices=[gpu("NVIDIA A100-SXM4-80GB", 8, 0)],
        init_error=DRIVER_TOO_OLD,
        cudnn=91900,
        nccl=[2, 28, 9],
    )
    assert torch.error is None
    assert torch.cuda_available is False and torch.device_count == 0 and torch.devices == ()
    # the compiled-in list, although get_arch_list() is empty without a usable driver
    assert torch.arch_list == ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
    assert torch.cuda_error == DRIVER_TOO_OLD
    assert "UserWarning: CUDA initialization: " + DRIVER_TOO_OLD in torch.warnings
    assert torch.tiny_op is None


def test_import_segfault_keeps_python_facts(tmp_path):
    python, torch = _fake(tmp_path, version="2.8.0+cu128", cuda="12.8", on_import="segfault")
    assert python.error is None and python.version is not None
    assert torch.error.kind == "crashed"
    assert torch.error.message == f"{sys.executable} was killed by SIGSEGV during import torch"
    assert torch.installed is True and torch.version == "2.8.0+cu128"  # from the dist-info
    assert torch.stage == "import torch"
    assert "Fatal Python error: Segmentation fault" in torch.stderr_tail
    assert "torch/__init__.py" in torch.stderr_tail


def test_import_hang_times_out(tmp_path):
    started = time.monotonic()
    python, torch = _fake(tmp_path, timeout=2.5, on_import="hang")
    assert time.monotonic() - started < 10
    assert python.error is None and python.version is not None
    assert torch.error.kind == "timeout"
    assert torch.error.message == f"{sys.executable} did not finish the torch check in 2.5 s during import torch"
    assert "torch/__init__.py" in (torch.stderr_tail or "")  # faulthandler's stack of the hang


def test_import_prints_garbage_and_exits(tmp_path):
    python, torch = _fake(tmp_path, on_import="garbage")
    assert python.error is None
    assert torch.error.kind == "unparseable"
    assert torch.error.message == (
        f"{sys.executable} exited with status 0 during import torch without printing envdoctor's result"
    )
    assert "Welcome to torch!" in torch.stderr_tail


def test_torch_printing_to_stdout_does_not_break_the_answer(tmp_path):
    python, torch = _fake(
        tmp_path,
        version="2.8.0+cu128",
        cuda="12.8",
        import_print="hello {not json",
        arch_flags="sm_80",
        devices=[gpu("NVIDIA A100", 8, 0)],
    )
    assert torch.error is None and torch.tiny_op == "ok"
    assert torch.stderr_tail == "hello {not json"


def test_import_exits_nonzero(tmp_path):
    python, torch = _fake(tmp_path, on_import="exit")
    assert python.error is None
    assert torch.error.kind == "exit_status"
    assert torch.error.message == (
        f"{sys.executable} exited with status 3 during import torch: fatal: libtorch_cuda.so: bad ELF header"
    )


def test_interpreter_that_hangs_before_answering(tmp_path):
    bin = FakeBin(tmp_path)
    exe = bin.add("python3", hang=True)
    python, torch = probe(Context(python=str(exe), env=bin.env(), torch_timeout=1))
    assert python.error.kind == "timeout" and torch.error.kind == "timeout"
    assert python.error.message == f"{exe} did not finish the torch check in 1 s"


def test_import_error(tmp_path):
    python, torch = _fake(
        tmp_path,
        version="2.8.0+cu128",
        cuda="12.8",
        on_import="import_error",
        import_error_text="libcudnn.so.9: cannot open shared object file: No such file or directory",
    )
    assert python.error is None and torch.error is None
    assert torch.installed is True and torch.version == "2.8.0+cu128"
    assert torch.import_error == "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    assert torch.cuda is None and torch.cuda_available is None


def _any_shared_library() -> Path:
    """A small real shared library this process has mapped (to stand in for libcudnn)."""
    with open("/proc/self/maps") as fh:
        for line in fh:
            path = line.split(None, 5)[-1].strip()
            name = os.path.basename(path)
            if name.startswith(("libz.so", "libbz2.so", "liblzma.so", "libffi.so")) and os.path.exists(path):
                return Path(path)
    pytest.skip("no small shared library mapped in this process")


def test_ld_library_path_shadowing_seen_in_proc_maps(tmp_path):
    lib = _any_shared_library().read_bytes()
    system = tmp_path / "cuda-12.4" / "lib64"
    system.mkdir(parents=True)
    (system / "libcudnn.so.9").write_bytes(lib)
    site = make_torch(
        tmp_path,
        version="2.8.0+cu128",
        cuda="12.8",
        arch_flags="sm_80",
        devices=[gpu("NVIDIA A100", 8, 0)],
        load_libraries=["libcudnn.so.9"],
        cudnn=90100,
        bundled={"nvidia/cudnn/lib/libcudnn.so.9": lib},
    )
    env = torch_env(site, LD_LIBRARY_PATH=f"{system}:/nonexistent/lib")
    python, torch = probe(Context(python=sys.executable, env=env))
    assert torch.error is None
    assert torch.cudnn_path == str(system / "libcudnn.so.9")
    assert [(x.path, x.via_ld_library_path) for x in torch.libraries] == [(str(system / "libcudnn.so.9"), str(system))]
    assert torch.bundled_libraries == (str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"),)
    assert torch.ld_library_path == f"{system}:/nonexistent/lib"


def test_probe_on_python38_with_fake_gpu_build(tmp_path):
    exe = find_python("3.8")
    if exe is None:
        pytest.skip("no Python 3.8 on this machine")
    python, torch = _fake(
        tmp_path,
        python=exe,
        version="2.4.1+cu121",
        cuda="12.1",
        arch_flags="sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90",
        devices=[gpu("NVIDIA GeForce RTX 3090", 8, 6)],
        cudnn=90100,
        nccl=[2, 20, 5],
    )
    assert python.version.startswith("3.8.") and python.interpreter_tag == "cp38" and python.abi_tag == "cp38"
    assert torch.error is None and torch.tiny_op == "ok" and torch.devices[0].capability == "8.6"


def test_a_launcher_script_is_named_and_the_real_interpreter_reported(tmp_path):
    """pyenv's shim is a shell script that execs the real python: report the interpreter that ran."""
    from envdoctor.probes.context import Context
    from envdoctor.probes.python import probe
    from tests.fakes import FakeBin

    bin = FakeBin(tmp_path)
    bin.add_script("python3", f'exec {sys.executable} "$@"')
    py, _ = probe(Context(env=bin.env(), timeout=30, torch_timeout=60), with_torch=False)
    assert os.path.realpath(py.executable) == os.path.realpath(sys.executable)
    assert py.chosen_by == f"python3 on PATH, through the launcher {bin.dir / 'python3'}"


# --- what the child asks importlib.metadata (its import and search were most of the child's time) --

_RECORD_METADATA = """\
import sys

class _Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "importlib.metadata":
            with open({marker!r}, "a") as fh:
                fh.write(name + "\\n")
        return None

sys.meta_path.insert(0, _Watch())
"""


def _watched_env(tmp_path, site):
    """The fake torch's environment, with a sitecustomize that notes an import of importlib.metadata."""
    marker = tmp_path / "imported.txt"
    (site / "sitecustomize.py").write_text(_RECORD_METADATA.format(marker=str(marker)))
    return torch_env(site), marker


def test_a_target_without_torchvision_is_not_searched_with_importlib_metadata(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8")
    env, marker = _watched_env(tmp_path, site)
    python, torch = probe(Context(python=sys.executable, env=env), with_torch=False)
    assert python.error is None and torch.version == "2.8.0+cu128"
    assert torch.torchvision is None and torch.torchaudio is None
    assert not marker.exists()


def test_a_develop_install_without_a_version_in_its_folder_name_still_gets_its_version(tmp_path):
    site = make_torch(tmp_path, version="2.8.0+cu128", cuda="12.8")
    checkout = tmp_path / "vision"
    (checkout / "torchvision.egg-info").mkdir(parents=True)
    (checkout / "torchvision.egg-info" / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: torchvision\nVersion: 0.24.0a0+git1234\n"
    )
    env, marker = _watched_env(tmp_path, site)
    env["PYTHONPATH"] = f"{site}{os.pathsep}{checkout}"
    python, torch = probe(Context(python=sys.executable, env=env), with_torch=False)
    assert torch.version == "2.8.0+cu128" and torch.torchvision == "0.24.0a0+git1234"
    assert marker.read_text() == "importlib.metadata\n"

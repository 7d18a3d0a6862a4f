"""collect_env parity: CPU, GCC, the target's package versions, torch's build, and the variables
that change how torch, CUDA and NCCL behave, in check's text, Markdown and JSON.

Expected values are written by hand from the recorded files (tests/fixtures/cpu-nvcc13-docker-client:
this development machine's /proc/cpuinfo and gcc --version; the H200's collect_env.txt for the
package list a bug report carries).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from envdoctor.child import run_child
from envdoctor.facts import Facts, SystemFacts, TargetPython, TorchFacts
from envdoctor.parse.compiler import parse_gcc_version
from envdoctor.parse.cpuinfo import parse_cpuinfo
from envdoctor.parse.torch import build_config, packages, target_python, torch_facts
from envdoctor.probes.context import Context
from envdoctor.probes.system import MAX_BEHAVIOUR_ENV, behaviour_env, probe
from envdoctor.render import markdown, text
from envdoctor.render.json import report_document
from tests.fakes import FakeBin, recorded
from tests.faketorch import find_python, make_torch, torch_env

DEV = "cpu-nvcc13-docker-client"
#: torch.__config__.show() of the CPU torch 2.13.0 of the development venv, cut after the settings' start.
CONFIG_2_13 = (
    "PyTorch built with:\n  - GCC 13.3\n  - C++ Version: 202002\n"
    "  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64 "
    "architecture applications\n  - OpenMP 201511 (a.k.a. OpenMP 4.5)\n  - LAPACK is enabled "
    "(usually provided by MKL)\n  - NNPACK is enabled\n  - CPU capability usage: AVX2\n"
    "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CXX_COMPILER=/opt/rh/gcc-toolset-13/root/"
    "usr/bin/c++, TORCH_VERSION=2.13.0, USE_CUDA=0, \n"
)
#: The nvidia-*, numpy and triton lines of the H200's collect_env.txt, as dist-info folder names.
H200_PACKAGES = {
    "nvidia_cublas": "13.1.0.3",
    "nvidia_cuda_runtime": "13.0.96",
    "nvidia_cudnn_cu13": "9.19.0.56",
    "nvidia_nccl_cu13": "2.28.9",
    "nvidia_nvjitlink": "13.0.88",
    "numpy": "2.5.2",
    "triton": "3.6.0",
    "torch_geometric": "2.8.0.post1",
    "pytorch_lightning": "2.6.6",
    "requests": "2.32.5",
    "onnx": "1.23.1",
}


# --- CPU and GCC, host side -----------------------------------------------------------------------


def test_cpu_model_and_count_from_the_recorded_cpuinfo():
    assert parse_cpuinfo(recorded(DEV, "proc-cpuinfo.txt")) == ("AMD EPYC", 2)


def test_cpuinfo_of_an_arm_kernel_names_implementer_and_part():
    # the shape an aarch64 kernel writes (no "model name"); hand-written, values of a Neoverse V2
    text = "".join(
        f"processor\t: {i}\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n"
        f"CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 1\n\n"
        for i in range(72)
    )
    assert parse_cpuinfo(text) == ("ARM CPU implementer 0x41, part 0xd4f", 72)


def test_cpuinfo_garbage_is_nothing_not_a_crash():
    assert parse_cpuinfo("") == (None, None)
    assert parse_cpuinfo(":" * 100000 + "\x00processor: x") == (None, None)


def test_gcc_version_lines():
    assert parse_gcc_version(recorded(DEV, "gcc-version.txt")) == ("gcc (Debian 12.2.0-14+deb12u1) 12.2.0", "12.2.0")
    # the H200's, as its collect_env.txt prints it after "GCC version: "
    assert parse_gcc_version("gcc (Ubuntu 13.3.0-6ubuntu2~24.04.1) 13.3.0\n")[1] == "13.3.0"
    assert parse_gcc_version("usage: gcc [options] file...\n") == (None, None)


def _system(tmp_path, bin_: FakeBin, **env: str):
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "cpuinfo").write_text(recorded(DEV, "proc-cpuinfo.txt"))
    return probe(Context(root=root, env=bin_.env(hermetic=True, **env), timeout=2))


def _gcc(tmp_path, bin_: FakeBin):
    """The probe's ``gcc --version`` on this machine (under another root the image's GCC is read
    from its files instead: tests/test_probe_system_root.py)."""
    from envdoctor.probes.system import _gcc as run_gcc

    return run_gcc(Context(env=bin_.env(hermetic=True), timeout=2))


def test_system_probe_reads_cpu_and_runs_gcc(tmp_path):
    bin_ = FakeBin(tmp_path)
    bin_.add("gcc", stdout=recorded(DEV, "gcc-version.txt"))
    s = _system(tmp_path, bin_)
    assert (s.cpu_model, s.cpu_count) == ("AMD EPYC", 2)
    assert _gcc(tmp_path, bin_) == ("gcc (Debian 12.2.0-14+deb12u1) 12.2.0", "12.2.0", None)
    assert (s.gcc, s.gcc_version, s.gcc_error) == (None, None, None)  # the root has no GCC of its own


def test_no_gcc_on_path_is_absent_not_an_error(tmp_path):
    assert _gcc(tmp_path, FakeBin(tmp_path)) == (None, None, None)


def test_a_hanging_gcc_is_bounded_and_named(tmp_path):
    bin_ = FakeBin(tmp_path)
    bin_.add("gcc", hang=True)
    line, _, error = _gcc(tmp_path, bin_)
    assert line is None and error is not None and error.kind == "timeout"


def test_a_gcc_that_prints_no_version_is_unparseable(tmp_path):
    bin_ = FakeBin(tmp_path)
    bin_.add("gcc", stdout="hello\n")
    assert _gcc(tmp_path, bin_)[2].kind == "unparseable"


# --- the environment that changes torch, CUDA and NCCL --------------------------------------------


def test_behaviour_variables_are_picked_by_name_and_prefix_and_masked():
    env = {
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "CUDA_LAUNCH_BLOCKING": "1",
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "NCCL_SOCKET_IFNAME": "eth0",
        "TORCH_CUDA_ARCH_LIST": "9.0a",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1",
        "NVIDIA_TF32_OVERRIDE": "0",
        "OMP_NUM_THREADS": "8",
        "TRITON_CACHE_DIR": "/scratch/triton",
        "CUDA_VISIBLE_DEVICES": "",
        "HOME": "/root",
        "CUDA_HOME": "/usr/local/cuda",
        "HF_TOKEN": "hf_" + "a" * 34,
        "TORCH_SESSION_COOKIE": "abc",
        "NCCL_IB_HCA": "https://me:s3cret@fabric.example/",
    }
    assert behaviour_env(env) == {
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "CUDA_LAUNCH_BLOCKING": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "NCCL_IB_HCA": "https://me:***@fabric.example/",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NVIDIA_TF32_OVERRIDE": "0",
        "OMP_NUM_THREADS": "8",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1",
        "TORCH_CUDA_ARCH_LIST": "9.0a",
        "TORCH_SESSION_COOKIE": "***",
        "TRITON_CACHE_DIR": "/scratch/triton",
    }


def test_behaviour_variables_are_bounded_in_count_and_length():
    env = {f"NCCL_X{i:04d}": "v" * 100000 for i in range(5000)}
    out = behaviour_env(env)
    assert len(out) == MAX_BEHAVIOUR_ENV and all(len(v) < 600 for v in out.values())


# --- the child: packages in one pass, torch's build ------------------------------------------------


def probe_child(python=sys.executable, **kw):
    return run_child("torch_probe.py", kw.pop("config", {}), python=python, timeout=60, **kw)


def test_the_child_lists_the_packages_a_bug_report_needs(tmp_path):
    site = make_torch(
        tmp_path,
        version="2.11.0+cu130",
        cuda="13.0",
        torchvision="0.26.0+cu130",
        packages=dict(H200_PACKAGES, pytorch_triton="3.2.0+git4b3bb1f8"),
    )
    py = probe_child(config={"torch": False}, env=torch_env(site)).result["python"]
    expected = {
        "nvidia-cublas": "13.1.0.3",
        "nvidia-cuda-runtime": "13.0.96",
        "nvidia-cudnn-cu13": "9.19.0.56",
        "nvidia-nccl-cu13": "2.28.9",
        "nvidia-nvjitlink": "13.0.88",
        "numpy": "2.5.2",
        "triton": "3.6.0",
        "torch-geometric": "2.8.0.post1",
        "pytorch-lightning": "2.6.6",
        "onnx": "1.23.1",
        "pytorch-triton": "3.2.0+git4b3bb1f8",
        "torch": "2.11.0+cu130",
        "torchvision": "0.26.0+cu130",
    }
    # the test interpreter's own site-packages (nvidia-ml-py) come after the fake site on sys.path
    assert {k: py["packages"].get(k) for k in expected} == expected
    assert "requests" not in py["packages"]
    assert py["distributions"] == {"torch": "2.11.0+cu130", "torchvision": "0.26.0+cu130", "torchaudio": None}
    assert py["torch_installer"] == "pip"


def test_the_first_distribution_on_sys_path_wins_as_importlib_finds_it(tmp_path):
    first = make_torch(tmp_path / "a", version="2.8.0+cu128", cuda="12.8", packages={"numpy": "2.1.0"})
    second = tmp_path / "b"
    (second / "numpy-1.26.4.dist-info").mkdir(parents=True)
    (second / "nvidia_nccl_cu12-2.27.3.egg-info").mkdir()
    env = torch_env(first)
    env["PYTHONPATH"] = f"{first}:{second}"
    py = probe_child(config={"torch": False}, env=env).result["python"]
    assert py["packages"]["numpy"] == "2.1.0" and py["packages"]["nvidia-nccl-cu12"] == "2.27.3"


@pytest.mark.parametrize("version", ["3.8"])
def test_packages_on_python_3_8(tmp_path, version):
    exe = find_python(version)
    if exe is None:
        pytest.skip(f"no Python {version} on this machine")
    site = make_torch(tmp_path, version="2.4.1+cu118", cuda="11.8", packages={"numpy": "1.24.4", "triton": "3.0.0"})
    child = probe_child(exe, config={"torch": False}, env=torch_env(site))
    assert child.ok, child.error
    assert child.result["python"]["packages"] == {"numpy": "1.24.4", "torch": "2.4.1+cu118", "triton": "3.0.0"}


def test_the_child_reads_torch_build_config_and_debug(tmp_path):
    site = make_torch(tmp_path, version="2.13.0+cpu", cuda=None, config_show=CONFIG_2_13, debug=False)
    child = probe_child(env=torch_env(site))
    t = torch_facts(child.result["torch"], child.result["python"])
    assert (t.compiler, t.cpu_capability, t.debug_build) == ("GCC 13.3", "AVX2", False)
    assert t.unreadable == ()


def test_an_old_torch_without_config_is_no_unreadable_field(tmp_path):
    site = make_torch(tmp_path, version="1.13.1+cu117", cuda="11.7", nccl=[2, 14, 3])
    child = probe_child(env=torch_env(site))
    t = torch_facts(child.result["torch"], child.result["python"])
    assert (t.compiler, t.cpu_capability) == (None, None) and t.unreadable == ()


def test_build_config_of_other_compilers_and_garbage():
    assert build_config("PyTorch built with:\n  - clang 17.0.6\n  - CPU capability usage: NO AVX\n") == (
        "clang 17.0.6",
        None,
    )
    assert build_config("  - GCC 11.2\n  - CPU capability usage: AVX512\n") == ("GCC 11.2", "AVX512")
    assert build_config("\n" * 200000 + " " * 50000) == (None, None)


def test_package_versions_sent_by_the_child_are_checked():
    assert packages({"numpy": "2.5.2", "../etc": "1", "x" * 200: "1", "triton": "v" * 100, "nvidia-nccl": None}) == {
        "numpy": "2.5.2"
    }
    assert len(packages({f"nvidia-p{i}": "1" for i in range(1000)})) == 300
    assert target_python({"packages": {"numpy": "2.5.2"}}).packages == {"numpy": "2.5.2"}


# --- what the user sees -----------------------------------------------------------------------------


def _facts() -> Facts:
    system = SystemFacts(
        os_name="Ubuntu 24.04.3 LTS",
        kernel="6.18.44-fc-v657-gpu",
        arch="x86_64",
        glibc="2.39",
        cpu_model="Intel(R) Xeon(R) Processor",
        cpu_count=16,
        gcc="gcc (Ubuntu 13.3.0-6ubuntu2~24.04.1) 13.3.0",
        gcc_version="13.3.0",
        torch_env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NCCL_DEBUG": "INFO"},
    )
    python = TargetPython(
        executable="/opt/torch/.venv/bin/python",
        chosen_by="python3 on PATH",
        version="3.12.3",
        pip="24.0",
        venv=True,
        packages={"numpy": "2.5.2", "nvidia-nccl-cu13": "2.28.9", "torch": "2.11.0", "triton": "3.6.0"},
    )
    torch = TorchFacts(
        installed=True,
        version="2.11.0+cu130",
        cuda="13.0",
        compiler="GCC 13.3",
        cpu_capability="AVX512",
        debug_build=False,
    )
    return Facts(
        system=system, python=python, torch=torch, envdoctor_version="0.1.0", collected_at="2026-12-01T00:00:00+00:00"
    )


def _rows(out: str) -> dict[str, str]:
    """``  KEY   value`` lines of the text report -> {KEY: value} (keys are padded to the section's width)."""
    import re

    return {m.group(1): m.group(2) for m in re.finditer(r"^  (\S(?:.*?\S)?)  +(\S.*)$", out, re.M)}


def test_check_text_shows_cpu_gcc_build_packages_and_variables():
    out = text.render(_facts(), ())
    rows = _rows(out)
    assert rows["CPU"] == "Intel(R) Xeon(R) Processor, 16 logical CPUs"
    assert rows["GCC"] == "gcc (Ubuntu 13.3.0-6ubuntu2~24.04.1) 13.3.0"
    assert rows["torch build"] == "built with GCC 13.3, CPU kernels AVX512"
    assert rows["Packages"] == "numpy 2.5.2, triton 3.6.0"
    assert rows["nvidia-*"] == "nccl-cu13 2.28.9"
    assert (
        "Environment that changes torch, CUDA and NCCL\n  NCCL_DEBUG               INFO\n"
        "  PYTORCH_CUDA_ALLOC_CONF  expandable_segments:True\n"
    ) in out


def test_no_variable_set_no_section():
    facts = _facts()
    from dataclasses import replace

    facts = replace(facts, system=replace(facts.system, torch_env={}))
    assert "Environment that changes" not in text.render(facts, ())


def test_markdown_for_a_bug_report_carries_them():
    out = markdown.render(_facts(), ())
    for row in (
        "| CPU | Intel(R) Xeon(R) Processor, 16 logical CPUs |",
        "| nvidia-* | nccl-cu13 2.28.9 |",
        "| PYTORCH_CUDA_ALLOC_CONF | expandable_segments:True |",
        "| torch build | built with GCC 13.3, CPU kernels AVX512 |",
    ):
        assert row in out


def test_report_json_has_the_keys_and_fits_its_schema():
    from tests.documents import validate

    doc = json.loads(json.dumps(report_document(_facts(), ())))
    validate(doc, "report")
    f = doc["facts"]
    assert f["system"]["cpu_model"] == "Intel(R) Xeon(R) Processor" and f["system"]["gcc_version"] == "13.3.0"
    assert f["system"]["torch_env"]["NCCL_DEBUG"] == "INFO"
    assert f["python"]["packages"]["triton"] == "3.6.0" and f["torch"]["compiler"] == "GCC 13.3"


def test_a_saved_report_reads_back_with_the_new_fields(tmp_path):
    from envdoctor.report import parse_report

    doc = report_document(_facts(), ())
    facts, _, _ = parse_report(json.dumps(doc), "r.json")
    assert facts.python.packages["numpy"] == "2.5.2" and facts.system.cpu_count == 16
    assert Path(tmp_path).exists()

"""ED4xx rules on hand-written facts (package rows as the recorded conda lists show them)."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.facts.conda import CondaFacts, CondaPackage
from envdoctor.facts.gpu import DriverFacts
from envdoctor.facts.python import TargetPython, TorchFacts
from envdoctor.facts.toolkit import Toolkit, ToolkitFacts
from envdoctor.findings import Finding
from envdoctor.rules import conda as rules
from envdoctor.rules.conda import torch_build_cuda

DL = "/home/ada/miniforge3/envs/dl"
PT_CF129 = CondaPackage("pytorch", "2.8.0", "cuda129_generic_py312_h464b887_201", "conda-forge")
CV129 = CondaPackage("cuda-version", "12.9", "h4f385c5_3", "conda-forge")
NVCC126 = CondaPackage("cuda-nvcc", "12.6.85", "hcdd1206_0", "conda-forge")
PT_RETIRED = CondaPackage("pytorch", "2.2.2", "py3.10_cuda12.1_cudnn8.9.2_0", "pytorch")
PT_CUDA = CondaPackage("pytorch-cuda", "12.1", "ha16c6d3_5", "pytorch")
PIP_TORCH = CondaPackage("torch", "2.5.1", "pypi_0", "pypi")
PIP_VISION = CondaPackage("torchvision", "0.20.1", "pypi_0", "pypi")


def env(*packages, flavor="conda", **kw):
    kw.setdefault("active_prefix", DL)
    kw.setdefault("active_name", "dl")
    return CondaFacts(
        exe=f"/home/ada/miniforge3/bin/{flavor}",
        flavor=flavor,
        version="25.5.1",
        packages=packages,
        packages_source=f"{flavor} list --json --prefix {DL}",
        **kw,
    )


def found(facts: Facts, code: str) -> list[Finding]:
    return [f for rule in rules.RULES for f in rule(facts, None) if f.code == code]


def test_build_strings():
    assert torch_build_cuda(PT_CF129) == "12.9"
    assert torch_build_cuda(CondaPackage("pytorch", "2.5.1", "cuda126_py312h1763f6d_306")) == "12.6"
    assert torch_build_cuda(CondaPackage("pytorch", "2.4.1", "cuda118_py311h2d1b0b2_300")) == "11.8"
    assert torch_build_cuda(PT_RETIRED) == "12.1"
    assert torch_build_cuda(CondaPackage("pytorch", "2.6.0", "cpu_generic_py312_h8a1ee9d_1")) is None
    assert torch_build_cuda(None) is None


# ED401 -------------------------------------------------------------------------------------------


def test_ed401_cuda_runtime_without_nvcc():
    (f,) = found(Facts(conda=env(CV129, PT_CF129)), "ED401")
    assert f.severity == "info" and f.fix == ("conda install -c conda-forge cuda-nvcc=12.9",)
    assert any("cuda-version 12.9 h4f385c5_3 (conda-forge)" in e for e in f.evidence)


def test_ed401_micromamba_and_the_pytorch_build_when_no_cuda_version_package():
    (f,) = found(
        Facts(
            conda=env(CondaPackage("pytorch", "2.5.1", "cuda126_py312h1763f6d_306", "conda-forge"), flavor="micromamba")
        ),
        "ED401",
    )
    assert f.fix == ("micromamba install -c conda-forge cuda-nvcc=12.6",)


def test_ed401_quiet():
    assert not found(Facts(conda=env(CV129, PT_CF129, NVCC126)), "ED401")
    conda_nvcc = Toolkit(DL, f"{DL}/bin/nvcc", "12.9.86", "12.9", found_via=("PATH", "conda"))
    assert not found(Facts(conda=env(CV129, PT_CF129), toolkits=ToolkitFacts(toolkits=(conda_nvcc,))), "ED401")
    cpu = CondaPackage("pytorch", "2.6.0", "cpu_generic_py312_h8a1ee9d_1", "conda-forge")
    assert not found(Facts(conda=env(cpu)), "ED401")
    assert not found(Facts(conda=env(CV129, active_prefix=None)), "ED401")
    assert not found(Facts(), "ED401")


# ED402 -------------------------------------------------------------------------------------------


def test_ed402_retired_pytorch_channel():
    facts = Facts(conda=env(PT_RETIRED, PT_CUDA, active_name="mmcv", channels=("pytorch", "nvidia", "pkgs/main")))
    (f,) = found(facts, "ED402")
    assert f.severity == "warning" and f.reference == "https://github.com/pytorch/pytorch/issues/138506"
    assert f.fix == (
        "conda create -n mmcv-cf -c conda-forge --override-channels python pytorch-gpu",
        "conda activate mmcv-cf",
    )
    assert "pytorch 2.2.2 py3.10_cuda12.1_cudnn8.9.2_0 (pytorch)" in f.evidence


def test_ed402_quiet_for_conda_forge():
    assert not found(Facts(conda=env(CV129, PT_CF129)), "ED402")


# ED403 -------------------------------------------------------------------------------------------


def test_ed403_env_cuda_major_newer_than_the_driver():
    facts = Facts(conda=env(CV129, PT_CF129), driver=DriverFacts(driver_version="470.256.02", driver_cuda="11.4"))
    (f,) = found(facts, "ED403")
    assert f.severity == "error" and "CUDA 12.9" in f.title and "CUDA 11.4" in f.title
    assert f.fix[-1] == 'conda install -c conda-forge "cuda-version<=11.4"'


def test_ed403_uses_the_virtual_package_without_a_driver_fact():
    facts = Facts(conda=env(PT_RETIRED, PT_CUDA, virtual_cuda="11.8", source="conda info --json"))
    (f,) = found(facts, "ED403")
    assert any("__cuda virtual package" in e for e in f.evidence)


def test_ed403_quiet():
    same_major = Facts(conda=env(CV129, PT_CF129), driver=DriverFacts(driver_cuda="12.2"))
    assert not found(same_major, "ED403")  # CUDA minor-version compatibility
    assert not found(Facts(conda=env(CV129, PT_CF129)), "ED403")  # no driver CUDA known
    covered = Facts(
        conda=env(CV129, PT_CF129),
        driver=DriverFacts(driver_cuda="11.4"),
        torch=TorchFacts(installed=True, version="2.8.0", cuda="12.9"),
        python=TargetPython(prefix=DL + "/"),
    )
    assert not found(covered, "ED403")  # the target Python is this env: ED205 says it


# ED404 -------------------------------------------------------------------------------------------


def test_ed404_pip_torch_over_conda_forge_pytorch_keeps_condas():
    facts = Facts(conda=env(CV129, PT_CF129, PIP_TORCH, PIP_VISION))
    (f,) = found(facts, "ED404")
    assert f.fix == ("python -m pip uninstall -y torch torchvision", "conda install --force-reinstall pytorch")


def test_ed404_does_not_reinstall_from_the_retired_channel_ed402_says_to_leave():
    """Issue 26: ED402 said leave the `pytorch` channel, ED404 said `conda install --force-reinstall pytorch`
    (from that channel). With a retired conda pytorch both say the same: a new conda-forge env."""
    facts = Facts(conda=env(PT_RETIRED, PT_CUDA, PIP_TORCH, PIP_VISION))
    (f,) = found(facts, "ED404")
    (retired,) = found(facts, "ED402")
    assert not any("--force-reinstall" in c for c in f.fix)
    assert (
        f.fix
        == retired.fix
        == ("conda create -n dl-cf -c conda-forge --override-channels python pytorch-gpu", "conda activate dl-cf")
    )
    assert "retired `pytorch` channel (ED402)" in f.explanation


def test_ed404_quiet():
    assert not found(Facts(conda=env(PT_RETIRED, PT_CUDA)), "ED404")
    assert not found(Facts(conda=env(PIP_TORCH)), "ED404")


def test_every_finding_names_the_env():
    facts = Facts(conda=env(PT_RETIRED, PT_CUDA, PIP_TORCH, CV129), driver=DriverFacts(driver_cuda="11.4"))
    findings = [f for rule in rules.RULES for f in rule(facts, None)]
    assert {f.code for f in findings} == {"ED401", "ED402", "ED403", "ED404"}
    assert all(f.area == "conda" and f.reference and any(DL in e for e in f.evidence) for f in findings)


def test_ed401_in_a_mixed_env_proposes_torchs_cuda_not_cuda_version():
    """cuda-runtime 12.1, pytorch-cuda 12.1 and cuda-version 12.4 (tests/fixtures/public-conda24-...):
    ED401 proposed cuda-nvcc=12.4, which does not match torch's 12.1."""
    runtime = CondaPackage("cuda-runtime", "12.1.0", "0", "nvidia")
    cv124 = CondaPackage("cuda-version", "12.4", "h3060b56_3", "conda-forge")
    (f,) = found(Facts(conda=env(runtime, cv124, PT_RETIRED, PT_CUDA)), "ED401")
    assert f.title == "The conda env has the CUDA 12.1 runtime but no nvcc"
    assert f.fix == ("conda install -c conda-forge cuda-nvcc=12.1 cuda-version=12.1",)
    assert "pytorch 2.2.2 py3.10_cuda12.1_cudnn8.9.2_0 (pytorch)" in f.evidence
    assert "cuda-version 12.4 h3060b56_3 (conda-forge)" in f.evidence
    # a pip torch over it (the target Python is this env): torch.version.cuda is what runs
    pip_torch = TorchFacts(installed=True, version="2.5.1", cuda="12.4")
    here = Facts(
        conda=env(runtime, cv124, PT_RETIRED, PT_CUDA),
        torch=pip_torch,
        python=TargetPython(executable=f"{DL}/bin/python", prefix=DL),
    )
    (f,) = found(here, "ED401")
    assert f.fix == ("conda install -c conda-forge cuda-nvcc=12.4",)

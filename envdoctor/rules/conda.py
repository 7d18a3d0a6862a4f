"""ED4xx: the active conda environment's CUDA packages. Pure: facts in, findings out."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Optional

from envdoctor import commands
from envdoctor.codes import CODES
from envdoctor.facts import Facts
from envdoctor.facts.conda import CondaPackage
from envdoctor.findings import Finding
from envdoctor.parse import loose_version, major_minor
from envdoctor.table import Table

REF_CONDA_CUDA = (
    "https://conda-forge.org/docs/user/tipsandtricks/#installing-cuda-enabled-packages-like-tensorflow-and-pytorch"
)
REF_RETIRED = "https://github.com/pytorch/pytorch/issues/138506"
REF_MIXED = "https://www.anaconda.com/blog/using-pip-in-a-conda-environment"

#: pytorch builds: conda-forge "cuda126_py312h...", "cuda129_generic_py312_h..."; pytorch channel
#: "py3.10_cuda12.1_cudnn8.9.2_0".
_CF_BUILD = re.compile(r"^cuda(\d{2})(\d)_")
_PT_BUILD = re.compile(r"_cuda(\d+\.\d+)_")


def _pkgs(facts: Facts) -> dict[str, CondaPackage]:
    return {p.name: p for p in facts.conda.packages}


def _shown(p: CondaPackage) -> str:
    return f"{p.name} {p.version} {p.build or ''} ({p.channel or 'channel unknown'})".replace("  ", " ")


def torch_build_cuda(p: Optional[CondaPackage]) -> Optional[str]:
    """The CUDA X.Y a conda pytorch build was made for, from its build string; None for CPU builds."""
    if p is None or not p.build:
        return None
    m = _CF_BUILD.match(p.build)
    if m:
        return f"{int(m.group(1))}.{m.group(2)}"
    m = _PT_BUILD.search("_" + p.build)
    return m.group(1) if m else None


def env_cuda(facts: Facts) -> tuple[Optional[str], list[str]]:
    """(X.Y, evidence) of the env's CUDA line: cuda-version, else pytorch-cuda, cudatoolkit,
    cuda-runtime, cuda-cudart, else the pytorch build."""
    pk = _pkgs(facts)
    for name in ("cuda-version", "pytorch-cuda", "cudatoolkit", "cuda-runtime", "cuda-cudart"):
        if name in pk and major_minor(pk[name].version):
            return major_minor(pk[name].version), [_shown(pk[name])]
    cuda = torch_build_cuda(pk.get("pytorch"))
    return cuda, ([_shown(pk["pytorch"])] if cuda else [])


def _is_target(facts: Facts) -> bool:
    """The target Python (whose torch was inspected) lives in the active env."""
    p, c = facts.python, facts.conda
    return bool(p.prefix and c.active_prefix and p.prefix.rstrip("/") == c.active_prefix.rstrip("/"))


def torch_cuda(facts: Facts) -> tuple[Optional[str], list[str]]:
    """(X.Y, evidence) of the CUDA torch in this env runs: torch.version.cuda when the target Python
    is this env (a pip torch may have replaced conda's), else the pytorch package's build string,
    else pytorch-cuda; (None, []) without a CUDA torch."""
    t, pk = facts.torch, _pkgs(facts)
    if _is_target(facts) and t.installed and t.cuda and "torch" not in facts.skipped:
        cuda = major_minor(t.cuda)
        if cuda:
            return cuda, [f"torch {t.version}: torch.version.cuda = {t.cuda} (target Python {facts.python.executable})"]
    built = torch_build_cuda(pk.get("pytorch"))
    if built:
        return built, [_shown(pk["pytorch"])]
    if "pytorch-cuda" in pk and major_minor(pk["pytorch-cuda"].version):
        return major_minor(pk["pytorch-cuda"].version), [_shown(pk["pytorch-cuda"])]
    return None, []


def _where(facts: Facts) -> str:
    c = facts.conda
    return (
        f"active env {c.active_name or '?'} at {c.active_prefix} "
        f"({c.packages_source or c.source or c.flavor or 'conda'})"
    )


def runtime_without_nvcc(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED401: the env has a CUDA runtime but no nvcc to build extensions with."""
    c, pk = facts.conda, _pkgs(facts)
    if not c.active_prefix or not c.packages or "cuda-nvcc" in pk:
        return
    if any("conda" in tk.found_via for tk in facts.toolkits.toolkits):
        return
    cuda, evidence = torch_cuda(facts)
    line, line_evidence = env_cuda(facts)
    cuda = cuda or line
    if cuda is None:
        return
    evidence = evidence + [e for e in line_evidence if e not in evidence]
    pinned = pk.get("cuda-version")
    repin = pinned is not None and major_minor(pinned.version) not in (None, cuda)
    why = (
        f" cuda-version {pinned.version} pins the env's CUDA packages to {major_minor(pinned.version)}, "
        f"so the command moves it to torch's {cuda} with nvcc (the solver says what else would have to change)."
        if repin and pinned is not None
        else ""
    )
    yield Finding(
        "ED401",
        "info",
        f"The conda env has the CUDA {cuda} runtime but no nvcc",
        evidence=(_where(facts), *evidence, f"no cuda-nvcc package and no {c.active_prefix}/bin/nvcc"),
        fix=commands.conda_nvcc_install(c.flavor, cuda, with_cuda_version=repin),
        reference=REF_CONDA_CUDA,
        area="conda",
        explanation="Running torch needs only the runtime. Building from source (DeepSpeed ops, apex, "
        "flash-attn, custom kernels) needs nvcc of torch's CUDA release; installed into the env it "
        "becomes the nvcc on PATH, and torch builds with it when CUDA_HOME is not set." + why,
    )


def _conda_forge_env(facts: Facts) -> tuple[str, ...]:
    """A new env with torch from conda-forge: the way off the retired `pytorch` channel."""
    exe, name = facts.conda.flavor or "conda", f"{facts.conda.active_name or 'torch'}-cf"
    return (f"{exe} create -n {name} -c conda-forge --override-channels python pytorch-gpu", f"{exe} activate {name}")


def retired_pytorch_channel(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED402: pytorch from the `pytorch` channel, which publishes nothing after 2.5."""
    pk = _pkgs(facts)
    retired = [p for p in facts.conda.packages if p.channel == "pytorch" and p.name in ("pytorch", "pytorch-cuda")]
    if not retired:
        return
    yield Finding(
        "ED402",
        "warning",
        CODES["ED402"].title,
        evidence=(_where(facts), *(_shown(p) for p in retired))
        + ((f"channels: {', '.join(facts.conda.channels)} ({facts.conda.source})",) if facts.conda.channels else ()),
        fix=_conda_forge_env(facts),
        reference=REF_RETIRED,
        area="conda",
        explanation="PyTorch stopped publishing to its Anaconda channel after 2.5; this env can get no newer "
        "torch and mixes the `pytorch`/`nvidia` channels with conda-forge. conda-forge builds torch "
        "with CUDA (`pytorch-gpu` forces a CUDA build, matched to the driver through __cuda); "
        "reinstall your other packages in the new env. "
        + ("pytorch-cuda pins the CUDA runtime of the old builds." if "pytorch-cuda" in pk else ""),
    )


def env_cuda_too_new(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED403: the env's CUDA major is newer than the driver supports."""
    c = facts.conda
    driver_cuda = facts.driver.driver_cuda or c.virtual_cuda
    cuda, evidence = env_cuda(facts)
    built = torch_build_cuda(_pkgs(facts).get("pytorch"))
    if built and built != cuda:
        cuda, evidence = built, evidence + [_shown(_pkgs(facts)["pytorch"])]
    have, need = loose_version(driver_cuda), loose_version(cuda)
    if not c.active_prefix or have is None or need is None or need.release[0] <= have.release[0]:
        return
    if facts.torch.installed and facts.torch.cuda and _is_target(facts):
        return  # the target Python is this env: the torch rules (ED205) already say it
    source = "nvidia-smi / NVML" if facts.driver.driver_cuda else f"__cuda virtual package ({c.source})"
    exe = c.flavor or "conda"
    yield Finding(
        "ED403",
        "error",
        f"The conda env needs CUDA {cuda}, the driver supports only CUDA {driver_cuda}",
        evidence=(_where(facts), *evidence, f"driver supports CUDA {driver_cuda} ({source})"),
        fix=(
            "# upgrade the NVIDIA driver (see the driver findings), or move the env to the driver's CUDA line:",
            f"{exe} install -c conda-forge "
            f'"cuda-version<={have.release[0]}.{have.release[1] if len(have.release) > 1 else 0}"',
        ),
        reference=REF_CONDA_CUDA,
        area="conda",
        explanation=f"A CUDA {need.release[0]}.x runtime does not run on a driver of CUDA {have.release[0]}.x: "
        "torch.cuda.is_available() is False and CUDA calls fail with 'driver too old'.",
    )


def pip_torch_over_conda(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED404: torch from PyPI installed over a conda pytorch in the same env."""
    pk = _pkgs(facts)
    conda_torch, pip_torch = pk.get("pytorch"), pk.get("torch")
    if conda_torch is None or pip_torch is None or pip_torch.channel != "pypi" or conda_torch.channel == "pypi":
        return
    packages = facts.conda.packages
    pip_names = [p.name for p in packages if p.channel == "pypi" and p.name in ("torch", "torchvision", "torchaudio")]
    conda_names = [
        p.name for p in packages if p.channel != "pypi" and p.name in ("pytorch", "torchvision", "torchaudio")
    ]
    exe = facts.conda.flavor or "conda"
    explanation = (
        "Both write site-packages/torch; whichever was installed last overwrote part of the other, and "
        "conda still believes its own files are there. "
    )
    if conda_torch.channel == "pytorch":  # reinstalling conda's would keep the env on the retired channel
        fix = _conda_forge_env(facts)
        explanation += (
            "conda's pytorch comes from the retired `pytorch` channel (ED402), so reinstalling it "
            "would keep this env there: the commands make a new conda-forge env with one torch (or "
            f"remove conda's with `{exe} remove {' '.join(conda_names)}` and keep pip's)."
        )
    else:
        fix = (
            f"python -m pip uninstall -y {' '.join(pip_names)}",
            f"{exe} install --force-reinstall {' '.join(conda_names)}",
        )
        explanation += (
            "Keep one: the commands keep conda's (or remove conda's with "
            f"`{exe} remove {' '.join(conda_names)}` and keep pip's)."
        )
    yield Finding(
        "ED404",
        "warning",
        CODES["ED404"].title,
        evidence=(_where(facts), _shown(conda_torch), _shown(pip_torch)),
        fix=fix,
        reference=REF_MIXED,
        area="conda",
        explanation=explanation,
    )


RULES = (runtime_without_nvcc, retired_pytorch_channel, env_cuda_too_new, pip_torch_over_conda)

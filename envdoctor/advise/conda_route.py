"""The conda route: Miniforge (if no conda), the driver (if none), and one environment with torch
from conda-forge (``pytorch-gpu=2.13 ... cuda-version=13``), or from the retired pytorch channel for
the releases that were published there (torch 2.5 and older, ``pytorch-cuda=12.4`` or
``cudatoolkit=11.3``).
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import Version

from envdoctor.advise.choice import Choice
from envdoctor.advise.machine import Machine
from envdoctor.advise.plan import Plan, Step
from envdoctor.advise.routes import RouteDecision
from envdoctor.advise.steps import CHECK_TORCH, driver_step, status_warnings, ways
from envdoctor.parse import major, major_minor
from envdoctor.table import Table, TorchRelease

CONDA_ENV = "torch"
MINIFORGE = "~/miniforge3"


def conda_plan(m: Machine, table: Table, choice: Choice, decision: RouteDecision, with_nvcc: bool) -> Plan:
    """The conda route's plan for ``choice`` (made for any Python: the env brings its own)."""
    warnings = status_warnings(choice)
    rel = table.torch(choice.release or choice.torch) if choice.torch else None
    if not choice.ok or choice.status == "macos" or rel is None:
        if choice.status == "macos":
            warnings.append("macOS: conda-forge's pytorch has no CUDA here; the system route's pip wheel is the same")
        return Plan(
            "conda",
            choice.status,
            choice,
            (),
            decision.reasons,
            decision.rejected,
            tuple(warnings),
            ways_out=ways(m, table, choice, None),
            sources=choice.sources,
        )
    c = m.facts.conda
    tool = c.flavor or "conda"
    miniforge: list[Step] = []
    if "conda" in m.known and not c.exe:
        tool = f"{MINIFORGE}/bin/conda"
        miniforge = [
            Step(
                "Install Miniforge (conda with conda-forge as its channel)",
                (
                    'curl -fsSLO "https://github.com/conda-forge/miniforge/releases/latest/download/'
                    'Miniforge3-$(uname)-$(uname -m).sh"',
                    f'bash "Miniforge3-$(uname)-$(uname -m).sh" -b -p {MINIFORGE}',
                ),
                "no conda, mamba or micromamba was found",
            )
        ]
    py = _conda_python(rel, m.python)
    warnings = [w for w in warnings if "wheels need glibc" not in w and "marks torch" not in w]
    steps, w = driver_step(m, table, choice)
    steps += miniforge
    warnings += w
    gpu = choice.status == "ok"  # CUDA builds (not CPU)
    if rel.conda == "pytorch-channel":
        cmds, channel_story, w = _pytorch_channel(rel, choice, py, tool, gpu, with_nvcc)
    else:
        cmds, channel_story, w = _conda_forge(choice, py, tool, gpu, with_nvcc)
    warnings += w
    minor = major_minor(choice.torch)
    steps.append(
        Step(
            f"Create the conda environment '{CONDA_ENV}' with torch {minor} ({channel_story})",
            cmds,
            "each environment carries its own CUDA libraries: several GB of disk per env",
        )
    )
    prefix = c.base_prefix or (MINIFORGE if miniforge else None)
    env_python = f"{prefix}/envs/{CONDA_ENV}/bin/python" if prefix else f'"$({tool} run -n {CONDA_ENV} which python)"'
    reasons = decision.reasons
    if gpu:
        reasons += (
            f"torch {minor}: the newest release whose CUDA {major(choice.cuda)}.x "
            f"build runs on driver {m.driver or choice.driver_assumed} and has kernels for the GPUs",
        )
    steps.append(
        Step(
            "Verify",
            (
                f"{tool} run -n {CONDA_ENV} {CHECK_TORCH}",
                f"envdoctor check --python {env_python}",
                f"envdoctor bench --python {env_python}" + ("" if gpu else " --cpu"),
            ),
        )
    )
    return Plan(
        "conda",
        choice.status,
        choice,
        tuple(steps),
        reasons,
        decision.rejected,
        tuple(dict.fromkeys(warnings)),
        (),
        ways(m, table, choice, None),
        python=env_python,
        conda=channel_story,
        sources=choice.sources + ((rel.source,) if rel.source else ()),
    )


def _pytorch_channel(
    rel: TorchRelease, choice: Choice, py: str, tool: str, gpu: bool, with_nvcc: bool
) -> tuple[tuple[str, ...], str, list[str]]:
    """(commands, channel story, warnings) for a release of the retired pytorch channel."""
    warnings: list[str] = []
    nvcc: tuple[str, ...] = ()
    pkgs = [f"python={py}", f"pytorch={choice.torch}"]
    pkgs += [f"torchvision={choice.torchvision}"] if choice.torchvision else []
    pkgs += [f"torchaudio={choice.torchaudio}"] if choice.torchaudio else []
    channels = "-c pytorch"
    if not gpu:
        pkgs.append("cpuonly")
        channel_story = "pytorch channel, cpuonly"
    elif rel.pytorch_cuda:
        pc = _pick_line(rel.pytorch_cuda, choice.cuda)
        pkgs.append(f"pytorch-cuda={pc}")
        channels = "-c pytorch -c nvidia"
        channel_story = f"pytorch channel, pytorch-cuda={pc}"
        if with_nvcc:
            nvcc = (f"{tool} install -y -n {CONDA_ENV} -c nvidia cuda-nvcc={pc}",)
    else:
        tk = _pick_line(rel.conda_cudatoolkit, choice.cuda)
        pkgs.append(f"cudatoolkit={tk}")
        channels = "-c pytorch -c conda-forge" if tk == "11.6" else "-c pytorch"
        channel_story = f"pytorch channel, cudatoolkit={tk}"
        if with_nvcc:
            warnings.append(
                "--with-nvcc: the cudatoolkit package of this era has no nvcc; "
                "use a system toolkit of the same CUDA version"
            )
    create = f"{tool} create -y -n {CONDA_ENV} {channels} {' '.join(pkgs)}"
    warnings.append(
        f"torch {choice.torch} comes from the pytorch conda channel, which stopped with 2.5 "
        "(pytorch/pytorch#138506); newer torch is on conda-forge"
    )
    return (create,) + nvcc, channel_story, warnings


def _conda_forge(
    choice: Choice, py: str, tool: str, gpu: bool, with_nvcc: bool
) -> tuple[tuple[str, ...], str, list[str]]:
    """(commands, channel story, warnings) for conda-forge's pytorch-gpu / pytorch-cpu."""
    warnings: list[str] = []
    minor = major_minor(choice.torch)
    if gpu:
        cuda_major = major(choice.cuda)
        pkgs = [f"python={py}", f"pytorch-gpu={minor}", "torchvision", f"cuda-version={cuda_major}"]
        channel_story = f"conda-forge, CUDA {cuda_major}.x build (cuda-version={cuda_major})"
    else:
        pkgs = [f"python={py}", f"pytorch-cpu={minor}", "torchvision"]
        channel_story = "conda-forge, CPU build"
    if with_nvcc and gpu:
        pkgs.append("cuda-nvcc")
    override = " --override-channels" if tool in ("conda", "mamba") else ""
    create = f"{tool} create -y -n {CONDA_ENV} -c conda-forge{override} {' '.join(pkgs)}"
    if gpu:
        warnings.append(
            "conda-forge picks the CUDA build whose cuda-version the driver allows (the __cuda "
            "virtual package); if the solver finds none, the driver is too old for it"
        )
    if with_nvcc and not gpu:
        warnings.append("--with-nvcc: CPU builds need no nvcc; none is added")
    return (create,), channel_story, warnings


def _conda_python(rel: TorchRelease, wanted: str | None) -> str:
    """The env's Python: the target's series when the release has it, else 3.12, else the newest."""
    plain = [p for p in rel.pythons if not p.endswith("t")]
    if wanted and wanted in plain:
        return wanted
    if "3.12" in plain:
        return "3.12"
    return max(plain, key=Version) if plain else "3.12"


def _pick_line(lines: Sequence[str], cuda: str | None) -> str:
    """The CUDA line of a conda package list closest to ``cuda`` from below (same major first)."""
    if cuda in lines:
        return str(cuda)
    want = Version(cuda) if cuda else None
    below = [x for x in lines if want is None or Version(x) <= want]
    return max(below or list(lines), key=Version)

"""The system route: the driver (if none), optionally NVIDIA's CUDA toolkit for nvcc, a virtual
environment, and the pip wheel of the choice from its index (uv as the other spelling).

For an RTX 4090 without a driver on Ubuntu 24.04 the commands are the driver install (``sudo apt-get
install -y nvidia-driver-580-open``, reboot), ``python3.12 -m venv ~/venvs/torch`` and
``~/venvs/torch/bin/python -m pip install torch==2.13.0+cu130 torchvision==0.28.0 --index-url
https://download.pytorch.org/whl/cu130``.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from envdoctor import commands
from envdoctor.advise.choice import Choice
from envdoctor.advise.machine import Machine
from envdoctor.advise.plan import Plan, Step
from envdoctor.advise.routes import RouteDecision, distro_row
from envdoctor.advise.steps import driver_step, status_warnings, verify_step, ways
from envdoctor.compat import variant_tag
from envdoctor.table import Table

VENV = "~/venvs/torch"


def system_plan(m: Machine, table: Table, choice: Choice, decision: RouteDecision, with_nvcc: bool, base: str) -> Plan:
    """The system route's plan; ``base`` is the index base (``https://download.pytorch.org/whl``,
    or ``$ENVDOCTOR_INDEX_URL`` when the commands read it from that variable)."""
    warnings = status_warnings(choice)
    steps: list[Step] = []
    alternatives: list[str] = []
    if choice.status == "amd":
        return Plan(
            "system",
            "amd",
            choice,
            (),
            decision.reasons,
            decision.rejected,
            tuple(warnings),
            index_url=choice.index_url,
            sources=choice.sources,
            index_check=choice.index_check,
        )
    env_steps, target = _target_python(m)

    def pip_for(torch: str, variant: str | None) -> tuple[str, ...]:
        make_env = () if choice.ok else tuple(c for s in env_steps for c in s.commands)
        return make_env + (_pip_line(target, _companions(table, torch, variant), base),)

    if not choice.ok or not choice.torch:
        status = choice.status if not choice.ok else "no-fit"
        return Plan(
            "system",
            status,
            choice,
            (),
            decision.reasons,
            decision.rejected,
            tuple(warnings),
            ways_out=ways(m, table, choice, pip_for),
            sources=choice.sources,
            index_check=choice.index_check,
            python=target,
        )
    driver_steps, w = driver_step(m, table, choice)
    steps += driver_steps
    warnings += w
    if with_nvcc:
        tk, w = _toolkit_step(m, table, choice)
        steps += tk
        warnings += w
    have = installed_build(m, choice)
    if have is not None:
        exe = m.python_exe or target
        steps.append(verify_step(exe, cpu=choice.variant == "cpu"))
        return Plan(
            "system",
            choice.status,
            choice,
            tuple(steps),
            decision.reasons + (f"already installed: nothing to install ({exe} has {have})",),
            decision.rejected,
            tuple(dict.fromkeys(warnings)),
            (),
            ways(m, table, choice, pip_for),
            index_url=_index_for(choice, base) if choice.variant != "pypi" else choice.index_url,
            python=exe,
            sources=choice.sources,
            index_check=choice.index_check,
            installed=True,
        )
    steps += env_steps
    index = _index_for(choice, base)
    specs = " ".join(_pip_specs(choice))
    if choice.status == "macos":
        steps.append(Step(f"Install {choice.label} from PyPI", (f"{target} -m pip install {specs}",)))
    else:
        steps.append(Step(f"Install {choice.label} from {index}", (_pip_line(target, choice, base),)))
        alternatives.append(f"uv pip install --python {target} {specs} --index-url {index}")
    steps.append(verify_step(target, cpu=choice.variant == "cpu"))
    return Plan(
        "system",
        choice.status,
        choice,
        tuple(steps),
        decision.reasons,
        decision.rejected,
        tuple(dict.fromkeys(warnings)),
        tuple(alternatives),
        ways(m, table, choice, pip_for),
        index_url=index if choice.variant != "pypi" else choice.index_url,
        python=target,
        sources=choice.sources + _distro_source(m, table, with_nvcc),
        index_check=choice.index_check,
    )


def installed_build(m: Machine, choice: Choice) -> str | None:
    """The target Python already has the chosen build: ``"torch 2.13.0+cpu, read from its
    metadata"``; None otherwise. The version must match, and so must the build: its local label
    (``+cpu``, ``+cu130``), or the CUDA version torch reports. A bare ``2.13.0`` without either
    (a PyPI wheel, only its metadata read) is not taken as a match: pip then reinstalls, which is safe.
    An installed torchvision or torchaudio of another release than the table pairs is not a match
    either: the install line then puts the paired one in.
    """
    t = m.facts.torch
    if not (t.installed and t.version and choice.torch and m.python_exe):
        return None
    try:
        v = Version(t.version)
    except InvalidVersion:
        return None
    if v.public != Version(choice.torch).public:
        return None
    label = v.local
    if not label and t.cuda:
        label = variant_tag(t.cuda)
    if not label or label != choice.variant:
        return None
    for have, paired in ((t.torchvision, choice.torchvision), (t.torchaudio, choice.torchaudio)):
        if have and paired and _public(have) != _public(paired):
            return None  # a companion of another release: the install line replaces it
    return f"torch {t.version}"


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def _pip_specs(choice: Choice) -> list[str]:
    """``torch==2.13.0+cu130 torchvision==0.28.0``: the local label pins the CUDA build, so an
    installed ``+cpu`` torch of the same version is replaced rather than "already satisfied"."""
    local = f"+{choice.variant}" if choice.variant and choice.variant.startswith("cu") else ""
    specs = [f"torch=={choice.torch}{local}"]
    if choice.torchvision:
        specs.append(f"torchvision=={choice.torchvision}")
    if choice.torchaudio:
        specs.append(f"torchaudio=={choice.torchaudio}")
    return specs


def _index_for(choice: Choice, base: str) -> str | None:
    """``https://download.pytorch.org/whl/cu130``; a base read from a variable is quoted for the
    shell: ``"$ENVDOCTOR_INDEX_URL/cu130"``."""
    if choice.variant == "pypi" or not choice.variant:
        return None
    url = f"{base}/{choice.variant}"
    return f'"{url}"' if base.startswith("$") else url


def _pip_line(target: str, choice: Choice, base: str) -> str:
    return f"{target} -m pip install {' '.join(_pip_specs(choice))} --index-url {_index_for(choice, base)}"


def _companions(table: Table, torch: str, variant: str | None) -> Choice:
    """A bare choice of ``torch`` on ``variant`` with its torchvision/torchaudio from the table."""
    rel = table.torch(torch)
    patch = rel.patch(torch) if rel is not None else None
    return Choice(
        "ok",
        torch=torch,
        variant=variant,
        torchvision=patch.torchvision if patch else None,
        torchaudio=patch.torchaudio if patch else None,
    )


def _target_python(m: Machine) -> tuple[list[Step], str]:
    """(steps that make the environment, the interpreter to install into)."""
    exe = m.python_exe
    p = m.facts.python
    if exe and (p.venv or p.conda_env):
        return [], exe
    base = exe or (f"python{m.python.rstrip('t')}" if m.python else "python3")
    series = m.python.rstrip("t") if m.python else "3"
    return [
        Step(f"Create a virtual environment at {VENV}", (f"{base} -m venv {VENV}",), _venv_note(m, series))
    ], f"{VENV}/bin/python"


def _venv_note(m: Machine, series: str) -> str:
    """Where the venv module comes from on this distribution: a package of its own on Debian and
    Ubuntu (python3.X-venv), part of the Python package itself on the RHEL family and Fedora."""
    fam = commands.family(m.facts.system)
    if fam == "debian":
        return (
            "a virtual environment keeps torch apart from the system's Python (Debian and Ubuntu "
            "refuse pip installs into it: externally-managed-environment); if venv fails with "
            f"'ensurepip is not available', install python{series}-venv first"
        )
    if fam == "rhel":
        pkg = "python3" if series == "3" else f"python{series}"
        return (
            "a virtual environment keeps torch apart from the system's Python (dnf owns that one); "
            f"venv and ensurepip come with the {pkg} package itself here (no separate -venv package): "
            f"if python{series} is missing, sudo dnf install -y {pkg}"
        )
    return (
        "a virtual environment keeps torch apart from the system's Python; if venv fails with "
        f"'ensurepip is not available', install your distribution's venv support for Python {series} "
        f"(Debian/Ubuntu: python{series}-venv)"
    )


def _toolkit_step(m: Machine, table: Table, choice: Choice) -> tuple[list[Step], list[str]]:
    """NVIDIA's cuda-toolkit-X-Y of torch's CUDA major.minor, where the distribution is served."""
    if not choice.cuda:
        return [], ["--with-nvcc: CPU wheels need no CUDA toolkit; none is installed"]
    major, minor = Version(choice.cuda).release[:2]
    line = f"{major}.{minor}"
    system = m.facts.system
    if system.wsl:
        cmds = commands.nvidia_repo_install(system, (f"cuda-toolkit-{major}-{minor}",), table=table)
        return [
            Step(
                f"CUDA toolkit {line} (nvcc) from NVIDIA's WSL repository",
                cmds + _cuda_path(line),
                "WSL: install the toolkit only (cuda-toolkit-X-Y), never a driver, inside WSL",
            )
        ], []
    distro = distro_row(m, table)
    if distro is None:
        return [], [
            f"--with-nvcc: {m.os_label} is not served by NVIDIA's CUDA repository; "
            "no system-wide nvcc from it (the conda route's cuda-nvcc works anywhere)"
        ]
    if line not in distro.cuda_lines:
        same = [x for x in distro.cuda_lines if x.split(".")[0] == str(major)]
        hint = (
            f"its newest CUDA {major}.x line is {same[-1]}"
            if same
            else f"it has no CUDA {major}.x toolkit at all (newest: {distro.cuda_lines[-1]})"
        )
        return [], [
            f"--with-nvcc: NVIDIA's {distro.repo_dir} repository has no CUDA {line} toolkit, which "
            f"torch {choice.torch}+{choice.variant} would need; {hint}; a conda env with cuda-nvcc "
            "is the other way to an nvcc that matches torch"
        ]
    pkg = distro.toolkit_package_for(line)
    pm = distro.package_manager or {"debian": "apt"}.get(distro.family, "dnf")
    cmds = commands.nvidia_repo_install(system, (pkg,), distro.repo_dir, pm)
    warnings = []
    if not distro.confirmed("cuda_lines"):
        warnings.append(
            f"envdoctor's table does not confirm which CUDA lines NVIDIA's {distro.repo_dir} "
            "repository holds; if the package is missing, see its directory listing"
        )
    return [
        Step(
            f"CUDA toolkit {line} (nvcc), the same major.minor as torch's CUDA, from NVIDIA's repository",
            cmds + _cuda_path(line),
            f"toolkit only ({pkg}); the driver comes from its own step",
        )
    ], warnings


def _cuda_path(line: str) -> tuple[str, ...]:
    root = f"/usr/local/cuda-{line}"
    return (
        "# put nvcc on PATH (add these two lines to ~/.bashrc):",
        f"export PATH={root}/bin:$PATH",
        f"export CUDA_HOME={root}",
    )


def _distro_source(m: Machine, table: Table, with_nvcc: bool) -> tuple[str, ...]:
    d = distro_row(m, table) if with_nvcc else None
    return (d.source,) if d is not None and d.source else ()

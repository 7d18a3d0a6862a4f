"""The plan: exact commands, in order, for one route. Printed, never run.

>>> m = apply_overrides(blank_machine(), Overrides(driver="580.95.05", gpus=("H100",),
...                     python_version="3.12", os="ubuntu:24.04"), t)
>>> recommend(m, t).commands[1]
'~/venvs/torch/bin/python -m pip install torch==2.13.0+cu130 torchvision==0.28.0 --index-url https://download.pytorch.org/whl/cu130'

Every plan ends with the verification step (``envdoctor check``, ``envdoctor bench``). Command
builders here are pure; the driver install comes from :func:`envdoctor.commands.driver_install`
and the NVIDIA Container Toolkit install from the docker rules, so each command is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, List, Optional, Sequence, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor import commands
from envdoctor.compat import driver_support, open_modules, variant_tag
from envdoctor.advise.choose import (Availability, Choice, branch_driver, choose_amd,
                                     choose_macos, choose_variant, parse_torch_spec, recommended_branch)
from envdoctor.advise.routes import RouteDecision, RouteRejection, choose_route, distro_row, nvidia_runtime
from envdoctor.advise.whatif import Machine
from envdoctor.parse import version

SCHEMA = "envdoctor.plan/1"
CONDA_ENV = "torch"
MINIFORGE = "~/miniforge3"
VENV = "~/venvs/torch"
#: Options NVIDIA's PyTorch container notes recommend for ``docker run``.
DOCKER_RUN = "docker run {gpus} --rm -it --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 {image}"
CHECK_TORCH = 'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"'


@dataclass(frozen=True)
class Step:
    """One step of a plan: a title, commands in order (``#`` lines are comments), a note."""

    title: str
    commands: Tuple[str, ...]
    note: Optional[str] = None


@dataclass(frozen=True)
class Way:
    """A way out with its commands (``kind`` as in :class:`~envdoctor.advise.choose.WayOut`)."""

    kind: str
    text: str
    commands: Tuple[str, ...] = ()
    torch: Optional[str] = None
    variant: Optional[str] = None
    branch: Optional[str] = None


@dataclass(frozen=True)
class Image:
    """The NGC image for the docker route."""

    image: str                    # "nvcr.io/nvidia/pytorch:25.12-py3"
    tag: str
    torch: str                    # "2.10.0a0+b4e4ee81d3"
    cuda: str                     # "13.1.0"
    forward_compat: bool = False
    unconfirmed: bool = False
    source: str = ""
    compatibility: str = "direct"     # driver vs the image's CUDA: direct | minor-version | forward-compat


@dataclass(frozen=True)
class Plan:
    route: str
    status: str                             # ok | cpu | macos | no-fit | amd
    choice: Choice
    steps: Tuple[Step, ...] = ()
    reasons: Tuple[str, ...] = ()           # why this route
    rejected: Tuple[RouteRejection, ...] = ()
    warnings: Tuple[str, ...] = ()
    alternatives: Tuple[str, ...] = ()      # other spellings of a step (uv)
    ways_out: Tuple[Way, ...] = ()
    image: Optional[Image] = None
    index_url: Optional[str] = None
    python: Optional[str] = None            # the interpreter (or env Python) the plan installs into
    conda: Optional[str] = None             # the conda create command's channel story
    sources: Tuple[str, ...] = ()
    index_check: str = "offline-table"
    machine: Optional[Machine] = None
    installed: bool = False                 # the chosen build is already in the target Python: nothing to install
    index_env: Optional[str] = None         # commands read the index base from this variable (it holds credentials)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "cpu", "macos")

    @property
    def commands(self) -> Tuple[str, ...]:
        """Every command of every step, in order, without comment lines."""
        return tuple(c for s in self.steps for c in s.commands if not c.lstrip().startswith("#"))

    @property
    def torch(self) -> Optional[str]:
        if self.route == "docker":
            return self.image.torch if self.image else None
        return self.choice.torch

    @property
    def variant(self) -> Optional[str]:
        return self.choice.variant if self.route == "system" else None

    @property
    def cuda(self) -> Optional[str]:
        if self.route == "docker":
            return self.image.cuda if self.image else None
        return self.choice.cuda


# --- entry point --------------------------------------------------------------------------------

def recommend(m: Machine, table: Any, route: Optional[str] = None, torch_spec: Optional[str] = None,
              with_nvcc: bool = False, available: Optional[Availability] = None,
              index_base: Optional[str] = None, index_env: Optional[str] = None,
              index_export: Optional[str] = None) -> Plan:
    """The route (chosen unless given), the torch choice, and the commands for it.

    ``index_env``: the commands read the index base from this environment variable
    (``--index-url "$ENVDOCTOR_INDEX_URL/cu130"``) instead of spelling it out: the base holds
    credentials, which envdoctor never prints (a masked URL would not run). ``index_export``: the
    base came from ``--index-url``, not from that variable, so the plan first sets the variable;
    this is the masked URL to show in that line, with a comment to put the real one in.
    """
    spec = parse_torch_spec(torch_spec)
    decision = choose_route(m, table, route, with_nvcc)
    real_base = (index_base or getattr(table, "index_base", "") or "https://download.pytorch.org/whl").rstrip("/")
    base = f"${index_env}" if index_env else real_base
    if m.platform == "darwin":
        choice = choose_macos(table, spec, m.python)
    elif m.amd and not m.nvidia:
        choice = choose_amd(table, [g.name or "AMD GPU" for g in m.amd])
    else:
        system = decision.route == "system"
        args = (table, spec, m.driver, [g.cc for g in m.nvidia], m.python if system else None, m.glibc, m.arch)
        choice = choose_variant(*args, available=available if system else None, os=_driver_os(m))
        distro = distro_row(m, table) if (system and with_nvcc and m.nvidia and not m.facts.system.wsl) else None
        if distro is not None and choice.ok and choice.cuda:
            # Always chosen within the repository's CUDA lines, so that the ways out (a driver
            # upgrade, another Python, a newer glibc) stay within them too.
            matched = choose_variant(*args, available=available, cudas=distro.cuda_lines, os=_driver_os(m))
            if matched.ok and _line(choice.cuda) not in distro.cuda_lines:
                choice = replace(matched, reasons=matched.reasons + (
                    f"--with-nvcc: CUDA {_line(matched.cuda)} is the newest line that both a torch wheel and "
                    f"NVIDIA's {distro.repo_dir} repository have (torch's extensions need nvcc of the same CUDA)",))
            elif matched.ok:
                choice = matched
    build = {"system": _system, "conda": _conda, "docker": _docker}[decision.route]
    plan = build(m, table, choice, decision, spec, with_nvcc, base)
    extra = []
    if m.amd and m.nvidia:
        extra.append("AMD GPUs were left out: envdoctor plans for the NVIDIA GPUs only")
    unknown_gpu = [g.name or g.source for g in m.nvidia if not g.cc]
    if unknown_gpu:
        extra.append(f"compute capability unknown for {', '.join(unknown_gpu)}: kernels not checked")
    for g in m.nvidia:
        if g.inferred and g.cc:
            arch = table.architecture(g.cc)
            extra.append(f"{g.name} is not in envdoctor's table: compute capability {g.cc}"
                         f"{' (' + arch.name + ')' if arch else ''} is inferred from its name ({g.inferred} series); "
                         f"give --gpu with the real compute capability if that is wrong")
    plan = replace(plan, warnings=tuple(dict.fromkeys(plan.warnings + tuple(extra))), machine=m)
    if index_env:
        plan = _with_index_env(plan, index_env, index_export, real_base)
    return _never_torch_none(plan)


def _with_index_env(plan: Plan, name: str, export: Optional[str], real_base: str) -> Plan:
    """Commands that take the index base from ``$name``; the JSON ``index_url`` keeps the real URL
    (masked on output like every URL with credentials). When the base came from ``--index-url``,
    the steps (and each way out) that use the variable start by setting it."""
    ref = f"${name}"
    uses = any(ref in c for c in plan.commands) or any(ref in c for w in plan.ways_out for c in w.commands)
    if not uses:
        return plan
    line = f"export {name}='{export}'  # set it to your mirror URL with its credentials" if export else None
    steps = plan.steps
    at = next((i for i, st in enumerate(steps) if any(ref in c for c in st.commands)), None)
    if line and at is not None:      # right before its first use: after a reboot, in a script's second part
        steps = steps[:at] + (Step(f"Point {name} at your wheel mirror (envdoctor does not print its "
                                   "credentials)", (line,)),) + steps[at:]
    ways = tuple(replace(w, commands=_export_before(w.commands, ref, line)) if line else w for w in plan.ways_out)
    index_url = plan.index_url
    if index_url and index_url.startswith(f'"{ref}'):
        index_url = real_base + index_url[len(ref) + 1:].rstrip('"')
    return replace(plan, steps=steps, ways_out=ways, index_url=index_url, index_env=name)


def _export_before(cmds: Tuple[str, ...], ref: str, line: str) -> Tuple[str, ...]:
    """``line`` right before the first command that reads ``ref`` (after any reboot)."""
    at = next((i for i, c in enumerate(cmds) if ref in c), None)
    return cmds if at is None else cmds[:at] + (line,) + cmds[at:]


def _never_torch_none(plan: Plan) -> Plan:
    """A plan that would install "torch None" is no plan: nothing fits (never print such a step)."""
    if plan.ok and plan.route != "docker" and not plan.torch:
        return replace(plan, status="no-fit", steps=(), alternatives=(),
                       warnings=("nothing fits: no torch wheel within the request runs on this machine as it is",)
                       + plan.warnings)
    return plan


# --- shared pieces -----------------------------------------------------------------------------

def _open_modules(m: Machine, table: Any) -> bool:
    """Turing and newer take the open kernel modules; Maxwell, Pascal and Volta need the proprietary ones."""
    return open_modules(table, [g.cc for g in m.nvidia])


def _driver_os(m: Machine) -> str:
    """Whose driver minimums apply: under WSL2 the driver is the Windows one."""
    return "windows" if m.facts.system.wsl == "wsl2" else "linux"


def _driver_step(m: Machine, table: Any, choice: Choice) -> Tuple[List[Step], List[str]]:
    """Install the driver first when the machine has NVIDIA GPUs and no driver."""
    if not m.nvidia or m.driver or "driver" not in m.known:
        return [], []
    branch = choice.driver_needed or recommended_branch(table, [g.cc for g in m.nvidia])
    if m.facts.system.container:
        return [], [f"no NVIDIA driver visible inside this {m.facts.system.container} container: install driver "
                    f"branch {branch} on the host and start the container with --gpus all"]
    cmds = commands.driver_install(m.facts.system, branch, _open_modules(m, table), table)
    flavor = "open kernel modules" if _open_modules(m, table) else "proprietary kernel modules"
    return [Step(f"Install the NVIDIA driver, branch {branch} ({flavor}), then reboot", cmds)], []


def _uses_gpu(choice: Choice) -> bool:
    """CUDA builds (not CPU, macOS or AMD)."""
    return choice.status == "ok"


def _verify(python: Optional[str]) -> Step:
    opt = f" --python {python}" if python else ""
    return Step("Verify", (f"envdoctor check{opt}", f"envdoctor bench{opt}"))


def _ways(m: Machine, table: Any, choice: Choice, pip_for: Any) -> Tuple[Way, ...]:
    """Ways out with commands: the driver install for an upgrade, the install line for another torch."""
    out = []
    for w in choice.ways_out:
        cmds: Tuple[str, ...] = ()
        if w.kind in ("upgrade-driver", "install-driver") and w.branch:
            cmds = commands.driver_install(m.facts.system, w.branch, _open_modules(m, table), table)
            if pip_for and w.torch:
                cmds += pip_for(w.torch, w.variant)
        elif w.kind in ("works-today", "direct", "confirmed-kernels", "torch-spec", "cpu") and pip_for and w.torch:
            cmds = pip_for(w.torch, w.variant)
        out.append(Way(w.kind, w.text, cmds, w.torch, w.variant, w.branch))
    return tuple(out)


def _status_warnings(choice: Choice) -> List[str]:
    if choice.status == "no-fit":
        return ["nothing fits: no torch wheel within the request runs on this machine as it is"] + list(choice.warnings)
    return list(choice.warnings)


# --- system: driver, optional toolkit, pip/uv wheels -------------------------------------------

def _pip_specs(choice: Choice) -> List[str]:
    """``torch==2.13.0+cu130 torchvision==0.28.0``: the local label pins the CUDA build, so an
    installed ``+cpu`` torch of the same version is replaced rather than "already satisfied"."""
    local = f"+{choice.variant}" if choice.variant and choice.variant.startswith("cu") else ""
    specs = [f"torch=={choice.torch}{local}"]
    if choice.torchvision:
        specs.append(f"torchvision=={choice.torchvision}")
    if choice.torchaudio:
        specs.append(f"torchaudio=={choice.torchaudio}")
    return specs


def _index_for(choice: Choice, base: str) -> Optional[str]:
    """``https://download.pytorch.org/whl/cu130``; a base read from a variable is quoted for the
    shell: ``"$ENVDOCTOR_INDEX_URL/cu130"``."""
    if choice.variant == "pypi" or not choice.variant:
        return None
    url = f"{base}/{choice.variant}"
    return f'"{url}"' if base.startswith("$") else url


def _target_python(m: Machine) -> Tuple[List[Step], str]:
    """(steps that make the environment, the interpreter to install into)."""
    exe = m.python_exe
    p = m.facts.python
    if exe and (p.venv or p.conda_env):
        return [], exe
    base = exe or (f"python{m.python.rstrip('t')}" if m.python else "python3")
    series = m.python.rstrip("t") if m.python else "3"
    return [Step(f"Create a virtual environment at {VENV}", (f"{base} -m venv {VENV}",),
                 _venv_note(m, series))], f"{VENV}/bin/python"


def _venv_note(m: Machine, series: str) -> str:
    """Where the venv module comes from on this distribution: a package of its own on Debian and
    Ubuntu (python3.X-venv), part of the Python package itself on the RHEL family and Fedora."""
    fam = commands.family(m.facts.system)
    if fam == "debian":
        return ("a virtual environment keeps torch apart from the system's Python (Debian and Ubuntu "
                "refuse pip installs into it: externally-managed-environment); if venv fails with "
                f"'ensurepip is not available', install python{series}-venv first")
    if fam == "rhel":
        pkg = "python3" if series == "3" else f"python{series}"
        return ("a virtual environment keeps torch apart from the system's Python (dnf owns that one); "
                f"venv and ensurepip come with the {pkg} package itself here (no separate -venv package): "
                f"if python{series} is missing, sudo dnf install -y {pkg}")
    return ("a virtual environment keeps torch apart from the system's Python; if venv fails with "
            f"'ensurepip is not available', install your distribution's venv support for Python {series} "
            f"(Debian/Ubuntu: python{series}-venv)")


def _toolkit_step(m: Machine, table: Any, choice: Choice) -> Tuple[List[Step], List[str]]:
    """NVIDIA's cuda-toolkit-X-Y of torch's CUDA major.minor, where the distribution is served."""
    if not choice.cuda:
        return [], ["--with-nvcc: CPU wheels need no CUDA toolkit; none is installed"]
    major, minor = Version(choice.cuda).release[:2]
    line = f"{major}.{minor}"
    system = m.facts.system
    if system.wsl:
        cmds = commands.nvidia_repo_install(system, (f"cuda-toolkit-{major}-{minor}",), table=table)
        return [Step(f"CUDA toolkit {line} (nvcc) from NVIDIA's WSL repository", cmds + _cuda_path(line),
                     "WSL: install the toolkit only (cuda-toolkit-X-Y), never a driver, inside WSL")], []
    distro = distro_row(m, table)
    if distro is None:
        return [], [f"--with-nvcc: {m.os_label} is not served by NVIDIA's CUDA repository; "
                    "no system-wide nvcc from it (the conda route's cuda-nvcc works anywhere)"]
    if line not in distro.cuda_lines:
        same = [x for x in distro.cuda_lines if x.split(".")[0] == str(major)]
        hint = (f"its newest CUDA {major}.x line is {same[-1]}" if same else
                f"it has no CUDA {major}.x toolkit at all (newest: {distro.cuda_lines[-1]})")
        return [], [f"--with-nvcc: NVIDIA's {distro.repo_dir} repository has no CUDA {line} toolkit, which "
                    f"torch {choice.torch}+{choice.variant} would need; {hint}; a conda env with cuda-nvcc "
                    "is the other way to an nvcc that matches torch"]
    pkg = distro.toolkit_package_for(line)
    pm = distro.package_manager or {"debian": "apt"}.get(distro.family, "dnf")
    cmds = commands.nvidia_repo_install(system, (pkg,), distro.repo_dir, pm)
    warnings = []
    if not distro.confirmed("cuda_lines"):
        warnings.append(f"envdoctor's table does not confirm which CUDA lines NVIDIA's {distro.repo_dir} "
                        "repository holds; if the package is missing, see its directory listing")
    return [Step(f"CUDA toolkit {line} (nvcc), the same major.minor as torch's CUDA, from NVIDIA's repository",
                 cmds + _cuda_path(line), f"toolkit only ({pkg}); the driver comes from its own step")], warnings


def _cuda_path(line: str) -> Tuple[str, ...]:
    root = f"/usr/local/cuda-{line}"
    return ("# put nvcc on PATH (add these two lines to ~/.bashrc):",
            f"export PATH={root}/bin:$PATH",
            f"export CUDA_HOME={root}")


def _system(m: Machine, table: Any, choice: Choice, decision: RouteDecision, spec: Optional[SpecifierSet],
            with_nvcc: bool, base: str) -> Plan:
    warnings = _status_warnings(choice)
    steps: List[Step] = []
    alternatives: List[str] = []
    if choice.status == "amd":
        return Plan("system", "amd", choice, (), decision.reasons, decision.rejected, tuple(warnings),
                    index_url=choice.index_url, sources=choice.sources, index_check=choice.index_check)
    env_steps, target = _target_python(m)

    def pip_for(torch: str, variant: Optional[str]) -> Tuple[str, ...]:
        make_env = () if choice.ok else tuple(c for s in env_steps for c in s.commands)
        return make_env + (_pip_line(target, _companions(table, torch, variant), base),)

    if not choice.ok or not choice.torch:
        status = choice.status if not choice.ok else "no-fit"
        return Plan("system", status, choice, (), decision.reasons, decision.rejected, tuple(warnings),
                    ways_out=_ways(m, table, choice, pip_for), sources=choice.sources,
                    index_check=choice.index_check, python=target)
    driver_steps, w = _driver_step(m, table, choice)
    steps += driver_steps
    warnings += w
    if with_nvcc:
        tk, w = _toolkit_step(m, table, choice)
        steps += tk
        warnings += w
    have = installed_build(m, choice)
    if have is not None:
        exe = m.python_exe or target
        steps.append(_verify(exe))
        return Plan("system", choice.status, choice, tuple(steps),
                    decision.reasons + (f"already installed: nothing to install ({exe} has {have})",),
                    decision.rejected, tuple(dict.fromkeys(warnings)), (), _ways(m, table, choice, pip_for),
                    index_url=_index_for(choice, base) if choice.variant != "pypi" else choice.index_url,
                    python=exe, sources=choice.sources, index_check=choice.index_check, installed=True)
    steps += env_steps
    index = _index_for(choice, base)
    specs = " ".join(_pip_specs(choice))
    if choice.status == "macos":
        steps.append(Step(f"Install {choice.label} from PyPI", (f"{target} -m pip install {specs}",)))
    else:
        steps.append(Step(f"Install {choice.label} from {index}", (_pip_line(target, choice, base),)))
        alternatives.append(f"uv pip install --python {target} {specs} --index-url {index}")
    steps.append(_verify(target))
    return Plan("system", choice.status, choice, tuple(steps), decision.reasons, decision.rejected,
                tuple(dict.fromkeys(warnings)), tuple(alternatives), _ways(m, table, choice, pip_for),
                index_url=index if choice.variant != "pypi" else choice.index_url, python=target,
                sources=choice.sources + _distro_source(m, table, with_nvcc), index_check=choice.index_check)


def installed_build(m: Machine, choice: Choice) -> Optional[str]:
    """The target Python already has the chosen build: ``"torch 2.13.0+cpu, read from its
    metadata"``; None otherwise. The version must match, and so must the build: its local label
    (``+cpu``, ``+cu130``), or the CUDA version torch reports. A bare ``2.13.0`` without either
    (a PyPI wheel, only its metadata read) is not taken as a match: pip then reinstalls, which is safe.
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
    return f"torch {t.version}"


def _companions(table: Any, torch: str, variant: Optional[str]) -> Choice:
    """A bare choice of ``torch`` on ``variant`` with its torchvision/torchaudio from the table."""
    rel = table.torch(torch)
    patch = rel.patch(torch) if rel is not None else None
    return Choice("ok", torch=torch, variant=variant, torchvision=getattr(patch, "torchvision", None),
                  torchaudio=getattr(patch, "torchaudio", None))


def _pip_line(target: str, choice: Choice, base: str) -> str:
    return f"{target} -m pip install {' '.join(_pip_specs(choice))} --index-url {_index_for(choice, base)}"


def _distro_source(m: Machine, table: Any, with_nvcc: bool) -> Tuple[str, ...]:
    d = distro_row(m, table) if with_nvcc else None
    return (d.source,) if d is not None and d.source else ()


# --- conda: conda-forge (or the retired pytorch channel for torch <= 2.5) -----------------------

def _conda_python(rel: Any, wanted: Optional[str]) -> str:
    """The env's Python: the target's series when the release has it, else 3.12, else the newest."""
    plain = [p for p in rel.pythons if not p.endswith("t")]
    if wanted and wanted in plain:
        return wanted
    if "3.12" in plain:
        return "3.12"
    return max(plain, key=Version) if plain else "3.12"


def _line(cuda: str) -> str:
    """``"12.8.1"`` -> ``"12.8"``."""
    return ".".join(cuda.split(".")[:2])


def _minor(version: str) -> str:
    v = Version(version)
    return f"{v.release[0]}.{v.release[1]}"


def _conda(m: Machine, table: Any, choice: Choice, decision: RouteDecision, spec: Optional[SpecifierSet],
           with_nvcc: bool, base: str) -> Plan:
    warnings = _status_warnings(choice)
    if not choice.ok or choice.status == "macos":
        if choice.status == "macos":
            warnings.append("macOS: conda-forge's pytorch has no CUDA here; the system route's pip wheel is the same")
        return Plan("conda", choice.status if choice.status != "macos" else "macos", choice, (),
                    decision.reasons, decision.rejected, tuple(warnings),
                    ways_out=_ways(m, table, choice, None), sources=choice.sources)
    c = m.facts.conda
    tool = c.flavor or "conda"
    miniforge: List[Step] = []
    if "conda" in m.known and not c.exe:
        tool = f"{MINIFORGE}/bin/conda"
        miniforge = [Step("Install Miniforge (conda with conda-forge as its channel)", (
            'curl -fsSLO "https://github.com/conda-forge/miniforge/releases/latest/download/'
            'Miniforge3-$(uname)-$(uname -m).sh"',
            f'bash "Miniforge3-$(uname)-$(uname -m).sh" -b -p {MINIFORGE}',
        ), "no conda, mamba or micromamba was found")]
    rel = table.torch(choice.release or choice.torch)
    py = _conda_python(rel, m.python)
    warnings = [w for w in warnings if "wheels need glibc" not in w and "marks torch" not in w]
    steps, w = _driver_step(m, table, choice)
    steps += miniforge
    warnings += w
    gpu = _uses_gpu(choice)
    channel_story: str
    nvcc: Tuple[str, ...] = ()
    if rel.conda == "pytorch-channel":
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
                warnings.append("--with-nvcc: the cudatoolkit package of this era has no nvcc; "
                                "use a system toolkit of the same CUDA version")
        create = f"{tool} create -y -n {CONDA_ENV} {channels} {' '.join(pkgs)}"
        warnings.append(f"torch {choice.torch} comes from the pytorch conda channel, which stopped with 2.5 "
                        "(pytorch/pytorch#138506); newer torch is on conda-forge")
    else:
        if gpu:
            major = Version(choice.cuda).release[0]
            pkgs = [f"python={py}", f"pytorch-gpu={_minor(choice.torch)}", "torchvision", f"cuda-version={major}"]
            channel_story = f"conda-forge, CUDA {major}.x build (cuda-version={major})"
        else:
            pkgs = [f"python={py}", f"pytorch-cpu={_minor(choice.torch)}", "torchvision"]
            channel_story = "conda-forge, CPU build"
        if with_nvcc and gpu:
            pkgs.append("cuda-nvcc")
        override = " --override-channels" if tool in ("conda", "mamba") else ""
        create = f"{tool} create -y -n {CONDA_ENV} -c conda-forge{override} {' '.join(pkgs)}"
        if gpu:
            warnings.append("conda-forge picks the CUDA build whose cuda-version the driver allows (the __cuda "
                            "virtual package); if the solver finds none, the driver is too old for it")
        if with_nvcc and not gpu:
            warnings.append("--with-nvcc: CPU builds need no nvcc; none is added")
    steps.append(Step(f"Create the conda environment '{CONDA_ENV}' with torch {_minor(choice.torch)} "
                      f"({channel_story})", (create,) + nvcc,
                      "each environment carries its own CUDA libraries: several GB of disk per env"))
    prefix = c.base_prefix or (MINIFORGE if miniforge else None)
    env_python = (f"{prefix}/envs/{CONDA_ENV}/bin/python" if prefix
                  else f'"$({tool} run -n {CONDA_ENV} which python)"')
    reasons = decision.reasons
    if gpu:
        reasons += (f"torch {_minor(choice.torch)}: the newest release whose CUDA {Version(choice.cuda).release[0]}.x "
                    f"build runs on driver {m.driver or choice.driver_assumed} and has kernels for the GPUs",)
    steps.append(Step("Verify", (f"{tool} run -n {CONDA_ENV} {CHECK_TORCH}",
                                 f"envdoctor check --python {env_python}",
                                 f"envdoctor bench --python {env_python}")))
    return Plan("conda", choice.status, choice, tuple(steps), reasons, decision.rejected,
                tuple(dict.fromkeys(warnings)), (), _ways(m, table, choice, None), python=env_python,
                conda=channel_story, sources=choice.sources + ((rel.source,) if rel.source else ()))


def _pick_line(lines: Sequence[str], cuda: Optional[str]) -> str:
    """The CUDA line of a conda package list closest to ``cuda`` from below (same major first)."""
    if cuda in lines:
        return str(cuda)
    want = Version(cuda) if cuda else None
    below = [x for x in lines if want is None or Version(x) <= want]
    return max(below or list(lines), key=Version)


# --- docker: NGC image ---------------------------------------------------------------------------

def choose_image(table: Any, driver: str, m: Machine, spec: Optional[SpecifierSet]
                 ) -> Tuple[Optional[Image], List[str], List[str]]:
    """(the newest NGC image this driver runs, warnings, rejections) for the machine's GPUs.

    Data-center GPUs may run newer images on the branches the release notes list (forward
    compatibility through the image's cuda-compat); any other GPU only at the image's minimum branch.
    An image whose CUDA predates or dropped a GPU's architecture, or whose ``min_cc`` (the lowest
    compute capability its notes support) is above a GPU's, is skipped.
    """
    gpus = m.nvidia
    dc = bool(gpus) and all(g.datacenter for g in gpus)
    candidates = list(table.ngc_for_driver(driver, datacenter=dc))
    rejected: List[str] = []
    fits = []
    for r in candidates:
        cuda = version(r.cuda)
        why = None
        for g in gpus:
            arch = table.architecture(g.cc) if g.cc else None
            what = f"{arch.name} (compute {g.cc})" if arch else f"compute {g.cc}"
            if arch is not None and cuda is not None and version(arch.first_cuda) and cuda < version(arch.first_cuda):
                why = f"CUDA {r.cuda} predates {arch.name} (compute {g.cc}, first CUDA {arch.first_cuda})"
            elif (arch is not None and cuda is not None and arch.dropped_cuda and version(arch.dropped_cuda)
                  and cuda >= version(arch.dropped_cuda)):
                why = f"CUDA {r.cuda} no longer supports {arch.name} (compute {g.cc})"
            elif _below_min_cc(r, g.cc):
                why = (f"it supports compute capability {r.min_cc} and later"
                       f"{'' if r.confirmed('min_cc') else ' (per envdoctor table, unconfirmed)'}; "
                       f"{what} is below that")
            if why:
                break
        if why is None and spec is not None:
            tv = version(r.torch)
            if tv is None or not spec.contains(Version(tv.base_version), prereleases=True):
                why = f"its torch {r.torch} is outside --torch {spec}"
        if why:
            rejected.append(f"{r.tag}: {why}")
        else:
            fits.append(r)
    if not fits:
        return None, [], rejected
    confirmed = [r for r in fits if not r.unconfirmed]
    pick = (confirmed or fits)[-1]
    warnings = []
    newer = [r.tag for r in fits if Version(r.tag) > Version(pick.tag)]
    if newer:
        warnings.append(f"newer NGC tags the table does not confirm: {', '.join(newer)} "
                        "(check NVIDIA's release notes before using them)")
    doubtful = [f for f in pick.unconfirmed_fields if f != "min_cc"]    # min_cc: its own warning below
    if pick.unconfirmed or doubtful:
        fields = ", ".join(doubtful) if not pick.unconfirmed else "the whole row"
        warnings.append(f"envdoctor's row for NGC {pick.tag} is not verified against NVIDIA's support matrix "
                        f"({fields})")
    fc = version(driver) is not None and version(driver) < version(pick.min_driver)
    if fc:
        warnings.append(f"NGC {pick.tag} (CUDA {pick.cuda}) wants driver branch {pick.min_driver}; this data-center "
                        f"GPU runs it on driver {driver} in forward-compatibility mode (the image's cuda-compat "
                        "libraries); GeForce and workstation GPUs cannot")
    old = [g for g in gpus if g.cc and version(g.cc) and version(g.cc) < Version("7.5")]
    if old and not pick.min_cc:
        warnings.append(f"check the NGC {pick.tag} release notes for the minimum compute capability: "
                        f"{', '.join(f'{g.name} (compute {g.cc})' for g in old)} may be below it")
    elif old and not pick.confirmed("min_cc"):
        warnings.append(f"envdoctor's table gives NGC {pick.tag} a minimum compute capability of {pick.min_cc}, "
                        f"unconfirmed: check the release notes' GPU requirements for "
                        f"{', '.join(f'{g.name} (compute {g.cc})' for g in old)}")
    if fc:
        compat = "forward-compat"
    else:
        try:
            compat = driver_support(table, driver, pick.cuda, os=_driver_os(m)).kind
        except ValueError:
            compat = "direct"
    image = Image(pick.image, pick.tag, pick.torch, pick.cuda, fc, bool(pick.unconfirmed), pick.source,
                  compat if compat in ("direct", "minor-version", "forward-compat") else "direct")
    return image, warnings, rejected


def _below_min_cc(release: Any, cc: Optional[str]) -> bool:
    """The GPU's compute capability is below the image's ``min_cc`` (False when either is unknown)."""
    need, have = version(getattr(release, "min_cc", None)), version(cc)
    return need is not None and have is not None and have < need


def _toolkit_commands(m: Machine) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(install the NVIDIA Container Toolkit, configure docker for it)."""
    return (commands.install_container_toolkit(m.facts.system),
            commands.configure_docker(bool(m.facts.docker.rootless)))


def _docker(m: Machine, table: Any, choice: Choice, decision: RouteDecision, spec: Optional[SpecifierSet],
            with_nvcc: bool, base: str) -> Plan:
    warnings: List[str] = []
    steps: List[Step] = []
    if not m.nvidia:
        warnings.append("no NVIDIA GPU: the docker route runs NGC images on NVIDIA GPUs")
        cpu = f" ({choice.label})" if choice.ok and choice.torch else ""
        way = Way("route", f"NGC images need an NVIDIA GPU: use --route system for the CPU wheels{cpu}",
                  ("envdoctor recommend --route system",), choice.torch, choice.variant)
        return Plan("docker", "no-fit", choice, (), decision.reasons, decision.rejected, tuple(warnings),
                    ways_out=(way,), sources=choice.sources)
    driver = m.driver
    if not driver:
        branch = choice.driver_needed or recommended_branch(table, [g.cc for g in m.nvidia])
        driver = branch_driver(table, branch) if branch else None
    if choice.status == "no-fit" and choice.rejected and choice.rejected[0].what.startswith("driver "):
        warnings += list(choice.warnings)
        return Plan("docker", "no-fit", choice, (), decision.reasons, decision.rejected, tuple(warnings),
                    ways_out=_ways(m, table, choice, None), sources=choice.sources)
    image, w, rejected = choose_image(table, driver, m, spec) if driver else (None, [], [])
    if image is None:
        warnings.append(f"no NGC PyTorch image in envdoctor's table runs on driver {driver} with these GPUs"
                        + (f" and --torch {spec}" if spec else ""))
        if rejected:
            warnings.append("closest tags: " + "; ".join(rejected[-3:]))
        return Plan("docker", "no-fit", choice, (), decision.reasons, decision.rejected, tuple(warnings),
                    ways_out=_ways(m, table, choice, None), sources=choice.sources)
    warnings += w
    s, w = _driver_step(m, table, choice)
    steps += s
    warnings += w
    d = m.facts.docker
    known = "docker" in m.known
    if known and not d.client:
        steps.append(Step("Install Docker Engine", (
            "# follow https://docs.docker.com/engine/install/ for this distribution, then:",
            "sudo usermod -aG docker $USER", "newgrp docker")))
    elif known and d.daemon == "not_running":
        steps.append(Step("Start the docker daemon", ("sudo systemctl enable --now docker",)))
    elif known and d.daemon == "permission_denied":
        steps.append(Step("Let this user talk to the docker daemon", ("sudo usermod -aG docker $USER", "newgrp docker")))
    if not known or not nvidia_runtime(m):
        install, configure = _toolkit_commands(m)
        cmds = configure if (known and d.nvidia_ctk) else install + configure
        title = ("Configure docker for the NVIDIA Container Toolkit" if (known and d.nvidia_ctk)
                 else "Install the NVIDIA Container Toolkit and configure docker for it")
        note = None if known else "not inspected (what-if plan): skip this step if `docker info` lists the nvidia runtime"
        steps.append(Step(title, cmds, note))
    gpus = "--gpus all"
    if known and not ("nvidia" in d.runtimes) and any(x.startswith("nvidia.com/") for x in d.cdi_devices):
        gpus = "--device nvidia.com/gpu=all"
    steps.append(Step(f"Pull and run {image.image} (torch {image.torch}, CUDA {image.cuda})", (
        f"docker pull {image.image}",
        DOCKER_RUN.format(gpus=gpus, image=image.image),
    ), "NGC images are large (6-20 GB); --ipc=host and the ulimits are what NVIDIA's notes recommend"))
    steps.append(Step("Verify", (
        "envdoctor check",
        f"docker run {gpus} --rm {image.image} {CHECK_TORCH}",
        "# inside the container: pip install envdoctor && envdoctor check && envdoctor bench",
    )))
    if with_nvcc:
        warnings.append("--with-nvcc: NGC PyTorch images already contain the full CUDA toolkit with nvcc")
    ways = _docker_upgrade(m, table, image, spec)
    return Plan("docker", "ok", choice, tuple(steps), decision.reasons, decision.rejected,
                tuple(dict.fromkeys(warnings)), (), ways, image=image, python=None,
                sources=tuple(dict.fromkeys(((image.source,) if image.source else ()))),
                index_check="offline-table")


def _docker_upgrade(m: Machine, table: Any, image: Image, spec: Optional[SpecifierSet]) -> Tuple[Way, ...]:
    """A driver upgrade that would open a newer NGC image."""
    branch = recommended_branch(table, [g.cc for g in m.nvidia])
    have = version(m.driver)
    if not branch or have is None or int(branch) <= have.release[0]:
        return ()
    better, _, _ = choose_image(table, branch_driver(table, branch), m, spec)
    if better is None or Version(better.tag) <= Version(image.tag):
        return ()
    return (Way("upgrade-driver", f"upgrade the driver to branch {branch}: then {better.image} "
                                  f"(torch {better.torch}, CUDA {better.cuda})",
                commands.driver_install(m.facts.system, branch, _open_modules(m, table), table), branch=branch),)

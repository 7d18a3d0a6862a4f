"""Checks of torch in the target Python (ED2xx). Pure: Facts x Table -> Findings.

| code  | fires when |
|-------|------------|
| ED200 | the target Python cannot be run (missing, not Python, too old) |
| ED201 | the torch check crashed, hung, exited non-zero or printed no result |
| ED202 | ``import torch`` raises (a missing CUDA library, a broken install) |
| ED203 | torch is not installed in the target Python of a GPU machine (info) |
| ED204 | a CPU-only torch on a machine with an NVIDIA GPU |
| ED205 | torch's CUDA is newer than the driver runs (impossible, or minor-version compatibility only) |
| ED206 | the build has no kernels (cubin) for a GPU's compute capability, or only PTX to JIT |
| ED207 | ``torch.cuda.is_available()`` is False although the build and the driver look right |
| ED208 | the tiny CUDA operation failed |
| ED209 | torchvision / torchaudio belong to another torch release |
| ED210 | torchvision / torchaudio were built for another CUDA (or CPU) than torch |
| ED211 | ``LD_LIBRARY_PATH`` made torch load CUDA libraries other than the ones its wheel ships |

Fix commands name the target interpreter (``/opt/torch/.venv/bin/python -m pip ...``) and an index
from the table; where the table has no answer the fix is ``envdoctor recommend``, never a guess.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from typing import Optional

from envdoctor import commands
from envdoctor.advise.choice import Choice
from envdoctor.advise.choose import choose_variant
from envdoctor.advise.machine import python_series
from envdoctor.advise.system_route import VENV
from envdoctor.codes import CODES
from envdoctor.compat import DriverOs, DriverSupport, driver_os, driver_support, kernel_support, variant_tag
from envdoctor.facts import Facts
from envdoctor.findings import Finding, Severity
from envdoctor.gpus import MachineGpu, machine_gpus
from envdoctor.parse import major, major_minor, version, version_key
from envdoctor.parse.visible import HIDES_ALL
from envdoctor.table import Table, TorchRelease

REF_INSTALL = "https://pytorch.org/get-started/locally/"
REF_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/"
REF_MINOR = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
REF_BINARY = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"
REF_VISION = "https://github.com/pytorch/vision#installation"
REF_AUDIO = "https://docs.pytorch.org/audio/2.11.0/installation.html#compatibility-matrix"
#: Each companion's own compatibility page and what a mismatched build of it does.
_COMPANION_REF = {"torchvision": REF_VISION, "torchaudio": REF_AUDIO}
_COMPANION_BREAKS = {
    "torchvision": "torchvision's compiled operators are built against one torch release; with another "
    'they fail to load ("operator torchvision::nms does not exist") or crash.',
    "torchaudio": "torchaudio's extension (libtorchaudio.so) is linked against one torch release; with "
    'another, import torchaudio fails ("libtorchaudio.so: undefined symbol"). From 2.11 on, '
    "torchaudio is built against torch's stable ABI and also works with later torch releases.",
}
REF_LDSO = "https://man7.org/linux/man-pages/man8/ld.so.8.html"
RECOMMEND = "envdoctor recommend"
#: Libraries a torch wheel ships (nvidia-* packages or torch/lib); not the driver's (libcuda, libnvidia-*).
WHEEL_LIBRARIES = (
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
)


# --- helpers ---------------------------------------------------------------------------------


def _inspected(facts: Facts) -> bool:
    """torch was inspected and the child answered (rules other than ED200-ED202 need this)."""
    t = facts.torch
    return "torch" not in facts.skipped and t.error is None and t.installed and not t.import_error


def _gpu_machine(facts: Facts) -> bool:
    return bool(facts.driver.gpus or facts.pci.devices or facts.torch.devices)


def _gpus(facts: Facts, table: Optional[Table]) -> list[MachineGpu]:
    """The machine's GPUs with a known compute capability (:func:`envdoctor.gpus.machine_gpus`)."""
    return [g for g in machine_gpus(facts, table) if g.cc]


def _base(text: Optional[str]) -> Optional[str]:
    """ "2.13.0+cpu" -> "2.13.0"."""
    v = version(text)
    return v.base_version if v else None


def _release(text: Optional[str]) -> Optional[str]:
    """ "2.13.0+cpu" -> "2.13"."""
    v = version(text)
    return f"{v.major}.{v.minor}" if v else None


def _local(text: Optional[str]) -> Optional[str]:
    """ "0.26.0+cu130" -> "cu130"; None without a local label."""
    v = version(text)
    return v.local if v else None


def _py(facts: Facts) -> str:
    return shlex.quote(facts.python.executable or "python3")


def _recommend(facts: Facts) -> str:
    """``envdoctor recommend``, with ``--python`` when check was given one: without it recommend
    plans for the ``python3`` on PATH, another interpreter."""
    if facts.python.chosen_by == "--python" and facts.python.executable:
        return f"{RECOMMEND} --python {_py(facts)}"
    return RECOMMEND


def _torch_release(table: Optional[Table], version: Optional[str]) -> Optional[TorchRelease]:
    release = _release(version)
    if table is None or release is None:
        return None
    return table.torch(release)


def _index_url(table: Optional[Table], name: str) -> str:
    variant = table.variant(name) if table is not None else None
    return variant.index_url if variant is not None else f"https://download.pytorch.org/whl/{name}"


def _companion(rel: Optional[TorchRelease], package: str, torch_version: str) -> Optional[str]:
    """The torchvision/torchaudio version the table pairs with this torch patch release; None
    where the table does not know the patch or no such package was released (torchaudio >= 2.12)."""
    base = _base(torch_version)
    if rel is None or base is None:
        return None
    patch = rel.patch(base)
    if patch is not None:
        return patch.torchvision if package == "torchvision" else patch.torchaudio
    if _base(rel.version) == base:
        return rel.torchvision if package == "torchvision" else rel.torchaudio
    return None


def _driver_support(
    table: Optional[Table], driver: Optional[str], driver_cuda: Optional[str], cuda: str, os_name: DriverOs = "linux"
) -> tuple[Optional[str], Optional[DriverSupport]]:
    """("direct" | "minor-version" | "none" | None, the DriverSupport answer or None)."""
    if driver and table is not None:
        try:
            answer = driver_support(table, driver=driver, cuda=cuda, os=os_name)
        except ValueError:  # a driver version that is not a version
            answer = None
        if answer is not None and answer.kind != "unknown":
            return answer.kind, answer
    have, need = version(driver_cuda), version(cuda)
    if have is None or need is None:
        return None, None
    if need.major > have.major:
        return "none", None
    if need > have:
        return "minor-version", None  # same major: the driver is past that major's floor
    return "direct", None


def _pin(table: Optional[Table], version: Optional[str]) -> Optional[str]:
    """What to ask ``choose_variant`` for: the installed patch ("2.11.0" of "2.11.0+cu130"); where
    the table knows the release but not that patch, the release ("2.11": its rows hold the variants)."""
    rel = _torch_release(table, version)
    base = _base(version)
    if rel is None or base is None:
        return None
    known = {p.version for p in rel.patches} | {_base(rel.version)}
    return base if base in known else _release(version)


def _arch(facts: Facts) -> Optional[str]:
    """The CPU the wheels are for: the target interpreter's platform, else the system's."""
    plat = facts.python.platform or ""
    return plat[len("linux_") :] if plat.startswith("linux_") else facts.system.arch


def _choose(facts: Facts, table: Optional[Table]) -> Optional[Choice]:
    """The advisor's variant for reinstalling the installed torch release on this driver and these
    GPUs; None where the driver is unknown or nothing fits (the fix is then ``envdoctor recommend``).
    A driver known only by the CUDA version it reports stands for the lowest driver of that CUDA."""
    t, d, p = facts.torch, facts.driver, facts.python
    if table is None:
        return None
    pin = _pin(table, t.version)
    os_name = driver_os(facts.system)
    driver = d.driver_version or (
        (table.min_driver(d.driver_cuda, os=os_name) or table.min_driver(d.driver_cuda)) if d.driver_cuda else None
    )
    if pin is None or not driver:
        return None
    ccs: list[Optional[str]] = [g.cc for g in _gpus(facts, table)] or [None]  # unknown capability: kernels unchecked
    try:
        choice = choose_variant(
            table,
            pin,
            driver,
            ccs,
            python_series(p.version, p.abi_tag),
            p.glibc or facts.system.glibc,
            _arch(facts) or "x86_64",
            ways_out=False,
            os=os_name,
        )
    except (LookupError, ValueError):  # an input the advisor cannot read: no fix offered
        return None
    return choice if choice.status == "ok" else None


def _retired(facts: Facts, table: Optional[Table], needed: Optional[str]) -> Optional[tuple[str, str, str]]:
    """(architecture, compute capability, last branch) of a GPU whose last driver branch is older
    than ``needed``'s (Kepler: R470 against CUDA 13.0's 580): no driver upgrade helps it."""
    if table is None or not needed or major(needed) is None:
        return None
    for g in _gpus(facts, table):
        arch = table.architecture(g.cc or "")
        last = arch.last_driver_branch if arch is not None else None
        if last and int(last) < (major(needed) or 0):
            return arch.name if arch is not None else "this GPU", g.cc or "?", last
    return None


def _newest(facts: Facts, table: Optional[Table]) -> Optional[Choice]:
    """The advisor's newest torch (any release) for this driver and these GPUs, as recommend picks it."""
    d, p = facts.driver, facts.python
    if table is None or not d.driver_version:
        return None
    ccs: list[Optional[str]] = [g.cc for g in _gpus(facts, table)] or [None]
    try:
        choice = choose_variant(
            table,
            None,
            d.driver_version,
            ccs,
            python_series(p.version, p.abi_tag),
            p.glibc or facts.system.glibc,
            _arch(facts) or "x86_64",
            ways_out=False,
            os=driver_os(facts.system),
        )
    except (LookupError, ValueError):
        return None
    return choice if choice.status == "ok" and choice.torch and choice.variant else None


def _install_newest(facts: Facts, choice: Choice) -> tuple[str, ...]:
    """``choice``'s torch (another release than the installed one), with the companions installed."""
    t = facts.torch
    specs = [f"torch=={choice.torch}"]
    for package, installed, paired in (
        ("torchvision", t.torchvision, choice.torchvision),
        ("torchaudio", t.torchaudio, choice.torchaudio),
    ):
        if installed and paired:
            specs.append(f"{package}=={paired}")
    return _pip(facts, specs, choice.index_url or f"https://download.pytorch.org/whl/{choice.variant}")


def _caveat(choice: Choice) -> str:
    if choice.unconfirmed:
        return " (envdoctor's table marks that build unconfirmed)"
    if choice.kernels_inferred:
        return (
            " (its kernel list is inferred in envdoctor's table, not read from the build: "
            "check torch.cuda.get_arch_list() after installing)"
        )
    return ""


def system_python(facts: Facts) -> bool:
    """The target Python is known to be neither a virtual environment nor a conda env (its
    ``sys.prefix`` equals ``sys.base_prefix``): a distribution's Python refuses pip installs (PEP 668,
    "externally-managed-environment") and mixes them with its own packages, so fixes go into a new
    virtual environment first, as ``envdoctor recommend`` plans. Unknown (no prefix): not claimed."""
    p = facts.python
    return p.error is None and bool(p.prefix) and not p.venv and not p.conda_env


def _venv_note(facts: Facts) -> str:
    """Why the fix makes a virtual environment, and the one package venv may need first."""
    p = facts.python
    series = major_minor(p.version) or "3"
    need = (
        f" (if venv says 'ensurepip is not available': sudo apt-get install -y python{series}-venv)"
        if commands.family(facts.system) == "debian"
        else ""
    )
    return (
        f" {p.executable} is not a virtual environment (sys.prefix {p.prefix}): pip refuses or mixes "
        f"installs into a distribution's Python (PEP 668), so the commands install into a new virtual "
        f"environment at {VENV}, as envdoctor recommend does{need}; run your code with {VENV}/bin/python."
    )


def _pip(
    facts: Facts, specs: list[str], index: Optional[str], force: bool = True, no_deps: bool = False
) -> tuple[str, ...]:
    """``pip install`` of ``specs`` into the target Python (``--force-reinstall``, optionally
    ``--no-deps``), or, for a system Python (:func:`system_python`), into a new virtual environment
    made from it, where the whole set is installed and nothing is forced."""
    where = f" --index-url {index}" if index else ""
    if system_python(facts):
        return (f"{_py(facts)} -m venv {VENV}", f"{VENV}/bin/python -m pip install {' '.join(specs)}{where}")
    lines = []
    if facts.python.error is None and facts.python.version and not facts.python.pip:
        lines.append(f"{_py(facts)} -m ensurepip --upgrade")
    flags = (" --force-reinstall" if force else "") + (" --no-deps" if no_deps else "")
    lines.append(f"{_py(facts)} -m pip install{flags} {' '.join(specs)}{where}")
    return tuple(lines)


def _reinstall(facts: Facts, choice: Choice) -> tuple[str, ...]:
    """The installed torch release again, in the chosen variant, with the companions it has."""
    t = facts.torch
    base = _base(t.version)
    specs = [f"torch=={base}"]
    if choice.torch == base:  # the table's pairs belong to this patch
        for package, installed, paired in (
            ("torchvision", t.torchvision, choice.torchvision),
            ("torchaudio", t.torchaudio, choice.torchaudio),
        ):
            if installed and paired:
                specs.append(f"{package}=={paired}")
    return _pip(facts, specs, choice.index_url or f"https://download.pytorch.org/whl/{choice.variant}")


def _torch_evidence(facts: Facts) -> str:
    t = facts.torch
    build = f"CUDA {t.cuda}" if t.cuda else (f"ROCm {t.hip}" if t.hip else "CPU only")
    return f"torch {t.version} ({build}) in {facts.python.executable or 'the target Python'}"


def _driver_evidence(facts: Facts) -> Optional[str]:
    d = facts.driver
    if not d.driver_version and not d.driver_cuda:
        return None
    source = d.sources.get("driver_version") or d.sources.get("driver_cuda") or "driver probe"
    cuda = f", supports CUDA up to {d.driver_cuda}" if d.driver_cuda else ""
    return f"NVIDIA driver {d.driver_version or 'unknown'}{cuda} ({source})"


# --- ED200-ED203: can torch be inspected at all -----------------------------------------------


def target_python_unusable(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED200: the interpreter envdoctor was told (or found) to inspect cannot be run."""
    p = facts.python
    if p.error is None:
        return
    yield Finding(
        "ED200",
        "error" if p.chosen_by == "--python" else "warning",
        f"The target Python {p.executable} could not be inspected",
        evidence=(f"{p.error.message} (chosen by: {p.chosen_by})",),
        fix=("envdoctor check --python /path/to/venv/bin/python   # the interpreter that runs your code",),
        reference=REF_INSTALL,
        area="torch",
        explanation="torch is inspected inside the interpreter your code runs with; point --python at it.",
    )


def torch_check_failed(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED201: the child crashed, hung, exited non-zero or printed no result."""
    t = facts.torch
    if (
        "torch" in facts.skipped
        or t.error is None
        or t.error.kind not in ("crashed", "timeout", "exit_status", "unparseable")
    ):
        return
    if facts.python.error is not None and facts.python.version is None and not t.stage:
        return  # the interpreter itself did not run (not a Python at all): ED200 says it
    py = _py(facts)
    internal = t.error.message.startswith("envdoctor's")
    # a torch that crashes, fails or does not answer within --torch-timeout is unusable: nothing
    # that imports it will work (a slow first import is said in the explanation)
    severity: Severity = (
        "error" if t.error.kind in ("crashed", "exit_status", "timeout") and not internal else "warning"
    )
    where = f" during {t.stage}" if t.stage else ""
    titles = {
        "crashed": f"Python crashed{where} while envdoctor inspected torch",
        "timeout": f"The torch check did not finish{where}",
        "exit_status": f"The torch check exited with an error{where}",
        "unparseable": "The torch check printed something envdoctor cannot read",
    }
    evidence = [t.error.message]
    if t.version:
        evidence.append(f"installed torch: {t.version} (package metadata)")
    if t.stderr_tail:
        evidence.append("stderr (end): " + " | ".join(t.stderr_tail.strip().splitlines()[-8:]))
    step = {
        "torch.cuda.is_available()": "import torch; print(torch.cuda.is_available())",
        "torch.cuda.init()": "import torch; torch.cuda.init()",
    }.get(t.stage or "", "import torch")
    explanation = {
        "crashed": "Programs that import torch in this interpreter will crash the same way; the "
        "stack above shows where. A mismatched CUDA library on LD_LIBRARY_PATH or a "
        "half-upgraded install are the usual causes.",
        "timeout": "Nothing that imports torch in this interpreter can run while it hangs. A first import "
        "after installing can be slow on a cold disk (--torch-timeout gives it longer); a hang in "
        "CUDA init usually means the driver or a GPU is stuck (check nvidia-smi).",
    }.get(t.error.kind, "Something in this interpreter writes to the output or ends the process early.")
    if internal:
        explanation = "This is a bug in envdoctor's torch check, not a problem of the machine; please report it."
    yield Finding(
        "ED201",
        severity,
        titles[t.error.kind],
        evidence=tuple(evidence),
        fix=(f"{py} -X faulthandler -c {shlex.quote(step)}",),
        reference=REF_INSTALL,
        area="torch",
        explanation=explanation,
    )


def torch_import_error(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED202: torch is installed but ``import torch`` raises."""
    t = facts.torch
    if "torch" in facts.skipped or t.error is not None or not t.import_error:
        return
    text = t.import_error
    local = _local(t.version)
    base = _base(t.version)
    if re.search(r"lib(cu|nccl|nv)\S*\.so[\d.]*: cannot open shared object file", text):
        explanation = (
            "A CUDA library that torch links against is missing: the nvidia-* packages "
            "that come with the wheel are absent or broken, or a conda/system copy was "
            "expected. Reinstalling torch from its index brings them back."
        )
    elif "undefined symbol" in text:
        explanation = (
            "torch found a library of another version than it was built with; an "
            "LD_LIBRARY_PATH entry or a second torch/CUDA install usually causes this."
        )
    else:
        explanation = "The torch install in this interpreter is broken; reinstall it."
    if base and local and (local.startswith("cu") or local == "cpu"):
        fix = _pip(facts, [f"torch=={base}"], _index_url(table, local))
    elif base:
        fix = _pip(facts, [f"torch=={base}"], None)
    else:
        fix = (_recommend(facts),)
    if base and system_python(facts):
        explanation += _venv_note(facts)
    yield Finding(
        "ED202",
        "error",
        CODES["ED202"].title,
        evidence=(
            f"{text} (import torch in {facts.python.executable})",
            f"installed: torch {t.version or 'unknown version'} (package metadata)",
        ),
        fix=fix,
        reference=REF_INSTALL,
        area="torch",
        explanation=explanation,
    )


def torch_missing(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED203: no torch in the target Python (on a GPU machine or not: the verdict must not read
    "it works" when there is no torch at all)."""
    t = facts.torch
    if "torch" in facts.skipped or facts.python.error is not None or t.error is not None or t.installed:
        return
    where = "" if _gpu_machine(facts) else " (no NVIDIA GPU here: the CPU wheels)"
    yield Finding(
        "ED203",
        "info",
        f"torch is not installed in the target Python{where}",
        evidence=(f"no torch package in {facts.python.executable} ({facts.python.chosen_by})",),
        fix=(_recommend(facts),),
        reference=REF_INSTALL,
        area="torch",
        explanation=(
            "envdoctor recommend picks a torch build for this GPU and driver, by route "
            "(pip wheels, conda or an NGC container)."
            if _gpu_machine(facts)
            else "envdoctor recommend gives the command for the CPU wheels."
        )
        + " If torch lives in another interpreter, run envdoctor check --python PATH.",
    )


# --- ED204-ED208: the build against the GPU and the driver ------------------------------------


def cpu_only_build(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED204: a CPU-only torch on a machine with an NVIDIA GPU."""
    t = facts.torch
    if not _inspected(facts) or t.cuda or t.hip or not _gpu_machine(facts):
        return
    choice = _choose(facts, table) if t.installer != "conda" else None
    gpus = _gpus(facts, table)
    evidence = [f"{_torch_evidence(facts)}: torch.version.cuda is None"]
    evidence += [f"{g.label}, compute capability {g.cc} ({g.where})" for g in gpus[:4]]
    if not gpus:
        evidence.append(f"{len(facts.pci.devices) or len(facts.driver.gpus)} NVIDIA GPU(s) found")
    drv = _driver_evidence(facts)
    if drv:
        evidence.append(drv)
    if choice:
        fix = _reinstall(facts, choice)
        how = " by minor-version compatibility" if choice.compatibility != "direct" else ""
        explanation = (
            f"{choice.variant} is the CUDA build of torch {_release(t.version)} that envdoctor "
            f"picks for this machine: the driver runs it{how} and it has kernels for the "
            f"GPU{_caveat(choice)}." + (_venv_note(facts) if system_python(facts) else "")
        )
    else:
        fix = (_recommend(facts),)
        explanation = (
            "envdoctor's table has no CUDA build of this torch release that fits this "
            "driver and GPU (or the driver is unknown); envdoctor recommend works out "
            "a release and route."
        )
        if t.installer == "conda":
            explanation = (
                "torch came from conda; install a CUDA build in that environment (envdoctor recommend shows how)."
            )
    yield Finding(
        "ED204",
        "error",
        CODES["ED204"].title,
        evidence=tuple(evidence),
        fix=fix,
        reference=REF_INSTALL,
        area="torch",
        explanation=explanation,
    )


def cuda_newer_than_driver(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED205: torch's CUDA runtime needs a newer driver than the one loaded."""
    t = facts.torch
    d = facts.driver
    if not _inspected(facts) or not t.cuda or not (d.driver_version or d.driver_cuda):
        return
    os_name = driver_os(facts.system)
    kind, answer = _driver_support(table, d.driver_version, d.driver_cuda, t.cuda, os_name)
    if kind not in ("none", "minor-version"):
        return
    needed = answer.needed if answer is not None else None
    if needed is None and table is not None:
        needed = table.min_driver(t.cuda, os=os_name) or table.min_driver(t.cuda)
    floor = answer.floor if answer is not None else None
    evidence = [f"{_torch_evidence(facts)} (torch.version.cuda)", _driver_evidence(facts) or ""]
    if needed:
        on = " on Windows (WSL2 uses the Windows driver)" if os_name == "windows" else ""
        evidence.append(f"CUDA {t.cuda} needs driver >= {needed}{on} (envdoctor table)")
        if answer is not None and answer.note:
            evidence.append(answer.note)
    if floor:
        evidence.append(f"minor-version compatibility for CUDA {major(t.cuda)}.x needs driver >= {floor}")
    if t.cuda_error:
        evidence.append(f"torch.cuda.init(): {t.cuda_error}")
    choice = _choose(facts, table)
    # a build the driver runs at all helps when this one cannot start; under minor-version
    # compatibility only a build the driver runs directly is an improvement
    if (
        choice is not None
        and choice.variant != variant_tag(t.cuda)
        and (kind == "none" or choice.compatibility == "direct")
    ):
        fix: tuple[str, ...] = _reinstall(facts, choice)
        how = " (by minor-version compatibility)" if choice.compatibility != "direct" else ""
        alt = (
            f", or install the {choice.variant} build of torch {_release(t.version)}, which this "
            f"driver runs{how}, with the command below{_caveat(choice)}"
        )
    else:
        fix, alt = (_recommend(facts),), ""
    upgrade = f"upgrade the NVIDIA driver to >= {needed}" if needed else "upgrade the NVIDIA driver"
    retired = _retired(facts, table, needed)
    if retired is not None:  # no driver this GPU runs reaches that CUDA: a torch it runs, or a newer GPU
        arch_name, cc, last = retired
        newest = _newest(facts, table)
        upgrade = (
            f"R{last} is the last driver branch for {arch_name} (compute {cc}): no driver this GPU runs "
            f"supports CUDA {t.cuda}"
        )
        if newest is not None:
            upgrade += (
                f"; install torch {newest.torch}+{newest.variant}, the newest torch this GPU and driver "
                f"{d.driver_version or d.driver_cuda} run (the command below), or move to a newer GPU"
            )
            fix = _install_newest(facts, newest) + (f"# or move to a newer GPU: {arch_name}'s drivers end at R{last}",)
        else:
            upgrade += "; envdoctor recommend shows what still runs on it, or move to a newer GPU"
            fix = (_recommend(facts), f"# or move to a newer GPU: {arch_name}'s drivers end at R{last}")
        alt = ""
    if kind == "none":
        yield Finding(
            "ED205",
            "error",
            f"torch needs CUDA {t.cuda}, which driver {d.driver_version or d.driver_cuda} cannot run",
            evidence=tuple(e for e in evidence if e),
            fix=fix,
            reference=REF_COMPAT,
            area="torch",
            explanation=f"The driver is older than the CUDA runtime torch ships and below the "
            f'minor-version floor, so CUDA cannot start ("CUDA driver version is '
            f'insufficient"). Fix: {upgrade}{alt}.',
        )
        return
    limits = answer.limitations if answer is not None else ()
    if not limits and table is not None:
        mc = table.minor_compat(t.cuda)
        limits = mc.limitations if mc is not None else ()
    still = (
        "; ".join(limits)
        if limits
        else ("PTX newer than the driver cannot be JIT-compiled and APIs newer than the driver fail")
    )
    yield Finding(
        "ED205",
        "warning",
        f"torch's CUDA {t.cuda} runs on driver {d.driver_version or d.driver_cuda} only by minor-version compatibility",
        evidence=tuple(e for e in evidence if e),
        fix=fix,
        reference=REF_MINOR,
        area="torch",
        explanation=f"Most of torch works, but not everything: {still}. To remove the caveat, {upgrade}{alt}.",
    )


def no_kernels_for_gpu(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED206: the build's arch list has no cubin for a GPU's compute capability."""
    t = facts.torch
    if not _inspected(facts) or not t.cuda or not t.arch_list:
        return
    missing, ptx_only = [], []
    for g in _gpus(facts, table):
        try:
            answer = kernel_support(t.arch_list, g.cc or "")
        except ValueError:  # a compute capability that is not one
            continue
        if answer.kind == "none":
            missing.append(g)
        elif answer.kind == "ptx":
            ptx_only.append((g, answer.via))
    if not missing and not ptx_only:
        return
    choice = _choose(facts, table)
    better = choice if choice is not None and choice.variant != variant_tag(t.cuda) else None
    fix = _reinstall(facts, better) if better is not None else (_recommend(facts),)
    arch = f"torch {t.version} has kernels for {' '.join(t.arch_list)} (torch.cuda.get_arch_list())"
    other = (
        f"the {better.variant} build of torch {_release(t.version)} has them{_caveat(better)}"
        if better is not None
        else "no build of this torch release in envdoctor's table has "
        "them for this driver; envdoctor recommend picks a release that does"
    )
    if missing:
        ccs = sorted({str(g.cc) for g in missing}, key=version_key)
        yield Finding(
            "ED206",
            "error",
            f"torch {t.version} has no kernels for compute capability {', '.join(ccs)}",
            evidence=tuple([f"{g.label}: compute capability {g.cc} ({g.where})" for g in missing] + [arch]),
            fix=fix,
            reference=REF_BINARY,
            area="torch",
            explanation="CUDA kernels run on a GPU only when built for its major architecture at the "
            "same or a lower minor (sm_80 runs on 8.6, not on 9.0), or as PTX of a lower "
            f'capability; this build has neither, so GPU work fails with "no kernel image '
            f'is available for execution on the device". {other[0].upper() + other[1:]}.',
        )
    if ptx_only:
        yield Finding(
            "ED206",
            "warning",
            f"torch {t.version} runs on compute capability "
            f"{', '.join(sorted({str(g.cc) for g, _ in ptx_only}))} only through PTX JIT compilation",
            evidence=tuple(
                [f"{g.label}: compute capability {g.cc} ({g.where}); only {via} PTX fits" for g, via in ptx_only]
                + [arch]
            ),
            fix=fix,
            reference=REF_BINARY,
            area="torch",
            explanation="The driver compiles the PTX at first use (slow start, cached in "
            "~/.nv/ComputeCache), and PTX newer than the driver cannot be compiled. "
            f"{other[0].upper() + other[1:]}.",
        )


_CUDA_ERROR_HINTS = (
    (
        "forward compatibility was attempted on non supported HW",
        "CUDA forward-compatibility libraries (cuda-compat) are on the library path of a GPU that does "
        "not support them; remove them from LD_LIBRARY_PATH or upgrade the real driver.",
    ),
    (
        "unsupported display driver / cuda driver combination",
        "The libcuda found does not match the kernel driver (stale cuda-compat libraries or a mixed "
        "driver install); remove the stale copy from LD_LIBRARY_PATH.",
    ),
    (
        "Found no NVIDIA driver",
        "torch could not open the driver: no /dev/nvidia* device nodes (a container started without "
        "--gpus / the NVIDIA runtime), or the kernel module is not loaded.",
    ),
    (
        "No CUDA GPUs are available",
        "The driver works but shows no GPU to this process: CUDA_VISIBLE_DEVICES hides them, or the "
        "container was given none.",
    ),
)


def cuda_unavailable(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED207: a CUDA build and a working driver, yet is_available() is False."""
    t = facts.torch
    d = facts.driver
    if (
        not _inspected(facts)
        or not t.cuda
        or t.cuda_available is not False
        or not _gpu_machine(facts)
        or not d.driver_version
    ):
        return
    kind, _ = _driver_support(table, d.driver_version, d.driver_cuda, t.cuda, driver_os(facts.system))
    if kind == "none":
        return  # ED205 explains it
    evidence = [
        f"{_torch_evidence(facts)}: torch.cuda.is_available() is False",
        f"torch.cuda.init(): {t.cuda_error}" if t.cuda_error else "torch gave no error text",
        _driver_evidence(facts) or "",
    ]
    visible = (
        d.cuda_visible_devices if d.cuda_visible_devices is not None else facts.system.env.get("CUDA_VISIBLE_DEVICES")
    )
    if visible is not None:
        evidence.append(f"CUDA_VISIBLE_DEVICES={visible!r} (environment)")
    evidence += [w for w in t.warnings if "CUDA" in w and w not in evidence][:2]
    hint = next((h for key, h in _CUDA_ERROR_HINTS if t.cuda_error and key in t.cuda_error), None)
    fix: tuple[str, ...] = (f"{_py(facts)} -c 'import torch; torch.cuda.init()'   # shows the full CUDA error",)
    if visible is not None and (visible.strip() in HIDES_ALL or "No CUDA GPUs are available" in (t.cuda_error or "")):
        fix = ("unset CUDA_VISIBLE_DEVICES",) + fix
    yield Finding(
        "ED207",
        "error",
        CODES["ED207"].title,
        evidence=tuple(e for e in evidence if e),
        fix=fix,
        reference=REF_INSTALL,
        area="torch",
        explanation=hint or "The build and the driver fit each other, so the cause is in the error text above.",
    )


def tiny_op_failed(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED208: ``(torch.ones(8, device='cuda') * 2).sum()`` failed."""
    t = facts.torch
    if not _inspected(facts) or not t.tiny_op or t.tiny_op == "ok":
        return
    if "no kernel image" in t.tiny_op:
        explanation = (
            "This build has no kernels for the GPU (see ED206 for the build that has "
            "them); every CUDA operation fails the same way."
        )
    elif "out of memory" in t.tiny_op:
        explanation = "The GPU's memory is taken by other processes (nvidia-smi lists them)."
    else:
        explanation = "CUDA started but cannot run work on this GPU; the error text says why."
    yield Finding(
        "ED208",
        "error",
        CODES["ED208"].title,
        evidence=(f"(torch.ones(8, device='cuda') * 2).sum().item(): {t.tiny_op}", _torch_evidence(facts)),
        fix=(f"{_py(facts)} -c \"import torch; print((torch.ones(8, device='cuda') * 2).sum().item())\"",),
        reference=REF_BINARY,
        area="torch",
        explanation=explanation,
    )


# --- ED209-ED211: the rest of the install ------------------------------------------------------


def companion_mismatch(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED209 (another torch release) and ED210 (another CUDA) for torchvision and torchaudio."""
    t = facts.torch
    if not _inspected(facts) or not t.version:
        return
    rel = _torch_release(table, t.version)
    torch_tag = variant_tag(t.cuda) if not t.hip else (_local(t.version) or "rocm")
    for package, installed in (("torchvision", t.torchvision), ("torchaudio", t.torchaudio)):
        if not installed or version(installed) is None:
            continue
        paired = _companion(rel, package, t.version)
        ref = _COMPANION_REF[package]
        if paired and _base(installed) != _base(paired):
            yield Finding(
                "ED209",
                "error",
                f"{package} {installed} does not belong to torch {t.version}",
                evidence=(
                    f"{package} {installed} (package metadata)",
                    _torch_evidence(facts),
                    f"torch {_base(t.version)} pairs with {package} {paired} (envdoctor table)",
                ),
                fix=_companion_fix(facts, table, package, paired, torch_tag),
                reference=ref,
                area="torch",
                explanation=_COMPANION_BREAKS[package] + (_venv_note(facts) if system_python(facts) else ""),
            )
            continue
        tag = _local(installed)
        if tag is None and rel is not None and _release(installed) and paired:
            tag = rel.pypi_default  # a plain PyPI wheel: the release's default
        if tag is None or tag == torch_tag:
            continue
        same_major = tag.startswith("cu") and torch_tag.startswith("cu") and tag[2:-1] == torch_tag[2:-1]
        severity: Severity = "warning" if same_major or tag == "cpu" else "error"
        yield Finding(
            "ED210",
            severity,
            f"{package} was built for {tag}, torch for {torch_tag}",
            evidence=(f"{package} {installed} (package metadata)", _torch_evidence(facts)),
            fix=_companion_fix(facts, table, package, _base(installed) or installed, torch_tag),
            reference=ref,
            area="torch",
            explanation=(
                "The CPU build has no CUDA kernels for its operators, so they fail on GPU tensors."
                if tag == "cpu"
                else f"{package} loads, but it is not the pair the release was built and tested as."
                if severity == "warning"
                else f"{package}'s compiled operators need the CUDA major version torch has; with "
                "another they refuse to load or cannot find their CUDA libraries."
            ),
        )


def _companion_fix(facts: Facts, table: Optional[Table], package: str, wanted: str, torch_tag: str) -> tuple[str, ...]:
    """``package==wanted`` from torch's own variant index, without touching torch (``--no-deps``);
    into a new virtual environment, torch and the package together, for a system Python."""
    t = facts.torch
    index = _index_url(table, torch_tag)
    if system_python(facts) and _base(t.version):
        return _pip(facts, [f"torch=={_base(t.version)}", f"{package}=={wanted}"], index)
    return _pip(facts, [f"{package}=={wanted}"], index, no_deps=True)


def _stem(path: str) -> str:
    """ "/x/libcudnn_graph.so.9.19.0" -> "libcudnn_graph"."""
    return os.path.basename(path).split(".so", 1)[0]


def ld_library_path_shadows(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED211: CUDA libraries loaded from LD_LIBRARY_PATH instead of the copies the wheel ships."""
    t = facts.torch
    if not _inspected(facts) or not t.libraries or not t.bundled_libraries:
        return
    bundled = set(t.bundled_libraries)
    shipped = {_stem(p) for p in bundled}
    shadowed = [
        lib
        for lib in t.libraries
        if lib.via_ld_library_path
        and lib.path not in bundled
        and _stem(lib.path) in shipped
        and _stem(lib.path).startswith(WHEEL_LIBRARIES)
    ]
    if not shadowed:
        return
    entries = [e for e in (facts.system.env.get("LD_LIBRARY_PATH") or t.ld_library_path or "").split(":") if e]
    bad: list[str] = []
    for lib in shadowed:
        if lib.via_ld_library_path and lib.via_ld_library_path not in bad:
            bad.append(lib.via_ld_library_path)
    keep = [e for e in entries if e not in bad]
    fix = ("unset LD_LIBRARY_PATH",) if not keep else (f"export LD_LIBRARY_PATH={shlex.quote(':'.join(keep))}",)
    evidence = [
        f"torch loaded {lib.path} through LD_LIBRARY_PATH entry {lib.via_ld_library_path} (/proc/self/maps)"
        for lib in shadowed[:6]
    ]
    own = [p for p in t.bundled_libraries if _stem(p) in {_stem(lib.path) for lib in shadowed}]
    evidence += [f"the wheel ships {p}" for p in own[:3]]
    if t.cudnn_error:
        evidence.append(f"torch.backends.cudnn.version(): {t.cudnn_error}")
    yield Finding(
        "ED211",
        "error" if t.cudnn_error else "warning",
        "LD_LIBRARY_PATH makes torch load CUDA libraries other than the ones its wheel ships",
        evidence=tuple(evidence),
        fix=fix,
        reference=REF_LDSO,
        area="torch",
        explanation="The dynamic loader searches LD_LIBRARY_PATH before the paths torch's wheel "
        "records, so a system CUDA/cuDNN of another version replaces the tested one: "
        "version errors, missing symbols or silent slowdowns follow. To keep it fixed, "
        f"remove {' '.join(bad)} where LD_LIBRARY_PATH is set (~/.bashrc, "
        "/etc/environment, a module file).",
    )


RULES = (
    target_python_unusable,
    torch_check_failed,
    torch_import_error,
    torch_missing,
    cpu_only_build,
    cuda_newer_than_driver,
    no_kernels_for_gpu,
    cuda_unavailable,
    tiny_op_failed,
    companion_mismatch,
    ld_library_path_shadows,
)

__all__ = ["RULES"]

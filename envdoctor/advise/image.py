"""The NGC PyTorch image for the docker route: the newest one the driver runs with these GPUs.

Data-center GPUs may run newer images on the branches the release notes list (forward
compatibility through the image's cuda-compat); any other GPU only at the image's minimum branch.
An image whose CUDA predates or dropped a GPU's architecture, or whose ``min_cc`` (the lowest
compute capability its notes support) is above a GPU's, is skipped. With the bundled table an H100
on driver 580.95.05 gets the newest confirmed tag whose CUDA the driver runs.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.advise.machine import Gpu, Machine
from envdoctor.advise.plan import Image, ImageCompatibility
from envdoctor.compat import driver_support
from envdoctor.parse import version
from envdoctor.table import NgcRelease, Table


def choose_image(
    table: Table, driver: str, m: Machine, spec: SpecifierSet | None
) -> tuple[Image | None, list[str], list[str]]:
    """(the newest NGC image this driver runs, warnings, rejections) for the machine's GPUs."""
    gpus = m.nvidia
    dc = bool(gpus) and all(g.datacenter for g in gpus)
    rejected: list[str] = []
    fits = []
    for r in table.ngc_for_driver(driver, datacenter=dc):
        why = _why_not(table, r, gpus, spec)
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
        warnings.append(
            f"newer NGC tags the table does not confirm: {', '.join(newer)} "
            "(check NVIDIA's release notes before using them)"
        )
    doubtful = [f for f in pick.unconfirmed_fields if f != "min_cc"]  # min_cc: its own warning below
    if pick.unconfirmed or doubtful:
        fields = ", ".join(doubtful) if not pick.unconfirmed else "the whole row"
        warnings.append(
            f"envdoctor's row for NGC {pick.tag} is not verified against NVIDIA's support matrix ({fields})"
        )
    have, floor = version(driver), version(pick.min_driver)
    fc = have is not None and floor is not None and have < floor
    if fc:
        warnings.append(
            f"NGC {pick.tag} (CUDA {pick.cuda}) wants driver branch {pick.min_driver}; this data-center "
            f"GPU runs it on driver {driver} in forward-compatibility mode (the image's cuda-compat "
            "libraries); GeForce and workstation GPUs cannot"
        )
    old = [g for g in gpus if _below(g.cc, "7.5")]
    if old and not pick.min_cc:
        warnings.append(
            f"check the NGC {pick.tag} release notes for the minimum compute capability: "
            f"{', '.join(f'{g.name} (compute {g.cc})' for g in old)} may be below it"
        )
    elif old and not pick.confirmed("min_cc"):
        warnings.append(
            f"envdoctor's table gives NGC {pick.tag} a minimum compute capability of {pick.min_cc}, "
            f"unconfirmed: check the release notes' GPU requirements for "
            f"{', '.join(f'{g.name} (compute {g.cc})' for g in old)}"
        )
    image = Image(
        pick.image,
        pick.tag,
        pick.torch,
        pick.cuda,
        fc,
        bool(pick.unconfirmed),
        pick.source,
        "forward-compat" if fc else _compatibility(table, driver, pick.cuda, m),
    )
    return image, warnings, rejected


def _why_not(table: Table, r: NgcRelease, gpus: tuple[Gpu, ...], spec: SpecifierSet | None) -> str | None:
    """Why image ``r`` does not serve these GPUs (or ``--torch``); None when it does."""
    cuda = version(r.cuda)
    for g in gpus:
        arch = table.architecture(g.cc) if g.cc else None
        what = f"{arch.name} (compute {g.cc})" if arch else f"compute {g.cc}"
        first = version(arch.first_cuda) if arch is not None else None
        dropped = version(arch.dropped_cuda) if arch is not None else None
        if arch is not None and cuda is not None and first is not None and cuda < first:
            return f"CUDA {r.cuda} predates {arch.name} (compute {g.cc}, first CUDA {arch.first_cuda})"
        if arch is not None and cuda is not None and dropped is not None and cuda >= dropped:
            return f"CUDA {r.cuda} no longer supports {arch.name} (compute {g.cc})"
        if _below(g.cc, r.min_cc):
            return (
                f"it supports compute capability {r.min_cc} and later"
                f"{'' if r.confirmed('min_cc') else ' (per envdoctor table, unconfirmed)'}; "
                f"{what} is below that"
            )
    if spec is not None:
        tv = version(r.torch)
        if tv is None or not spec.contains(Version(tv.base_version), prereleases=True):
            return f"its torch {r.torch} is outside --torch {spec}"
    return None


def _below(cc: str | None, floor: str | None) -> bool:
    """Compute capability ``cc`` is below ``floor`` (False when either is unknown)."""
    have, need = version(cc), version(floor)
    return have is not None and need is not None and have < need


def _compatibility(table: Table, driver: str, cuda: str, m: Machine) -> ImageCompatibility:
    """How ``driver`` runs the image's CUDA without cuda-compat: directly or by minor-version compatibility."""
    try:
        kind = driver_support(table, driver, cuda, os=m.driver_os).kind
    except ValueError:
        return "direct"
    return "minor-version" if kind == "minor-version" else "direct"

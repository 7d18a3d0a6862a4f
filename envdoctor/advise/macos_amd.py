"""The choice on machines without NVIDIA's CUDA: macOS (PyPI's wheel, CPU and MPS) and AMD GPUs
(outside what envdoctor advises; the plan names PyTorch's ROCm index for the newest release)."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.advise.choice import Choice
from envdoctor.advise.fit import releases
from envdoctor.advise.request import parse_torch_spec
from envdoctor.table import Table

PYPI_SIMPLE = "https://pypi.org/simple"


def choose_macos(table: Table, torch_version: str | SpecifierSet | None, python: str | None) -> Choice:
    """macOS: PyPI's default wheel (CPU + Apple's MPS backend); no CUDA, no driver question."""
    spec = parse_torch_spec(torch_version)
    rows = releases(table, spec)
    confirmed = [r for r in rows if not r[0].unconfirmed]
    for rel, version, patch in confirmed or rows:
        if python and python not in rel.pythons:
            continue
        return Choice(
            "macos",
            torch=version,
            variant="pypi",
            index_url=PYPI_SIMPLE,
            compatibility="none",
            torchvision=patch.torchvision if patch else None,
            python=python,
            torchaudio=patch.torchaudio if patch else None,
            release=rel.version,
            reasons=("macOS: PyPI's default torch wheel (CPU and the MPS backend on Apple silicon)",),
            warnings=("envdoctor's table does not record macOS wheels; pip picks the wheel for this Mac",),
            sources=(rel.source,),
        )
    return Choice("no-fit", python=python, warnings=(f"no torch release in the table matches {torch_version}",))


def choose_amd(table: Table, names: Sequence[str]) -> Choice:
    """AMD GPUs: outside what envdoctor advises; name the ROCm index of the newest release."""
    for rel in reversed(table.torch_releases):
        if rel.unconfirmed:
            continue
        rocm = [v for v in rel.variants if v.name.startswith("rocm") and not v.unconfirmed]
        if rocm:
            best = max(rocm, key=lambda v: Version(v.name[4:]))
            var = table.variant(best.name)
            url = var.index_url if var is not None else None
            return Choice(
                "amd",
                torch=rel.patches[-1].version if rel.patches else rel.version,
                variant=best.name,
                index_url=url,
                compatibility="none",
                warnings=(
                    f"AMD GPU ({', '.join(names)}): ROCm is outside what envdoctor advises today; "
                    f"PyTorch's ROCm wheels for torch {rel.minor} are on {url}",
                ),
                sources=(rel.source,),
                release=rel.version,
            )
    return Choice("amd", warnings=("AMD GPU: ROCm is outside what envdoctor advises today",))

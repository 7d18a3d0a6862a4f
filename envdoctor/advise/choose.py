"""Pick the torch release and wheel variant for a Linux machine. Pure: table and facts in, a Choice out.

The newest torch within the user's specifier and, for it, the best wheel variant such that

- the driver runs the variant's CUDA: directly preferred, by minor-version compatibility only
  with a warning (and never where a GPU would need PTX, which that mode cannot JIT-compile);
- every GPU finds kernels in the variant's arch list (``compat.kernel_support``: a cubin of the
  same major and a lower-or-equal minor, else PTX of a lower-or-equal capability);
- the driver itself still runs every GPU (its architecture's first and last driver branch);
- wheels exist for the Python version, the CPU (``linux_aarch64``) and the machine's glibc;
- the wheel is on the index: asked live through ``available`` when given, else the table decides,
  and a variant the table marks unconfirmed (other than the release's PyPI default), or a whole
  unconfirmed release, is only used when nothing confirmed fits. A variant whose wheels the table
  confirms but whose arch list it infers (``unconfirmed_fields = ["arch_list"]``) is used like a
  confirmed one, with a warning that the kernel list is inferred and, as a way out, the newest
  torch whose kernel list the table confirms.

The parts: :mod:`~envdoctor.advise.request` (what is asked), :mod:`~envdoctor.advise.fit` (one
variant), :mod:`~envdoctor.advise.pick` (one choice), :mod:`~envdoctor.advise.waysout` (the other
roads), :mod:`~envdoctor.advise.drivers` (the branch to install). With the bundled table, an RTX 5090
(compute 12.0) on driver 570.133.20 with CPython 3.12 and glibc 2.39 gets torch 2.11.0+cu128:
``choose_variant(table, None, "570.133.20", ["12.0"], "3.12", "2.39").label``.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.specifiers import SpecifierSet

from envdoctor.advise.choice import Choice
from envdoctor.advise.drivers import recommended_branch
from envdoctor.advise.machine import cpu_arch
from envdoctor.advise.pick import pick
from envdoctor.advise.request import Availability, DriverOs, Request, parse_torch_spec, spec_text, spec_variant
from envdoctor.advise.waysout import with_ways_out
from envdoctor.table import Table

__all__ = ["Choice", "choose_variant", "recommended_branch"]


def choose_variant(
    table: Table,
    torch_version: str | SpecifierSet | None,
    driver: str | None,
    gpu_ccs: Iterable[str | None],
    python: str | None,
    glibc: str | None,
    arch: str = "x86_64",
    *,
    available: Availability | None = None,
    require_direct: bool = False,
    ways_out: bool = True,
    cudas: Iterable[str] | None = None,
    require_known_kernels: bool = False,
    os: DriverOs = "linux",
) -> Choice:
    """The torch release and wheel variant for a Linux machine, with reasons and ways out.

    ``torch_version``: None (newest), a version ("2.7", "2.7.1") or a specifier (">=2.4,<2.6"); a
    local label names the wheel variant ("2.7.1+cu118"): chosen where it works, else the plan says why not.
    ``driver``: "580.95.05"; None with GPUs means no driver is installed yet: the choice is made
    for the branch :func:`recommended_branch` names, and ``driver_needed`` says so.
    ``gpu_ccs``: ["8.6", "9.0"] (None for a GPU of unknown capability); empty: CPU wheels.
    ``python``: "3.12" or "3.13t" (None: any); ``glibc``: "2.35" (None: unknown).
    ``cudas``: only variants of these CUDA lines (``("12.8", "12.9")``: toolkits a repository has).
    ``require_known_kernels``: only variants whose arch list (for ``arch``) the table confirms.
    ``os``: whose driver minimums ``driver`` is held to: "linux", or "windows" for the Windows
    driver that serves WSL2 (CUDA 12.8 needs 570.26 on Linux, 570.65 on Windows).
    """
    req = Request(
        parse_torch_spec(torch_version),
        driver,
        tuple(gpu_ccs),
        python,
        glibc,
        cpu_arch(arch),
        require_direct,
        tuple(cudas) if cudas is not None else None,
        require_known_kernels,
        spec_text(torch_version),
        os,
        spec_variant(torch_version),
    )
    choice = pick(table, req, available)
    return with_ways_out(table, choice, req, available) if ways_out else choice

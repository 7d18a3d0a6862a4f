"""The ways out: what would make a better torch possible when the choice is not good (or not there).

Each way out is the same :class:`~envdoctor.advise.request.Request` with one thing changed, chosen
again without ways out: another driver branch (``replace(request, driver=...)``), no ``--torch``
(what works today), only direct driver support, only confirmed kernel lists, CPU wheels, or one of
the machine's own limits lifted (the Python, glibc, the CUDA lines of NVIDIA's repository for
``--with-nvcc``). A limit is named only where lifting it alone gives a newer torch; limits that
matter only together are named together (``"limits"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.advise.choice import Choice, WayOut
from envdoctor.advise.drivers import branch_driver, recommended_branch
from envdoctor.advise.fit import glibc_ok, releases
from envdoctor.advise.pick import pick
from envdoctor.advise.request import Availability, Request, parse_torch_spec
from envdoctor.parse import major
from envdoctor.table import Table, TorchRelease, TorchVariant

#: The machine's own limits that may hold torch back, in the order they are named.
Limit = Literal["python", "glibc", "cudas"]
_LIMITS: tuple[Limit, ...] = ("python", "glibc", "cudas")


def with_ways_out(table: Table, choice: Choice, req: Request, available: Availability | None) -> Choice:
    """``choice`` with its other roads: a driver upgrade, the newest torch that works today, a direct
    fit, confirmed kernels, and the limit that holds torch back (the request, the Python, glibc,
    the CUDA toolkits for nvcc). GPUs with neither a driver nor a branch to plan for: none."""
    if req.ccs and not req.driver and recommended_branch(table, req.ccs) is None:
        return choice
    base = replace(req, require_direct=False, require_known_kernels=False)
    gpus = bool(req.ccs)
    ways: list[WayOut] = []
    spec_way = _spec_way(table, choice, base, available)
    if spec_way is not None:
        ways.append(spec_way)
    branch = recommended_branch(table, req.ccs) if gpus else None
    have = major(req.driver)
    if branch and req.driver and have is not None and int(branch) < have and choice.status == "no-fit":
        fixed = pick(table, replace(base, driver=branch_driver(table, branch)), available)
        if fixed.ok:
            ways.append(
                WayOut(
                    "install-driver",
                    f"install driver branch {branch}, the last that runs these GPUs: then {fixed.label}",
                    fixed.torch,
                    fixed.variant,
                    branch,
                )
            )
    if branch and req.driver and (have is None or int(branch) > have):
        better = pick(table, replace(base, driver=branch_driver(table, branch)), available)
        if _better(better, choice):
            ways.append(
                WayOut(
                    "upgrade-driver",
                    f"upgrade the driver to branch {branch}: then {better.label} "
                    f"({'runs directly' if better.compatibility == 'direct' else better.compatibility})",
                    better.torch,
                    better.variant,
                    branch,
                )
            )
    if choice.status == "no-fit" and req.spec is not None and spec_way is None and (req.driver or not gpus):
        today = pick(table, replace(base, spec=None), available)
        if today.ok:
            what = f"today's driver {req.driver}" if gpus else "this machine"
            ways.append(
                WayOut(
                    "works-today", f"the newest torch that works with {what}: {today.label}", today.torch, today.variant
                )
            )
    if gpus and choice.ok and choice.compatibility == "minor-version" and req.driver:
        direct = pick(table, replace(base, require_direct=True), available)
        if direct.ok:
            ways.append(
                WayOut(
                    "direct",
                    f"{direct.label} runs on driver {req.driver} directly, without minor-version compatibility",
                    direct.torch,
                    direct.variant,
                )
            )
    if gpus and choice.ok and choice.kernels_inferred:
        known = pick(
            table, replace(base, driver=req.driver or choice.driver_assumed, require_known_kernels=True), available
        )
        if known.ok and (known.torch, known.variant) != (choice.torch, choice.variant):
            ways.append(
                WayOut(
                    "confirmed-kernels",
                    f"{known.label} is the newest torch whose kernel list for these GPUs envdoctor's table confirms",
                    known.torch,
                    known.variant,
                )
            )
    if req.driver or not gpus:
        ways += _limit_ways(table, choice, base)
    if choice.status == "no-fit" and gpus:
        cpu = pick(table, replace(base, ccs=(), driver=None), None)
        if cpu.ok:  # not where the Python or glibc has no CPU wheels either
            ways.append(
                WayOut(
                    "cpu",
                    f"CPU-only wheels run anywhere (no GPU): --index-url .../whl/cpu ({cpu.label})",
                    cpu.torch,
                    cpu.variant,
                )
            )
    return replace(choice, ways_out=tuple(ways))


def _better(a: Choice, b: Choice) -> bool:
    """Is ``a`` a better outcome than ``b`` (newer torch, or the same torch without MVC)?"""
    if not a.ok or not a.torch:
        return False
    if not b.ok or not b.torch:
        return True
    va, vb = Version(a.torch), Version(b.torch)
    return va > vb or (va == vb and a.compatibility == "direct" and b.compatibility != "direct")


def _newer_torch(a: Choice, b: Choice) -> bool:
    """``a`` installs a newer torch than ``b`` (or ``b`` installs none)."""
    if not a.ok or not a.torch:
        return False
    return not b.ok or not b.torch or Version(a.torch) > Version(b.torch)


def _lifted(req: Request, limits: Iterable[Limit]) -> Request:
    """``req`` without these limits (any Python, any glibc, any CUDA line)."""
    gone = set(limits)
    return replace(
        req,
        python=None if "python" in gone else req.python,
        glibc=None if "glibc" in gone else req.glibc,
        cudas=None if "cudas" in gone else req.cudas,
    )


def _exact_minor(asked: str) -> str | None:
    """ "2.1.5" or "==2.1.5" -> "2.1"; None for anything else."""
    exact = re.fullmatch(r"\s*(?:==)?\s*([0-9]+)\.([0-9]+)\.([0-9]+)\s*", asked)
    return f"{exact.group(1)}.{exact.group(2)}" if exact else None


def unknown_torch(table: Table, spec: SpecifierSet, asked: str) -> str | None:
    """What to say when no torch release of the table matches ``--torch`` (``asked`` as given),
    or None when one does: the patches of that minor release, else the newest it knows.

    recommend says it in one line and exits 2 before planning (issue 26: ``--torch 9.9`` led with
    "nothing fits as the machine is"); the ways out of a plan say the same.
    """
    if releases(table, spec):
        return None
    rows = table.torch_releases
    minor = _exact_minor(asked)
    rel = table.torch(minor) if minor else None
    if rel is not None:
        patches = [p.version for p in rel.patches] or [rel.version]
        return f"no torch {asked.strip().lstrip('=')} in envdoctor's table: torch {minor} has {', '.join(patches)}"
    confirmed = [r for r in rows if not r.unconfirmed]
    newest = confirmed[-1] if confirmed else (rows[-1] if rows else None)
    newest_v = (newest.patches[-1].version if newest.patches else newest.version) if newest else None
    text = f"no torch release matches '{asked}'; the newest envdoctor knows is {newest_v or 'none'}"
    if newest is not None and newest is not rows[-1]:
        text += f" ({rows[-1].version} is in its table, unconfirmed)"
    return text


def _spec_way(table: Table, choice: Choice, req: Request, available: Availability | None) -> WayOut | None:
    """``--torch`` matches nothing in the table: say so, and what does exist."""
    if req.spec is None or choice.ok:
        return None
    asked = req.spec_text or str(req.spec)
    text = unknown_torch(table, req.spec, asked)
    if text is None:
        return None
    minor = _exact_minor(asked)
    if minor is not None and table.torch(minor) is not None:
        alt = pick(table, replace(req, spec=parse_torch_spec(minor)), available)
        text += f"; --torch {minor} gives {alt.label}" if alt.ok else ""
        return WayOut("torch-spec", text, alt.torch if alt.ok else None, alt.variant if alt.ok else None)
    alt = pick(table, replace(req, spec=None), available)
    if alt.ok:
        text += f"; without --torch: {alt.label}"
    return WayOut("torch-spec", text, alt.torch if alt.ok else None, alt.variant if alt.ok else None)


def _limit_ways(table: Table, choice: Choice, req: Request) -> list[WayOut]:
    """Which of the machine's own limits holds torch back: relax one at a time (the Python, glibc,
    the CUDA toolkit lines for nvcc) and name it only where that alone gives a newer torch; if none
    does alone but all together do, name them together. Other machines are not asked live."""
    out: list[WayOut] = []
    best = choice
    py_way = _python_way(table, choice, req)
    if py_way is not None:
        out.append(py_way)
        best = replace(choice, status="ok", torch=py_way.torch, variant=py_way.variant)
    if req.glibc:
        lifted = pick(table, _lifted(req, ("glibc",)), None)
        need = _wheel_attr(table, lifted, "glibc")
        if _newer_torch(lifted, choice) and glibc_ok(req.glibc, need) is False:
            tag = _wheel_attr(table, lifted, "manylinux")
            at = f"at {choice.torch}" if choice.ok and choice.torch else "back"
            out.append(
                WayOut(
                    "newer-glibc",
                    f"glibc {req.glibc} holds torch {at}: {lifted.label} needs glibc "
                    f"{need} ({tag} wheels); a distribution with glibc {need} or newer "
                    "would allow it",
                    lifted.torch,
                    lifted.variant,
                )
            )
            best = lifted
    if req.cudas is not None:
        lifted = pick(table, _lifted(req, ("cudas",)), None)
        if _newer_torch(lifted, choice):
            top = max(req.cudas, key=Version) if req.cudas else "none"
            out.append(
                WayOut(
                    "without-nvcc",
                    f"--with-nvcc holds torch at {choice.label[len('torch ') :]}: "
                    "NVIDIA's CUDA repository "
                    f"for this distribution has toolkits up to CUDA {top}, and "
                    f"{lifted.label} needs CUDA {lifted.cuda}; without a system nvcc "
                    "(or with conda's cuda-nvcc: --route conda --with-nvcc) it fits",
                    lifted.torch,
                    lifted.variant,
                )
            )
            if _newer_torch(lifted, best):
                best = lifted
    names = {
        "python": f"Python {req.python}",
        "glibc": f"glibc {req.glibc}",
        "cudas": "the CUDA toolkits NVIDIA's repository has for this distribution (--with-nvcc)",
    }
    present = {"python": bool(req.python), "glibc": bool(req.glibc), "cudas": req.cudas is not None}
    held = [k for k in _LIMITS if present[k]]
    if len(held) >= 2:
        lifted = pick(table, _lifted(req, held), None)
        if _newer_torch(lifted, best):
            # name only the limits that matter: keeping one of them must cost the lifted torch
            needed = [
                k for k in held if _newer_torch(lifted, pick(table, _lifted(req, [x for x in held if x != k]), None))
            ]
            if len(needed) >= 2:
                what = [names[k] for k in needed]
                at = f"at {choice.label[len('torch ') :]}" if choice.ok and choice.torch else "back"
                out.append(
                    WayOut(
                        "limits",
                        f"{', '.join(what[:-1])} and {what[-1]} together hold torch {at}: "
                        f"with them lifted (a newer distribution), {lifted.label}",
                        lifted.torch,
                        lifted.variant,
                    )
                )
    return out


def _pyv(series: str) -> Version:
    return Version(series.rstrip("t"))


def _python_way(table: Table, choice: Choice, req: Request) -> WayOut | None:
    """Another Python, when the Python (and nothing else) is what holds torch back."""
    if not req.python:
        return None
    lifted = pick(table, _lifted(req, ("python",)), None)
    if not _newer_torch(lifted, choice):
        return None
    rel = table.torch(lifted.release or lifted.torch or "")
    if rel is None or req.python in rel.pythons:
        return None  # the Python is not what holds torch back
    free = req.python.endswith("t")
    same_kind = [p for p in rel.pythons if p.endswith("t") == free] or list(rel.pythons)
    want = _pyv(req.python)
    everything = {p for r in table.torch_releases for p in r.pythons}
    if want > max(_pyv(p) for p in same_kind):
        py = max(same_kind, key=_pyv)
    else:
        py = (
            f"3.12{'t' if free else ''}"
            if f"3.12{'t' if free else ''}" in same_kind
            else min((p for p in same_kind if _pyv(p) > want), key=_pyv, default=max(same_kind, key=_pyv))
        )
    check = pick(table, replace(req, python=py), None)
    if not _newer_torch(check, choice):
        return None
    kind: Literal["newer-python", "older-python"] = "newer-python" if _pyv(py) > want else "older-python"
    if want > max(_pyv(p) for p in everything):
        text = f"Python {req.python} has no torch wheels yet; {py} does ({check.label})"
    elif want < min(_pyv(p) for p in everything):
        text = f"Python {req.python} has no torch wheels; Python {py} would allow {check.label}"
    elif req.spec is not None and not choice.ok:
        plain = [p for p in rel.pythons if not p.endswith("t")] or list(rel.pythons)
        text = (
            f"torch {rel.minor} has no wheels for Python {req.python} (it has {plain[0]}-{plain[-1]}); "
            f"Python {py} would allow {check.label}"
        )
    else:
        text = f"Python {py} instead of {req.python} would allow {check.label}"
    return WayOut(kind, text, check.torch, check.variant)


def _wheel_attr(table: Table, c: Choice, name: Literal["glibc", "manylinux"]) -> str | None:
    """The glibc (``"2.28"``) or manylinux tag the wheels of ``c`` need: the variant's own, else its release's."""
    rel: TorchRelease | None = table.torch(c.release or c.torch) if c.torch else None
    if rel is None:
        return None
    v: TorchVariant | None = rel.variant(c.variant) if c.variant else None
    if name == "glibc":
        return (v.glibc if v is not None else None) or rel.glibc
    return (v.manylinux if v is not None else None) or rel.manylinux

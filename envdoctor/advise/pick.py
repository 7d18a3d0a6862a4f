"""One torch choice for one :class:`Request`, without ways out: the newest release within the
specifier and, for it, the best-ranked variant that :func:`~envdoctor.advise.fit.fit_variant` lets through.

A variant the table does not confirm (other than the release's PyPI default), or a whole unconfirmed
release, is used only when nothing confirmed fits, unless the live index (``available``) says its
wheel is there. With GPUs and no driver, the choice is made for :func:`recommended_branch`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from packaging.version import Version

from envdoctor.advise.choice import Choice, Compatibility, Rejected
from envdoctor.advise.drivers import branch_driver, gpu_driver_problem, recommended_branch
from envdoctor.advise.fit import Fit, Turned, doubtful, fit_variant, ptx_only, releases
from envdoctor.advise.request import Availability, Request
from envdoctor.compat import DriverSupport
from envdoctor.parse import major_minor
from envdoctor.table import Table, TorchPatch, TorchRelease, TorchVariant


@dataclass(frozen=True)
class _Candidate:
    release: TorchRelease
    version: str  # "2.13.0": the patch within the specifier
    patch: TorchPatch | None
    variant: TorchVariant
    fit: Fit


def pick(table: Table, req: Request, available: Availability | None) -> Choice:
    """The choice for ``req`` (no ways out). GPUs without a driver: planned for the recommended
    branch (``driver_needed``); a driver that cannot run a GPU at all: "no-fit" saying why."""
    needed = assumed = None
    if req.ccs and not req.driver:
        needed = recommended_branch(table, req.ccs)
        assumed = branch_driver(table, needed) if needed else None
    driver = req.driver or assumed
    if req.ccs and driver:
        problems = [p for p in (gpu_driver_problem(table, driver, cc) for cc in req.ccs if cc) if p]
        if problems:
            return Choice(
                "no-fit",
                python=req.python,
                warnings=tuple(problems),
                rejected=tuple(Rejected(f"driver {driver}", p) for p in problems),
                index_check="offline-table" if available is None else "live",
            )
    if req.ccs and not driver:
        return Choice("no-fit", python=req.python, warnings=("no driver branch in the table runs these GPUs",))
    choice = _choose(table, replace(req, driver=driver), available)
    if needed:
        choice = replace(
            choice,
            driver_needed=needed,
            driver_assumed=assumed,
            reasons=(f"no NVIDIA driver yet: planned for branch {needed} (driver {assumed} or newer)",)
            + choice.reasons,
        )
    return choice


def _first(
    table: Table,
    req: Request,
    available: Availability | None,
    allow_doubtful: bool,
    turned: Turned,
    only: str | None = None,
) -> _Candidate | None:
    """The newest release's best variant that fits (and that the index has, when asked);
    ``only``: that variant and no other (the one ``--torch 2.7.1+cu118`` names)."""
    want_cpu = not req.ccs
    for rel, version, patch in releases(table, req.spec):
        if req.python and req.python not in rel.pythons:
            turned.reject(f"torch {version}", f"no wheels for Python {req.python} (it has {', '.join(rel.pythons)})")
            continue
        ranked = []
        for v in rel.variants:
            if only is not None and v.name != only:
                continue
            var = table.variant(v.name)
            kind = var.kind if var is not None else ("cuda" if v.cuda else v.name)
            if want_cpu != (kind == "cpu") or kind not in ("cuda", "cpu"):
                continue
            got = fit_variant(table, rel, version, v, req, turned)
            if got is not None:
                ranked.append(_Candidate(rel, version, patch, v, got))
        ranked.sort(key=lambda c: c.fit.rank, reverse=True)
        for c in ranked:
            if available is not None:
                ans = available(c.variant.name, version)
                if ans.found is False:
                    turned.index_states.append("live")
                    turned.reject(
                        f"torch {version} {c.variant.name}",
                        ans.detail or "not on the index for this Python and platform",
                    )
                    continue
                if ans.found is True:
                    turned.index_states.append("live")
                    return c
                turned.index_states.append(f"failed: {ans.detail or 'the index did not answer'}")
            if doubtful(rel, c.variant) and not allow_doubtful:
                why = (
                    "the table does not confirm this release"
                    if rel.unconfirmed
                    else "the table does not confirm these wheels are on the index"
                )
                turned.reject(
                    f"torch {version} {c.variant.name}", why + " (checked again only if nothing confirmed fits)"
                )
                continue
            return c
    return None


def _choose(table: Table, req: Request, available: Availability | None) -> Choice:
    """The choice for a request whose driver is settled (given, or assumed for the branch to install).

    A variant named in ``--torch`` (``req.variant``) is taken in the newest release within the
    specifier where it works (an unconfirmed one too: it was asked for by name); where it works in
    none, the usual choice is made and ``variant_changed`` says why the asked one was not.
    """
    turned = Turned()
    c = None
    changed = None
    if req.variant:
        c = _first(table, req, available, True, turned, only=req.variant)
        if c is None:
            changed = _not_asked(table, req, turned)
    asked = c is not None
    relaxed = False
    if c is None:
        c = _first(table, req, available, False, turned)
    if c is None:
        c = _first(table, req, available, True, turned)
        relaxed = c is not None
    index_check = _index_state(turned.index_states, available)
    if c is None:
        # Nothing within the request: "no-fit" with or without GPUs (a GPU-less machine gets no
        # "cpu" choice without a torch to install); the ways out say why and what would fit.
        return Choice(
            "no-fit", compatibility="none", python=req.python, rejected=tuple(turned.rejected), index_check=index_check
        )
    rel, version, v, support = c.release, c.version, c.variant, c.fit.support
    var = table.variant(v.name)
    warnings: list[str] = []
    reasons: list[str] = []
    if changed:
        warnings.append(
            f"--torch {req.spec_text}: {req.variant} was asked for, but {changed}; planned {v.name} instead"
        )
    if asked:
        reasons.append(f"wheel variant {v.name}, as --torch {req.spec_text} asks")
    if asked and doubtful(rel, v):
        warnings.append(
            f"envdoctor's table does not confirm torch {version} {v.name} (asked for with --torch "
            f"{req.spec_text}); check the index before relying on it"
        )
    elif relaxed:
        warnings.append(
            f"envdoctor's table does not confirm torch {version} {v.name}; "
            "nothing confirmed fits, so check the index before relying on it"
        )
    if req.ccs and support is not None:
        r, w = _gpu_notes(req, c, support)
        reasons += r
        warnings += w
    if req.python:
        reasons.append(f"wheels for Python {req.python} on linux_{req.arch}")
    need_glibc = v.glibc or rel.glibc
    if req.glibc is None and need_glibc and Version(need_glibc) > Version("2.17"):
        warnings.append(f"glibc unknown: torch {version} {v.name} wheels need glibc {need_glibc} or newer")
    if v.unconfirmed and not relaxed and not (asked and doubtful(rel, v)):
        warnings.append(
            f"envdoctor's table marks torch {version} {v.name} unconfirmed "
            "(whether these wheels are on the index, or how they were built, is inferred)"
        )
    compatibility: Compatibility = "none"
    if support is not None:
        compatibility = "direct" if support.kind == "direct" else "minor-version"
    return Choice(
        status="ok" if req.ccs else "cpu",
        torch=version,
        variant=v.name,
        cuda=v.cuda,
        index_url=var.index_url if var is not None else None,
        compatibility=compatibility,
        torchvision=c.patch.torchvision if c.patch else rel.torchvision,
        torchaudio=c.patch.torchaudio if c.patch else rel.torchaudio,
        python=req.python,
        kernels=c.fit.kernels,
        reasons=tuple(reasons),
        warnings=tuple(dict.fromkeys(warnings)),
        rejected=tuple(turned.rejected),
        sources=_sources(table, rel, v, support, req.ccs),
        index_check=index_check,
        release=rel.version,
        unconfirmed=doubtful(rel, v),
        kernels_inferred=bool(req.ccs and c.fit.inferred),
        variant_asked=req.variant,
        variant_changed=changed,
    )


def _not_asked(table: Table, req: Request, turned: Turned) -> str:
    """Why the variant ``--torch`` names works in no release within it: the newest release's reason
    (``"torch 2.7.1 cu118: no kernels for compute 12.0 (it has sm_37, ..., sm_90)"``)."""
    want = req.variant or ""
    var = table.variant(want)
    rows = releases(table, req.spec)
    if var is None:
        return f"envdoctor's table knows no wheel variant {want}"
    if req.ccs and var.kind == "cpu":
        return "CPU wheels would leave the NVIDIA GPUs unused (for CPU wheels, plan with --no-gpu)"
    if var.kind in ("rocm", "xpu"):
        return f"{want} wheels are for {'AMD' if var.kind == 'rocm' else 'Intel'} GPUs"
    if not req.ccs and var.kind == "cuda":
        return "there is no NVIDIA GPU here: CPU wheels do the same work, without the CUDA libraries (GBs)"
    for rel, version, _ in rows:
        if rel.variant(want) is None:
            continue
        why = next((r.reason for r in turned.rejected if r.what == f"torch {version} {want}"), None)
        if why:
            return f"torch {version}+{want} does not fit here: {why}"
    having = [version for rel, version, _ in rows if rel.variant(want) is not None]
    if not having:
        newest = rows[0][1] if rows else None
        return (
            (f"torch {newest} has no {want} wheels" if len(rows) == 1 else f"no torch within it has {want} wheels")
            if newest
            else f"no torch within it has {want} wheels"
        )
    return f"no torch within it has {want} wheels that fit here"


def _gpu_notes(req: Request, c: _Candidate, support: DriverSupport) -> tuple[list[str], list[str]]:
    """(reasons, warnings) about the driver and the kernels of a CUDA choice."""
    v, cuda, kernels = c.variant, c.variant.cuda, c.fit.kernels
    reasons = [
        f"driver {req.driver} runs CUDA {cuda} "
        + (
            "directly"
            if support.kind == "direct"
            else f"by minor-version compatibility (CUDA {cuda} needs {support.needed})"
        )
    ]
    warnings = []
    if c.fit.known:
        reasons.append(
            "kernels for every GPU: "
            + ", ".join(f"compute {cc} via {k}" for cc, k in kernels)
            + (" (in the arch list the table infers)" if c.fit.inferred else "")
        )
        if c.fit.inferred:
            warnings.append(
                f"the kernel list of torch {c.version} {v.name} is inferred in envdoctor's table "
                + (
                    "(its wheels are confirmed, its arch list is not)"
                    if not doubtful(c.release, v)
                    else "(like the wheels themselves)"
                )
                + ": kernels for "
                + ", ".join(f"compute {cc} ({k.split()[0]})" for cc, k in kernels)
                + " are expected, not confirmed; after installing, "
                "torch.cuda.get_arch_list() shows the real list"
            )
    elif all(req.ccs):
        warnings.append(
            f"the table has no {req.arch} arch list for torch {c.version} {v.name}; kernels for the GPU are not checked"
        )
    if support.note:
        warnings.append(support.note)
    if support.kind == "minor-version":
        warnings.append(
            f"CUDA {cuda} runs on driver {req.driver} only by minor-version compatibility: "
            + "; ".join(relevant_limitations(support.limitations, cuda) or ("newer CUDA features may fail",))
        )
    if ptx_only(kernels):
        warnings.append("a GPU gets PTX only: the first CUDA call JIT-compiles kernels (slow start)")
    return reasons, warnings


def relevant_limitations(limitations: Sequence[str], cuda: str | None) -> tuple[str, ...]:
    """The minor-version-compatibility limitations that matter for a build of ``cuda``: a line
    about another CUDA release ("CUDA 11.0 itself shipped with 450.36/450.51 drivers; ...") is
    history of that release, not something that fails for an 11.8 wheel, so it is left out.

    >>> relevant_limitations(("APIs ... fail", "CUDA 11.0 itself shipped with 450.36/450.51 drivers"), "11.8")
    ('APIs ... fail',)
    """
    line = major_minor(cuda)
    out = []
    for text in limitations:
        named = set(re.findall(r"\bCUDA (\d+\.\d+)\b", text))
        if named and line not in named:
            continue
        out.append(text)
    return tuple(out)


def _index_state(states: Sequence[str], available: Availability | None) -> str:
    """``"live"``, ``"offline-table"`` or the first ``"failed: <why>"``."""
    if available is None:
        return "offline-table"
    failed = [s for s in states if s.startswith("failed")]
    if failed:
        return failed[0]
    return "live" if states else "offline-table"


def _sources(
    table: Table, rel: TorchRelease, v: TorchVariant, support: DriverSupport | None, ccs: Sequence[str | None]
) -> tuple[str, ...]:
    """The sources of every table row the choice rests on, each once."""
    out: list[str | None] = [rel.source, v.source]
    var = table.variant(v.name)
    out.append(var.source if var is not None else None)
    if v.cuda:
        cuda = table.cuda(v.cuda)
        out.append(cuda.source if cuda is not None else None)
        if support is not None and support.kind == "minor-version":
            mc = table.minor_compat(v.cuda.split(".")[0])
            out.append(mc.source if mc is not None else None)
    for cc in ccs:
        arch = table.architecture(cc) if cc else None
        out.append(arch.source if arch is not None else None)
    return tuple(dict.fromkeys(s for s in out if s))

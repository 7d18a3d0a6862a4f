"""Pick the torch release and wheel variant for a machine. Pure: table and facts in, a Choice out.

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

>>> c = choose_variant(load_table(), None, "580.95.05", ["6.1"], "3.12", "2.35", "x86_64")
>>> c.torch, c.variant, c.compatibility
('2.13.0', 'cu126', 'direct')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.compat import driver_support, kernel_support
from envdoctor.parse import major
from envdoctor.parse import version as _version

PYPI_SIMPLE = "https://pypi.org/simple"
_OPS = re.compile(r"[<>=!~]")
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


class SpecError(ValueError):
    """``--torch`` is neither a version nor a PEP 440 specifier."""


@dataclass(frozen=True)
class IndexAnswer:
    """What the live index said about one wheel: ``found`` None means it could not tell."""

    found: Optional[bool]
    detail: str = ""            # "https://download.pytorch.org/whl/cu128: no torch 2.13.0 for cp312 ..."


#: ``available(variant, torch_version)`` -> IndexAnswer; None: no live check (offline).
Availability = Callable[[str, str], IndexAnswer]


@dataclass(frozen=True)
class Rejected:
    """A candidate that was looked at and turned down: ``Rejected("torch 2.13.0 cu130", "...")``."""

    what: str
    reason: str


@dataclass(frozen=True)
class WayOut:
    """Another way to a working torch when the choice is not good (or not there).

    kind: "upgrade-driver" (install ``branch``, then ``torch``+``variant``), "install-driver" (the
    last branch that still runs a retired GPU), "works-today" (the newest torch that works with
    today's driver, outside the request), "direct" (a torch the driver runs without minor-version
    compatibility), "confirmed-kernels" (the newest torch whose kernel list for these GPUs the
    table confirms, when the choice's is inferred), "newer-python" / "older-python" (what another
    Python would allow, when the Python is what holds torch back), "newer-glibc" (the machine's glibc
    holds torch back), "without-nvcc" (the CUDA toolkits NVIDIA's repository has for the distribution
    hold torch back, with ``--with-nvcc``), "limits" (several of these only together), "torch-spec"
    (nothing in the table matches ``--torch``), "route" (another route; the docker route without a
    GPU), "cpu".
    """

    kind: str
    text: str
    torch: Optional[str] = None
    variant: Optional[str] = None
    branch: Optional[str] = None


@dataclass(frozen=True)
class Choice:
    """The torch and wheel variant to install, or why there is none.

    status: "ok" (CUDA wheels), "cpu" (no NVIDIA GPU: CPU wheels), "no-fit" (GPUs, but no wheel
    works; see ``ways_out``), "amd" (outside what envdoctor advises), "macos" (PyPI's default
    wheel, with MPS). ``compatibility``: "direct", "minor-version" or "none" (CPU wheels, no fit).
    """

    status: str
    torch: Optional[str] = None             # "2.13.0": the newest patch within the specifier
    variant: Optional[str] = None           # "cu130", "cpu", "rocm7.2"
    cuda: Optional[str] = None              # "13.0"
    index_url: Optional[str] = None         # the table's index URL of the variant
    compatibility: str = "none"
    torchvision: Optional[str] = None
    torchaudio: Optional[str] = None
    python: Optional[str] = None            # the Python the choice was made for (None: any)
    driver_needed: Optional[str] = None     # a branch to install first ("580"): no driver yet
    driver_assumed: Optional[str] = None    # the driver the choice was made for, when none is installed
    kernels: Tuple[Tuple[str, str], ...] = ()    # (GPU cc, "sm_86 cubin") per GPU
    reasons: Tuple[str, ...] = ()
    warnings: Tuple[str, ...] = ()
    rejected: Tuple[Rejected, ...] = ()
    ways_out: Tuple[WayOut, ...] = ()
    sources: Tuple[str, ...] = ()
    index_check: str = "offline-table"      # "live", "offline-table", "failed: <why>"
    release: Optional[str] = field(default=None, compare=False)   # "2.13.0": the table row used
    unconfirmed: bool = False               # the chosen release or variant is unconfirmed in the table
    kernels_inferred: bool = False          # the kernel check used an arch list the table infers

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "cpu", "macos")

    @property
    def label(self) -> str:
        """``"torch 2.13.0+cu130"``."""
        if not self.torch:
            return "no torch"
        return f"torch {self.torch}" + (f"+{self.variant}" if self.variant and self.variant != "pypi" else "")


# --- small parsers -----------------------------------------------------------------------------

def parse_torch_spec(text: Union[str, SpecifierSet, None]) -> Optional[SpecifierSet]:
    """``"2.1"`` -> ``==2.1.*``; ``"2.7.1"`` -> ``==2.7.1``; ``">=2.4,<2.6"`` as written; None -> None."""
    if text is None or isinstance(text, SpecifierSet):
        return text
    s = text.strip()
    if not s:
        return None
    if _OPS.search(s):
        try:
            return SpecifierSet(s)
        except InvalidSpecifier:
            raise SpecError(f"--torch {text!r}: not a version or a PEP 440 specifier (e.g. 2.7, '>=2.4,<2.6')") from None
    try:
        v = Version(re.sub(r"\.\*$", "", s))
    except InvalidVersion:
        raise SpecError(f"--torch {text!r}: not a version or a PEP 440 specifier (e.g. 2.7, '>=2.4,<2.6')") from None
    if len(v.release) >= 3 and not s.endswith("*"):
        return SpecifierSet(f"=={v.public}")
    return SpecifierSet(f"=={'.'.join(str(x) for x in v.release)}.*")


def _branch(driver: Optional[str]) -> Optional[int]:
    return major(driver)


def _cuda_version(cuda: Optional[str]) -> Version:
    return _version(cuda) or Version("0")


def _glibc_ok(have: Optional[str], need: Optional[str]) -> Optional[bool]:
    h, n = _version(have), _version(need)
    if h is None or n is None:
        return None
    return h >= n


# --- drivers ------------------------------------------------------------------------------------

def recommended_branch(table: Any, ccs: Iterable[Optional[str]] = ()) -> Optional[str]:
    """The driver branch to install: the newest confirmed long-term branch in the table (R580),
    but no newer than the last branch of a retired GPU (R470 for Kepler). ``["6.1"]`` -> ``"580"``."""
    ltsb = [b for b in getattr(table, "driver_branches", ()) if b.designation == "LTSB" and b.confirmed()]
    best = max((int(b.branch) for b in ltsb), default=None)
    for cc in ccs:
        arch = table.architecture(cc) if cc else None
        last = getattr(arch, "last_driver_branch", None)
        if last and (best is None or int(last) < best):
            best = int(last)
    return str(best) if best is not None else None


def branch_driver(table: Any, branch: str) -> str:
    """A driver version that stands for ``branch``: the newest CUDA minimum in that branch
    (``"580"`` -> ``"580.95.05"``, the 13.0 Update 2 floor), else ``"<branch>.0"``."""
    rows = [r.min_driver_linux for r in getattr(table, "cuda_releases", ())
            if _branch(r.min_driver_linux) == int(branch)]
    return max(rows, key=Version) if rows else f"{branch}.0"


def _gpu_driver_problem(table: Any, driver: str, cc: str) -> Optional[str]:
    """Why ``driver`` cannot run a GPU of ``cc`` at all (too old for it, or past its last branch)."""
    arch = table.architecture(cc)
    if arch is None:
        return None
    have = _branch(driver)
    first, last = getattr(arch, "min_driver_branch", None), getattr(arch, "last_driver_branch", None)
    if have is not None and first and have < int(first):
        return (f"{arch.name} (compute {cc}) needs driver branch {first} or newer "
                f"(its first CUDA, {arch.first_cuda}); driver {driver} does not run it")
    if have is not None and last and have > int(last):
        return f"R{last} is the last driver branch for {arch.name} (compute {cc}); driver {driver} does not run it"
    return None


# --- the choice -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Inputs:
    spec: Optional[SpecifierSet]
    driver: Optional[str]
    ccs: Tuple[Optional[str], ...]
    python: Optional[str]
    glibc: Optional[str]
    arch: str
    require_direct: bool = False
    cudas: Optional[Tuple[str, ...]] = None     # only these CUDA lines ("12.8"): --with-nvcc
    require_known_kernels: bool = False         # only variants whose arch list the table confirms
    spec_text: Optional[str] = None             # --torch as the user wrote it (">=9", "2.1.5")
    os: str = "linux"                           # whose driver minimums apply: "windows" under WSL2


def _releases(table: Any, spec: Optional[SpecifierSet]) -> List[Tuple[Any, str, Any]]:
    """(release, torch version, patch row) newest first; the version is the newest patch in ``spec``."""
    out = []
    for rel in reversed(table.torch_releases):
        patches = list(getattr(rel, "patches", ()) or ())
        versions = [p.version for p in patches] or [rel.version]
        ok = [v for v in versions if spec is None or spec.contains(Version(v), prereleases=True)]
        if not ok:
            continue
        best = max(ok, key=Version)
        patch = next((p for p in patches if p.version == best), None)
        out.append((rel, best, patch))
    return out


def _doubtful(rel: Any, variant: Any) -> bool:
    """A release the table does not confirm, or a side variant whose wheels it does not confirm."""
    return bool(getattr(rel, "unconfirmed", False)) or (
        bool(getattr(variant, "unconfirmed", False)) and variant.name != rel.pypi_default)


def _arch_list(variant: Any, arch: str) -> Tuple[Tuple[str, ...], bool]:
    """(arch list for this CPU, known?)."""
    if arch == "aarch64":
        lst = tuple(getattr(variant, "arch_list_aarch64", ()) or ())
        return lst, bool(lst)
    lst = tuple(variant.arch_list or ())
    return lst, bool(lst)


def _arch_inferred(variant: Any, arch: str) -> bool:
    """The table does not confirm this CPU's arch list of the variant (inferred, or the whole row
    unconfirmed): kernels found in it are expected, not known."""
    name = "arch_list_aarch64" if arch == "aarch64" else "arch_list"
    check = getattr(variant, "confirmed", None)
    if callable(check):
        return not check(name)
    return bool(getattr(variant, "unconfirmed", False)) or name in (getattr(variant, "unconfirmed_fields", ()) or ())


@dataclass
class _Acc:
    rejected: List[Rejected] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    index_states: List[str] = field(default_factory=list)   # "live" / "failed: ..."

    def reject(self, what: str, reason: str) -> None:
        if not any(r.what == what and r.reason == reason for r in self.rejected):
            self.rejected.append(Rejected(what, reason))


def _evaluate(table: Any, rel: Any, version: str, v: Any, inp: _Inputs, acc: _Acc
              ) -> Optional[Tuple[Tuple[Any, ...], Dict[str, Any]]]:
    """Rank key and details when variant ``v`` of ``rel`` can work here, else None (rejected)."""
    what = f"torch {version} {v.name}"
    platform = f"linux_{inp.arch}"
    if platform not in v.platforms:
        acc.reject(what, f"no {platform} wheels")
        return None
    need_glibc = getattr(v, "glibc", None) or rel.glibc
    if _glibc_ok(inp.glibc, need_glibc) is False:
        tag = getattr(v, "manylinux", None) or rel.manylinux
        acc.reject(what, f"its wheels ({tag}) need glibc {need_glibc}; this system has {inp.glibc}")
        return None
    if inp.cudas is not None and v.cuda and ".".join(v.cuda.split(".")[:2]) not in inp.cudas:
        acc.reject(what, f"no CUDA {v.cuda} toolkit to match it in the distribution's NVIDIA repository")
        return None
    gpus = [cc for cc in inp.ccs if cc]
    if not inp.ccs:
        return ((True, True, not _doubtful(rel, v), Version("0")), {"support": None, "kernels": ()})
    arch_list, known = _arch_list(v, inp.arch)
    kernels = []
    known = known and len(gpus) == len(inp.ccs)
    if inp.require_known_kernels and (not known or _arch_inferred(v, inp.arch)):
        acc.reject(what, "the table infers its kernel list (only confirmed kernel lists were asked for)")
        return None
    if known:
        for cc in gpus:
            ks = kernel_support(arch_list, cc)
            if ks.kind == "none":
                acc.reject(what, f"no kernels for compute {cc} (it has {', '.join(arch_list)})")
                return None
            kernels.append((cc, f"{ks.via} {'cubin' if ks.kind == 'cubin' else 'PTX, JIT-compiled at first use'}"))
    support = driver_support(table, inp.driver, v.cuda, os=inp.os) if inp.driver else None
    if support is None or not support.ok:
        need = support.needed if support else "?"
        floor = f" (minor-version floor {support.floor})" if support and support.floor else ""
        acc.reject(what, f"CUDA {v.cuda} needs driver {need}{floor}; driver {inp.driver} is older")
        return None
    uses_ptx = any("PTX" in k for _, k in kernels)
    if support.kind == "minor-version" and uses_ptx:
        acc.reject(what, f"a GPU would need PTX JIT, which minor-version compatibility cannot do "
                         f"(CUDA {v.cuda} needs driver {support.needed})")
        return None
    if inp.require_direct and support.kind != "direct":
        acc.reject(what, f"CUDA {v.cuda} runs only by minor-version compatibility (needs {support.needed})")
        return None
    key = (not uses_ptx, support.kind == "direct", not _doubtful(rel, v), _cuda_version(v.cuda))
    return key, {"support": support, "kernels": tuple(kernels), "known": known,
                 "inferred": known and _arch_inferred(v, inp.arch)}


def _pick(table: Any, inp: _Inputs, available: Optional[Availability], allow_doubtful: bool,
          acc: _Acc) -> Optional[Tuple[Any, str, Any, Any, Dict[str, Any]]]:
    want_cpu = not inp.ccs
    for rel, version, patch in _releases(table, inp.spec):
        what_rel = f"torch {version}"
        if inp.python and inp.python not in rel.pythons:
            acc.reject(what_rel, f"no wheels for Python {inp.python} (it has {', '.join(rel.pythons)})")
            continue
        ranked = []
        for v in rel.variants:
            kind = getattr(table.variant(v.name), "kind", None) or ("cuda" if v.cuda else v.name)
            if want_cpu != (kind == "cpu") or kind not in ("cuda", "cpu"):
                continue
            got = _evaluate(table, rel, version, v, inp, acc)
            if got is not None:
                ranked.append((got[0], v, got[1]))
        ranked.sort(key=lambda x: x[0], reverse=True)
        for _, v, info in ranked:
            doubtful = _doubtful(rel, v)
            if available is not None:
                ans = available(v.name, version)
                if ans.found is False:
                    acc.index_states.append("live")
                    acc.reject(f"torch {version} {v.name}", ans.detail or "not on the index for this Python and platform")
                    continue
                if ans.found is True:
                    acc.index_states.append("live")
                    return rel, version, patch, v, info
                acc.index_states.append(f"failed: {ans.detail or 'the index did not answer'}")
            if doubtful and not allow_doubtful:
                why = ("the table does not confirm this release" if getattr(rel, "unconfirmed", False)
                       else "the table does not confirm these wheels are on the index")
                acc.reject(f"torch {version} {v.name}", why + " (checked again only if nothing confirmed fits)")
                continue
            return rel, version, patch, v, info
    return None


def _choose(table: Any, inp: _Inputs, available: Optional[Availability]) -> Choice:
    """One choice, without ways out."""
    acc = _Acc()
    picked = _pick(table, inp, available, False, acc)
    relaxed = False
    if picked is None:
        picked = _pick(table, inp, available, True, acc)
        relaxed = picked is not None
    gpus = list(inp.ccs)
    index_check = _index_state(acc.index_states, available)
    if picked is None:
        # Nothing within the request: "no-fit" with or without GPUs (a GPU-less machine gets no
        # "cpu" choice without a torch to install); the ways out say why and what would fit.
        return Choice("no-fit", compatibility="none", python=inp.python,
                      rejected=tuple(acc.rejected), warnings=tuple(acc.warnings), index_check=index_check)
    rel, version, patch, v, info = picked
    var = table.variant(v.name)
    support = info.get("support")
    warnings = list(acc.warnings)
    reasons = []
    if relaxed:
        warnings.append(f"envdoctor's table does not confirm torch {version} {v.name}; "
                        "nothing confirmed fits, so check the index before relying on it")
    if gpus:
        reasons.append(f"driver {inp.driver} runs CUDA {v.cuda} " +
                       ("directly" if support.kind == "direct" else
                        f"by minor-version compatibility (CUDA {v.cuda} needs {support.needed})"))
        if info.get("known"):
            reasons.append("kernels for every GPU: " + ", ".join(f"compute {cc} via {k}" for cc, k in info["kernels"])
                           + (" (in the arch list the table infers)" if info.get("inferred") else ""))
            if info.get("inferred"):
                warnings.append(f"the kernel list of torch {version} {v.name} is inferred in envdoctor's table "
                                "(its wheels are confirmed, its arch list is not): kernels for "
                                + ", ".join(f"compute {cc} ({k.split()[0]})" for cc, k in info["kernels"])
                                + " are expected, not confirmed; after installing, "
                                "torch.cuda.get_arch_list() shows the real list")
        elif all(inp.ccs):
            warnings.append(f"the table has no {inp.arch} arch list for torch {version} {v.name}; "
                            "kernels for the GPU are not checked")
        if support.note:
            warnings.append(support.note)
        if support.kind == "minor-version":
            warnings.append(f"CUDA {v.cuda} runs on driver {inp.driver} only by minor-version compatibility: "
                            + "; ".join(relevant_limitations(support.limitations, v.cuda)
                                        or ("newer CUDA features may fail",)))
        if any("PTX" in k for _, k in info["kernels"]):
            warnings.append("a GPU gets PTX only: the first CUDA call JIT-compiles kernels (slow start)")
    if inp.python:
        reasons.append(f"wheels for Python {inp.python} on linux_{inp.arch}")
    need_glibc = getattr(v, "glibc", None) or rel.glibc
    if inp.glibc is None and need_glibc and Version(need_glibc) > Version("2.17"):
        warnings.append(f"glibc unknown: torch {version} {v.name} wheels need glibc {need_glibc} or newer")
    if v.unconfirmed and not relaxed:
        warnings.append(f"envdoctor's table marks torch {version} {v.name} unconfirmed "
                        "(whether these wheels are on the index, or how they were built, is inferred)")
    return Choice(
        status="ok" if gpus else "cpu",
        torch=version, variant=v.name, cuda=v.cuda, index_url=getattr(var, "index_url", None),
        compatibility=support.kind if support else "none",
        torchvision=getattr(patch, "torchvision", None) if patch else rel.torchvision,
        torchaudio=getattr(patch, "torchaudio", None) if patch else rel.torchaudio,
        python=inp.python, kernels=info.get("kernels", ()), reasons=tuple(reasons),
        warnings=tuple(dict.fromkeys(warnings)), rejected=tuple(acc.rejected),
        sources=_sources(table, rel, v, support, gpus), index_check=index_check, release=rel.version,
        unconfirmed=_doubtful(rel, v), kernels_inferred=bool(gpus and info.get("inferred")),
    )


def relevant_limitations(limitations: Sequence[str], cuda: Optional[str]) -> Tuple[str, ...]:
    """The minor-version-compatibility limitations that matter for a build of ``cuda``: a line
    about another CUDA release ("CUDA 11.0 itself shipped with 450.36/450.51 drivers; ...") is
    history of that release, not something that fails for an 11.8 wheel, so it is left out.

    >>> relevant_limitations(("APIs ... fail", "CUDA 11.0 itself shipped with 450.36/450.51 drivers"), "11.8")
    ('APIs ... fail',)
    """
    line = ".".join(str(cuda or "").split(".")[:2])
    out = []
    for text in limitations:
        named = {m for m in re.findall(r"\bCUDA (\d+\.\d+)\b", text)}
        if named and line not in named:
            continue
        out.append(text)
    return tuple(out)


def _index_state(states: Sequence[str], available: Optional[Availability]) -> str:
    if available is None:
        return "offline-table"
    failed = [s for s in states if s.startswith("failed")]
    if failed:
        return failed[0]
    return "live" if states else "offline-table"


def _sources(table: Any, rel: Any, v: Any, support: Any, ccs: Sequence[str]) -> Tuple[str, ...]:
    out = [rel.source, getattr(v, "source", None)]
    var = table.variant(v.name)
    out.append(getattr(var, "source", None))
    if v.cuda:
        out.append(getattr(table.cuda(v.cuda), "source", None))
    if support is not None and support.kind == "minor-version":
        out.append(getattr(table.minor_compat(v.cuda.split(".")[0]), "source", None))
    for cc in ccs:
        if cc:
            out.append(getattr(table.architecture(cc), "source", None))
    return tuple(dict.fromkeys(s for s in out if s))


def choose_variant(table: Any, torch_version: Union[str, SpecifierSet, None], driver: Optional[str],
                   gpu_ccs: Iterable[Optional[str]], python: Optional[str], glibc: Optional[str],
                   arch: str = "x86_64", *, available: Optional[Availability] = None,
                   require_direct: bool = False, ways_out: bool = True,
                   cudas: Optional[Iterable[str]] = None, require_known_kernels: bool = False,
                   os: str = "linux") -> Choice:
    """The torch release and wheel variant for a Linux machine, with reasons and ways out.

    ``torch_version``: None (newest), a version ("2.7", "2.7.1") or a specifier (">=2.4,<2.6").
    ``driver``: "580.95.05"; None with GPUs means no driver is installed yet: the choice is made
    for the branch :func:`recommended_branch` names, and ``driver_needed`` says so.
    ``gpu_ccs``: ["8.6", "9.0"] (None for a GPU of unknown capability); empty: CPU wheels.
    ``python``: "3.12" or "3.13t" (None: any); ``glibc``: "2.35" (None: unknown).
    ``cudas``: only variants of these CUDA lines (``("12.8", "12.9")``: toolkits a repository has).
    ``require_known_kernels``: only variants whose arch list (for ``arch``) the table confirms.
    ``os``: whose driver minimums ``driver`` is held to: "linux", or "windows" for the Windows
    driver that serves WSL2 (CUDA 12.8 needs 570.26 on Linux, 570.65 on Windows).

    >>> choose_variant(t, None, "570.133.20", ["12.0"], "3.12", "2.39").label
    'torch 2.11.0+cu128'
    """
    spec = parse_torch_spec(torch_version)
    spec_text = (torch_version.strip() if isinstance(torch_version, str) else
                 str(torch_version) if torch_version is not None else None)
    ccs = tuple(gpu_ccs)
    arch = _ARCH.get((arch or "x86_64").lower(), arch)
    cudas_t = tuple(cudas) if cudas is not None else None
    base = _Inputs(spec, driver, ccs, python, glibc, arch, cudas=cudas_t, spec_text=spec_text, os=os)
    needed = assumed = None
    if ccs and not driver:
        needed = recommended_branch(table, ccs)
        assumed = branch_driver(table, needed) if needed else None
    eff = driver or assumed
    if ccs and eff:
        problems = [p for p in (_gpu_driver_problem(table, eff, cc) for cc in ccs if cc) if p]
        if problems:
            choice = Choice("no-fit", python=python, warnings=tuple(problems),
                            rejected=tuple(Rejected(f"driver {eff}", p) for p in problems),
                            index_check="offline-table" if available is None else "live")
            return _with_ways_out(table, choice, base, available) if ways_out else choice
    if ccs and not eff:
        return Choice("no-fit", python=python, warnings=("no driver branch in the table runs these GPUs",))
    inp = _Inputs(spec, eff, ccs, python, glibc, arch, require_direct, cudas_t, require_known_kernels, spec_text, os)
    choice = _choose(table, inp, available)
    if needed:
        choice = replace(choice, driver_needed=needed, driver_assumed=assumed,
                         reasons=(f"no NVIDIA driver yet: planned for branch {needed} (driver {assumed} or newer)",)
                         + choice.reasons)
    if not ways_out:
        return choice
    return _with_ways_out(table, choice, base, available)


def _newer(a: Choice, b: Choice) -> bool:
    """Is ``a`` a better outcome than ``b`` (newer torch, or the same torch without MVC)?"""
    if not a.ok:
        return False
    if not b.ok:
        return True
    va, vb = Version(a.torch), Version(b.torch)
    return va > vb or (va == vb and a.compatibility == "direct" and b.compatibility != "direct")


def _retry(table: Any, inp: _Inputs, available: Optional[Availability], **change: Any) -> Choice:
    """The choice again with some inputs changed (``python=None``: any Python), without ways out."""
    keys = ("spec", "driver", "ccs", "python", "glibc", "arch", "cudas", "require_direct", "require_known_kernels", "os")
    a = {k: getattr(inp, k) for k in keys}
    a["require_direct"] = a["require_known_kernels"] = False
    a.update(change)
    return choose_variant(table, a["spec"], a["driver"], a["ccs"], a["python"], a["glibc"], a["arch"],
                          available=available, require_direct=a["require_direct"], ways_out=False,
                          cudas=a["cudas"], require_known_kernels=a["require_known_kernels"], os=a["os"])


def _newer_torch(a: Choice, b: Choice) -> bool:
    """``a`` installs a newer torch than ``b`` (or ``b`` installs none)."""
    return a.ok and bool(a.torch) and (not b.ok or not b.torch or Version(a.torch) > Version(b.torch))


def _pyv(series: str) -> Version:
    return Version(series.rstrip("t"))


def _with_ways_out(table: Any, choice: Choice, inp: _Inputs, available: Optional[Availability]) -> Choice:
    """Add the other roads: a driver upgrade, the newest torch that works today, a direct fit, and
    the limit that holds torch back (the request, the Python, glibc, the CUDA toolkits for nvcc)."""
    gpus = list(inp.ccs)
    ways: List[WayOut] = []
    spec_way = _spec_way(table, choice, inp, available)
    if spec_way is not None:
        ways.append(spec_way)
    branch = recommended_branch(table, gpus) if gpus else None
    have = _branch(inp.driver)
    if branch and inp.driver and have is not None and int(branch) < have and choice.status == "no-fit":
        fixed = _retry(table, inp, available, driver=branch_driver(table, branch))
        if fixed.ok:
            ways.append(WayOut("install-driver", f"install driver branch {branch}, the last that runs these GPUs: "
                                                 f"then {fixed.label}", fixed.torch, fixed.variant, branch))
    if branch and inp.driver and (have is None or int(branch) > have):
        better = _retry(table, inp, available, driver=branch_driver(table, branch))
        if _newer(better, choice):
            ways.append(WayOut("upgrade-driver",
                               f"upgrade the driver to branch {branch}: then {better.label} "
                               f"({'runs directly' if better.compatibility == 'direct' else better.compatibility})",
                               better.torch, better.variant, branch))
    if choice.status == "no-fit" and inp.spec is not None and spec_way is None and (inp.driver or not gpus):
        today = _retry(table, inp, available, spec=None)
        if today.ok:
            what = f"today's driver {inp.driver}" if gpus else "this machine"
            ways.append(WayOut("works-today", f"the newest torch that works with {what}: {today.label}",
                               today.torch, today.variant))
    if gpus and choice.ok and choice.compatibility == "minor-version" and inp.driver:
        direct = _retry(table, inp, available, require_direct=True)
        if direct.ok:
            ways.append(WayOut("direct", f"{direct.label} runs on driver {inp.driver} directly, "
                                         "without minor-version compatibility", direct.torch, direct.variant))
    if gpus and choice.ok and choice.kernels_inferred:
        known = _retry(table, inp, available, driver=inp.driver or choice.driver_assumed, require_known_kernels=True)
        if known.ok and (known.torch, known.variant) != (choice.torch, choice.variant):
            ways.append(WayOut("confirmed-kernels", f"{known.label} is the newest torch whose kernel list for these "
                                                    "GPUs envdoctor's table confirms", known.torch, known.variant))
    if inp.driver or not gpus:
        ways += _limit_ways(table, choice, inp)
    if choice.status == "no-fit" and gpus:
        cpu = _retry(table, inp, None, ccs=(), driver=None)
        if cpu.ok:          # not where the Python or glibc has no CPU wheels either
            ways.append(WayOut("cpu", f"CPU-only wheels run anywhere (no GPU): --index-url .../whl/cpu ({cpu.label})",
                               cpu.torch, cpu.variant))
    return replace(choice, ways_out=tuple(ways))


def _spec_way(table: Any, choice: Choice, inp: _Inputs, available: Optional[Availability]) -> Optional[WayOut]:
    """``--torch`` matches nothing in the table: say so, and what does exist."""
    if inp.spec is None or choice.ok or _releases(table, inp.spec):
        return None
    asked = inp.spec_text or str(inp.spec)
    confirmed = [r for r in table.torch_releases if not getattr(r, "unconfirmed", False)]
    newest = confirmed[-1] if confirmed else (table.torch_releases[-1] if table.torch_releases else None)
    newest_v = (newest.patches[-1].version if getattr(newest, "patches", None) else newest.version) if newest else None
    exact = re.fullmatch(r"\s*(?:==)?\s*(\d+)\.(\d+)\.(\d+)\s*", asked)
    rel = table.torch(f"{exact.group(1)}.{exact.group(2)}") if exact else None
    if rel is not None:
        minor = f"{exact.group(1)}.{exact.group(2)}"
        patches = [p.version for p in getattr(rel, "patches", ())] or [rel.version]
        alt = _retry(table, inp, available, spec=parse_torch_spec(minor))
        text = (f"no torch {asked.strip().lstrip('=')} in envdoctor's table: torch {minor} has "
                f"{', '.join(patches)}" + (f"; --torch {minor} gives {alt.label}" if alt.ok else ""))
        return WayOut("torch-spec", text, alt.torch if alt.ok else None, alt.variant if alt.ok else None)
    alt = _retry(table, inp, available, spec=None)
    text = f"no torch release matches '{asked}'; the newest envdoctor knows is {newest_v or 'none'}"
    if newest is not None and newest is not table.torch_releases[-1]:
        text += f" ({table.torch_releases[-1].version} is in its table, unconfirmed)"
    if alt.ok:
        text += f"; without --torch: {alt.label}"
    return WayOut("torch-spec", text, alt.torch if alt.ok else None, alt.variant if alt.ok else None)


def _limit_ways(table: Any, choice: Choice, inp: _Inputs) -> List[WayOut]:
    """Which of the machine's own limits holds torch back: relax one at a time (the Python, glibc,
    the CUDA toolkit lines for nvcc) and name it only where that alone gives a newer torch; if none
    does alone but all together do, name them together. Other machines are not asked live."""
    out: List[WayOut] = []
    best = choice
    py_way = _python_way(table, choice, inp)
    if py_way is not None:
        out.append(py_way)
        best = replace(choice, status="ok", torch=py_way.torch, variant=py_way.variant)
    if inp.glibc:
        lifted = _retry(table, inp, None, glibc=None)
        if _newer_torch(lifted, choice) and _glibc_ok(inp.glibc, _need_glibc(table, lifted)) is False:
            need, tag = _need_glibc(table, lifted), _manylinux(table, lifted)
            at = f"at {choice.torch}" if choice.ok and choice.torch else "back"
            out.append(WayOut("newer-glibc", f"glibc {inp.glibc} holds torch {at}: {lifted.label} needs glibc "
                                             f"{need} ({tag} wheels); a distribution with glibc {need} or newer "
                                             "would allow it", lifted.torch, lifted.variant))
            best = lifted
    if inp.cudas is not None:
        lifted = _retry(table, inp, None, cudas=None)
        if _newer_torch(lifted, choice):
            top = max(inp.cudas, key=Version) if inp.cudas else "none"
            out.append(WayOut("without-nvcc", f"--with-nvcc holds torch at {choice.label[len('torch '):]}: "
                                              "NVIDIA's CUDA repository "
                                              f"for this distribution has toolkits up to CUDA {top}, and "
                                              f"{lifted.label} needs CUDA {lifted.cuda}; without a system nvcc "
                                              "(or with conda's cuda-nvcc: --route conda --with-nvcc) it fits",
                              lifted.torch, lifted.variant))
            if _newer_torch(lifted, best):
                best = lifted
    names = {"python": f"Python {inp.python}", "glibc": f"glibc {inp.glibc}",
             "cudas": "the CUDA toolkits NVIDIA's repository has for this distribution (--with-nvcc)"}
    held = [k for k in ("python", "glibc", "cudas") if (getattr(inp, k) is not None if k == "cudas" else getattr(inp, k))]
    if len(held) >= 2:
        lifted = _retry(table, inp, None, **{k: None for k in held})
        if _newer_torch(lifted, best):
            # name only the limits that matter: keeping one of them must cost the lifted torch
            needed = [k for k in held
                      if _newer_torch(lifted, _retry(table, inp, None, **{x: None for x in held if x != k}))]
            if len(needed) >= 2:
                what = [names[k] for k in needed]
                at = f"at {choice.label[len('torch '):]}" if choice.ok and choice.torch else "back"
                out.append(WayOut("limits", f"{', '.join(what[:-1])} and {what[-1]} together hold torch {at}: "
                                            f"with them lifted (a newer distribution), {lifted.label}",
                                  lifted.torch, lifted.variant))
    return out


def _python_way(table: Any, choice: Choice, inp: _Inputs) -> Optional[WayOut]:
    """Another Python, when the Python (and nothing else) is what holds torch back."""
    if not inp.python:
        return None
    lifted = _retry(table, inp, None, python=None)
    if not _newer_torch(lifted, choice):
        return None
    rel = table.torch(lifted.release or lifted.torch)
    if rel is None or inp.python in rel.pythons:
        return None          # the Python is not what holds torch back
    free = inp.python.endswith("t")
    same_kind = [p for p in rel.pythons if p.endswith("t") == free] or list(rel.pythons)
    want = _pyv(inp.python)
    everything = {p for r in table.torch_releases for p in r.pythons}
    if want > max(_pyv(p) for p in same_kind):
        py = max(same_kind, key=_pyv)
    else:
        py = (f"3.12{'t' if free else ''}" if f"3.12{'t' if free else ''}" in same_kind else
              min((p for p in same_kind if _pyv(p) > want), key=_pyv, default=max(same_kind, key=_pyv)))
    check = _retry(table, inp, None, python=py)
    if not _newer_torch(check, choice):
        return None
    kind = "newer-python" if _pyv(py) > want else "older-python"
    if want > max(_pyv(p) for p in everything):
        text = f"Python {inp.python} has no torch wheels yet; {py} does ({check.label})"
    elif want < min(_pyv(p) for p in everything):
        text = f"Python {inp.python} has no torch wheels; Python {py} would allow {check.label}"
    elif inp.spec is not None and not choice.ok:
        plain = [p for p in rel.pythons if not p.endswith("t")] or list(rel.pythons)
        text = (f"torch {rel.minor} has no wheels for Python {inp.python} (it has {plain[0]}-{plain[-1]}); "
                f"Python {py} would allow {check.label}")
    else:
        text = f"Python {py} instead of {inp.python} would allow {check.label}"
    return WayOut(kind, text, check.torch, check.variant)


def _need_glibc(table: Any, c: Choice) -> Optional[str]:
    rel = table.torch(c.release or c.torch) if c.torch else None
    v = rel.variant(c.variant) if rel is not None and c.variant else None
    return (getattr(v, "glibc", None) or getattr(rel, "glibc", None)) if rel is not None else None


def _manylinux(table: Any, c: Choice) -> Optional[str]:
    rel = table.torch(c.release or c.torch) if c.torch else None
    v = rel.variant(c.variant) if rel is not None and c.variant else None
    return (getattr(v, "manylinux", None) or getattr(rel, "manylinux", None)) if rel is not None else None


# --- special machines -------------------------------------------------------------------------------

def choose_macos(table: Any, torch_version: Union[str, SpecifierSet, None], python: Optional[str]) -> Choice:
    """macOS: PyPI's default wheel (CPU + Apple's MPS backend); no CUDA, no driver question."""
    spec = parse_torch_spec(torch_version)
    rows = _releases(table, spec)
    confirmed = [r for r in rows if not getattr(r[0], "unconfirmed", False)]
    for rel, version, patch in confirmed or rows:
        if python and python not in rel.pythons:
            continue
        return Choice("macos", torch=version, variant="pypi", index_url=PYPI_SIMPLE, compatibility="none",
                      torchvision=getattr(patch, "torchvision", None), python=python,
                      torchaudio=getattr(patch, "torchaudio", None), release=rel.version,
                      reasons=("macOS: PyPI's default torch wheel (CPU and the MPS backend on Apple silicon)",),
                      warnings=("envdoctor's table does not record macOS wheels; pip picks the wheel for this Mac",),
                      sources=(rel.source,))
    return Choice("no-fit", python=python, warnings=(f"no torch release in the table matches {torch_version}",))


def choose_amd(table: Any, names: Sequence[str]) -> Choice:
    """AMD GPUs: outside what envdoctor advises; name the ROCm index of the newest release."""
    for rel in reversed(table.torch_releases):
        if rel.unconfirmed:
            continue
        rocm = [v for v in rel.variants if v.name.startswith("rocm") and not v.unconfirmed]
        if rocm:
            best = max(rocm, key=lambda v: Version(v.name[4:]))
            url = getattr(table.variant(best.name), "index_url", None)
            return Choice("amd", torch=rel.patches[-1].version if rel.patches else rel.version,
                          variant=best.name, index_url=url, compatibility="none",
                          warnings=(f"AMD GPU ({', '.join(names)}): ROCm is outside what envdoctor advises today; "
                                    f"PyTorch's ROCm wheels for torch {rel.minor} are on {url}",),
                          sources=(rel.source,), release=rel.version)
    return Choice("amd", warnings=("AMD GPU: ROCm is outside what envdoctor advises today",))

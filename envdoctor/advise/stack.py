"""``recommend --with vllm,flash-attn,xformers``: a torch every library's pin accepts, and the
commands in an order that lets no install replace torch (pure: wants x rows x the torch plan).

The pins come from ``data/extensions.toml`` (``[[pin]]``: vLLM and xformers pin one torch release);
:func:`candidates` gives the torch releases that satisfy all of them, newest first; the CLI asks the
torch advisor for the first one this machine runs; :func:`with_stack` adds the steps::

    >>> from envdoctor.stack.table import load_extensions
    >>> c = candidates(parse_with("vllm,xformers"), load_extensions())[0]
    >>> c.torch, c.releases, c.variants
    ('2.8.0', {'vllm': '0.11.0', 'xformers': '0.0.32.post1'}, ('cu128',))
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.advise.plan import Plan, Step
from envdoctor.parse import major_minor, version
from envdoctor.stack.analysis import arch_list, max_jobs, torch_minor, unsupported_gpus, wheel_url

#: What --with accepts: the libraries envdoctor plans (pins and wheels from data/extensions.toml)
#: and those it installs against the pinned torch without a pin of their own.
KNOWN = (
    "vllm",
    "xformers",
    "flash-attn",
    "bitsandbytes",
    "deepspeed",
    "flashinfer-python",
    "sglang",
    "transformer-engine",
    "torchao",
    "triton",
)
ALIASES = {
    "flash_attn": "flash-attn",
    "flashattn": "flash-attn",
    "flash-attention": "flash-attn",
    "flashinfer": "flashinfer-python",
    "transformer_engine": "transformer-engine",
    "te": "transformer-engine",
}
PINS = "~/envdoctor-torch-pins.txt"
MODULES = {"flash-attn": "flash_attn", "flashinfer-python": "flashinfer", "transformer-engine": "transformer_engine"}
#: flash-attn's README: MAX_JOBS=4 on machines under 96 GB
GIB_PER_JOB = 24.0


class StackError(ValueError):
    """--with is not a list of libraries envdoctor plans: one line saying which and what it knows."""


@dataclass(frozen=True)
class Want:
    name: str
    version: Optional[str] = None


def parse_with(text: str) -> Tuple[Want, ...]:
    """``"vllm==0.10.2, flash-attn"`` -> (Want("vllm", "0.10.2"), Want("flash-attn"))."""
    out: List[Want] = []
    if not text or not text.strip():
        raise StackError("--with is empty: give libraries such as vllm,flash-attn,xformers")
    if len(text) > 1000:
        raise StackError("--with is longer than 1000 characters")
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, ver = part.partition("==")
        key = ALIASES.get(name.strip().lower(), name.strip().lower())
        if key not in KNOWN:
            raise StackError(f"--with {part!r}: envdoctor plans {', '.join(KNOWN)}")
        if sep and version(ver.strip()) is None:
            raise StackError(f"--with {part!r}: {ver.strip()!r} is not a version")
        if any(w.name == key for w in out):
            raise StackError(f"--with names {key} twice")
        out.append(Want(key, ver.strip() if sep else None))
    if not out:
        raise StackError("--with is empty: give libraries such as vllm,flash-attn,xformers")
    return tuple(out)


@dataclass(frozen=True)
class Candidate:
    torch: Optional[str]  # the torch release every pin accepts; None: no library pins one
    releases: Dict[str, str]  # the releases of the pinning libraries
    variants: Tuple[str, ...] = ()  # the CUDA variants those releases are built for ("cu128")
    unconfirmed: Tuple[str, ...] = ()  # rows the choice rests on that are unconfirmed
    torchvision: Optional[str] = None
    torchaudio: Optional[str] = None
    pythons: Tuple[str, ...] = ()  # the Pythons every pinned release has wheels for (empty: any)

    def for_python(self, python: Optional[str]) -> bool:
        return not self.pythons or python is None or python.rstrip("t") in self.pythons


def _pythons(rows: List[Tuple[str, ...]]) -> Tuple[str, ...]:
    sets = [set(p) for p in rows if p]
    common = set.intersection(*sets) if sets else set()
    return tuple(sorted(common, key=lambda v: version(v) or v))


def _variants(cudas: List[Tuple[str, ...]]) -> Tuple[str, ...]:
    sets = [set(c) for c in cudas if c]
    common = set.intersection(*sets) if sets else set()
    return tuple("cu" + c.replace(".", "") for c in sorted(common, key=lambda v: version(v) or v, reverse=True))


def candidates(wants: Tuple[Want, ...], ext: Any) -> List[Candidate]:
    """Torch releases satisfying every pinned library of ``wants`` (newest first); [] when the pins
    cannot agree (or a version asked is not in the table)."""
    names = {w.name: w.version for w in wants}
    if "vllm" not in names and "xformers" not in names:
        return [Candidate(None, {})]
    out: List[Candidate] = []
    if "vllm" in names:
        rows = [r for r in ext.pins_of("vllm") if names["vllm"] is None or version(r.version) == version(names["vllm"])]
        for row in rows:
            releases = {"vllm": row.version}
            cudas = [row.cuda]
            pys = [row.pythons]
            unconfirmed = [f"vllm {row.version}"] if row.unconfirmed or row.unconfirmed_fields else []
            if "xformers" in names:
                want_x = names["xformers"] or row.xformers
                xrow = (
                    ext.pin("xformers", want_x)
                    if want_x
                    else next((x for x in ext.pins_of("xformers") if version(x.torch) == version(row.torch)), None)
                )
                if xrow is None or version(xrow.torch) != version(row.torch):
                    continue
                releases["xformers"] = xrow.version
                cudas.append(xrow.cuda)
                pys.append(xrow.pythons)
                if xrow.unconfirmed or xrow.unconfirmed_fields:
                    unconfirmed.append(f"xformers {xrow.version}")
            out.append(
                Candidate(
                    row.torch,
                    releases,
                    _variants(cudas),
                    tuple(unconfirmed),
                    row.torchvision,
                    row.torchaudio,
                    _pythons(pys),
                )
            )
        return out
    for xrow in ext.pins_of("xformers"):
        if names["xformers"] is not None and version(xrow.version) != version(names["xformers"]):
            continue
        out.append(
            Candidate(
                xrow.torch,
                {"xformers": xrow.version},
                _variants([xrow.cuda]),
                (f"xformers {xrow.version}",) if xrow.unconfirmed or xrow.unconfirmed_fields else (),
                pythons=tuple(xrow.pythons),
            )
        )
    return out


def conflict(torch_spec: Optional[str], cands: List[Candidate]) -> Optional[str]:
    """Why ``--torch`` and --with cannot both hold, or None."""
    if not torch_spec or not cands or cands[0].torch is None:
        return None
    from envdoctor.advise.request import parse_torch_spec

    spec = parse_torch_spec(torch_spec)
    if spec is None or any(spec.contains(c.torch or "", prereleases=True) for c in cands):
        return None
    c = cands[0]
    pins = ", ".join(f"{n} {v}" for n, v in c.releases.items())
    return f"--torch {torch_spec} and --with disagree: {pins} pin{'s' if len(c.releases) == 1 else ''} torch {c.torch}"


def torch_specs(c: Candidate) -> List[str]:
    """The --torch values to ask the torch advisor for, best first: the pinned release on the CUDA
    variant the libraries were built for, then on any variant."""
    if c.torch is None:
        return []
    return [f"{c.torch}+{v}" for v in c.variants] + [c.torch]


# --- the steps ---------------------------------------------------------------------------------------


def _gpu_ccs(m: Any) -> List[Tuple[str, str]]:
    return [(g.name or "GPU", g.cc) for g in getattr(m, "gpus", ()) if g.cc]


def _flash_attn_wheel(
    ext: Any, torch: str, cuda: Optional[str], python: Optional[str], asked: Optional[str]
) -> Tuple[Optional[str], Optional[str]]:
    """(URL, release) of the prebuilt flash-attn wheel for torch/CUDA/ABI/Python, or (None, why not)."""
    tminor = torch_minor(torch)
    abi_row = ext.torch_abi(torch)
    if not (tminor and cuda and python) or abi_row is None:
        return None, "torch, CUDA or Python not known"
    cuda_major = cuda.split(".")[0]
    for row in ext.wheels_of("flash-attn"):
        if asked and version(row.version) != version(asked):
            continue
        if (
            tminor in row.torch
            and cuda_major in row.cuda
            and python in row.pythons
            and ("TRUE" if abi_row.cxx11abi else "FALSE") in row.abi
        ):
            return wheel_url(row.url, row.version, cuda_major, tminor, abi_row.cxx11abi, python), row.version
    return (
        None,
        f"no prebuilt flash-attn wheel in data/extensions.toml for torch {tminor}, CUDA {cuda_major}, "
        f"cxx11abi{'TRUE' if abi_row.cxx11abi else 'FALSE'}, Python {python}",
    )


def _vllm_left_out(plan: Plan, m: Any, ext: Any) -> Optional[str]:
    """Why vLLM's install is left out of ``plan`` (its warning), or None: its pip wheels are CUDA
    builds that need an NVIDIA GPU of compute capability ``min_cc`` or newer (data/extensions.toml),
    so a CPU torch or an older GPU gets no install line; its CPU route is the row's ``cpu``."""
    choice = plan.choice
    arch = ext.arch("vllm")
    if not choice.cuda or choice.variant == "cpu":
        cpu = f"; {arch.cpu} ({arch.cpu_source})" if arch is not None and arch.cpu else ""
        return (
            f"vllm is left out: its pip wheels are CUDA builds that need an NVIDIA GPU, and torch "
            f"{choice.torch}{'+cpu' if choice.variant == 'cpu' else ''} planned here is a CPU build{cpu}; "
            "plan the CUDA torch first (`envdoctor recommend --gpu NAME --with vllm`, NAME the GPU it "
            "will run on) or drop vllm"
        )
    bad = unsupported_gpus(_gpu_ccs(m), arch.min_cc, arch.max_cc) if arch is not None else []
    if bad and arch is not None:
        return (
            f"vllm is left out: {', '.join(label for label, _ in bad)} (compute capability {bad[0][1]}) "
            f"is older than its CUDA build supports ({arch.min_cc}+; {arch.source})"
        )
    return None


def _install_steps(
    plan: Plan, m: Any, ext: Any, wants: Tuple[Want, ...], cand: Candidate
) -> Tuple[List[Step], List[str]]:
    py = plan.python or "python3"
    pip = f"{py} -m pip install"
    choice = plan.choice
    torch_line = (
        f"torch=={choice.torch}+{choice.variant}"
        if choice.variant and choice.variant != "cpu"
        else f"torch=={choice.torch}"
    )
    pins = [torch_line] + [
        f"{n}=={v}" for n, v in (("torchvision", choice.torchvision), ("torchaudio", choice.torchaudio)) if v
    ]
    index = plan.index_url or choice.index_url
    steps = [
        Step(
            "Pin torch so that no install below replaces it",
            (f"printf '%s\\n' {' '.join(repr(p) for p in pins)} > {PINS}",),
            "every pip install below takes -c with this file: a library that pins another torch fails "
            "to resolve instead of replacing the one installed above",
        )
    ]
    warnings: List[str] = []
    extra = f" --extra-index-url {index}" if index else ""
    names = {w.name: w.version for w in wants}
    vllm_out = _vllm_left_out(plan, m, ext) if "vllm" in names else None
    if vllm_out:
        warnings.append(vllm_out)
    for name in ("vllm", "xformers"):
        if name in names and not (name == "vllm" and vllm_out):
            release = cand.releases.get(name) or names[name]
            spec = f"{name}=={release}" if release else name
            where = f" --index-url {index}" if name == "xformers" and index else extra
            steps.append(
                Step(
                    f"Install {spec} against torch {choice.torch}",
                    (f"{pip} {spec} -c {PINS}{where}",),
                    f"{name} {release} pins torch {cand.torch} (data/extensions.toml)" if release else None,
                )
            )
    for name, release in names.items():
        if name in ("vllm", "xformers", "flash-attn"):
            continue
        spec = f"{name}=={release}" if release else name
        steps.append(Step(f"Install {spec} against torch {choice.torch}", (f"{pip} {spec} -c {PINS}{extra}",)))
    if "flash-attn" in names:
        arch = ext.arch("flash-attn")
        bad = unsupported_gpus(_gpu_ccs(m), arch.min_cc, arch.max_cc) if arch is not None else []
        if not choice.cuda or choice.variant == "cpu":
            # its kernels are CUDA (or ROCm) only: a source build against a CPU torch cannot work
            warnings.append(
                f"flash-attn is left out: it needs a CUDA torch, and torch {choice.torch}"
                f"{'+cpu' if choice.variant == 'cpu' else ''} planned here is a CPU build; plan the "
                "CUDA torch first (`envdoctor recommend --gpu NAME --with flash-attn`, NAME the GPU "
                "it will run on) or drop flash-attn"
            )
        elif bad:
            warnings.append(
                f"flash-attn is left out: {', '.join(label for label, _ in bad)} "
                f"(compute capability {bad[0][1]}) is older than it supports ({arch.min_cc}+); "
                "use the framework's SDPA attention instead"
            )
        else:
            python = m.python if m is not None else None
            url, why = _flash_attn_wheel(ext, choice.torch or "", choice.cuda, python, names["flash-attn"])
            if plan.route == "conda":
                url, why = None, "conda-forge's torch: the prebuilt wheels are not known to fit its build"
            if url:
                steps.append(
                    Step(
                        "Install the prebuilt flash-attn wheel for this torch, CUDA, C++ ABI and Python",
                        (f"{pip} --no-deps {url}", f"{pip} einops -c {PINS}"),
                        "--no-deps: its only pins are torch (installed) and einops",
                    )
                )
            else:
                steps.append(_source_build(plan, m, ext, pip, names["flash-attn"], why or ""))
    left_out = any(x.startswith("flash-attn is left out") for x in warnings)
    imports = [
        MODULES.get(w.name, w.name)
        for w in wants
        if not (w.name == "flash-attn" and left_out) and not (w.name == "vllm" and vllm_out)
    ]
    steps.append(
        Step(
            "Check that torch was kept and everything imports",
            (f"{py} -m pip check", f"{py} -c 'import {', '.join(['torch', *imports])}; print(torch.__version__)'"),
        )
    )
    return steps, warnings


def _source_build(plan: Plan, m: Any, ext: Any, pip: str, release: Optional[str], why: str) -> Step:
    choice = plan.choice
    ccs = [cc for _, cc in _gpu_ccs(m)]
    facts = plan.machine.facts if plan.machine is not None else None
    build = facts.torch.extensions.build if facts is not None else None
    jobs = max_jobs(build.available_bytes, build.cpus, GIB_PER_JOB) if build is not None else None
    gcc_max = ext.max_gcc(choice.cuda) if choice.cuda else None
    parts = [f"MAX_JOBS={jobs or 4}"]
    if ccs:
        parts.append(f'TORCH_CUDA_ARCH_LIST="{arch_list(ccs)}"')
    spec = f"flash-attn=={release}" if release else "flash-attn"
    lines = [
        f"# no prebuilt wheel fits ({why}): a source build",
        f"# needs nvcc {major_minor(choice.cuda or '') or '?'} (torch's CUDA; recommend --with-nvcc plans it)"
        + (f" and a GCC of at most {gcc_max} (what that nvcc accepts)" if gcc_max else ""),
        f"{pip} ninja packaging -c {PINS}",
        " ".join(parts + [f"{pip} {spec} --no-build-isolation -c {PINS}"]),
    ]
    return Step(
        "Build flash-attn against this torch",
        tuple(lines),
        "--no-build-isolation: the build imports the installed torch; MAX_JOBS bounds the RAM ninja takes",
    )


def with_stack(plan: Plan, m: Any, table: Any, ext: Any, wants: Tuple[Want, ...], cand: Candidate) -> Plan:
    """``plan`` with the libraries' steps before its verification (or, on the docker route, vLLM's own
    image where it is the better road)."""
    if not plan.ok:
        return plan
    names = {w.name for w in wants}
    reasons = list(plan.choice.reasons)
    if cand.torch:
        pins = ", ".join(f"{n} {v}" for n, v in cand.releases.items())
        verb = "pins" if len(cand.releases) == 1 else "pin"
        reasons.append(
            f"torch {cand.torch}: {pins} {verb} it (data/extensions.toml)"
            + (f"; unconfirmed rows: {', '.join(cand.unconfirmed)}" if cand.unconfirmed else "")
        )
    if plan.route == "docker":
        return _docker(plan, m, table, ext, wants, cand, reasons)
    steps, warnings = _install_steps(plan, m, ext, wants, cand)
    body = list(plan.steps)
    at = next((i for i, s in enumerate(body) if s.title == "Verify"), len(body))
    body[at:at] = steps
    alternatives = plan.alternatives
    image = next((r.name for r in ext.images if r.name == f"vllm/vllm-openai:v{cand.releases.get('vllm')}"), None)
    vllm_runs = "vllm" in names and _vllm_left_out(plan, m, ext) is None  # else its image and uv line neither
    if vllm_runs and image:
        reasons.append(
            f"or no install at all: vLLM's own image {image} ships this stack "
            "(envdoctor recommend --with vllm --route docker)"
        )
    if vllm_runs and plan.route == "system":
        release = cand.releases.get("vllm")
        alternatives = alternatives + (
            f"uv pip install {'vllm==' + release if release else 'vllm'} "
            "--torch-backend=auto   # vLLM's own way, in a fresh environment",
        )
    # the libraries asked for are the point of the plan: its steps are not an optional upgrade, even
    # where the torch installed now works (vllm 0.11.0 does not run on the torch 2.13.0 it finds)
    return replace(
        plan,
        steps=tuple(body),
        choice=replace(plan.choice, reasons=tuple(reasons)),
        warnings=plan.warnings + tuple(warnings),
        alternatives=alternatives,
        optional=False,
    )


def _docker(
    plan: Plan, m: Any, table: Any, ext: Any, wants: Tuple[Want, ...], cand: Candidate, reasons: List[str]
) -> Plan:
    from envdoctor.compat import driver_support

    names = {w.name for w in wants}
    warnings = list(plan.warnings)
    driver = m.facts.driver.driver_version if getattr(m, "facts", None) is not None else None
    if "vllm" in names:
        want = cand.releases.get("vllm")
        rows = [
            r
            for r in ext.images
            if r.name.startswith("vllm/vllm-openai:") and (want is None or r.name.endswith(f":v{want}"))
        ]
        for row in rows:
            runs = True
            if driver and table is not None:
                try:
                    runs = driver_support(table, driver, row.cuda).ok
                except ValueError:
                    runs = True
            if not runs:
                warnings.append(f"{row.name} (CUDA {row.cuda}) needs a newer driver than {driver}")
                continue
            reasons.append(
                f"{row.name} is vLLM's own image: vLLM, torch {row.torch} and its kernels built "
                "together, nothing to pip install over it"
            )
            steps = (
                Step("Pull vLLM's own image", (f"docker pull {row.name}",)),
                Step(
                    "Run it (the OpenAI-compatible server)",
                    (f"docker run --gpus all --ipc=host -p 8000:8000 {row.name} --model <MODEL>",),
                    "--ipc=host: vLLM's tensor-parallel workers share memory",
                ),
                Step("Verify", ("curl -s localhost:8000/v1/models",)),
            )
            others = sorted(names - {"vllm", "xformers", "flashinfer-python"})
            if others:
                warnings.append(
                    f"{', '.join(others)}: not in vLLM's image; installing them into it may replace its "
                    "torch (build FROM it with pip install -c of its pip list)"
                )
            from envdoctor.advise.plan import Image

            kept = tuple(w for w in warnings if "NGC" not in w)
            own = Image(
                row.name,
                row.name.split(":", 1)[1],
                row.torch,
                row.cuda,
                source=row.source,
                unconfirmed=row.unconfirmed or bool(row.unconfirmed_fields),
            )
            return replace(
                plan,
                steps=steps,
                reasons=plan.reasons + tuple(reasons[-1:]),
                warnings=kept,
                image=own,
                choice=replace(plan.choice, reasons=tuple(reasons[:-1])),
                sources=(row.source,),
            )
    image = plan.image
    shipped = {"flash-attn", "transformer-engine", "triton"}
    reasons = []
    if image is not None:  # the NGC image the docker route chose
        have = sorted(names & shipped)
        if have:
            reasons.append(
                f"{image.image} ships {', '.join(have)} built against its own torch {image.torch}: "
                "do not pip install them over it"
            )
        pinned = sorted(names & {"vllm", "xformers"})
        if pinned:
            verb = "pins" if len(pinned) == 1 else "pin"
            warnings.append(
                f"{', '.join(pinned)} {verb} torch {cand.torch}, not NGC's torch {image.torch}: "
                "installing it replaces NGC's build (envdoctor dockerfile flags it, ED562/ED563)"
            )
    return replace(plan, reasons=plan.reasons + tuple(reasons), warnings=tuple(warnings))

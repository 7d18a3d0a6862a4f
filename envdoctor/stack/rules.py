"""Findings ED330-ED339: every installed library above torch, judged (pure: facts x tables).

| code  | what |
|---|---|
| ED330 | a library does not load (its import's exact error, classified) |
| ED331 | importing a library crashed the interpreter (a signal) |
| ED332 | importing a library hung |
| ED333 | a library's declared pins (Requires-Dist) reject the installed torch or a sibling |
| ED334 | a library does not support this machine's GPU architecture |
| ED335 | DeepSpeed's prebuilt ops belong to another torch or CUDA, or its JIT build cannot run |
| ED336 | a known-bad install (data/extensions.toml [[bad]]) |
| ED337 | a source build of these libraries would fail here (nvcc, GCC, ninja) |
| ED338 | the check of the libraries above torch did not finish |

The rows come from ``data/extensions.toml`` (``stack/table.py``); every fix is exact commands.
docs/stack.md explains each code.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Tuple

from envdoctor.compat import variant_tag
from envdoctor.facts import Facts
from envdoctor.findings import Finding, Severity
from envdoctor.gpus import machine_gpus
from envdoctor.parse import major_minor, version
from envdoctor.stack.analysis import (
    Breakage,
    arch_list,
    classify,
    marker_environment,
    max_jobs,
    pin_conflicts,
    torch_minor,
    unsupported_gpus,
    wheel_url,
)
from envdoctor.stack.facts import Extension, StackFacts
from envdoctor.stack.host import signal_name
from envdoctor.stack.table import Extensions, try_load
from envdoctor.table import Table

REF_FA = "https://github.com/Dao-AILab/flash-attention#installation-and-features"
REF_ABI = "https://pytorch.org/docs/stable/generated/torch.compiled_with_cxx11_abi.html"
REF_XFORMERS = "https://github.com/facebookresearch/xformers#installing-xformers"
REF_VLLM = "https://docs.vllm.ai/en/v0.14.0/getting_started/installation/gpu/"
REF_DEEPSPEED = "https://www.deepspeed.ai/tutorials/advanced-install/"
REF_PIP_METADATA = "https://packaging.python.org/en/latest/specifications/core-metadata/#requires-dist-multiple-use"
REF_NVCC_HOST = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/"

#: Libraries that are compiled against torch on install when no wheel fits (pip builds them from the sdist).
SOURCE_BUILT = ("flash-attn", "flash-attn-3", "apex", "mamba-ssm", "causal-conv1d", "deepspeed", "auto-gptq")
#: Memory per parallel compile job: flash-attn's README has MAX_JOBS=4 for machines under 96 GB.
GIB_PER_JOB = 24.0
#: torchvision and torchaudio pins are ED209/ED210 (rules/torch.py): not repeated here.
COMPANIONS = ("torchvision", "torchaudio")


def _stack(facts: Facts) -> StackFacts:
    return facts.torch.extensions


def _tables() -> Tuple[Optional[Extensions], Optional[str]]:
    return try_load()


def _installed(facts: Facts) -> Dict[str, str]:
    """Installed versions by normalized name: torch, the packages of the report, every library found."""
    out = dict(facts.python.packages)
    if facts.torch.version:
        out["torch"] = facts.torch.version
    for e in _stack(facts).extensions:
        out[e.dist] = e.version
        out.setdefault(e.name, e.version)
    return out


def _index(facts: Facts, table: Optional[Table]) -> Optional[str]:
    """The wheel index of the installed torch's CUDA variant ("https://download.pytorch.org/whl/cu128")."""
    tag = variant_tag(facts.torch.cuda)
    var = table.variant(tag) if table is not None else None
    return var.index_url if var is not None else f"https://download.pytorch.org/whl/{tag}"


def _where(e: Extension) -> str:
    """Where a library came from: "pip", "pip, from https://...whl", "pip, editable /src/apex"."""
    how = e.installer or "an installer that left no INSTALLER file"
    d = e.direct_url
    if d is None:
        return f"{how}, from an index"
    if d.editable:
        return f"{how}, editable install of {d.url}"
    if d.vcs:
        return f"{how}, from {d.vcs} {d.url}" + (f" at {d.commit[:12]}" if d.commit else "")
    return f"{how}, from {d.url}"


def _abi(stack: StackFacts) -> Optional[bool]:
    return stack.torch_cxx11_abi


def _py(facts: Facts) -> Optional[str]:
    return major_minor(facts.python.version or "") if facts.python.version else None


def flash_attn_wheel(facts: Facts, ext: Optional[Extensions], release: Optional[str] = None) -> Optional[str]:
    """The URL of the prebuilt flash-attn wheel for this torch, CUDA, C++ ABI and Python, or None."""
    if ext is None:
        return None
    tminor = torch_minor(facts.torch.version)
    cuda_major = (facts.torch.cuda or "").split(".")[0]
    py = _py(facts)
    abi = _abi(_stack(facts))
    if not (tminor and cuda_major and py and abi is not None):
        return None
    if (facts.system.arch or "x86_64") not in ("x86_64", "amd64"):
        return None
    for row in ext.wheels_of("flash-attn"):
        if release and version(row.version) != version(release):
            continue
        fits = tminor in row.torch and cuda_major in row.cuda and py in row.pythons
        if fits and ("TRUE" if abi else "FALSE") in row.abi:
            return wheel_url(row.url, row.version, cuda_major, tminor, abi, py)
    return None


def build_command(facts: Facts, dist: str, release: Optional[str]) -> str:
    """A source build of ``dist`` against the installed torch, bounded for this machine's memory."""
    stack = _stack(facts)
    ccs = [g.cc for g in machine_gpus(facts) if g.cc]
    parts = []
    jobs = max_jobs(stack.build.available_bytes, stack.build.cpus, GIB_PER_JOB)
    if jobs:
        parts.append(f"MAX_JOBS={jobs}")
    if ccs:
        parts.append(f'TORCH_CUDA_ARCH_LIST="{arch_list(ccs)}"')
    pin = f"{dist}=={release}" if release else dist
    return " ".join(parts + [f"pip install --no-build-isolation --no-cache-dir --force-reinstall --no-deps {pin}"])


def _pin_row_for_torch(ext: Optional[Extensions], package: str, torch_version: Optional[str]) -> Optional[str]:
    """A release of ``package`` whose row pins exactly this torch release, newest first."""
    tv = version((torch_version or "").split("+")[0])
    if ext is None or tv is None:
        return None
    return next((r.version for r in ext.pins_of(package) if version(r.torch) == tv), None)


def _reinstall(
    facts: Facts, table: Optional[Table], ext: Optional[Extensions], e: Extension, b: Breakage
) -> Tuple[str, ...]:
    """The commands that make ``e`` load with the installed torch, by library and kind of breakage."""
    torch_release = (facts.torch.version or "").split("+")[0]
    index = _index(facts, table)
    keep_torch = f"torch=={torch_release}" if torch_release else "torch"
    if b.kind == "arch":
        return (
            f"pip uninstall -y {e.dist}   # these GPUs cannot run it; use the framework's fallback "
            '(transformers: attn_implementation="sdpa")',
        )
    if b.kind == "missing_module":
        missing = b.detail.split("imports ", 1)[-1].split(",")[0].split(".")[0]
        own = [m.split(".")[0] for m in e.modules] or [e.name.replace("-", "_")]
        # flash_attn_2_cuda, xformers._C: the library's own compiled part, in its own wheel (no package
        # of that name on PyPI): the library is reinstalled below, not the module installed
        if not any(missing == m or missing.startswith(m + "_") for m in own):
            return (f"pip install {missing}   # the module {e.modules[0] if e.modules else e.name} imports",)
    if b.kind == "libstdcxx":
        return (
            "conda install -c conda-forge 'libstdcxx-ng>=13'   # in a conda env: its libstdc++ is too old",
            "# outside conda: a newer libstdc++6 from the distribution, or rebuild the library with this GCC",
        )
    if e.name in ("flash-attn",):
        url = flash_attn_wheel(facts, ext)
        if url:
            return (
                f"pip install --no-deps --force-reinstall {url}   # the prebuilt wheel for this torch, CUDA, "
                "C++ ABI and Python",
            )
        return (build_command(facts, "flash-attn", e.version) + "   # no prebuilt wheel fits: a source build",)
    if e.name == "xformers":
        fits = _pin_row_for_torch(ext, "xformers", facts.torch.version)
        pin = f"xformers=={fits}" if fits else "xformers"
        return (
            f"pip install --force-reinstall {pin} {keep_torch} --index-url {index}   # the xformers wheel built "
            "for this torch; naming torch keeps it",
        )
    if e.name == "vllm":
        fits = _pin_row_for_torch(ext, "vllm", facts.torch.version)
        if fits:
            return (f"pip install --force-reinstall vllm=={fits} {keep_torch} --extra-index-url {index}",)
        return (
            "uv venv --python 3.12 --seed .venv-vllm && . .venv-vllm/bin/activate   # vLLM pins its own torch: "
            "give it an environment of its own",
            "uv pip install vllm --torch-backend=auto",
        )
    if e.name == "bitsandbytes":
        return (
            "pip install --force-reinstall --no-deps 'bitsandbytes>=0.45'   # one wheel with binaries for every "
            "CUDA 11.8-12.x/13.x",
        )
    if e.name in SOURCE_BUILT:
        return (build_command(facts, e.dist, e.version) + "   # rebuilt against this torch",)
    return (
        f"pip install --force-reinstall {e.dist} {keep_torch} --extra-index-url {index}   # a build for this "
        "torch; naming torch keeps it",
    )


def _breakage(facts: Facts, e: Extension) -> Optional[Breakage]:
    o = e.outcome
    if o is None or o.ok is None:
        return None
    stderr = o.stderr or ""
    if o.ok and "xFormers can't load C++/CUDA extensions" not in stderr:
        return None
    return classify(
        o.error_type,
        o.message,
        stderr,
        torch_abi=_abi(_stack(facts)),
        torch_cuda=facts.torch.cuda,
        torch_version=facts.torch.version,
    )


def _error_line(e: Extension) -> str:
    o = e.outcome
    assert o is not None
    if o.ok:  # xFormers: the import returns, the warning says its kernels did not load
        first = next((ln.strip() for ln in (o.stderr or "").splitlines() if "xFormers" in ln), "")
        built = next((ln.strip() for ln in (o.stderr or "").splitlines() if "PyTorch" in ln), "")
        return f"import {o.module} warns: {first} {built}".strip()
    return f"import {o.module}: {o.error_type}: {(o.message or '').strip()[:600]}"


def does_not_load(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED330: the import raised (or xFormers warned that its C++/CUDA part did not load)."""
    ext, _ = _tables()
    for e in _stack(facts).extensions:
        b = _breakage(facts, e)
        if b is None:
            continue
        o = e.outcome
        assert o is not None
        evidence = [_error_line(e), f"{e.name} {e.version}: {b.detail}", f"installed by {_where(e)}"]
        if b.kind == "cxx11_abi":
            abi = _abi(_stack(facts))
            evidence.append(f"torch {facts.torch.version}: torch._C._GLIBCXX_USE_CXX11_ABI = {abi}")
        if o.where:
            evidence.append(f"raised at {o.where[-1]}")
        ref = {"flash-attn": REF_FA, "xformers": REF_XFORMERS, "vllm": REF_VLLM}.get(e.name)
        if b.kind == "cxx11_abi":
            ref = REF_ABI
        yield Finding(
            "ED330",
            "error",
            f"{e.name} {e.version} does not load: {b.words}",
            evidence=tuple(evidence),
            fix=_reinstall(facts, table, ext, e, b),
            reference=ref,
            area="stack",
        )


def crashed_or_hung(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED331 (a signal ended the import) and ED332 (the import did not end within the budget)."""
    ext, _ = _tables()
    for e in _stack(facts).extensions:
        o = e.outcome
        if o is None or o.ok is not None:
            continue
        where = f"installed by {_where(e)}"
        fix = _reinstall(facts, table, ext, e, Breakage("other", ""))
        if o.timed_out:
            yield Finding(
                "ED332",
                "error",
                f"import {o.module} ({e.name} {e.version}) hung: killed after {o.seconds or 0:.0f} s",
                evidence=(
                    where,
                    "a library that hangs on import usually waits on a GPU, a lock file or "
                    "the network in its module code",
                ),
                fix=(f"timeout 120 python -X importtime -c 'import {o.module}'   # where it stops",) + fix,
                area="stack",
            )
        elif o.start_error or o.torch_error:
            why = o.start_error or f"torch did not import in its process: {o.torch_error}"
            yield Finding(
                "ED338",
                "warning",
                f"import {o.module} ({e.name}) could not be checked",
                evidence=(why,),
                fix=(f"python -c 'import {o.module}'   # run it by hand",),
                area="stack",
            )
        else:  # a signal, or the process ended (os._exit, a C library's exit()) before the import returned
            how = (
                f"crashed the interpreter ({signal_name(o.signal)})"
                if o.signal is not None
                else f"ended the interpreter before the import returned (exit status {o.returncode})"
            )
            tail = (o.stderr or "").strip().splitlines()[-3:]
            yield Finding(
                "ED331",
                "error",
                f"import {o.module} ({e.name} {e.version}) {how}",
                evidence=(where,) + tuple(tail),
                fix=(f"python -X faulthandler -c 'import {o.module}'   # the C stack of the crash",) + fix,
                area="stack",
            )


def pins_reject_torch(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED333: a library's Requires-Dist pins reject the installed torch (or a library beside it)."""
    ext, _ = _tables()
    stack = _stack(facts)
    if not stack.extensions:
        return
    installed = _installed(facts)
    env = marker_environment(facts.python.version, facts.system.arch)
    index = _index(facts, table)
    torch_release = installed.get("torch", "").split("+")[0]
    for e in stack.extensions:
        if e.name in COMPANIONS:
            continue
        for c in pin_conflicts(e.dist, e.version, e.requires, installed, env):
            if c.installed is None:
                continue  # torch missing is the torch checks' finding
            fixes: List[str] = []
            fits = _pin_row_for_torch(ext, e.name, facts.torch.version) if c.wants == "torch" else None
            if fits and version(fits) != version(e.version):
                fixes.append(
                    f"pip install {e.dist}=={fits} torch=={torch_release} --extra-index-url {index}"
                    f"   # the {e.name} release that pins this torch"
                )
            if c.wants in ("torch", "torchvision", "torchaudio"):
                fixes.append(
                    f"pip install '{c.requirement}' --index-url {index}   # or move torch to the pin "
                    f"(this replaces torch {installed.get('torch', '')})"
                )
            else:
                fixes.append(
                    f"pip install '{c.requirement}' '{e.dist}=={e.version}' torch=={torch_release}"
                    f" --extra-index-url {index}"
                )
            yield Finding(
                "ED333",
                "error",
                f"{e.name} {e.version} requires {c.requirement}; {c.installed} is installed",
                evidence=(
                    f"{e.info}/METADATA: Requires-Dist: {c.requirement}",
                    f"installed: {c.wants} {c.installed}",
                    "pip check says the same; a later 'pip install' of either replaces the other",
                ),
                fix=tuple(fixes),
                reference=REF_PIP_METADATA,
                area="stack",
            )


def arch_unsupported(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED334: the GPUs here are outside what a library's kernels support (FA2 sm80+, FA3 sm90)."""
    ext, _ = _tables()
    stack = _stack(facts)
    if ext is None or not stack.extensions:
        return
    gpus = [(g.label, g.cc) for g in machine_gpus(facts, table) if g.cc]
    for e in stack.extensions:
        row = ext.arch(e.name)
        if row is None or not gpus:
            continue
        bad = unsupported_gpus(gpus, row.min_cc, row.max_cc)
        if not bad:
            continue
        upper = " only" if row.max_cc == row.min_cc else f" to {row.max_cc}" if row.max_cc else " or newer"
        span = row.min_cc + upper
        fix: Tuple[str, ...]
        if e.name == "flash-attn-3":
            fix = (
                f"pip uninstall -y {e.dist}   # FlashAttention-3 is Hopper only",
                "pip install flash-attn --no-build-isolation   # FlashAttention-2: Ampere and newer",
            )
        else:
            fix = (f'pip uninstall -y {e.dist}   # or keep it unused; transformers: attn_implementation="sdpa"',)
        yield Finding(
            "ED334",
            "error" if len(bad) == len(gpus) else "warning",
            f"{e.name} {e.version} does not support {', '.join(sorted({cc for _, cc in bad}))} GPUs "
            f"(needs compute capability {span})",
            evidence=tuple(f"{label}: compute capability {cc}" for label, cc in bad)
            + (row.why,)
            + (("(unconfirmed row of data/extensions.toml)",) if row.unconfirmed else ()),
            fix=fix,
            reference=row.source,
            area="stack",
        )


def deepspeed_ops(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED335: DeepSpeed's prebuilt ops compiled for another torch/CUDA, or JIT without ninja."""
    e = _stack(facts).get("deepspeed")
    if e is None or e.deepspeed is None or e.deepspeed.unreadable:
        return
    d = e.deepspeed
    built = [op for op, on in sorted(d.installed_ops.items()) if on]
    tv, cv = d.torch_version, d.cuda_version
    now_t, now_c = torch_minor(facts.torch.version), major_minor(facts.torch.cuda or "") if facts.torch.cuda else None
    if built and tv not in (None, "0.0") and now_t:
        wrong = []
        if version(tv) is not None and torch_minor(tv + ".0" if tv.count(".") == 1 else tv) != now_t:
            wrong.append(f"torch {tv} (now {facts.torch.version})")
        if cv not in (None, "0.0") and now_c and major_minor(cv or "") != now_c:
            wrong.append(f"CUDA {cv} (now {facts.torch.cuda})")
        if wrong:
            yield Finding(
                "ED335",
                "error",
                f"DeepSpeed {e.version}'s prebuilt ops were compiled with {' and '.join(wrong)}",
                evidence=(
                    f"{d.path}: installed_ops {', '.join(built)}; torch_info version {tv}, cuda_version {cv}",
                    "ds_report shows the same; the ops fail to load or crash",
                ),
                fix=(
                    f"DS_BUILD_OPS=1 {build_command(facts, 'deepspeed', e.version)}   # rebuild the ops for this torch",
                    "ds_report   # then: every op installed and compatible",
                ),
                reference=REF_DEEPSPEED,
                area="stack",
            )
    if not built and not _stack(facts).build.ninja:
        yield Finding(
            "ED335",
            "warning",
            f"DeepSpeed {e.version} builds its ops at first use (JIT), and ninja is not on PATH",
            evidence=(
                f"{d.path}: no op compiled in (torch_info version {tv})",
                "ds_report: 'JIT compiled ops requires ninja'",
            ),
            fix=("pip install ninja",),
            reference=REF_DEEPSPEED,
            area="stack",
        )


def known_bad(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED336: an install data/extensions.toml knows to be wrong (PyPI's unrelated 'apex', ...)."""
    ext, _ = _tables()
    if ext is None:
        return
    for e in _stack(facts).extensions:
        for row in ext.bad_for(e.name, e.version):
            sev: Severity = "error" if row.severity == "error" else "info" if row.severity == "info" else "warning"
            yield Finding(
                "ED336",
                sev,
                f"{e.name} {e.version}: {row.problem}",
                evidence=(f"installed by {_where(e)}",)
                + ((row.note,) if row.note else ())
                + (("(unconfirmed row of data/extensions.toml)",) if row.unconfirmed else ()),
                fix=(row.fix,),
                reference=row.source,
                area="stack",
            )


def _needs_build(facts: Facts) -> List[Extension]:
    """Libraries that will be (re)built from source here: broken ones of SOURCE_BUILT without a fitting
    prebuilt wheel, and ones installed from a local folder or a repository."""
    ext, _ = _tables()
    out = []
    for e in _stack(facts).extensions:
        if e.name not in SOURCE_BUILT:
            continue
        broken = _breakage(facts, e) is not None or (e.outcome is not None and e.outcome.ok is None)
        from_source = e.direct_url is not None and not e.direct_url.archive
        if e.name == "flash-attn" and broken and not from_source and flash_attn_wheel(facts, ext):
            continue
        if broken or from_source:
            out.append(e)
    return out


def source_build_blocked(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED337: what a source build of the libraries that need one would trip on here."""
    needing = _needs_build(facts)
    if not needing or not facts.torch.cuda:
        return
    ext, _ = _tables()
    stack = _stack(facts)
    problems: List[str] = []
    fixes: List[str] = []
    tk = next((t for t in facts.toolkits.toolkits if t.root == facts.toolkits.extension_toolkit), None)
    nvcc = tk.release if tk is not None else None
    torch_cuda = major_minor(facts.torch.cuda)
    if "toolkits" in facts.skipped:
        pass  # not inspected (--skip toolkits): nothing is claimed about nvcc
    elif nvcc is None:
        problems.append(f"no nvcc: torch's cpp_extension finds no CUDA toolkit (torch is CUDA {facts.torch.cuda})")
        fixes.append(
            f"# install the CUDA {torch_cuda} toolkit (envdoctor explain ED309), or: "
            f"conda install -c nvidia cuda-nvcc={torch_cuda}"
        )
    elif (nvcc or "").split(".")[0] != (torch_cuda or "").split(".")[0]:
        problems.append(f"nvcc {nvcc} and torch's CUDA {facts.torch.cuda} are different majors (ED301)")
    gcc = facts.system.gcc_version
    limit = ext.max_gcc(nvcc) if ext is not None and nvcc else None
    gv = version(gcc or "")
    if gv is not None and limit is not None and gv.release[0] > limit:
        problems.append(f"GCC {gcc} is newer than nvcc {nvcc} accepts (GCC {limit} at most)")
        fixes.append(
            f"sudo apt-get install gcc-{limit} g++-{limit} && export CC=gcc-{limit} CXX=g++-{limit} "
            f"NVCC_CCBIN=g++-{limit}   # Debian/Ubuntu (-allow-unsupported-compiler: at your own risk)"
        )
    if not stack.build.ninja:
        problems.append(
            "ninja is not on PATH: torch's cpp_extension falls back to one compile at a time (hours for flash-attn)"
        )
        fixes.append("pip install ninja")
    jobs = max_jobs(stack.build.available_bytes, stack.build.cpus, GIB_PER_JOB)
    set_jobs = stack.build.env.get("MAX_JOBS")
    if jobs and (set_jobs is None or (set_jobs.isdigit() and int(set_jobs) > jobs)):
        gib = (stack.build.available_bytes or 0) / 2**30
        problems.append(
            f"MAX_JOBS is {set_jobs or 'unset'}: ninja starts one job per CPU ({stack.build.cpus}); "
            f"{gib:.0f} GiB available fits {jobs} at {GIB_PER_JOB:.0f} GiB each"
        )
        fixes.append(f"export MAX_JOBS={jobs}")
    ccs = [g.cc for g in machine_gpus(facts, table) if g.cc]
    want_list = arch_list(ccs) if ccs else None
    have_list = stack.build.env.get("TORCH_CUDA_ARCH_LIST")
    if want_list and have_list != want_list:
        problems.append(
            f"TORCH_CUDA_ARCH_LIST is {have_list or 'unset'}: "
            + ("every architecture torch knows is compiled" if not have_list else "not these GPUs'")
            + f" (these GPUs: {want_list})"
        )
        fixes.append(f'export TORCH_CUDA_ARCH_LIST="{want_list}"')
    if not problems:
        return
    names = ", ".join(f"{e.name} {e.version}" for e in needing)
    yield Finding(
        "ED337",
        "warning",
        f"a source build of {names} would fail or crawl here",
        evidence=tuple(problems),
        fix=tuple(fixes) + tuple(build_command(facts, e.dist, e.version) for e in needing[:3]),
        reference=REF_NVCC_HOST,
        area="stack",
    )


def check_unfinished(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED338: the child's extension part was cut short, or data/extensions.toml is broken."""
    stack = _stack(facts)
    if stack.error:
        yield Finding(
            "ED338",
            "warning",
            "the check of the libraries above torch did not finish",
            evidence=(stack.error,),
            fix=("envdoctor check --torch-timeout 180   # more time for the imports",),
            area="stack",
        )
    if stack.extensions and stack.imports_skipped and stack.imports_skipped.startswith("no time left"):
        yield Finding(
            "ED338",
            "warning",
            "the libraries above torch were found but not imported: no time was left",
            evidence=(stack.imports_skipped, ", ".join(e.name for e in stack.extensions)),
            fix=("envdoctor check --torch-timeout 180   # more time for the imports",),
            area="stack",
        )
    if stack.extensions:
        _, error = _tables()
        if error:
            yield Finding(
                "ED338",
                "warning",
                "data/extensions.toml could not be read: pins, GPU support and wheels were not judged",
                evidence=(error,),
                fix=("pip install --force-reinstall envdoctor   # restores the bundled data/",),
                area="stack",
            )


RULES = (
    does_not_load,
    crashed_or_hung,
    pins_reject_torch,
    arch_unsupported,
    deepspeed_ops,
    known_bad,
    source_build_blocked,
    check_unfinished,
)

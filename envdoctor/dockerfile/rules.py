"""Findings ED560-ED567 for a Dockerfile (pure: the parsed file, the tables, a driver version).

| code  | what |
|---|---|
| ED560 | the final image's CUDA is newer than the driver runs |
| ED561 | ``pip install torch`` without the index of the image's CUDA |
| ED562 | torch reinstalled over the NGC PyTorch image's own build |
| ED563 | a library's torch pin fights the image's torch |
| ED564 | flash-attn compiled without nvcc, MAX_JOBS or --no-build-isolation |
| ED565 | NVIDIA_VISIBLE_DEVICES / NVIDIA_DRIVER_CAPABILITIES missing where the image needs them |
| ED566 | a base image envdoctor cannot judge (unknown, or an ARG without a value) |
| ED567 | a prebuilt flash-attn wheel for another torch, C++ ABI or CUDA than the image's |

Each finding carries its line (``Lint.line``) and the exact change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Annotated, Any, Dict, Iterator, List, Optional, Tuple, TypedDict

from envdoctor.codes import Severity
from envdoctor.compat import driver_support, variant_tag
from envdoctor.dockerfile.analysis import BaseImage, PipInstall, base_image, pip_installs, torch_index
from envdoctor.dockerfile.parse import Dockerfile, Instruction, Stage
from envdoctor.doctypes import Json
from envdoctor.findings import Finding
from envdoctor.parse import major_minor, version

REF_CTK_ENV = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html"
REF_CUDA_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/"
REF_TORCH_INSTALL = "https://pytorch.org/get-started/locally/"
REF_NGC_PYTORCH = "https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/index.html"
REF_FA = "https://github.com/Dao-AILab/flash-attention#installation-and-features"
REF_PIN = "https://packaging.python.org/en/latest/specifications/core-metadata/#requires-dist-multiple-use"

TORCH_FAMILY = ("torch", "torchvision", "torchaudio")
#: packages whose CUDA build needs the GPUs and driver libraries in the container at run time
GPU_PACKAGES = TORCH_FAMILY + (
    "vllm",
    "xformers",
    "flash-attn",
    "bitsandbytes",
    "deepspeed",
    "sglang",
    "flashinfer-python",
    "transformer-engine",
    "cupy-cuda12x",
    "jax",
)


@dataclass(frozen=True)
class Lint:
    line: int
    finding: Finding


@dataclass(frozen=True)
class Context:
    dockerfile: Dockerfile
    bases: Tuple[BaseImage, ...]  # per stage: the image it is built on (a parent stage's, through it)
    table: Any
    ext: Any
    driver: Optional[str]
    driver_source: Optional[str]
    path: str


def stage_bases(d: Dockerfile, table: Any, ext: Any) -> Tuple[BaseImage, ...]:
    out: List[BaseImage] = []
    for s in d.stages:
        out.append(out[s.parent] if s.parent is not None else base_image(s.base, table, ext))
    return tuple(out)


def _where(c: Context, ins: Instruction) -> str:
    span = f"{ins.line}" if ins.end_line == ins.line else f"{ins.line}-{ins.end_line}"
    text = ins.text.split("\n", 1)[0]
    return f"{c.path}:{span}: {ins.keyword} {text[:160]}{'...' if len(text) > 160 else ''}"


def _installs(c: Context) -> Iterator[Tuple[Instruction, PipInstall]]:
    for ins in c.dockerfile.instructions:
        if ins.keyword == "RUN":
            for p in pip_installs(ins.text, ins.scope):
                yield ins, p


def _variant_index(c: Context, cuda: Optional[str]) -> Optional[str]:
    """The torch index of the image's CUDA: its own variant, else the newest one below of that major."""
    if not cuda or c.table is None:
        return None
    mm = major_minor(cuda)
    tag = variant_tag(mm)
    var = c.table.variant(tag)
    if var is None:
        want = version(mm or "")
        same = []
        for v in c.table.variants:
            have = version(v.cuda or "")
            if have is not None and want is not None and have.release[0] == want.release[0] and have <= want:
                same.append((have, v))
        var = max(same, key=lambda hv: hv[0])[1] if same else None
    return var.index_url if var is not None else None


def _index_env(ins: Instruction) -> Tuple[str, ...]:
    return tuple(v for k, v in ins.scope.items() if k in _INDEX_VARS)


_INDEX_VARS = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_INDEX",
    "UV_DEFAULT_INDEX",
    "PIP_FIND_LINKS",
)


def driver_too_old(c: Context) -> Iterator[Lint]:
    """ED560: the final stage's CUDA needs a newer driver than this host's (or --driver)."""
    final = c.dockerfile.stages[-1]
    base = c.bases[-1]
    if base.cuda and not c.driver:
        yield Lint(
            final.line,
            Finding(
                "ED566",
                "info",
                f"line {final.line}: the image's CUDA {base.cuda} was not judged against a driver",
                evidence=(f"{c.path}:{final.line}: FROM {final.base}", c.driver_source or "no driver given"),
                fix=(f"envdoctor dockerfile --driver <the GPU hosts' driver, e.g. 570.133.20> {c.path}",),
                area="dockerfile",
            ),
        )
        return
    if not base.cuda or c.table is None or not c.driver:
        return
    try:
        support = driver_support(c.table, c.driver, base.cuda)
    except ValueError:
        return
    if support.kind in ("direct", "unknown"):
        return
    sev: Severity = "error" if support.kind == "none" else "warning"
    what = (
        "runs it only through minor-version compatibility (PTX JIT and some libraries fail)"
        if support.kind == "minor-version"
        else "cannot run it"
    )
    alt = ""
    if c.table is not None:
        runs = [r for r in c.table.ngc_for_driver(c.driver)] if base.kind == "ngc-pytorch" else []
        if runs:
            alt = runs[-1].image
    fix = [f"# upgrade the host driver to {support.needed} or newer (envdoctor recommend plans it)"]
    if alt:
        fix.append(f"FROM {alt}   # the newest NGC PyTorch image this driver runs")
    elif base.kind == "cuda":
        fix.append(
            "FROM nvidia/cuda:<an older CUDA>-...   # a CUDA release the driver supports "
            "(envdoctor table cuda lists the minimum drivers)"
        )
    yield Lint(
        final.line,
        Finding(
            "ED560",
            sev,
            f"line {final.line}: the image's CUDA {base.cuda} needs driver {support.needed}; "
            f"the driver {c.driver} {what}",
            evidence=(f"{c.path}:{final.line}: FROM {final.base}", f"driver {c.driver} ({c.driver_source})")
            + tuple(support.limitations[:2]),
            fix=tuple(fix),
            reference=REF_CUDA_COMPAT,
            area="dockerfile",
        ),
    )


def torch_without_index(c: Context) -> Iterator[Lint]:
    """ED561: torch from PyPI into a CUDA image, without the index of that CUDA."""
    for ins, p in _installs(c):
        base = c.bases[ins.stage] if ins.stage >= 0 else None
        if base is None or not base.cuda or base.kind == "ngc-pytorch":
            continue
        names = [n for n in TORCH_FAMILY if p.named(n) is not None]
        if not names or torch_index(p.index_urls + _index_env(ins)) or p.has("--torch-backend"):
            continue
        index = _variant_index(c, base.cuda)
        fixed = f"{p.command} --index-url {index or 'https://download.pytorch.org/whl/cuXYZ'}"
        yield Lint(
            ins.line,
            Finding(
                "ED561",
                "warning",
                f"line {ins.line}: {' '.join(names)} from PyPI into a CUDA {base.cuda} image, "
                "without the index of that CUDA",
                evidence=(
                    _where(c, ins),
                    "PyPI's torch wheel brings its own CUDA release (its default variant), "
                    f"not the image's {base.cuda}: two CUDA stacks in the image, and extensions built with "
                    "the image's nvcc against a torch of another CUDA",
                ),
                fix=(fixed,) + (("# (uv: uv pip install ... --torch-backend=auto)",) if p.tool == "uv" else ()),
                reference=REF_TORCH_INSTALL,
                area="dockerfile",
            ),
        )


def torch_over_ngc(c: Context) -> Iterator[Lint]:
    """ED562: pip installing torch (or a package that pins it) over the NGC image's own torch build."""
    for ins, p in _installs(c):
        base = c.bases[ins.stage] if ins.stage >= 0 else None
        if base is None or base.kind != "ngc-pytorch":
            continue
        names = [n for n in TORCH_FAMILY if p.named(n) is not None]
        if not names or p.has("--no-deps"):
            continue
        others = [
            x for x in p.packages if (p.named(x) is None or x not in names) and not any(x.startswith(n) for n in names)
        ]
        keep = (
            "pip list --format=freeze | grep -iE '^(torch|torchvision|torchaudio|triton|transformer.engine|"
            "flash.attn|apex)==' > /tmp/ngc-pins.txt"
        )
        fix = (
            f"RUN {keep} && pip install -c /tmp/ngc-pins.txt {' '.join(others)}".rstrip()
            + "   # keep NGC's torch: drop torch from the line, pin what the image ships",
        )
        yield Lint(
            ins.line,
            Finding(
                "ED562",
                "error",
                f"line {ins.line}: {' '.join(names)} reinstalled over the NGC PyTorch image's own build",
                evidence=(
                    _where(c, ins),
                    f"{base.ref} ships torch {base.torch or '(its own build)'} built with CUDA "
                    f"{base.cuda or '?'} and the C++11 ABI; its transformer-engine, flash-attn and apex are "
                    "compiled against that torch and break when it is replaced",
                ),
                fix=fix,
                reference=REF_NGC_PYTORCH,
                area="dockerfile",
            ),
        )


def _torch_of(c: Context) -> Dict[int, Tuple[Optional[str], int]]:
    """Per RUN line: the torch the image has at that point (base image, or an earlier install), and
    the line it came from (0: the base image)."""
    have: Dict[int, Tuple[Optional[str], int]] = {}
    current: Dict[int, Tuple[Optional[str], int]] = {}
    for i, s in enumerate(c.dockerfile.stages):
        current[i] = current[s.parent] if s.parent is not None and s.parent in current else (c.bases[i].torch, 0)
    for ins in c.dockerfile.instructions:
        if ins.keyword != "RUN" or ins.stage < 0:
            continue
        have[ins.line] = current[ins.stage]
        for p in pip_installs(ins.text, ins.scope):
            req = p.named("torch")
            if req is not None:
                pinned = next((s.version for s in req.specifier if s.operator in ("==", "===")), None)
                current[ins.stage] = (pinned, ins.line)
    return have


def pins_fight_torch(c: Context) -> Iterator[Lint]:
    """ED563: vllm/xformers installed with a release whose pin is another torch than the image's."""
    if c.ext is None:
        return
    torch_at = _torch_of(c)
    for ins, p in _installs(c):
        image_torch, source_line = torch_at.get(ins.line, (None, 0))
        if not image_torch:
            continue
        tv = version(image_torch.split("+")[0])
        if tv is None:
            continue
        for package in ("vllm", "xformers"):
            req = p.named(package)
            if req is None or p.has("--no-deps"):
                continue
            exact = next((s.version for s in req.specifier if s.operator in ("==", "===")), None)
            row = c.ext.pin(package, exact) if exact else c.ext.pin(package)
            if row is None or version(row.torch) == version(tv.base_version):
                continue
            fits = next(
                (r.version for r in c.ext.pins_of(package) if version(r.torch) == version(tv.base_version)), None
            )
            src = "the base image" if source_line == 0 else f"line {source_line}"
            fix = []
            if fits:
                changed = p.command.replace(str(req), f"{package}=={fits}") if str(req) in p.command else p.command
                fix.append(f"{changed}   # {package} {fits} pins torch {tv.base_version}")
            if package == "vllm":
                fix.append("FROM vllm/vllm-openai:v<release>   # vLLM's own image ships the torch it pins")
            yield Lint(
                ins.line,
                Finding(
                    "ED563",
                    "error",
                    f"line {ins.line}: {package} {row.version} pins torch {row.torch}; "
                    f"the image has torch {image_torch} ({src})",
                    evidence=(
                        _where(c, ins),
                        f"data/extensions.toml: {package} {row.version} requires torch=={row.torch}"
                        + (" (unconfirmed row)" if row.unconfirmed else ""),
                        "pip replaces the image's torch with the pinned one (or, with a constraint, fails to resolve)",
                    ),
                    fix=tuple(fix) or (f"# pick the {package} release that pins torch {tv.base_version}",),
                    reference=REF_PIN,
                    area="dockerfile",
                ),
            )


def _is_flash_attn_build(p: PipInstall) -> bool:
    if any("flash-attention" in x or "flash_attn" in x.replace("-", "_") for x in p.local if not x.endswith(".whl")):
        return True
    req = p.named("flash-attn") or p.named("flash_attn")
    return req is not None and not any(u.endswith(".whl") for u in p.local)


def flash_attn_build(c: Context) -> Iterator[Lint]:
    """ED564: compiling flash-attn in an image without nvcc, or without MAX_JOBS / --no-build-isolation."""
    for ins, p in _installs(c):
        if not _is_flash_attn_build(p):
            continue
        base = c.bases[ins.stage] if ins.stage >= 0 else None
        problems = []
        severity: Severity = "warning"
        if base is not None and base.nvcc is False:
            severity = "error"
            problems.append(
                f"{base.ref} has no nvcc (a runtime/base image or no CUDA at all): the build stops at "
                "'nvcc was not found' unless a prebuilt wheel matches"
            )
        if "MAX_JOBS" not in p.env and "MAX_JOBS" not in ins.scope:
            problems.append(
                "MAX_JOBS is not set: ninja starts one nvcc per CPU and the build runs out of memory "
                "(flash-attn's README: MAX_JOBS=4 under 96 GB)"
            )
        if p.tool == "pip" and not p.has("--no-build-isolation"):
            problems.append(
                "no --no-build-isolation: pip builds in an isolated environment without torch "
                "(ModuleNotFoundError: No module named 'torch')"
            )
        if not problems:
            continue
        fix = []
        if base is not None and base.nvcc is False and base.cuda:
            devel = base.ref.replace("-runtime", "-devel").replace("-base-", "-devel-")
            fix.append(f"FROM {devel}   # a devel image has nvcc")
        fix.append("ENV MAX_JOBS=4")
        cmd = p.command if p.has("--no-build-isolation") or p.tool != "pip" else f"{p.command} --no-build-isolation"
        fix.append(f"RUN {cmd}")
        lacking = [
            x
            for x, ok in (
                ("MAX_JOBS", "MAX_JOBS" not in p.env and "MAX_JOBS" not in ins.scope),
                ("--no-build-isolation", p.tool == "pip" and not p.has("--no-build-isolation")),
            )
            if ok
        ]
        yield Lint(
            ins.line,
            Finding(
                "ED564",
                severity,
                f"line {ins.line}: flash-attn is compiled here "
                + ("without nvcc" if severity == "error" else "without " + " and ".join(lacking)),
                evidence=(_where(c, ins),) + tuple(problems),
                fix=tuple(fix),
                reference=REF_FA,
                area="dockerfile",
            ),
        )


_FA_WHEEL = re.compile(r"flash_attn-([0-9][\w.]*)\+cu(\d+)torch(\d+\.\d+)cxx11abi(TRUE|FALSE)-(cp\d+)-")


def _image_abi(c: Context, base: BaseImage, torch: Optional[str], from_base: bool) -> Optional[bool]:
    """The C++ ABI of the image's torch: NGC builds with the C++11 ABI; a wheel from download.pytorch.org
    by the [[abi]] rows of its release."""
    if base.kind == "ngc-pytorch" and from_base:
        return True
    row = c.ext.torch_abi(torch) if (c.ext is not None and torch) else None
    return row.cxx11abi if row is not None else None


def flash_attn_wheel_mismatch(c: Context) -> Iterator[Lint]:
    """ED567: a prebuilt flash-attn wheel for another torch, C++ ABI or CUDA than the image's."""
    from envdoctor.stack.analysis import torch_minor

    torch_at = _torch_of(c)
    for ins, p in _installs(c):
        for loc in p.local:
            name = loc.rsplit("/", 1)[-1]
            m = _FA_WHEEL.search(name)
            if m is None or ins.stage < 0:
                continue
            base = c.bases[ins.stage]
            image_torch, src = torch_at.get(ins.line, (None, 0))
            want_torch, want_abi, cu = m.group(3), m.group(4) == "TRUE", m.group(2)
            problems, fixed = [], name
            have = torch_minor(image_torch)
            if have and have != want_torch:
                problems.append(f"built for torch {want_torch}; the image has torch {image_torch}")
                fixed = fixed.replace(f"torch{want_torch}", f"torch{have}")
            abi = _image_abi(c, base, image_torch, src == 0)
            if abi is not None and abi != want_abi:
                problems.append(
                    f"cxx11abi{m.group(4)}; the image's torch is built {'with' if abi else 'without'} "
                    "the C++11 ABI (the import fails: undefined symbol ...__cxx11...)"
                )
                fixed = fixed.replace(f"cxx11abi{m.group(4)}", f"cxx11abi{'TRUE' if abi else 'FALSE'}")
            if base.cuda and cu[:2] != base.cuda.split(".")[0]:
                problems.append(f"built for CUDA {cu[:2]}; the image is CUDA {base.cuda}")
            if not problems:
                continue
            yield Lint(
                ins.line,
                Finding(
                    "ED567",
                    "error",
                    f"line {ins.line}: the flash-attn wheel {m.group(1)} does not fit the image's torch",
                    evidence=(_where(c, ins),) + tuple(problems),
                    fix=(
                        f"{'uv pip' if p.tool == 'uv' else 'pip'} install --no-deps {loc.replace(name, fixed)}"
                        "   # the wheel of the image's torch, ABI and CUDA (check the release has it)",
                    ),
                    reference=REF_FA,
                    area="dockerfile",
                ),
            )


def nvidia_env_missing(c: Context) -> Iterator[Lint]:
    """ED565: a GPU image on a base that does not set NVIDIA_VISIBLE_DEVICES/NVIDIA_DRIVER_CAPABILITIES."""
    final = c.dockerfile.stages[-1]
    chain = c.dockerfile.chain(final)
    base = c.bases[-1]
    env = final.env
    gpu_lines = [
        ins
        for ins, p in _installs(c)
        if ins.stage in {s.index for s in chain} and any(p.named(n) is not None for n in GPU_PACKAGES)
    ]
    caps = env.get("NVIDIA_DRIVER_CAPABILITIES")
    if caps is not None and caps.strip() not in ("all",) and "compute" not in caps.split(","):
        yield Lint(
            final.line,
            Finding(
                "ED565",
                "warning",
                f"NVIDIA_DRIVER_CAPABILITIES={caps} leaves out compute: CUDA finds no libcuda in the container",
                evidence=(f"{c.path}: ENV NVIDIA_DRIVER_CAPABILITIES={caps}",),
                fix=("ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility",),
                reference=REF_CTK_ENV,
                area="dockerfile",
            ),
        )
    if base.nvidia_env or not gpu_lines:
        return
    missing = [k for k in ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES") if k not in env]
    if not missing:
        return
    first = gpu_lines[0]
    yield Lint(
        final.line,
        Finding(
            "ED565",
            "warning",
            f"{' and '.join(missing)} not set on {base.ref}, an image that is not NVIDIA's, for a GPU stack",
            evidence=(
                f"{c.path}:{final.line}: FROM {final.base}",
                f"GPU packages installed at line {first.line}",
                "under the nvidia runtime without --gpus, NVIDIA_VISIBLE_DEVICES unset means no GPU at all, and "
                "NVIDIA_DRIVER_CAPABILITIES unset means 'utility' only (no libcuda)",
            ),
            fix=tuple(f"ENV {k}={'all' if k == 'NVIDIA_VISIBLE_DEVICES' else 'compute,utility'}" for k in missing),
            reference=REF_CTK_ENV,
            area="dockerfile",
        ),
    )


def base_unknown(c: Context) -> Iterator[Lint]:
    """ED566: a FROM line whose ARG has no value, or a final image envdoctor cannot judge."""
    for s, b in zip(c.dockerfile.stages, c.bases):
        if s.unresolved:
            yield Lint(
                s.line,
                Finding(
                    "ED566",
                    "info",
                    f"line {s.line}: FROM {s.base or '(empty)'}: {', '.join(s.unresolved)} has no value "
                    "here, so the base image was not judged",
                    evidence=(f"{c.path}:{s.line}: FROM uses ${{{s.unresolved[0]}}}",),
                    fix=(f"envdoctor dockerfile --build-arg {s.unresolved[0]}=<value> {c.path}",),
                    area="dockerfile",
                ),
            )
        elif b.note and s.index == len(c.dockerfile.stages) - 1:
            yield Lint(
                s.line,
                Finding(
                    "ED566",
                    "info",
                    f"line {s.line}: {b.note}: the base image was not judged",
                    evidence=(f"{c.path}:{s.line}: FROM {s.base}",),
                    area="dockerfile",
                ),
            )


RULES = (
    driver_too_old,
    torch_without_index,
    torch_over_ngc,
    pins_fight_torch,
    flash_attn_build,
    flash_attn_wheel_mismatch,
    nvidia_env_missing,
    base_unknown,
)


def lint(
    d: Dockerfile,
    table: Any,
    ext: Any,
    driver: Optional[str],
    driver_source: Optional[str] = None,
    path: str = "Dockerfile",
) -> Tuple[Lint, ...]:
    """Every finding of ``d``, errors first, then by line."""
    c = Context(d, stage_bases(d, table, ext), table, ext, driver, driver_source, path)
    found: List[Lint] = []
    for rule in RULES:
        for x in rule(c):
            edits = x.finding.fix and not x.finding.code == "ED566"
            fix = ((f"# in {path}, line {x.line}:",) + x.finding.fix) if edits else x.finding.fix
            found.append(Lint(x.line, replace(x.finding, fix=fix)))
    rank = {"error": 0, "warning": 1, "info": 2}
    return tuple(sorted(found, key=lambda x: (rank[x.finding.severity], x.line, x.finding.code)))


class StageSummary(TypedDict):
    """One ``FROM`` of the Dockerfile and what envdoctor knows of its base image."""

    index: Annotated[int, Json(minimum=0)]
    name: Optional[str]
    line: Annotated[int, Json(minimum=1)]
    base: str
    kind: Annotated[str, Json(enum=["cuda", "ngc-pytorch", "pytorch", "vllm", "image", "other", "scratch"])]
    cuda: Optional[str]
    torch: Optional[str]
    nvcc: Optional[bool]


def stage_summary(d: Dockerfile, bases: Tuple[BaseImage, ...]) -> List[StageSummary]:
    return [
        {
            "index": s.index,
            "name": s.name,
            "line": s.line,
            "base": s.base,
            "kind": b.kind,
            "cuda": b.cuda,
            "torch": b.torch,
            "nvcc": b.nvcc,
        }
        for s, b in zip(d.stages, bases)
    ]


__all__ = ["Lint", "RULES", "Stage", "lint", "stage_bases", "stage_summary"]

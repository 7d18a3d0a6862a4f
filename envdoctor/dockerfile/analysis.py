"""What a Dockerfile's lines mean for the GPU stack (pure): the base image's CUDA and torch, and
the ``pip``/``uv pip`` installs of its RUN lines.

    >>> base_image("nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04").cuda
    '12.4.1'
    >>> base_image("nvidia/cuda:12.4.1-runtime-ubuntu22.04").nvcc
    False
    >>> [(p.packages, p.index_urls) for p in pip_installs("MAX_JOBS=4 pip install -U flash-attn --no-build-isolation")]
    [(('flash-attn',), ())]
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name


@dataclass(frozen=True)
class BaseImage:
    """What envdoctor knows of a FROM image: ``BaseImage("nvidia/cuda:12.8.1-devel-ubuntu22.04", "cuda",
    cuda="12.8.1", nvcc=True, nvidia_env=True)``."""

    ref: str
    kind: str  # "cuda", "ngc-pytorch", "pytorch", "vllm", "other", "scratch"
    cuda: Optional[str] = None
    torch: Optional[str] = None  # the torch the image ships
    nvcc: Optional[bool] = None  # a devel image (nvcc inside); None: not known
    nvidia_env: bool = False  # sets NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES
    min_driver: Optional[str] = None  # NGC: the branch its notes require
    note: Optional[str] = None


_CUDA_TAG = re.compile(r"^(\d+\.\d+(?:\.\d+)?)-(?:(cudnn\d*)-)?(devel|runtime|base)\b")
_PYTORCH_TAG = re.compile(r"^(\d+\.\d+(?:\.\d+)?)-cuda(\d+\.\d+)-cudnn\d+-(devel|runtime)$")
_NGC_TAG = re.compile(r"^(\d{2}\.\d{2})-py3")


def split_ref(ref: str) -> Tuple[str, str]:
    """("nvcr.io/nvidia/pytorch", "25.01-py3") of "nvcr.io/nvidia/pytorch:25.01-py3@sha256:..."."""
    name = ref.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return name[:colon].lower(), name[colon + 1 :]
    return name.lower(), "latest"


def base_image(ref: str, table: Any = None, ext: Any = None) -> BaseImage:
    """The facts of a base image, from its name and tag (and the NGC rows of ``table``, the image
    rows of ``ext``); an image envdoctor does not know is kind "other"."""
    repo, tag = split_ref(ref)
    if repo == "scratch":
        return BaseImage(ref, "scratch")
    if repo in ("nvidia/cuda", "nvcr.io/nvidia/cuda", "docker.io/nvidia/cuda"):
        m = _CUDA_TAG.match(tag)
        if m:
            return BaseImage(ref, "cuda", cuda=m.group(1), nvcc=m.group(3) == "devel", nvidia_env=True)
        return BaseImage(ref, "cuda", nvidia_env=True, note=f"tag {tag!r} does not name a CUDA release")
    if repo in ("nvcr.io/nvidia/pytorch",):
        m = _NGC_TAG.match(tag)
        row = table.ngc(m.group(1)) if (m and table is not None) else None
        if row is not None:
            return BaseImage(
                ref,
                "ngc-pytorch",
                cuda=row.cuda,
                torch=row.torch,
                nvcc=True,
                nvidia_env=True,
                min_driver=row.min_driver,
            )
        return BaseImage(
            ref, "ngc-pytorch", nvcc=True, nvidia_env=True, note=f"NGC release {tag!r} is not in envdoctor's table"
        )
    if repo in ("pytorch/pytorch", "docker.io/pytorch/pytorch"):
        m = _PYTORCH_TAG.match(tag)
        if m:
            return BaseImage(
                ref, "pytorch", cuda=m.group(2), torch=m.group(1), nvcc=m.group(3) == "devel", nvidia_env=True
            )
        return BaseImage(ref, "pytorch", nvidia_env=True, note=f"tag {tag!r} names no torch and CUDA")
    if ext is not None:
        row = ext.image(f"{repo}:{tag}") or ext.image(ref)
        if row is not None:
            return BaseImage(
                ref, "vllm" if "vllm" in repo else "image", cuda=row.cuda, torch=row.torch, nvcc=None, nvidia_env=True
            )
    if repo in ("vllm/vllm-openai", "docker.io/vllm/vllm-openai"):
        return BaseImage(ref, "vllm", nvidia_env=True, note=f"vLLM release {tag!r} is not in data/extensions.toml")
    return BaseImage(ref, "other", nvcc=False)


# --- pip install lines -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PipInstall:
    """One ``pip install`` (or ``uv pip install``) of a RUN line."""

    command: str  # the command as written (one of the line's && parts)
    tool: str  # "pip", "uv"
    packages: Tuple[str, ...]  # the requirement strings ("torch==2.8.0", "flash-attn")
    index_urls: Tuple[str, ...]  # --index-url/-i/--extra-index-url/-f values
    options: Tuple[str, ...]  # the other options given ("--no-build-isolation", "--no-deps")
    env: Dict[str, str]  # VAR=value before the command (MAX_JOBS=4 pip install ...)
    requirement_files: Tuple[str, ...] = ()
    constraints: Tuple[str, ...] = ()
    local: Tuple[str, ...] = ()  # "." , "/src/flash-attention", "git+https://..."

    def named(self, name: str) -> Optional[Requirement]:
        """The requirement of ``name`` ("torch") among the packages, or None."""
        want = canonicalize_name(name)
        for p in self.packages:
            req = requirement(p)
            if req is not None and canonicalize_name(req.name) == want:
                return req
        return None

    def has(self, *options: str) -> bool:
        return any(o.split("=", 1)[0] in options for o in self.options)


_WITH_VALUE = {
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--src",
    "-e",
    "--editable",
    "--python",
    "--torch-backend",
    "--config-settings",
    "-C",
    "--cache-dir",
    "--progress-bar",
    "--platform",
    "--python-version",
    "--implementation",
    "--abi",
    "--index-strategy",
    "--index",
    "--default-index",
    "--upgrade-package",
    "-P",
    "--trusted-host",
    "--exists-action",
    "--report",
    "-w",
    "--log",
    "--timeout",
    "--retries",
    "--proxy",
    "--cert",
    "--client-cert",
    "--keyring-provider",
}
_INDEX = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--index", "--default-index"}
_SEPARATORS = re.compile(r"&&|\|\||;|\||\n|\bthen\b|\bdo\b|\belse\b")


_LOCAL = (".", "/", "git+", "http://", "https://", "file:")


def requirement(text: str) -> Optional[Requirement]:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _tokens(command: str) -> List[str]:
    try:
        return shlex.split(command, comments=True, posix=True)
    except ValueError:
        return command.split()


def _pip_start(tokens: List[str]) -> Optional[Tuple[int, str]]:
    """(index of "install", tool) when the tokens are a pip or uv pip install (after VAR=value
    assignments, sudo/env/exec, a case pattern ``"linux/arm64")``)."""
    i = 0
    if tokens[:1] == ["case"]:  # case WORD in PATTERN) command: the command after the first pattern
        i = next((k + 1 for k, t in enumerate(tokens) if t.endswith(")")), len(tokens))
    while i < len(tokens) and (
        re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", tokens[i])
        or tokens[i].endswith(")")
        or tokens[i] in ("sudo", "env", "time", "exec", "command", "-E")
    ):
        i += 1
    if i >= len(tokens):
        return None
    base = tokens[i].rsplit("/", 1)[-1]
    if (base in ("pip", "pip3") or re.fullmatch(r"pip3\.\d+", base)) and tokens[i + 1 : i + 2] == ["install"]:
        return i + 1, "pip"
    if base == "uv" and tokens[i + 1 : i + 3] == ["pip", "install"]:
        return i + 2, "uv"
    if re.fullmatch(r"python(\d(\.\d+)?)?", base) and tokens[i + 1 : i + 4] == ["-m", "pip", "install"]:
        return i + 3, "pip"
    return None


def pip_installs(text: str, scope: Optional[Dict[str, str]] = None) -> Tuple[PipInstall, ...]:
    """Every pip/uv pip install in a RUN line's shell text (its heredocs included), variables of
    ``scope`` (the ARG and ENV values the shell sees) substituted."""
    from envdoctor.dockerfile.parse import DockerfileError, expand

    out = []
    for command in _SEPARATORS.split(text):
        if "install" not in command or "pip" not in command:
            continue
        command = command.strip()
        try:
            expanded = expand(command, scope or {}) if scope is not None else command
        except DockerfileError:  # a substitution past the bound: read the line as written
            expanded = command
        tokens = _tokens(expanded)
        start = _pip_start(tokens)
        if start is None:
            continue
        at, tool = start
        env = {}
        for tok in tokens[:at]:
            key, sep, value = tok.partition("=")
            if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                env[key] = value
        packages: List[str] = []
        index: List[str] = []
        options: List[str] = []
        reqs: List[str] = []
        cons: List[str] = []
        local: List[str] = []
        rest = tokens[at + 1 :]
        i = 0
        while i < len(rest):
            tok = rest[i]
            if tok.startswith("-"):
                name, sep, value = tok.partition("=")
                if name in _WITH_VALUE and not sep:
                    value = rest[i + 1] if i + 1 < len(rest) else ""
                    i += 1
                if name in _INDEX:
                    index.append(value)
                elif name in ("-r", "--requirement"):
                    reqs.append(value)
                elif name in ("-c", "--constraint"):
                    cons.append(value)
                elif name in ("-e", "--editable"):
                    local.append(value)
                else:
                    options.append(f"{name}={value}" if (sep or name in _WITH_VALUE) else name)
            elif tok.startswith(_LOCAL) or tok.endswith((".whl", ".tar.gz")):
                local.append(tok)
            else:
                packages.append(tok)
            i += 1
        out.append(
            PipInstall(
                command,
                tool,
                tuple(packages),
                tuple(index),
                tuple(options),
                env,
                tuple(reqs),
                tuple(cons),
                tuple(local),
            )
        )
    return tuple(out)


def torch_index(urls: Tuple[str, ...]) -> Optional[str]:
    """The CUDA variant a set of index URLs picks for torch ("cu128", "cpu"), or None for none."""
    for url in urls:
        m = re.search(r"/whl/(?:nightly/|test/)?(cu\d+|cpu|rocm[\d.]+|xpu)\b", url)
        if m:
            return m.group(1)
    return None

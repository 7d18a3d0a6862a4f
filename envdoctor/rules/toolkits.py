"""ED3xx: CUDA toolkits (nvcc) and the one CUDA extension builds would use. Pure: facts in, findings out.

Extension builds (``torch.utils.cpp_extension``: flash-attn, apex, DeepSpeed ops, xformers from
source) compile with ``$CUDA_HOME/bin/nvcc`` and ``$CUDA_HOME/include``; ``CUDA_HOME`` is found as
``ToolkitFacts`` describes. torch refuses a toolkit whose major version differs from
``torch.version.cuda`` and warns on a minor difference.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Optional

from packaging.version import Version

from envdoctor import commands
from envdoctor.codes import CODES
from envdoctor.facts import Facts
from envdoctor.facts.toolkit import Toolkit
from envdoctor.findings import Finding
from envdoctor.parse import loose_version, major_minor
from envdoctor.table import Table

REF_EXT = "https://pytorch.org/docs/stable/cpp_extension.html"
REF_INSTALL = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/"
REF_CONDA = (
    "https://conda-forge.org/docs/user/tipsandtricks/#installing-cuda-enabled-packages-like-tensorflow-and-pytorch"
)


def _where(facts: Facts) -> str:
    t = facts.toolkits
    how = {
        "CUDA_HOME": f"$CUDA_HOME={t.cuda_home}",
        "CUDA_PATH": f"$CUDA_PATH={t.cuda_path}",
        "nvcc on PATH": f"the folder above the first nvcc on PATH ({t.nvcc_on_path})",
        "/usr/local/cuda": "/usr/local/cuda (no CUDA_HOME, no nvcc on PATH)",
    }
    return f"extension builds use {t.extension_root!r}: {how.get(t.extension_rule or '', t.extension_rule)}"


def _toolkit(facts: Facts, root: Optional[str]) -> Optional[Toolkit]:
    return next((tk for tk in facts.toolkits.toolkits if tk.root == root), None) if root else None


def _toolkit_of_nvcc(facts: Facts, nvcc: Optional[str]) -> Optional[Toolkit]:
    if not nvcc:
        return None
    above = posixpath.dirname(posixpath.dirname(nvcc))
    for tk in facts.toolkits.toolkits:
        if nvcc == tk.nvcc or nvcc in tk.aliases or above in tk.aliases or above == tk.root:
            return tk
    return None


def _describe(tk: Toolkit) -> str:
    return f"{tk.root}: CUDA {tk.version or tk.release or 'unknown'} ({tk.version_source or 'version unknown'})"


def toolkit_install(facts: Facts, release: str, table: Optional[Table] = None) -> tuple[str, ...]:
    """Install the CUDA ``release`` toolkit ("12.8") and point CUDA_HOME at it (NVIDIA's repository
    as the table's row for this distribution names it)."""
    if facts.conda.active_prefix:
        return commands.conda_nvcc_install(facts.conda.flavor, release, cuda_home=True)
    return commands.cuda_toolkit_install(facts.system, release, table)


def _use(root: str) -> tuple[str, ...]:
    return (f"export CUDA_HOME={root}", f'export PATH="{root}/bin:$PATH"')


def nvcc_matches_torch(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED301 (major differs, error) / ED302 (minor differs, warning): nvcc vs torch.version.cuda."""
    torch_cuda = facts.torch.cuda if facts.torch.installed else None
    tk = _toolkit(facts, facts.toolkits.extension_toolkit)
    if not torch_cuda or tk is None or not tk.release or facts.toolkits.extension_status in ("missing", "empty"):
        return
    want, have = loose_version(torch_cuda), loose_version(tk.release)
    if want is None or have is None or want.release[:2] == have.release[:2]:
        return
    major = want.release[0] != have.release[0]
    wanted = major_minor(torch_cuda) or torch_cuda
    match = next((t for t in facts.toolkits.toolkits if t.release == wanted), None)
    fix = _use(match.root) if match else toolkit_install(facts, wanted, table)
    yield Finding(
        "ED301" if major else "ED302",
        "error" if major else "warning",
        f"nvcc {tk.release} does not match torch's CUDA {torch_cuda}: CUDA extension builds "
        + ("will fail" if major else "may misbehave"),
        evidence=(
            f"torch {facts.torch.version}: torch.version.cuda = {torch_cuda} (target Python)",
            _where(facts),
            _describe(tk),
        )
        + ((f"a matching toolkit is installed: {_describe(match)}",) if match else ()),
        fix=fix,
        reference=REF_EXT,
        area="toolkits",
        explanation=(
            "torch.utils.cpp_extension raises when nvcc's major version differs from the one torch was built with"
            if major
            else "torch.utils.cpp_extension only warns on a minor difference, but "
            "kernels built with another CUDA minor can fail to load or link"
        )
        + (
            "."
            if match or facts.conda.active_prefix
            else "; the apt/dnf/zypper commands use NVIDIA's CUDA repository, which must carry that release "
            "for your distribution."
        ),
    )


def cuda_home_missing(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED303: CUDA_HOME (or CUDA_PATH) names a folder that does not exist."""
    t = facts.toolkits
    if t.extension_status != "missing" or t.extension_rule not in ("CUDA_HOME", "CUDA_PATH"):
        return
    target = _toolkit(facts, t.extension_toolkit) or _best(facts)
    yield Finding(
        "ED303",
        "error",
        f"{t.extension_rule} points to {t.extension_root}, which does not exist",
        evidence=(f"${t.extension_rule}={t.extension_root} (environment)", f"{t.extension_root}: no such folder")
        + tuple(f"installed: {_describe(tk)}" for tk in t.toolkits),
        fix=(f"grep -n {t.extension_rule} ~/.bashrc ~/.profile ~/.bash_profile /etc/environment   # where it is set",)
        + (_use(target.root) if target else (f"unset {t.extension_rule}",)),
        reference=REF_EXT,
        area="toolkits",
        explanation="CUDA extension builds and tools that read it (CMake, Triton, DeepSpeed) fail with "
        "'nvcc not found' or missing headers. Fix the line that sets it, not just this shell.",
    )


def _best(facts: Facts) -> Optional[Toolkit]:
    """The toolkit to point CUDA_HOME at: torch's CUDA release, else the nvcc on PATH's, else the newest."""
    tks = [tk for tk in facts.toolkits.toolkits if tk.nvcc]
    torch_cuda = major_minor(facts.torch.cuda) if facts.torch.installed else None
    return (
        next((tk for tk in tks if torch_cuda and tk.release == torch_cuda), None)
        or _toolkit_of_nvcc(facts, facts.toolkits.nvcc_on_path)
        or max(tks, key=lambda tk: loose_version(tk.release) or Version("0"), default=None)
    )


def cuda_home_vs_path(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED304: CUDA_HOME names one toolkit, the nvcc on PATH belongs to another of another release."""
    t = facts.toolkits
    if len(t.toolkits) < 2 or t.extension_rule not in ("CUDA_HOME", "CUDA_PATH") or t.extension_status != "ok":
        return
    home, on_path = _toolkit(facts, t.extension_toolkit), _toolkit_of_nvcc(facts, t.nvcc_on_path)
    if home is None or on_path is None or home.root == on_path.root or home.release == on_path.release:
        return
    yield Finding(
        "ED304",
        "warning",
        f"{t.extension_rule} uses CUDA {home.release}, but the nvcc on PATH is CUDA {on_path.release}",
        evidence=(
            f"${t.extension_rule}={t.extension_root} -> {_describe(home)}",
            f"first nvcc on PATH: {t.nvcc_on_path} -> {_describe(on_path)}",
        ),
        fix=(f'export PATH="{home.root}/bin:$PATH"',),
        reference=REF_EXT,
        area="toolkits",
        explanation="torch extensions compile with $CUDA_HOME/bin/nvcc, while CMake, Triton and Makefiles take the "
        "nvcc on PATH: one project then mixes headers and compilers of two CUDA releases. Put the "
        "toolkit you want first on PATH (or change CUDA_HOME to the other one).",
    )


def _builds_cuda_extensions(facts: Facts) -> bool:
    """torch looks for a CUDA toolkit only in a CUDA build; with no torch yet, only on a GPU machine.

    A CPU-only torch leaves ``torch.utils.cpp_extension.CUDA_HOME`` at None (2.13.0+cpu, seen here).
    """
    if facts.torch.installed and facts.torch.version and "torch" not in facts.skipped:
        return bool(facts.torch.cuda)  # (with --skip torch only the version is known, not the build)
    return bool(facts.driver.gpus or facts.pci.devices)


def extension_root_broken(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED305: the build root has nvcc but no CUDA headers; ED306: CUDA_HOME has no bin/nvcc;
    ED307: CUDA_HOME/CUDA_PATH set to an empty string. Quiet where no CUDA extension is built."""
    t = facts.toolkits
    if not _builds_cuda_extensions(facts):
        return
    target = _toolkit(facts, t.extension_toolkit) or _best(facts)
    if t.extension_status == "no_headers":
        yield Finding(
            "ED305",
            "warning",
            f"CUDA extension builds would use {t.extension_root}, which is not a CUDA toolkit folder",
            evidence=(
                _where(facts),
                f"{t.extension_root}/bin/nvcc exists, {t.extension_root}/include/cuda_runtime.h does not",
            )
            + ((f"that nvcc belongs to {_describe(target)}",) if target else ()),
            fix=_use(target.root)[:1] if target else (),
            reference=REF_EXT,
            area="toolkits",
            explanation="torch adds $CUDA_HOME/include and $CUDA_HOME/lib64 to every CUDA extension build; with a "
            "wrapper nvcc outside the toolkit those hold no CUDA headers or libcudart, so C++ sources "
            "that include CUDA headers and the final link fail. Setting CUDA_HOME names the real toolkit.",
        )
    elif t.extension_status == "no_nvcc" and t.extension_rule in ("CUDA_HOME", "CUDA_PATH"):
        wanted = _wanted(facts)
        yield Finding(
            "ED306",
            "warning",
            f"{t.extension_rule}={t.extension_root} has no bin/nvcc",
            evidence=(_where(facts), f"{t.extension_root}/bin/nvcc: not found"),
            fix=(
                _use(target.root)
                if target
                else toolkit_install(facts, wanted, table)
                if wanted
                else (f"unset {t.extension_rule}",)
            ),
            reference=REF_EXT,
            area="toolkits",
            explanation="torch raises \"nvcc not found at '<CUDA_HOME>/bin/nvcc'\" when it builds a CUDA extension; "
            "this folder is a CUDA runtime without the compiler.",
        )
    elif t.extension_status == "empty":
        yield Finding(
            "ED307",
            "warning",
            f"{t.extension_rule} is set to an empty string",
            evidence=(f"${t.extension_rule}='' (environment)",),
            fix=(f"unset {t.extension_rule}",) + (_use(target.root)[:1] if target else ()),
            reference=REF_EXT,
            area="toolkits",
            explanation="torch.utils.cpp_extension takes the empty value as CUDA_HOME and does not look for nvcc, "
            "so every CUDA extension build stops with 'CUDA was not found on the system'.",
        )


def _wanted(facts: Facts) -> Optional[str]:
    """torch's CUDA as "X.Y", the release a toolkit should have; None without a CUDA torch."""
    return major_minor(facts.torch.cuda) if facts.torch.installed else None


def nvcc_failed(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED308: an nvcc that hangs, crashes or prints garbage."""
    for tk in facts.toolkits.toolkits:
        if tk.error is None or tk.error.kind == "not_found":
            continue
        yield Finding(
            "ED308",
            "warning",
            f"nvcc of {tk.root} does not work: {tk.error.message}",
            evidence=(f"{tk.error.command or tk.nvcc}: {tk.error.message}",)
            + ((f"version {tk.version} read from {tk.version_source} instead",) if tk.version else ()),
            fix=(f"{tk.nvcc or tk.root + '/bin/nvcc'} --version",),
            reference=REF_INSTALL,
            area="toolkits",
            explanation="Run it by hand to see the error; a toolkit copied from another machine or half removed "
            "by a package manager behaves like this. Reinstall that toolkit or remove it from PATH.",
        )


def no_toolkit(facts: Facts, table: Optional[Table]) -> Iterator[Finding]:
    """ED309: torch has CUDA but there is no nvcc at all (outside conda, which ED401 covers)."""
    if not (facts.torch.installed and facts.torch.cuda) or facts.conda.active_prefix:
        return
    if any(tk.nvcc for tk in facts.toolkits.toolkits) or facts.toolkits.error:
        return
    yield Finding(
        "ED309",
        "info",
        CODES["ED309"].title,
        evidence=(
            f"torch {facts.torch.version} is built for CUDA {facts.torch.cuda}",
            "no nvcc on PATH, in CUDA_HOME/CUDA_PATH, /usr/local/cuda* or /opt/cuda*",
        ),
        fix=toolkit_install(facts, _wanted(facts) or facts.torch.cuda, table),
        reference=REF_INSTALL,
        area="toolkits",
        explanation="torch itself does not need nvcc (its wheels carry the CUDA runtime). Install a toolkit only to "
        "build packages from source: flash-attn, apex, DeepSpeed ops, custom kernels.",
    )


RULES = (nvcc_matches_torch, cuda_home_missing, cuda_home_vs_path, extension_root_broken, nvcc_failed, no_toolkit)

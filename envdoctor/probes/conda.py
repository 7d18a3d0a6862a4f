"""conda / mamba / micromamba: which one, its version, base and active environment, channels, the
``__cuda`` virtual package, and the CUDA packages of the active environment.

The executable is ``$CONDA_EXE`` (set by conda's shell hook), ``$MAMBA_EXE`` (micromamba's), then
``conda``, ``mamba``, ``micromamba`` on PATH. Two commands, each bounded by ``ctx.conda_timeout``
(conda takes seconds to start): ``<exe> info --json`` and ``<exe> list --json --prefix
$CONDA_PREFIX`` (only when an environment is active). No conda at all is ``CondaFacts()``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import List, Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.conda import CondaFacts
from envdoctor.parse.conda import CondaParseError, parse_error, parse_info, parse_list
from envdoctor.probes.context import Context
from envdoctor.run import Ran


def _candidates(ctx: Context) -> List[Tuple[str, str]]:
    """(executable, found_via) in the order they are tried, without duplicates."""
    out: List[Tuple[str, str]] = []
    for var in ("CONDA_EXE", "MAMBA_EXE"):
        if ctx.env.get(var):
            out.append((ctx.env[var], var))
    for name in ("conda", "mamba", "micromamba"):
        exe = ctx.which(name)
        if exe:
            out.append((exe, "PATH"))
    seen, unique = set(), []
    for exe, via in out:
        key = os.path.realpath(exe)
        if key not in seen:
            seen.add(key)
            unique.append((exe, via))
    return unique


def _flavor(exe: str) -> str:
    name = os.path.basename(exe).lower()
    return "micromamba" if "micromamba" in name else "mamba" if "mamba" in name else "conda"


def _failed(ran: Ran, shown: str) -> ProbeError:
    """The runner's error, with conda's own JSON error message when it printed one."""
    assert ran.error is not None
    message = parse_error(ran.stdout) or parse_error(ran.stderr)
    if ran.error.kind == "exit_status" and message:
        return ProbeError("exit_status", f"{shown} exited with status {ran.returncode}: {message}", shown)
    return dataclasses.replace(ran.error, command=shown)


def probe(ctx: Context) -> CondaFacts:
    ran: Optional[Ran] = None
    exe = via = None
    for exe, via in _candidates(ctx):  # noqa: B007 - the pair tried last is the one reported
        ran = ctx.run([exe, "info", "--json"], timeout=ctx.conda_timeout)
        if not (ran.error and ran.error.kind == "not_found"):
            break
    if ran is None or (ran.error and ran.error.kind == "not_found"):
        return CondaFacts()  # absent: no conda, mamba or micromamba
    assert exe is not None
    facts = CondaFacts(exe=exe, flavor=_flavor(exe), found_via=via,
                       active_prefix=ctx.env.get("CONDA_PREFIX") or None,
                       active_name=ctx.env.get("CONDA_DEFAULT_ENV") or None)
    if ran.error:
        return dataclasses.replace(facts, error=_failed(ran, f"{exe} info --json"))
    try:
        info = parse_info(ran.stdout)
    except CondaParseError as exc:
        return dataclasses.replace(facts, error=ProbeError("unparseable", str(exc), f"{exe} info --json"))
    facts = dataclasses.replace(
        facts, version=info.version, base_prefix=info.base_prefix, channels=info.channels,
        virtual_cuda=info.virtual_cuda, source=f"{exe} info --json",
        active_prefix=facts.active_prefix or info.active_prefix,
        active_name=facts.active_name or info.active_name,
    )
    if not facts.active_prefix:
        return facts
    shown = f"{exe} list --json --prefix {facts.active_prefix}"
    listed = ctx.run([exe, "list", "--json", "--prefix", facts.active_prefix], timeout=ctx.conda_timeout)
    if listed.error:
        return dataclasses.replace(facts, error=_failed(listed, shown))
    try:
        packages = parse_list(listed.stdout)
    except CondaParseError as exc:
        return dataclasses.replace(facts, error=ProbeError("unparseable", str(exc), shown))
    return dataclasses.replace(facts, packages=packages, packages_source=shown)

"""conda / mamba / micromamba: which one, its version, base and active environment, channels, the
``__cuda`` virtual package, and the CUDA packages of the active environment.

The executable is ``$CONDA_EXE`` (set by conda's shell hook), ``$MAMBA_EXE`` (micromamba's), then
``conda``, ``mamba``, ``micromamba`` on PATH. Two commands, each bounded by ``ctx.timeout``
(``--timeout``; conda takes seconds to start): ``<exe> info --json`` and ``<exe> list --json --prefix
$CONDA_PREFIX`` (only when an environment is active). No conda at all is ``CondaFacts()``;
something named conda on PATH (or in ``$CONDA_EXE``) that is not a program is ``CondaFacts``
with an error of kind ``not_found`` saying what it is.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, List, Optional, Tuple

from envdoctor.facts.base import ProbeError
from envdoctor.facts.conda import CondaFacts
from envdoctor.probes.context import Context
from envdoctor.probes.reasons import unreadable
from envdoctor.run import Ran

if TYPE_CHECKING:
    from envdoctor.parse.conda import CondaParseError


def _candidates(ctx: Context) -> Tuple[List[Tuple[str, str]], Optional[ProbeError]]:
    """(executable, found_via) in the order they are tried, without duplicates; and why a
    ``conda`` (``mamba``, ``micromamba``) on PATH that is not a program cannot be run."""
    out: List[Tuple[str, str]] = []
    not_program: Optional[ProbeError] = None
    for var in ("CONDA_EXE", "MAMBA_EXE"):
        if ctx.env.get(var):
            out.append((ctx.env[var], var))
    for name in ("conda", "mamba", "micromamba"):
        exe, why = ctx.locate(name)
        if exe:
            out.append((exe, "PATH"))
        not_program = not_program or why
    seen, unique = set(), []
    for exe, via in out:
        key = os.path.realpath(exe)
        if key not in seen:
            seen.add(key)
            unique.append((exe, via))
    return unique, not_program


def _flavor(exe: str) -> str:
    name = os.path.basename(exe).lower()
    return "micromamba" if "micromamba" in name else "mamba" if "mamba" in name else "conda"


def _failed(ran: Ran, shown: str) -> ProbeError:
    """The runner's error, with conda's own JSON error message when it printed one."""
    assert ran.error is not None
    from envdoctor.parse.conda import parse_error

    message = parse_error(ran.stdout) or parse_error(ran.stderr)
    if ran.error.kind == "exit_status" and message:
        return ProbeError("exit_status", f"{shown} exited with status {ran.returncode}: {message}", shown)
    return dataclasses.replace(ran.error, command=shown)


def _unreadable(ran: Ran, exc: CondaParseError, shown: str) -> ProbeError:
    """conda's output is not what was asked: its JSON error (conda prints one on stdout, some
    versions with exit status 0), else the reason on stderr, else the parser's words."""
    from envdoctor.parse.conda import parse_error

    message = parse_error(ran.stdout)
    if message:
        return ProbeError("exit_status", f"{shown}: {message}", shown)
    return unreadable(shown.split(" ", 1)[0], ran, str(exc), shown)


def _not_a_program(via: str, exe: str, why: str) -> str:
    """``$CONDA_EXE`` naming a directory: "conda: not installed (CONDA_EXE=/opt/x is a directory ...)"."""
    return why if via == "PATH" else why.replace(f"({exe} ", f"({via}={exe} ", 1)


def probe(ctx: Context) -> CondaFacts:
    ran: Optional[Ran] = None
    exe = via = None
    candidates, not_program = _candidates(ctx)
    for exe, via in candidates:  # noqa: B007 - the pair tried last is the one reported
        ran = ctx.run([exe, "info", "--json"], timeout=ctx.timeout)
        if not (ran.error and ran.error.kind == "not_found"):
            break
        if not_program is None and "not installed (" in ran.error.message:
            not_program = ProbeError("not_found", _not_a_program(via, exe, ran.error.message), exe)
    if ran is None or (ran.error and ran.error.kind == "not_found"):
        # absent: no conda, mamba or micromamba (or only something of that name that is not a program)
        return CondaFacts(error=not_program)
    assert exe is not None
    # the parsers load only here: most machines check runs on have no conda (imports are a good
    # part of check's time)
    from envdoctor.parse.conda import CondaParseError, parse_info, parse_list

    facts = CondaFacts(
        exe=exe,
        flavor=_flavor(exe),
        found_via=via,
        active_prefix=ctx.env.get("CONDA_PREFIX") or None,
        active_name=ctx.env.get("CONDA_DEFAULT_ENV") or None,
    )
    if ran.error:
        return dataclasses.replace(facts, error=_failed(ran, f"{exe} info --json"))
    try:
        info = parse_info(ran.stdout)
    except CondaParseError as exc:
        return dataclasses.replace(facts, error=_unreadable(ran, exc, f"{exe} info --json"))
    facts = dataclasses.replace(
        facts,
        version=info.version,
        base_prefix=info.base_prefix,
        channels=info.channels,
        virtual_cuda=info.virtual_cuda,
        source=f"{exe} info --json",
        active_prefix=facts.active_prefix or info.active_prefix,
        active_name=facts.active_name or info.active_name,
    )
    if not facts.active_prefix:
        return facts
    shown = f"{exe} list --json --prefix {facts.active_prefix}"
    listed = ctx.run([exe, "list", "--json", "--prefix", facts.active_prefix], timeout=ctx.timeout)
    if listed.error:
        return dataclasses.replace(facts, error=_failed(listed, shown))
    try:
        packages = parse_list(listed.stdout)
    except CondaParseError as exc:
        return dataclasses.replace(facts, error=_unreadable(listed, exc, shown))
    return dataclasses.replace(facts, packages=packages, packages_source=shown)

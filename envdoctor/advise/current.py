"""The torch the target Python has now: does it work here, and what would a plan change in it.

A build *works* when it was imported and ran: a saved report (``check --json``, read with ``--from``)
says CUDA was available and a tiny CUDA operation ran (on a machine without an NVIDIA GPU: the
import). Read from its metadata only (``recommend`` on this machine does not import torch; ``check``
does), it is *expected* to work where the table says its variant fits this machine: the same check
as a choice asked for by name (``--torch 2.11.0+cu130``). For a what-if machine only the table can
tell, so a report's "it ran" is never claimed for it.

For the recorded H200 (torch 2.11.0+cu130, torchvision 0.26.0, torchaudio 2.11.0; driver
580.159.04) ``current_build`` is ``Current(state="works", ...)`` and an upgrade to torch 2.13.0+cu130
changes torch and torchvision (0.26.0 -> 0.28.0) and leaves torchaudio 2.11.0 as it is: the table
pairs no torchaudio with torch 2.13.0, which the change says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from packaging.version import InvalidVersion, Version

from envdoctor.advise.choice import Choice
from envdoctor.advise.choose import choose_variant
from envdoctor.advise.machine import Machine
from envdoctor.compat import kernel_support, variant_tag
from envdoctor.table import Table

#: "works" (imported, CUDA ran), "expected" (metadata only; the table says it fits), "broken" (it was
#: imported and failed), "unfit" (the table says it cannot work here), "unknown" (neither can tell).
State = Literal["works", "expected", "broken", "unfit", "unknown"]
COMPANIONS = ("torchvision", "torchaudio")


@dataclass(frozen=True)
class Current:
    """The torch build in the target Python, and whether it works here (``evidence`` says how known)."""

    python: str  # "/opt/torch/.venv/bin/python3"
    torch: str  # "2.11.0+cu130" as installed
    variant: str | None  # "cu130"; None when neither a label nor torch says it
    torchvision: str | None
    torchaudio: str | None
    state: State
    evidence: str  # "imported (the report): CUDA available, a tiny CUDA operation ran"

    @property
    def fine(self) -> bool:
        """It works, or by the table it should: replacing it is a choice, not a fix."""
        return self.state in ("works", "expected")

    @property
    def label(self) -> str:
        """``"torch 2.11.0+cu130"``; a bare PyPI version gets its variant when known (``2.11.0 (cu130)``)."""
        local = _local(self.torch)
        if local or not self.variant:
            return f"torch {self.torch}"
        return f"torch {self.torch} ({self.variant})"


@dataclass(frozen=True)
class Change:
    """What a plan does to one package of the target: ``then`` None means it is left as it is."""

    package: str  # "torch", "torchvision", "torchaudio"
    now: str | None  # None: not installed
    then: str | None
    note: str = ""


def current_build(m: Machine, table: Table) -> Current | None:
    """The torch installed in the target Python, with its state; None when there is none (or no
    target interpreter: a what-if ``--python-version`` stands for a Python not made yet)."""
    t, exe = m.facts.torch, m.python_exe
    if not exe or not t.installed or not t.version or "python" not in m.known:
        return None
    if m.facts.python.chosen_by == "--python-version":
        return None
    variant = _variant(table, t.version, t.cuda, m.arch)
    ran = t.error is None and (t.import_error is not None or t.cuda_available is not None or t.git is not None)
    state: State
    if ran and not m.given:
        broken = _failure(m)
        if broken:
            state, evidence = "broken", broken
        elif m.nvidia:
            state, evidence = "works", f"{_whose(m)}: imported, CUDA available, a tiny CUDA operation ran"
        else:
            state, evidence = "works", f"{_whose(m)}: imported"
    else:
        state, evidence = _by_table(m, table, t.version, variant)
    return Current(exe, t.version, variant, t.torchvision, t.torchaudio, state, evidence)


def changes(cur: Current, plan_choice: Choice, table: Table) -> tuple[Change, ...]:
    """What installing ``plan_choice`` into the same Python changes: torch, and each companion the
    table pairs with the new torch; an installed companion the table pairs nothing with is left as it is
    (the note says that envdoctor cannot tell whether it works with the new torch)."""
    new = plan_choice.torch or ""
    local = f"+{plan_choice.variant}" if plan_choice.variant and plan_choice.variant.startswith("cu") else ""
    out = []
    if _public(cur.torch) != new or cur.variant != plan_choice.variant:
        out.append(Change("torch", cur.torch, f"{new}{local}", _variant_note(cur, plan_choice)))
    for package in COMPANIONS:
        now = getattr(cur, package)
        then = getattr(plan_choice, package)
        if then:
            if now is None or _public(now) != _public(then):
                out.append(Change(package, now, then, "" if now else "not installed now"))
        elif now:
            out.append(
                Change(
                    package,
                    now,
                    None,
                    f"left as it is: envdoctor's table pairs no {package} release with torch {new}, so "
                    f"it cannot say whether {now} works with it (after the upgrade: "
                    f"{cur.python} -c 'import {package}')",
                )
            )
    return tuple(out)


def _variant_note(cur: Current, c: Choice) -> str:
    cuda = f", CUDA {c.cuda}" if c.cuda else ""
    if not cur.variant:
        return f"variant {c.variant}{cuda}; the installed build's variant is not known"
    if cur.variant == c.variant:
        return f"same variant {c.variant}{cuda}"
    return f"variant {cur.variant} -> {c.variant}{cuda}"


def _by_table(m: Machine, table: Table, version: str, variant: str | None) -> tuple[State, str]:
    """(state, evidence) of a build known only by its metadata, or on a what-if machine."""
    seen = (
        "read from its metadata, not imported: `envdoctor check` runs it"
        if not m.given
        else "not run: the machine is a what-if"
    )
    public = _public(version)
    if variant is None or table.torch(public) is None:
        what = "its wheel variant" if variant is None else f"torch {public}"
        return "unknown", f"envdoctor's table does not know {what}; {seen}"
    if variant == "cpu" and m.nvidia:
        return "unfit", f"a CPU-only build: it does not use the NVIDIA GPUs; {seen}"
    if variant != "cpu" and not m.nvidia:
        return "expected", f"a {variant} build on a machine without an NVIDIA GPU runs on the CPU only; {seen}"
    c = choose_variant(
        table,
        f"{public}+{variant}",
        m.driver,
        [g.cc for g in m.nvidia],
        m.python,
        m.glibc,
        m.arch,
        ways_out=False,
        os=m.driver_os,
    )
    if c.ok and c.variant == variant and c.torch == public:
        fit = ", ".join(r for r in c.reasons if not r.startswith(("wheel variant", "wheels for Python")))
        return "expected", "by envdoctor's table it fits here" + (f": {fit}" if fit else "") + f"; {seen}"
    if c.variant_changed:
        why = c.variant_changed.removeprefix(f"torch {public}+{variant} does not fit here: ")
        return "unfit", f"by envdoctor's table it does not fit here: {why}; {seen}"
    why = "; ".join(c.warnings) or "nothing fits"
    return "unfit", f"by envdoctor's table it does not fit here: {why}; {seen}"


def _failure(m: Machine) -> str | None:
    """Why an imported build does not work here (None: it does)."""
    t = m.facts.torch
    if t.import_error:
        return f"import torch fails: {t.import_error}"
    if not m.nvidia:
        return None
    if t.cuda_available is False or not t.cuda:
        why = t.cuda_error or ("a CPU-only build" if not t.cuda else "torch.cuda.is_available() is False")
        return f"it does not reach the GPU: {why}"
    if t.tiny_op != "ok":
        return f"a tiny CUDA operation failed: {t.tiny_op or 'it did not run'}"
    if t.arch_list:  # the tiny operation ran on one GPU; a GPU without kernels still fails (ED206)
        for g in m.nvidia:
            try:
                none = bool(g.cc) and kernel_support(t.arch_list, g.cc or "").kind == "none"
            except ValueError:
                continue
            if none:
                return f"no kernels for {g.name or 'a GPU'} (compute {g.cc}): its arch list has {' '.join(t.arch_list)}"
    return None


def _whose(m: Machine) -> str:
    """Where the evidence of a run comes from: "the report" (the plan's "planned for" line names it)."""
    return "the report" if m.origin.startswith("report ") else "envdoctor check"


def _variant(table: Table, version: str, cuda: str | None, arch: str) -> str | None:
    """``"2.11.0+cu130"`` -> cu130; a bare version: torch's CUDA, else (on x86_64) the release's PyPI
    default, which is the table's for Linux x86_64."""
    local = _local(version)
    if local:
        return local
    if cuda:
        return variant_tag(cuda)
    rel = table.torch(_public(version)) if arch == "x86_64" else None
    return rel.pypi_default if rel is not None and rel.pypi_default else None


def _local(version: str) -> str | None:
    try:
        return Version(version).local
    except InvalidVersion:
        return None


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version

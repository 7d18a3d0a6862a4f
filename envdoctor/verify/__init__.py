"""Compare a baseline (a snapshot taken before a driver upgrade) with the machine now.

Pure: facts, findings and bench results in, a ``Verification`` out; nothing here reads the
machine. Each check is a function ``check(pair) -> Iterable[Outcome]`` over a :class:`Pair`
(``verify/pair.py``), registered in ``CHECKS`` below, one module per area. Regressions are error
findings, expected changes info findings, codes ED7xx:

====== ======== ==================================================================================
code   severity meaning
====== ======== ==================================================================================
ED701  error    driver upgraded without a reboot: kernel module and user-space driver differ
ED702  error    a GPU of the baseline is missing (fewer GPUs, a UUID gone)
ED703  error    a GPU changed (name, compute capability, or memory down by more than 1%)
ED704  error    nvidia-smi or NVML fails now (worked in the baseline), or the driver is gone
ED705  error    the driver's CUDA is now older than torch's CUDA
ED706  error    torch no longer imports (or is gone, or its check crashes/hangs)
ED707  error    torch no longer sees the GPUs (cuda_available True -> False, or fewer devices)
ED708  error    the tiny CUDA operation fails now
ED709  error    the container toolkit no longer works (daemon, nvidia runtime, CDI, nvidia-ctk)
ED710  error    nvcc fails now, or CUDA extension builds would now fail
ED711  error    conda fails now
ED712  error    a bench point is slower than the baseline by more than the tolerance, or failed
ED713  error    a new error finding of ``envdoctor check`` that the baseline did not have
ED720  info     the driver version changed (before -> after)
ED721  info     GPUs added, or memory reported slightly differently
ED722  info     torch changed (version, CUDA, cuDNN, NCCL, torchvision)
ED723  info     CUDA toolkits changed (added, removed, version, which nvcc is first on PATH)
ED724  info     conda changed (version, the __cuda virtual package, CUDA packages)
ED725  info     docker / container toolkit versions changed
ED726  info     the OS, kernel or glibc changed
ED727  info     an error of the baseline is gone now
ED728  info     a bench point slower at a launch-bound size (the CPU's launch rate, not the GPU)
====== ======== ==================================================================================

Upgraded without a reboot::

    v = compare(before.facts, after.facts, before.findings, after.findings)
    [f.code for f in v.regressions]   # ['ED701']
    [f.title for f in v.changes]
    # ['Driver 580.159.04 -> 590.44.01 (upgrade, installed; loads at the next reboot)']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from envdoctor import checks
from envdoctor.bench.facts import BenchResult
from envdoctor.facts import Facts
from envdoctor.findings import Finding
from envdoctor.verify import bench, conda, docker, driver, gpus, system, toolkits, torch
from envdoctor.verify.findings import COVERED, new_and_resolved
from envdoctor.verify.machine import machine_differences
from envdoctor.verify.pair import DEFAULT_TOLERANCE, Check, NotCompared, Outcome, Pair, Same

#: Every check, in the order its unchanged / not-compared lines are listed. Each is pure:
#: ``check(pair) -> Iterable[Outcome]``. ``findings.new_and_resolved`` runs after them all (it
#: needs the codes they reported).
CHECKS: tuple[Check, ...] = (
    driver.reboot_pending,  # ED701
    gpus.gpus_compared,  # ED702 ED703 ED721
    driver.answers,  # ED704
    driver.version_changed,  # ED720
    driver.cuda_below_torch,  # ED705
    torch.torch_works,  # ED706 ED707 ED708 ED722
    docker.container_toolkit,  # ED709 ED725
    toolkits.toolkits,  # ED710 ED723
    conda.conda,  # ED711 ED724
    system.system,  # ED726
    bench.bench,  # ED712 ED728
)


@dataclass(frozen=True)
class Verification:
    """What verify found: regressions (errors), changes (info), and what was the same."""

    regressions: tuple[Finding, ...] = ()
    changes: tuple[Finding, ...] = ()
    unchanged: tuple[str, ...] = ()  # "driver 580.159.04 (CUDA 13.0)"
    not_compared: tuple[str, ...] = ()  # "torch: not inspected now (skipped with --skip torch)"

    @property
    def exit_code(self) -> int:
        """0 nothing regressed (changes may be listed), 1 a regression."""
        return 1 if self.regressions else 0


def verification(outcomes: Iterable[Outcome], suppress: Iterable[str] = ()) -> Verification:
    """Outcomes sorted into a Verification: findings by severity, then by code; lines in order.
    Findings whose codes are in ``suppress`` (``--suppress``) are left out."""
    items = list(outcomes)
    found = list(checks.split((o for o in items if isinstance(o, Finding)), suppress).shown)
    return Verification(
        regressions=tuple(sorted((f for f in found if f.severity == "error"), key=lambda f: f.code)),
        changes=tuple(sorted((f for f in found if f.severity != "error"), key=lambda f: f.code)),
        unchanged=tuple(o.text for o in items if isinstance(o, Same)),
        not_compared=tuple(o.text for o in items if isinstance(o, NotCompared)),
    )


def compare(
    before: Facts,
    after: Facts,
    before_findings: Iterable[Finding] = (),
    after_findings: Iterable[Finding] = (),
    before_bench: BenchResult | None = None,
    after_bench: BenchResult | None = None,
    tolerance_pct: float = DEFAULT_TOLERANCE,
    suppress: Iterable[str] = (),
) -> Verification:
    """Regressions and changes from ``before`` (the baseline) to ``after`` (the machine now).

    ``before_bench`` / ``after_bench`` are ``BenchResult``s; pass both to compare the bench
    (``envdoctor.bench.analysis.compare_bench`` with ``tolerance_pct``); the baseline's alone is
    noted as not compared. A check that raises is one ED900 naming it (:func:`envdoctor.checks.call`).
    """
    pair = Pair(before, after, tuple(before_findings), tuple(after_findings), before_bench, after_bench, tolerance_pct)
    outcomes: list[Outcome] = []
    for check in CHECKS:
        outcomes.extend(checks.call(check, pair))
    reported = frozenset(o.code for o in outcomes if isinstance(o, Finding))
    outcomes.extend(checks.call(new_and_resolved, pair, reported))
    return verification(outcomes, suppress)


__all__ = [
    "CHECKS",
    "COVERED",
    "DEFAULT_TOLERANCE",
    "Pair",
    "Verification",
    "compare",
    "machine_differences",
    "verification",
]

"""What a verify check reads (a :class:`Pair`: the baseline, the machine now) and what it gives back.

A check is a pure function ``check(pair) -> Iterable[Outcome]``: findings (ED7xx), and two kinds of
line for the summary, :class:`Same` ("driver 580.159.04 (CUDA 13.0)") and :class:`NotCompared`
("torch: not inspected now (skipped with --skip torch)")::

    pair = Pair(baseline.facts, now.facts)
    pair.rebooting     # True: the new driver is installed, the old kernel module still runs
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Callable, Union

from envdoctor.bench.facts import BenchResult
from envdoctor.facts import Facts
from envdoctor.facts.gpu import DriverFacts, GpuInfo, driver_in_effect
from envdoctor.findings import Finding
from envdoctor.parse import release

DEFAULT_TOLERANCE = 10.0


@dataclass(frozen=True)
class Pair:
    """The baseline (``before``) and the machine now (``after``), with what comes with each."""

    before: Facts
    after: Facts
    before_findings: tuple[Finding, ...] = ()
    after_findings: tuple[Finding, ...] = ()
    before_bench: BenchResult | None = None
    after_bench: BenchResult | None = None  # None: the bench was not run again
    tolerance_pct: float = DEFAULT_TOLERANCE

    @property
    def rebooting(self) -> bool:
        """The machine waits for a reboot (ED701): GPU and torch checks are then meaningless."""
        return self.after.driver.mismatch


@dataclass(frozen=True)
class Same:
    """Something compared and found as in the baseline: ``GPUs 1x NVIDIA H200``."""

    text: str


@dataclass(frozen=True)
class NotCompared:
    """Something that could not be compared, and why: ``torch: not inspected now (skipped ...)``."""

    text: str


Outcome = Union[Finding, Same, NotCompared]
Check = Callable[[Pair], Iterable[Outcome]]


# --- helpers the checks share ---------------------------------------------------------------------


def lower(a: str | None, b: str | None) -> bool:
    """a < b as versions; False when either is unknown."""
    va, vb = release(a), release(b)
    return va is not None and vb is not None and va < vb


def real(value: str | None) -> bool:
    """A value that was recorded and not masked by ``--redact`` ("GPU-<uuid>", "<host>")."""
    return bool(value) and "<" not in str(value)


def not_inspected(facts: Facts, area: str) -> str | None:
    """Why ``area`` of ``facts`` cannot be compared, or None."""
    if area in facts.skipped:
        return "skipped"
    err = getattr(getattr(facts, area, None), "error", None)
    if err is not None and err.kind == "crashed" and str(err.message).startswith("envdoctor's"):
        return "envdoctor's probe failed"
    return None


def skip_reason(pair: Pair, area: str) -> str | None:
    """``torch: not inspected now (skipped with --skip torch)``, or None when both inspected ``area``."""
    then, now = not_inspected(pair.before, area), not_inspected(pair.after, area)
    if then:
        return f"{area}: not inspected in the baseline ({then})"
    if now:
        return f"{area}: not inspected now ({now}{' with --skip ' + area if now == 'skipped' else ''})"
    return None


def gpu_label(g: GpuInfo) -> str:
    """``GPU 0: NVIDIA H200, GPU-c7d3a8fe-...`` (no UUID when it was masked)."""
    uuid = f", {g.uuid}" if real(g.uuid) else ""
    return f"GPU {g.index}: {g.name or 'unknown'}{uuid}"


def driver_of(d: DriverFacts) -> str | None:
    """The driver version in effect: ``580.159.04`` (:func:`envdoctor.facts.gpu.driver_in_effect`)."""
    return driver_in_effect(d)

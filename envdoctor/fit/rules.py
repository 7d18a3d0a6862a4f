"""The findings of ``fit --measure`` (ED630-ED638): the estimate checked against the run (pure).

>>> from envdoctor.fit.facts import Measurement
from envdoctor.units import format_bytes
>>> [f.code for f in measure_findings(None, Measurement("unavailable", "peft is not installed"), None)]
['ED634']
"""

from __future__ import annotations

from envdoctor import codes
from envdoctor.findings import Finding, Severity, sort_findings
from envdoctor.fit.analysis import TARGET_OVER, TARGET_UNDER, Comparison
from envdoctor.fit.estimate import Estimate
from envdoctor.fit.facts import Measurement
from envdoctor.units import format_bytes

GIB = 2**30
#: more than this held by others before the child started gives ED637
OTHER_PROCESSES_BYTES = GIB


def _finding(code: str, severity: Severity, evidence: list[str], fix: tuple[str, ...] = ()) -> Finding:
    return Finding(
        code, severity, codes.CODES[code].title, tuple(evidence[:8]), fix, area="fit", explanation=codes.meaning(code)
    )


def _gib(n: int | None) -> str:
    return "?" if n is None else format_bytes(n, places=2, unit="GiB")


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{x * 100:+.1f}%"


def _where(m: Measurement) -> str:
    return f"{m.device_name or 'the GPU'}" + (f" ({_gib(m.device_total_bytes)})" if m.device_total_bytes else "")


def measure_findings(est: Estimate | None, m: Measurement, cmp: Comparison | None) -> tuple[Finding, ...]:
    """The findings of one measurement and its comparison with the estimate, errors first."""
    out: list[Finding] = []
    if m.status == "stopped":
        out.append(_finding("ED638", "info", [m.message or "stopped"]))
    elif m.status == "unavailable":
        out.append(_finding("ED634", "warning", [m.message or "unavailable"]))
    elif m.status == "failed":
        out.append(_finding("ED635", "error", [m.message or "the child measured nothing"]))
    elif m.status == "oom" and est is not None:
        said = cmp.estimate_fits_device if cmp is not None else None
        evidence = [
            f"out of memory during {m.oom_phase or 'the run'} on {_where(m)}: {m.message or ''}".strip(),
            f"estimated peak {_gib(est.peak_bytes)}; reached before the failure: reserved "
            f"{_gib(m.max_reserved)}, allocated {_gib(m.max_allocated)}",
        ]
        if said:
            out.append(_finding("ED631", "error", evidence))
        elif said is False:
            out.append(_finding("ED632", "info", evidence))
    elif m.status == "measured" and est is not None and cmp is not None:
        if cmp.error is not None and not cmp.within_target:
            rows = sorted(
                (r for r in cmp.rows if r.error is not None and r.estimate is not None and r.measured is not None),
                key=lambda r: -abs((r.estimate or 0) - (r.measured or 0)),
            )
            evidence = [
                f"{cmp.peak.label}: estimate {_gib(cmp.peak.estimate)}, measured {_gib(cmp.peak.measured)} "
                f"({_pct(cmp.error)}; the target is {TARGET_UNDER * 100:+.0f}% to {TARGET_OVER * 100:+.0f}%)"
            ]
            evidence += [
                f"{r.label}: estimate {_gib(r.estimate)}, measured {_gib(r.measured)} ({_pct(r.error)})"
                for r in rows[:4]
            ]
            out.append(_finding("ED630", "warning", evidence))
        if cmp.estimate_fits_device is False:
            out.append(
                _finding(
                    "ED633",
                    "warning",
                    [f"estimated peak {_gib(est.peak_bytes)} > {_where(m)}; measured {_gib(m.peak_bytes)}"],
                )
            )
    if m.cpu and m.status == "measured":
        out.append(_finding("ED636", "info", [m.peak_basis]))
    if m.other_bytes is not None and m.other_bytes > OTHER_PROCESSES_BYTES:
        out.append(
            _finding(
                "ED637",
                "info",
                [f"{_gib(m.other_bytes)} of {_where(m)} were in use before the measurement started"],
                ("nvidia-smi",),
            )
        )
    return sort_findings(out)

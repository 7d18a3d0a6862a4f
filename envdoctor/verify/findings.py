"""Verify check of the check's own findings: ED713 a new error finding, ED727 an error of the baseline
gone. It runs after the other checks: it needs the codes they reported (``reported``)."""

from __future__ import annotations

from collections.abc import Iterator, Set

from envdoctor.findings import Finding
from envdoctor.verify.pair import Outcome, Pair, not_inspected

#: finding codes of ``check`` that a verify finding already reports (check code -> verify code)
COVERED = {"ED102": "ED701", "ED103": "ED704"}
#: --skip area -> Finding.area values it hides
FINDING_AREAS = {"torch": ("torch",), "toolkits": ("toolkits",), "conda": ("conda",), "docker": ("docker",)}


def _hidden_areas(pair: Pair) -> set[str]:
    hidden: set[str] = set()
    for area, finding_areas in FINDING_AREAS.items():
        if not_inspected(pair.before, area) or not_inspected(pair.after, area):
            hidden.update(finding_areas)
    return hidden


def new_and_resolved(pair: Pair, reported: Set[str]) -> Iterator[Outcome]:
    """ED713: error findings of the check now that the baseline did not have; ED727: the reverse.

    ``reported``: the codes the other verify checks found (a check finding covered by one of them,
    ``COVERED``, is not repeated). Until the reboot (ED701) the driver, GPU and torch findings are
    its consequences: left out.
    """
    hidden = _hidden_areas(pair)
    if pair.rebooting:
        hidden.update(("driver", "gpu", "torch"))

    def counts(f: Finding) -> bool:
        return f.severity == "error" and not f.code.startswith("ED9") and f.area not in hidden

    then = {f.code for f in pair.before_findings}
    now = {f.code for f in pair.after_findings}
    for f in pair.after_findings:
        if not counts(f) or f.code in then or COVERED.get(f.code) in reported:
            continue
        yield Finding(
            "ED713",
            "error",
            f"New problem {f.code}: {f.title}",
            evidence=f.evidence,
            fix=f.fix,
            reference=f.reference,
            area=f.area,
            explanation=f.explanation,
        )
    gone = [f for f in pair.before_findings if counts(f) and f.code not in now]
    if gone:
        yield Finding(
            "ED727",
            "info",
            f"Fixed since the baseline: {gone[0].code} {gone[0].title}",
            evidence=tuple(f"{f.code} {f.title}" for f in gone[1:]),
            area="verify",
        )

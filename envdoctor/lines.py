"""The lines every command prints about findings: one block per finding and the closing verdict.

Core, not a renderer of one command: ``check``, ``topo``, ``comms`` and ``fleet`` print findings the
same way (a mark per severity, the code, the title, the evidence, the fix as ``$`` lines).
"""

from __future__ import annotations

from typing import Iterable, List, Tuple

from envdoctor.findings import Finding
from envdoctor.style import Style

MARKS = {"error": "✗", "warning": "!", "info": "i"}


def finding_lines(findings: Iterable[Finding], style: Style) -> List[str]:
    lines: List[str] = []
    for fd in findings:
        lines.append(style(f"{MARKS[fd.severity]} {fd.code} {fd.severity}: {fd.title}", fd.severity))
        if fd.explanation:
            lines.append(f"    {fd.explanation}")
        for ev in fd.evidence:
            lines.append(style(f"    - {ev}", "dim"))
        if fd.fix:
            lines.append("    fix:")
            lines.extend(f"      {cmd}" if cmd.startswith("#") else f"      $ {cmd}" for cmd in fd.fix)
        if fd.reference:
            lines.append(style(f"    see {fd.reference}", "dim"))
    return lines


def verdict(findings: Tuple[Finding, ...], style: Style, again: str = "envdoctor check") -> str:
    """The closing line; ``again``: the command to run once the errors are fixed."""
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    if errors:
        return style(
            f"Verdict: {errors} error(s), {warnings} warning(s): fix the errors above, then run {again} again.", "error"
        )
    if warnings:
        return style(f"Verdict: no errors, {warnings} warning(s): read the caveats above.", "warning")
    notes = sum(f.severity == "info" for f in findings)
    if notes:
        return style(f"Verdict: no problems found; {notes} note(s) above say what comes next.", "ok")
    return style("Verdict: no problems found.", "ok")


def findings_section(
    findings: Tuple[Finding, ...], style: Style, suppressed: Iterable[Finding] = (), again: str = "envdoctor check"
) -> List[str]:
    """The end of a report (check, topo, comms, dockerfile): "Findings", each finding (or "none"),
    what ``--suppress`` hid, a blank line and the verdict."""
    return [
        style("Findings", "bold"),
        *(finding_lines(findings, style) or ["  none"]),
        *suppressed_line(suppressed, style),
        "",
        verdict(findings, style, again),
    ]


def suppressed_line(suppressed: Iterable[Finding], style: Style) -> List[str]:
    """One line naming the findings ``--suppress`` hid, so that they are hidden knowingly."""
    hidden = [f"{f.code} ({f.severity})" for f in suppressed]
    return [style(f"  suppressed (--suppress): {', '.join(hidden)}", "dim")] if hidden else []

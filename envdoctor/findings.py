"""A problem envdoctor found: a stable code, how bad it is, the evidence, and the exact fix.

>>> Finding("ED102", "error", "Driver upgraded without a reboot",
...         evidence=("kernel module 570.133.20", "user-space library 580.159.04"),
...         fix=("sudo reboot",), reference="https://docs.nvidia.com/...").severity
'error'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal, Optional, get_args

from envdoctor.doctypes import FindingsSummary, Json

#: "error": it will not work; "warning": it works with a caveat; "info": worth knowing.
Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
_RANK = {s: i for i, s in enumerate(SEVERITIES)}

#: What a finding is about. The areas a user may skip (``--skip``) carry the name of their part of
#: ``Facts`` ("toolkits", "conda", "docker", "torch"), so a skipped area hides its findings by name.
Area = Literal[
    "system",
    "gpu",
    "driver",
    "container",
    "toolkits",
    "conda",
    "docker",
    "torch",
    "bench",
    "fit",
    "verify",
    "fleet",
    "burn",
    "links",
    "comms",
    "profile",
    "envdoctor",
    "stack",
    "dockerfile",
]
AREAS: tuple[Area, ...] = get_args(Area)


@dataclass(frozen=True)
class Finding:
    code: str  # "ED102": stable, searchable, suppressible
    severity: Severity
    title: str  # one line: what is wrong
    evidence: tuple[str, ...] = ()  # the facts that show it, each with its source
    fix: tuple[str, ...] = ()  # exact commands, in order (never run by envdoctor)
    reference: Optional[str] = None  # a public URL that explains it
    #: a document read back may carry an older area's name ("toolkit"): any text there
    area: Annotated[Optional[Area], Json(read_back={"type": ["string", "null"]})] = None
    explanation: Optional[str] = None  # a sentence or two on why / what else to know

    def __post_init__(self) -> None:
        if self.severity not in _RANK:
            raise ValueError(f"unknown severity {self.severity!r}")


def sort_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Errors first, then warnings, then info; by code within a severity."""
    return tuple(sorted(findings, key=lambda f: (_RANK[f.severity], f.code)))


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when nothing is an error, 1 otherwise (2 and 3 are the CLI's)."""
    return _exit_of(f.severity for f in findings)


def _exit_of(severities: Iterable[object]) -> int:
    """The one rule of :func:`exit_code`, on severities alone: 1 when one is an error, else 0."""
    return 1 if "error" in severities else 0


def summary(findings: Iterable[Finding]) -> FindingsSummary:
    """A document's ``summary``: the findings by severity and the exit code they give
    (``{"errors": 1, "warnings": 0, "info": 2, "exit_code": 1}``)."""
    return summary_of(f.severity for f in findings)


def summary_of(severities: Iterable[object]) -> FindingsSummary:
    """:func:`summary` of the findings' severities alone, as an old document read back holds them
    (``documents`` upgrades; anything but the three severities is counted nowhere)."""
    seen = list(severities)
    return {
        "errors": seen.count("error"),
        "warnings": seen.count("warning"),
        "info": seen.count("info"),
        "exit_code": _exit_of(seen),
    }

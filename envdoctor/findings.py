"""A problem envdoctor found: a stable code, how bad it is, the evidence, and the exact fix.

>>> Finding("ED102", "error", "Driver upgraded without a reboot",
...         evidence=("kernel module 570.133.20", "user-space library 580.159.04"),
...         fix=("sudo reboot",), reference="https://docs.nvidia.com/...")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Tuple

SEVERITIES = ("error", "warning", "info")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Finding:
    code: str                         # "ED102": stable, searchable, suppressible
    severity: str                     # "error" (it will not work), "warning", "info"
    title: str                        # one line: what is wrong
    evidence: Tuple[str, ...] = ()    # the facts that show it, each with its source
    fix: Tuple[str, ...] = ()         # exact commands, in order (never run by envdoctor)
    reference: Optional[str] = None   # a public URL that explains it
    area: Optional[str] = None        # "driver", "gpu", "torch", "toolkit", "conda", "docker", ...
    explanation: Optional[str] = None  # a sentence or two on why / what else to know

    def __post_init__(self) -> None:
        if self.severity not in _RANK:
            raise ValueError(f"unknown severity {self.severity!r}")


def sort_findings(findings: Iterable[Finding]) -> Tuple[Finding, ...]:
    """Errors first, then warnings, then info; by code within a severity."""
    return tuple(sorted(findings, key=lambda f: (_RANK[f.severity], f.code)))


def exit_code(findings: Iterable[Finding]) -> int:
    """0 when nothing is an error, 1 otherwise (2 and 3 are the CLI's)."""
    return 1 if any(f.severity == "error" for f in findings) else 0

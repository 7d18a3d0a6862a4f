"""Why a tool's answer cannot be used, in the tool's own words where it gave them.

A tool whose standard output is not the shape expected usually says why on standard error: the
docker daemon refusing the connection, a permission problem, a missing library. The probe
reports that line, not its own parse error::

    >>> stderr_reason("Traceback (most recent call last):\\n  File ...\\nPermissionError: [Errno 13] "
    ...               "Permission denied: '/opt/conda/pkgs/urls.txt'\\n")
    "PermissionError: [Errno 13] Permission denied: '/opt/conda/pkgs/urls.txt'"
    >>> stderr_reason("\\n") is None
    True

Only when standard error says nothing does the probe say that the output could not be read.
"""

from __future__ import annotations

from typing import Optional

from envdoctor.facts.base import ErrorKind, ProbeError
from envdoctor.run import MAX_REASON, Ran, stderr_reason

__all__ = ["MAX_REASON", "reason_kind", "stderr_reason", "unreadable"]


def reason_kind(reason: str, returncode: Optional[int]) -> ErrorKind:
    """ "permission" for a permission problem, else "exit_status" or "unparseable" (exit status 0)."""
    low = reason.lower()
    if "permission denied" in low or "not permitted" in low:
        return "permission"
    return "exit_status" if returncode else "unparseable"


def unreadable(tool: str, ran: Ran, why: str, command: Optional[str] = None) -> ProbeError:
    """The error of a run whose output could not be read (``why``: the parser's words).

    With a reason on standard error, that reason; else "TOOL printed output envdoctor cannot read (WHY)".
    """
    shown = command or " ".join(ran.argv)
    reason = stderr_reason(ran.stderr, named_only=True)
    if reason:
        return ProbeError(reason_kind(reason, ran.returncode), f"{tool}: {reason}", shown)
    why = why[len(f"{tool} printed ") :] if why.startswith(f"{tool} printed ") else why
    return ProbeError("unparseable", f"{tool} printed output envdoctor cannot read ({why})", shown)

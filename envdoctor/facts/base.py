"""What every fact carries: where it came from and, when it could not be read, why.

Three states everywhere: found (value set, ``error`` None), absent (value None, ``error`` None:
the thing is simply not there), failed (``error`` set: it should have been readable and was not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, get_args

#: The kinds of failure a probe reports.
ErrorKind = Literal[
    "not_found", "timeout", "exit_status", "unparseable", "permission", "crashed", "unavailable", "interrupted"
]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)


@dataclass(frozen=True)
class ProbeError:
    """Why a fact could not be read, in one line a person can act on.

    >>> str(ProbeError("timeout", "nvidia-smi did not answer in 10 s", "nvidia-smi --query-gpu=..."))
    'nvidia-smi did not answer in 10 s'
    """

    kind: ErrorKind
    message: str
    command: Optional[str] = None

    def __str__(self) -> str:
        return self.message

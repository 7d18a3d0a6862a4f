"""Pure parsers of real tool output: text in, typed values out, no machine access.

Each module parses one tool and raises a subclass of :class:`ParseError` (a ``ValueError``) on
garbage; probes turn that into ``ProbeError("unparseable", ...)``. Each docstring shows the real
input the parser was written against.
"""

from __future__ import annotations

import re
from typing import Optional

from packaging.version import InvalidVersion, Version


class ParseError(ValueError):
    """A tool printed something that is not what the parser expects."""


_LEADING = re.compile(r"\d+(?:\.\d+)*")


def loose_version(text: Optional[str]) -> Optional[Version]:
    """The leading dotted number of ``text`` as a Version: "20.10.24+dfsg1" -> 20.10.24,
    "v2.2.2" -> None (must start with a digit), "" -> None."""
    if not text:
        return None
    match = _LEADING.match(text.strip())
    if not match:
        return None
    try:
        return Version(match.group(0))
    except InvalidVersion:
        return None


def major_minor(text: Optional[str]) -> Optional[str]:
    """"12.8.93" -> "12.8"; "13" -> None."""
    v = loose_version(text)
    if v is None or len(v.release) < 2:
        return None
    return f"{v.release[0]}.{v.release[1]}"
